"""The data, where the container will see it, against the model's `data_layout` (benchbook.models).

A container path (data.mount, data.dali_index, /model) is looked up on the host through the mounts
(`data.path` -> `data.mount` and `container.mounts`); in mode `inside` it is read as is; in mode
`exec` a path no mount covers is listed inside the running container. The layouts, the DALI
index and the pretrained checkpoint are described in the package docstring (`benchbook.studies.checks`).
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..study import Study
from .needs import Needs
from .probes import Check, Probes, first_line

TRAIN_SHARDS, VALIDATION_SHARDS = 1024, 128  # ImageNet TFRecords of build_imagenet_data.py
RECORDIO_FILES = ("train.rec", "train.idx", "val.rec", "val.idx")
IMAGE_FOLDERS = ("train", "val")  # PyTorch ConvNets main.py: <data>/train and <data>/val
CHECKPOINT_DIR = "resnet/resnet-nhwc-2018-02-07"
CHECKPOINT = "model.ckpt-112603"
BERT_TF_FOLDERS = ("tfrecord", "download")  # run_pretraining_lamb_phase1.sh: $DATA_DIR/tfrecord/..., BERT_CONFIG
BERT_PYTORCH_SHARDS = (".parquet", ".hdf5")  # LDDL's shards (NGC 22.x and later), HDF5 (21.11 and before)
WEIGHTS_MOUNT = "/model"  # where benchmark_training.py looks for the pretrained weights (--weights_dir)
SHOWN = 5  # missing file names shown per check


@dataclass(frozen=True)
class _Place:
    """A folder as the container will see it: on this machine (`path`) or inside the exec container."""

    path: str
    in_container: str | None = None  # container name: list it with docker exec
    note: str = ""

    def label(self) -> str:
        return f"{self.path} (in container {self.in_container})" if self.in_container else self.path


def _mounts(study: Study) -> list[tuple[str, str]]:
    """(container path, host path) of every mount, deepest container path first."""
    pairs = [(study.data.mount, study.data.path)] if study.data.path else []
    pairs += [(m, h) for h, m in study.container.mounts.items()]
    return sorted(((posixpath.normpath(m), h) for m, h in pairs), key=lambda x: -len(x[0]))


def _host_path(study: Study, container_path: str) -> str | None:
    """The host path of a container path through the study's mounts, or None when no mount covers it."""
    target = posixpath.normpath(container_path)
    for mount, host in _mounts(study):
        if target == mount or target.startswith(mount.rstrip("/") + "/"):
            rest = posixpath.relpath(target, mount)
            return str(Path(host) / rest) if rest != "." else host
    return None


def _place(study: Study, container_path: str, container_ready: bool) -> _Place | None:
    """Where to look for a container path: as is (mode inside), through the mounts, or inside the exec container."""
    c = study.container
    if c.mode == "inside":
        return _Place(container_path)
    host = _host_path(study, container_path)
    if host is not None:
        return _Place(host)
    if c.mode == "exec" and container_ready:
        return _Place(container_path, in_container=c.name)
    return None


def _unlisted(name: str, place: _Place, fix: str) -> Check:
    """A folder only the study's container sees, not listed: that runs `ls` in it (`--probe` does)."""
    return Check(name, None, f"{place.label()}: not listed, that runs a command in the study's container; "
                 "benchbook check --probe does (benchbook run always does)", fix)


def _list(p: Probes, place: _Place) -> tuple[set[str] | None, str]:
    """The names in a folder, or None and why not."""
    if place.in_container:
        code, out, err = p.call(["docker", "exec", "--", place.in_container, "ls", "-1A", "--", place.path])
        if code != 0:
            return None, first_line(err, out) or f"ls exited with {code}"
        return {line.strip() for line in out.splitlines() if line.strip()}, ""
    path = Path(place.path)
    if not path.exists():
        return None, "does not exist"
    if not path.is_dir():
        return None, "is not a folder"
    try:
        return set(os.listdir(path)), ""
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"


def _shards(prefix: str, count: int, suffix: str = "") -> list[str]:
    return [f"{prefix}-{i:05d}-of-{count:05d}{suffix}" for i in range(count)]


def _missing_text(missing: list[str]) -> str:
    shown = ", ".join(missing[:SHOWN])
    return shown + (f" (and {len(missing) - SHOWN} more)" if len(missing) > SHOWN else "")


def _count_check(name: str, what: str, expected: list[str], names: set[str], where: str, fix: str) -> Check:
    missing = [n for n in expected if n not in names]
    have = len(expected) - len(missing)
    if not missing:
        return Check(name, True, f"{have} of {len(expected)} {what} in {where}")
    return Check(name, False, f"{have} of {len(expected)} {what} in {where}: missing {_missing_text(missing)}", fix)


def _prep_hint(study: Study) -> str:
    return f"benchbook check {shlex.quote(str(study.path)) if study.path else 'STUDY'} --data-prep"


def data_checks(p: Probes, study: Study, needs: Needs, container_ready: bool) -> list[Check]:
    mount = study.data.mount
    place = _place(study, mount, container_ready)
    data_name = study.spec.data_name
    prep = f"prepare the data set (the published commands: {_prep_hint(study)})"
    if place is None:
        why = "data.path is not set" if not study.data.path else "the container is not running"
        out = [Check(data_name, None, f"{mount}: not checked, {why}", prep)]
    elif place.in_container and not p.probe:
        out = [_unlisted(data_name, place, prep)]
    else:
        names, why = _list(p, place)
        if names is None:
            out = [Check(data_name, False, f"data folder {place.label()} {why}", prep)]
        else:
            out = _layout(study, names, place.label(), prep)
    if study.spec.dali_index and needs.dali:
        out.append(_dali_index(p, study, container_ready))
    if study.spec.pretrained_checkpoint:
        out.append(_checkpoint(p, study, container_ready))
    return out


def _layout(study: Study, names: set[str], where: str, prep: str) -> list[Check]:
    layout = study.spec.data_layout
    if layout == "imagenet_tfrecords":
        return [_count_check("ImageNet train TFRecords", "train shards", _shards("train", TRAIN_SHARDS), names, where,
                             prep),
                _count_check("ImageNet validation TFRecords", "validation shards",
                             _shards("validation", VALIDATION_SHARDS), names, where, prep)]
    if layout == "imagenet_recordio":
        return [_count_check("ImageNet RecordIO", "RecordIO files", list(RECORDIO_FILES), names, where, prep)]
    if layout == "imagenet_folders":
        return [_count_check("ImageNet folders", "folders (train/, val/)", list(IMAGE_FOLDERS), names, where, prep)]
    if layout == "bert_parquet":
        return [_bert_shards(study.spec.data_name, names, where, prep)]
    if layout == "bert_tfrecords":
        return [_count_check(study.spec.data_name, "folders (tfrecord/, download/)", list(BERT_TF_FOLDERS), names,
                             where, prep)]
    return [_sharded_glob("COCO train TFRecords", "train", names, where, prep),
            _sharded_glob("COCO validation TFRecords", "val", names, where, prep)]


def _bert_shards(name: str, names: set[str], where: str, fix: str) -> Check:
    """run_pretraining.py's --input_dir: a folder of shards, whichever of its two forms."""
    for suffix in BERT_PYTORCH_SHARDS:
        count = sum(n.endswith(suffix) for n in names)
        if count:
            return Check(name, True, f"{count} *{suffix} shards in {where}")
    return Check(name, False, f"no *.parquet (LDDL, NGC 22.x and later) or *.hdf5 shards (NGC 21.11 and before) in "
                 f"{where}", fix)


def _sharded_glob(name: str, prefix: str, names: set[str], where: str, fix: str) -> Check:
    """`prefix*.tfrecord` present; when named `prefix-NNNNN-of-MMMMM.tfrecord`, all MMMMM of them."""
    found = sorted(n for n in names if n.startswith(prefix) and n.endswith(".tfrecord"))
    if not found:
        return Check(name, False, f"no {prefix}*.tfrecord in {where}", fix)
    counts = {int(m.group(1)) for n in found if (m := re.fullmatch(rf"{re.escape(prefix)}-\d{{5}}-of-(\d{{5}})"
                                                                    r"\.tfrecord", n))}
    if len(counts) == 1:
        total = counts.pop()
        return _count_check(name, f"{prefix} shards", _shards(prefix, total, ".tfrecord"), names, where, fix)
    return Check(name, True, f"{len(found)} {prefix}*.tfrecord files in {where}")


def _dali_index(p: Probes, study: Study, container_ready: bool) -> Check:
    name = "DALI index"
    idx = study.data.dali_index
    c = study.container
    script = f"cd {study.code.workdir} && mkdir -p {idx} && bash ./utils/dali_index.sh {study.data.mount} {idx}"
    fix = (f"docker exec -it {c.name} bash -c {shlex.quote(script)}" if c.mode == "exec" else
           script if c.mode == "inside" else f"in the container: {script}")
    if not idx:  # study validation requires it with DALI; kept for safety
        return Check(name, False, "DALI runs need data.dali_index (the index folder)", fix)
    place = _place(study, idx, False)
    note = ""
    if place is None and study.data.path:  # no mount covers it: the documented host guesses
        base = posixpath.basename(posixpath.normpath(idx))
        for guess in (Path(study.data.path) / base, Path(study.data.path).parent / base):
            if guess.is_dir():
                place = _Place(str(guess))
                note = f" (found on the host for {idx}, which no mount covers)"
                break
    if place is None and c.mode == "exec" and container_ready:
        place = _Place(idx, in_container=c.name)
    if place is None:
        looked = ""
        if study.data.path:
            base = posixpath.basename(posixpath.normpath(idx))
            looked = f"; looked on the host at {Path(study.data.path) / base} and {Path(study.data.path).parent / base}"
        return Check(name, False, f"DALI index folder {idx} not found{looked}", fix)
    if place.in_container and not p.probe:
        return _unlisted(name, place, fix)
    names, why = _list(p, place)
    if names is None:
        return Check(name, False, f"DALI index folder {place.label()}{note} {why}", fix)
    expected = _shards("train", TRAIN_SHARDS) + _shards("validation", VALIDATION_SHARDS)
    result = _count_check(name, "index files (one per shard)", expected, names, place.label() + note, fix)
    if c.mode == "run" and note and result.ok:
        return Check(name, False, f"{result.detail}; `docker run` mounts only data.path and container.mounts, so "
                     f"the container will not see {idx}",
                     f"add to the study: container.mounts: {{{place.path}: {idx}}}")
    return result


def _checkpoint(p: Probes, study: Study, container_ready: bool) -> Check:
    name = "ResNet-50 checkpoint"
    target = f"{WEIGHTS_MOUNT}/{CHECKPOINT_DIR}"
    host = next((h for h, m in study.container.mounts.items() if posixpath.normpath(m) == WEIGHTS_MOUNT), None)
    fix = (f"in the code folder (cd {study.code.workdir} in the container): "
           "./download_and_process_pretrained_weights.sh   # writes weights/resnet/...\n"
           + (f"then copy weights/ to {host} (mounted at {WEIGHTS_MOUNT})" if host else
              f"then mount weights/ at {WEIGHTS_MOUNT}: container.mounts: {{/path/to/weights: {WEIGHTS_MOUNT}}}"))
    place = _place(study, target, container_ready)
    if place is None:
        return Check(name, False, f"no folder is mounted at {WEIGHTS_MOUNT} (container.mounts host: {WEIGHTS_MOUNT}); "
                     f"benchmark_training.py reads {target}/{CHECKPOINT}", fix)
    if place.in_container and not p.probe:
        return _unlisted(name, place, fix)
    names, why = _list(p, place)
    if names is None:
        return Check(name, False, f"{place.label()} {why}", fix)
    missing = [] if f"{CHECKPOINT}.index" in names else [f"{CHECKPOINT}.index"]
    if not any(n.startswith(f"{CHECKPOINT}.data-") for n in names):
        missing.append(f"{CHECKPOINT}.data-00000-of-00001")
    if missing:
        return Check(name, False, f"{place.label()}: missing {', '.join(missing)}", fix)
    return Check(name, True, f"{CHECKPOINT} in {place.label()}")
