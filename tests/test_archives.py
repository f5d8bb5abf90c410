"""logs.archives: every archive kind read in place, members named `archive!member`, file-name metadata
read from member paths, and the refusals (inflation by bytes and ratio, member count, nesting, links and
devices in tars, damaged and cut archives), on archives these tests build."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import random
import subprocess
import sys
import tarfile
import tracemalloc
import zipfile

import pytest

from benchbook.errors import BenchbookError
from benchbook.logs import archives, logfiles, textio
from benchbook.logs.analysis import analyze
from benchbook.mlperf import results
from test_hostile_logs import PARAMETER, _record
from test_mlperf_score import repository

LOG = "ngc_tf1/tf_gpu1_amp_bs256.log"
MEMBER = "1n8g/tf_gpu1_amp_bs256.log"


def _tar(path, files: dict[str, bytes], mode: str = "w") -> None:
    with tarfile.open(path, mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _zip(path, files: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)


WRITERS = {
    "logs.zip": _zip,
    "logs.tar": _tar,
    "logs.tar.gz": lambda p, f: _tar(p, f, "w:gz"),
    "logs.tgz": lambda p, f: _tar(p, f, "w:gz"),
    "logs.tar.xz": lambda p, f: _tar(p, f, "w:xz"),
    "logs.tar.bz2": lambda p, f: _tar(p, f, "w:bz2"),
}


@pytest.fixture
def log_bytes(fixtures):
    return (fixtures / LOG).read_bytes()


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_archive_kind_is_analyzed_in_place_as_its_plain_log(tmp_path, fixtures, log_bytes, name):
    WRITERS[name](tmp_path / name, {MEMBER: log_bytes, "notes/run.json": b"{}", ".hidden/x.log": b"x"})
    plain = analyze([fixtures / LOG]).runs.iloc[0]
    result = analyze([tmp_path])  # a folder holding the archive
    assert not result.problems
    (run,) = result.runs.to_dict("records")
    assert run["source"] == f"{tmp_path / name}!{MEMBER}"
    assert run["reported_throughput"] == plain["reported_throughput"]
    assert run["recomputed_throughput"] == plain["recomputed_throughput"]
    assert run["nodes"] == 1  # from the member's 1n8g folder; the log says 1 GPU, and wins
    assert set(result.iterations["source"]) == {run["source"]}
    assert [p.name for p in tmp_path.iterdir()] == [name]  # nothing extracted


@pytest.mark.parametrize("suffix,compress", [(".gz", gzip.compress), (".xz", lzma.compress), (".bz2", bz2.compress)])
def test_a_compressed_log_is_its_one_member(tmp_path, log_bytes, suffix, compress):
    path = tmp_path / f"tf_gpu1_amp_bs256.log{suffix}"
    path.write_bytes(compress(log_bytes))
    (run,) = analyze([path]).runs.to_dict("records")
    assert run["source"] == f"{path}!tf_gpu1_amp_bs256.log"
    assert (run["gpus"], run["batch_size"], run["precision"]) == (1, 256, "amp")


def test_the_cli_json_names_the_member(tmp_path, log_bytes):
    _zip(tmp_path / "logs.zip", {MEMBER: log_bytes})
    out = subprocess.run([sys.executable, "-m", "benchbook.cli", "analyze", "--json", str(tmp_path / "logs.zip")],
                         capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout.splitlines()[0])["source"] == f"{tmp_path / 'logs.zip'}!{MEMBER}"


def test_file_name_metadata_is_read_from_member_paths(tmp_path):
    _tar(tmp_path / "r50.tar.gz", {"1n8g/r50_b128_fp32_3.log": b"x\n"}, "w:gz")
    listing = archives.listing(tmp_path / "r50.tar.gz")
    (member,) = (archives.ArchivePath(listing, n) for n in listing.files)
    assert str(member) == f"{tmp_path / 'r50.tar.gz'}!1n8g/r50_b128_fp32_3.log"
    assert logfiles.from_path(member) == {"nodes": 1, "gpus": 8, "batch_size": 128, "precision": "fp32", "repeat": 3}


def test_an_archive_inside_an_archive_is_read_one_level_down(tmp_path, log_bytes):
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tar:
        info = tarfile.TarInfo(MEMBER)
        info.size = len(log_bytes)
        tar.addfile(info, io.BytesIO(log_bytes))
    _zip(tmp_path / "outer.zip", {"set/inner.tar.gz": inner.getvalue()})
    (run,) = analyze([tmp_path / "outer.zip"]).runs.to_dict("records")
    assert run["source"] == f"{tmp_path / 'outer.zip'}!set/inner.tar.gz!{MEMBER}"


def test_an_archive_two_levels_down_is_refused_by_name(tmp_path, log_bytes):
    innermost = gzip.compress(log_bytes)
    middle = io.BytesIO()
    with zipfile.ZipFile(middle, "w") as zf:
        zf.writestr("deep.log.gz", innermost)
        zf.writestr("a.log", log_bytes)
    _zip(tmp_path / "outer.zip", {"middle.zip": middle.getvalue()})
    result = analyze([tmp_path / "outer.zip"])
    assert list(result.runs["source"]) == [f"{tmp_path / 'outer.zip'}!middle.zip!a.log"]
    (problem,) = result.problems
    assert problem.source == f"{tmp_path / 'outer.zip'}!middle.zip!deep.log.gz"
    assert "inside an archive inside an archive" in problem.reason


def test_links_devices_and_fifos_in_a_tar_are_refused_by_name(tmp_path, log_bytes):
    path = tmp_path / "tricks.tar"
    with tarfile.open(path, "w") as tar:
        for name, kind in (("sym.log", tarfile.SYMTYPE), ("hard.log", tarfile.LNKTYPE), ("dev.log", tarfile.CHRTYPE),
                           ("fifo.log", tarfile.FIFOTYPE)):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, "/etc/passwd"
            tar.addfile(info)
        info = tarfile.TarInfo("real.log")
        info.size = len(log_bytes)
        tar.addfile(info, io.BytesIO(log_bytes))
    result = analyze([path])
    assert list(result.runs["source"]) == [f"{path}!real.log"]
    reasons = {p.source.rpartition("!")[2]: p.reason for p in result.problems}
    assert reasons["sym.log"].startswith("a link inside the archive") and reasons["hard.log"].startswith("a link")
    assert reasons["dev.log"].startswith("a device or FIFO") and reasons["fifo.log"].startswith("a device or FIFO")


def test_links_fifos_and_devices_in_a_zip_are_refused_by_name(tmp_path, log_bytes):
    # Issue 49 cause 2: a zip made on Unix keeps each member's mode (Info-ZIP's unzip makes a link of an
    # S_IFLNK member): read as a log, a link member's bytes are its target's name, a FIFO's nothing real.
    import stat

    path = tmp_path / "tricks.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, mode in (("sym.log", stat.S_IFLNK), ("fifo.log", stat.S_IFIFO), ("dev.log", stat.S_IFCHR),
                           ("real.log", stat.S_IFREG)):
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, (mode | 0o644) << 16
            zf.writestr(info, log_bytes if name == "real.log" else b"/proc/kmsg")
        zf.writestr("windows.log", log_bytes)  # (no Unix mode: a regular file)
    result = analyze([path])
    assert sorted(result.runs["source"]) == [f"{path}!real.log", f"{path}!windows.log"]
    reasons = {p.source.rpartition("!")[2]: p.reason for p in result.problems}
    assert reasons == {"sym.log": "a link inside the archive: refused (only regular files are read)",
                       "fifo.log": "a FIFO inside the archive: refused (only regular files are read)",
                       "dev.log": "a device inside the archive: refused (only regular files are read)"}


@pytest.mark.parametrize("name", ["bomb.zip", "bomb.tar.gz", "bomb.log.gz"])
def test_a_member_inflating_past_the_ratio_is_refused_as_a_bomb(tmp_path, name):
    zeros = b"\0" * (8 << 20)  # compresses about 1000 times
    if name.endswith(".zip"):
        _zip(tmp_path / name, {"zeros.log": zeros})
    elif name.endswith(".tar.gz"):
        _tar(tmp_path / name, {"zeros.log": zeros}, "w:gz")
    else:
        (tmp_path / name).write_bytes(gzip.compress(zeros))
    (problem,) = analyze([tmp_path / name]).problems
    member = "bomb.log" if name == "bomb.log.gz" else "zeros.log"
    assert problem.source == f"{tmp_path / name}!{member}"
    assert "times its compressed size" in problem.reason and "BENCHBOOK_ARCHIVE_MAX_RATIO" in problem.reason


@pytest.mark.parametrize("name", ["big.zip", "big.tar.xz", "big.log.gz"])
def test_a_member_inflating_past_the_size_cap_is_refused(tmp_path, monkeypatch, log_bytes, name):
    monkeypatch.setenv("BENCHBOOK_ARCHIVE_MAX_BYTES", "500")
    if name.endswith(".zip"):
        _zip(tmp_path / name, {"big.log": log_bytes})
    elif name.endswith(".tar.xz"):
        _tar(tmp_path / name, {"big.log": log_bytes}, "w:xz")
    else:
        (tmp_path / name).write_bytes(gzip.compress(log_bytes))
    result = analyze([tmp_path / name])
    assert result.runs.empty
    (problem,) = result.problems
    assert problem.source == f"{tmp_path / name}!big.log"
    assert "past" in problem.reason and "BENCHBOOK_ARCHIVE_MAX_BYTES" in problem.reason


def test_the_caps_are_overridable_and_checked(tmp_path, monkeypatch, log_bytes):
    monkeypatch.setenv("BENCHBOOK_ARCHIVE_MAX_BYTES", str(len(log_bytes)))
    _zip(tmp_path / "ok.zip", {"a.log": log_bytes})
    assert not analyze([tmp_path / "ok.zip"]).problems
    for value in ("lots", "nan", "-3", "inf"):
        monkeypatch.setenv("BENCHBOOK_ARCHIVE_MAX_RATIO", value)
        with pytest.raises(BenchbookError, match=f"BENCHBOOK_ARCHIVE_MAX_RATIO='{value}': expected a positive number"):
            archives.Limits.from_env()


@pytest.mark.parametrize("name", ["many.zip", "many.tar.gz"])
def test_more_members_than_the_cap_are_refused_past_it(tmp_path, monkeypatch, log_bytes, name):
    monkeypatch.setenv("BENCHBOOK_ARCHIVE_MAX_MEMBERS", "2")
    WRITERS["logs.zip" if name.endswith(".zip") else "logs.tar.gz"](
        tmp_path / name, {f"run{i}_gpu1_bs256.log": log_bytes for i in range(4)})
    result = analyze([tmp_path / name])
    assert len(result.runs) == 2
    (problem,) = result.problems
    assert problem.source == str(tmp_path / name) and "more than 2 members" in problem.reason


def test_a_cut_tar_keeps_what_was_read_before_the_fault(tmp_path, log_bytes):
    whole = tmp_path / "whole.tar.gz"
    rng = random.Random(3)
    noise = b"".join(b"# %f\n" % rng.random() for _ in range(20000))  # compresses as little as a log
    _tar(whole, {"a/first.log": log_bytes + noise, "b/second.log": log_bytes + noise}, "w:gz")
    data = whole.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: int(len(data) * 0.8)])  # in the second member's noise
    result = analyze([cut])
    sources = list(result.runs["source"])
    assert f"{cut}!a/first.log" in sources  # read whole before the fault
    (problem,) = result.problems
    assert problem.source == f"{cut}!b/second.log"
    assert problem.reason.startswith("the archive is damaged (EOFError")
    assert problem.reason.endswith(": what comes before the fault is read")
    second = result.runs[result.runs["source"] == f"{cut}!b/second.log"]  # its runs up to the cut, warned
    assert len(second) and any("the lines before are read" in w for w in second.iloc[-1]["warnings"])


def test_a_damaged_archive_is_a_problem_naming_it(tmp_path):
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 this is no zip")
    (tmp_path / "broken.tar.xz").write_bytes(b"\xfd7zXZ\0 nor this an xz stream")
    result = analyze([tmp_path])
    assert {p.source for p in result.problems} == {str(tmp_path / "broken.tar.xz"), str(tmp_path / "broken.zip")}
    assert all("damaged" in p.reason for p in result.problems)


def test_a_huge_member_is_read_in_bounded_chunks(tmp_path):
    rng = random.Random(7)  # lines that compress like a log's (a few times), not like a bomb
    line = b"".join(b"step %d loss %.6f rate %.3f\n" % (i, rng.random(), rng.random() * 1000) for i in range(4000))
    path = tmp_path / "huge.log.gz"
    with gzip.open(path, "wb") as f:
        for _ in range(160):  # 22 MB of text
            f.write(line)
    member = archives.ArchivePath(listing := archives.listing(path), next(iter(listing.files)))
    tracemalloc.start()
    lines = sum(len(c.ends) - 1 for c in textio.chunks(member, size=1 << 20))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert lines == 4000 * 160
    assert peak < 10 << 20, peak


def test_mlperf_score_reads_a_result_folder_in_an_archive(tmp_path):
    repository(tmp_path / "clone")
    path = tmp_path / "v07.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        tar.add(tmp_path / "clone" / "training_results_v0.7", arcname="training_results_v0.7")
    (plain,) = results.score([tmp_path / "clone"])
    (packed,) = results.score([path])
    assert packed.folder == f"{path}!training_results_v0.7/Acme/results/box8/resnet"
    assert (packed.score_minutes, packed.valid, packed.accelerators, packed.round) == \
        (plain.score_minutes, plain.valid, plain.accelerators, plain.round)


def test_a_compressed_tar_read_in_archive_order_is_streamed_once(tmp_path, monkeypatch, log_bytes):
    _tar(tmp_path / "logs.tar.gz", {f"run{i}_gpu1_bs256.log": log_bytes for i in range(6)}, "w:gz")
    opened = []
    monkeypatch.setitem(archives._COMPRESSED, ".gz", lambda raw, mode: opened.append(1) or gzip.open(raw, mode))
    result = analyze([tmp_path / "logs.tar.gz"])
    assert list(result.runs["source"]) == [f"{tmp_path / 'logs.tar.gz'}!run{i}_gpu1_bs256.log" for i in range(6)]
    assert len(opened) == 2  # the listing, then every member in turn
    archives.ArchivePath(archives.listing(tmp_path / "logs.tar.gz"), "run3_gpu1_bs256.log").read_text()
    assert len(opened) == 4  # another listing: its own stream


@pytest.mark.parametrize("name", ["logs.zip", "logs.tar", "logs.tar.gz"])
def test_members_named_out_of_the_archive_are_problems_by_name(tmp_path, log_bytes, name):
    # Issue 38 item 8: `../up.log` and `a/../../b.log` were neither read nor reported ("0 runs").
    WRITERS[name](tmp_path / name, {"../up.log": log_bytes, "a/../../b.log": log_bytes, "ok_gpu1_bs256.log": log_bytes})
    result = analyze([tmp_path / name])
    assert list(result.runs["source"]) == [f"{tmp_path / name}!ok_gpu1_bs256.log"]
    assert {p.source: p.reason for p in result.problems} == {
        f"{tmp_path / name}!{member}": "a name that climbs out of the archive (`..`): refused (a log has a name "
                                       "inside it)" for member in ("../up.log", "a/../../b.log")}


def test_a_zip_is_opened_once_for_all_its_members(tmp_path, monkeypatch, log_bytes):
    # Issue 38 item 3: a ZipFile a member read the whole central directory each time (N members: N**2).
    _zip(tmp_path / "logs.zip", {f"run{i}_gpu1_bs256.log": log_bytes for i in range(40)})
    opened = []
    real = zipfile.ZipFile
    monkeypatch.setattr(archives.zipfile, "ZipFile", lambda *a, **k: opened.append(1) or real(*a, **k))
    result = analyze([tmp_path / "logs.zip"])
    assert list(result.runs["source"]) == [f"{tmp_path / 'logs.zip'}!run{i}_gpu1_bs256.log" for i in range(40)]
    assert len(opened) == 2  # the listing, then every member in turn


def test_members_of_two_zips_read_at_once_and_a_zip_in_a_zip_share_the_openings(tmp_path, log_bytes):
    _zip(tmp_path / "a.zip", {"a.log": log_bytes, "b.log": log_bytes[:100]})
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("x.log", log_bytes[:200])
        zf.writestr("y.log", log_bytes[:300])
    _zip(tmp_path / "b.zip", {"inner.zip": inner.getvalue()})
    a, b = archives.listing(tmp_path / "a.zip"), archives.listing(tmp_path / "b.zip")
    with archives.ArchivePath(a, "a.log").open("rb") as first:
        head = first.read(50)
        x = archives.ArchivePath(b.nested["inner.zip"], "x.log").read_text()  # another zip, while a.log is open
        y = archives.ArchivePath(b.nested["inner.zip"], "y.log").read_text()
        assert head + first.read() == log_bytes
    assert (x, y) == (log_bytes[:200].decode(), log_bytes[:300].decode())
    assert archives.ArchivePath(a, "b.log").read_text() == log_bytes[:100].decode()


def test_mlperf_score_finds_archives_in_a_folder(tmp_path):
    repository(tmp_path / "clone")
    (tmp_path / "mixed").mkdir()
    with zipfile.ZipFile(tmp_path / "mixed" / "v07.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted((tmp_path / "clone").rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(tmp_path / "clone"))
    (packed,) = results.score([tmp_path / "mixed"])
    assert packed.folder == f"{tmp_path / 'mixed' / 'v07.zip'}!training_results_v0.7/Acme/results/box8/resnet"
    assert packed.valid and packed.round == "v0.7" and packed.submitter == "Acme"


@pytest.mark.parametrize("name", ["twice.tar", "twice.tar.gz", "twice.zip"])
def test_two_members_of_one_name_the_last_is_read_as_tar_and_unzip_keep_it_and_said(tmp_path, name):
    # Issue 49 cause 11: the first was read and the second dropped without a word.
    first = (PARAMETER + "".join(_record(step, "900.0") for step in range(1, 5))).encode()
    last = (PARAMETER + "".join(_record(step, "500.0") for step in range(1, 5))).encode()
    path = tmp_path / name
    members = [("tf_gpu1_amp_bs256.log", first), ("other/tf_gpu1_fp32_bs256.log", first),
               ("./tf_gpu1_amp_bs256.log", last)]  # (the same name once cleaned, as tar x writes it)
    if name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as zf:
            for member, data in members:
                zf.writestr(member, data)
    else:
        with tarfile.open(path, "w:gz" if name.endswith(".gz") else "w") as tar:
            for member, data in members:
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    result = analyze([path])
    rates = dict(zip(result.runs["source"], result.runs["recomputed_throughput"], strict=True))
    assert rates == {f"{path}!tf_gpu1_amp_bs256.log": pytest.approx(500.0),
                     f"{path}!other/tf_gpu1_fp32_bs256.log": pytest.approx(900.0)}
    assert [(p.source, p.reason) for p in result.problems] == [
        (f"{path}!tf_gpu1_amp_bs256.log", "2 members of this name: the last one is read, as `tar x` and `unzip` "
                                          "keep it; the one before is not")]


def _encrypted(path, log_bytes, offsets=(6, 8), value=1) -> None:
    """A zip whose second member says it is encrypted (bit 0 of its flags, in its local and central
    headers, as `zip -e` writes it; zipfile itself writes no encrypted member), or (`offsets`, `value`)
    another field of those headers."""
    _zip(path, {"plain.log": log_bytes, "secret.log": log_bytes})
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info, at = zf.getinfo("secret.log"), zf.start_dir
    data[info.header_offset + offsets[0]] |= value  # local file header: general purpose bit flag
    while data[at + 46: at + 46 + len(b"secret.log")] != b"secret.log":  # its central directory header
        at += 46 + sum(int.from_bytes(data[at + k: at + k + 2], "little") for k in (28, 30, 32))
    data[at + offsets[1]] |= value  # the same flag
    path.write_bytes(bytes(data))


def test_an_encrypted_zip_member_is_a_problem_naming_archive_and_member_not_an_internal_error(tmp_path,
                                                                                            log_bytes):
    # Issue 49 cause 16: zipfile's RuntimeError (password required) ended the command as an internal error.
    path = tmp_path / "logs.zip"
    _encrypted(path, log_bytes)
    result = analyze([path])
    assert list(result.runs["source"]) == [f"{path}!plain.log"]
    assert [(p.source, p.reason) for p in result.problems] == [
        (f"{path}!secret.log", "encrypted (a password is needed to read it): not read")]


def test_a_zip_member_of_a_compression_zipfile_lacks_is_a_problem_naming_it(tmp_path, log_bytes):
    path = tmp_path / "logs.zip"
    _encrypted(path, log_bytes, offsets=(8, 10), value=0x60)  # method 8 (deflate) | 0x60: 104, none known
    result = analyze([path])
    assert list(result.runs["source"]) == [f"{path}!plain.log"]
    (problem,) = result.problems
    assert problem.source == f"{path}!secret.log" and problem.reason.startswith("cannot be read (")
    assert "internal error" not in problem.reason
