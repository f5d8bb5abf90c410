"""The data preparation commands of the published reports, per data layout (`benchbook check --data-prep`).

Kept next to the data checks, whose layouts they produce; nothing here runs a command.
"""

from __future__ import annotations

import posixpath

from ..study import Study
from .data import CHECKPOINT, CHECKPOINT_DIR, WEIGHTS_MOUNT

_IMAGENET_RAW = [
    "# ImageNet (ILSVRC2012) from image-net.org, extracted into one folder per class "
    "(DeepLearningExamples' README):",
    "mkdir train && mv ILSVRC2012_img_train.tar train/ && cd train",
    "tar -xvf ILSVRC2012_img_train.tar && rm -f ILSVRC2012_img_train.tar",
    'find . -name "*.tar" | while read NAME ; do mkdir -p "${NAME%.tar}"; tar -xvf "${NAME}" -C "${NAME%.tar}"; '
    'rm -f "${NAME}"; done',
    "cd ..",
    "mkdir val && mv ILSVRC2012_img_val.tar val/ && cd val && tar -xvf ILSVRC2012_img_val.tar",
    "wget -qO- https://raw.githubusercontent.com/soumith/imagenetloader.torch/master/valprep.sh | bash",
    "cd ..",
]


_BERT = {  # the data layout: the script that downloads and builds it, and what it writes
    "bert_parquet": ("data/create_datasets_from_start.sh", "Wikipedia as LDDL's phase 1 parquet shards"),
    "bert_tfrecords": ("scripts/data_download.sh", "Wikipedia and BookCorpus as the phase 1 and 2 TFRecords "
                       "(tfrecord/) with Google's pretrained configuration (download/)"),
}


def data_preparation(study: Study) -> list[str]:
    """The data preparation of the published reports for the study's data layout, as shell lines ('#' lines
    explain).

    Paths are the study's: the container paths (data.mount, data.dali_index) and the code's workdir,
    which are the published ones in the shipped studies. CPU studies need none (empty list).
    """
    if study.runtime == "cpu":
        return []
    d, workdir = study.data, study.code.workdir
    host, layout = d.path or "DATA", study.spec.data_layout
    if layout == "imagenet_tfrecords":
        lines = [*_IMAGENET_RAW,
                 "# TFRecords: 1024 train and 128 validation shards (train-00000-of-01024 ..., validation-00000-of-"
                 "00128); the reports do not print this step, the usual converter is tensorflow/models "
                 "research/inception/inception/data/build_imagenet_data.py:",
                 f"python build_imagenet_data.py --train_directory=train --validation_directory=val "
                 f"--output_directory={host} --labels_file=imagenet_lsvrc_2015_synsets.txt "
                 "--imagenet_metadata_file=imagenet_metadata.txt --bounding_box_file=imagenet_2012_bounding_boxes.csv"]
        idx = d.dali_index or "/data/dali_idx"
        enter = f"docker exec -it {study.container.name} /bin/bash" if study.container.mode == "exec" else \
            f"docker run -it --rm -v {host}:{d.mount} {study.container.image} /bin/bash"
        lines += ["# DALI index files, one per shard, inside the container (DLPerf's README):", enter,
                  f"cd {workdir} && mkdir {idx}", f"bash ./utils/dali_index.sh {d.mount} {idx}"]
        return lines
    if layout == "imagenet_folders":  # main.py reads the extracted folders themselves
        return [*_IMAGENET_RAW,
                f"# then move train/ and val/ into {host} (mounted at {d.mount}); nothing else to build"]
    if layout in _BERT:
        script, what = _BERT[layout]
        return [f"# {what}, built inside the container with {host} mounted at {d.mount} (the repository's README):",
                f"docker run -it --rm -v {host}:{d.mount} {study.container.image} /bin/bash",
                f"cd {workdir} && bash {script}"]
    if layout == "imagenet_recordio":
        return [*_IMAGENET_RAW,
                f"# RecordIO (train.rec/.idx, val.rec/.idx), inside the container with the raw ImageNet (train/, val/) "
                f"mounted at /ILSVRC2012 and {host} at {d.mount}:",
                f"docker run -it --rm -v $PWD:/ILSVRC2012 -v {host}:{d.mount} {study.container.image} /bin/bash",
                f"cd {workdir} && ./scripts/prepare_imagenet.sh /ILSVRC2012 {d.mount}"]
    weights = next((h for h, m in study.container.mounts.items() if posixpath.normpath(m) == WEIGHTS_MOUNT),
                   "WEIGHTS")
    return ["# COCO 2017 TFRecords (train-*-of-00256.tfrecord, val-*-of-00032.tfrecord), inside the container "
            f"with {host} mounted at /data:",
            f"docker run -it --rm --gpus all -v {host}:/data {study.container.image} /bin/bash",
            f"cd {workdir}", "cd dataset && bash download_and_preprocess_coco.sh /data",
            f"# the pretrained ResNet-50 backbone ({CHECKPOINT_DIR}/{CHECKPOINT}), mounted at {WEIGHTS_MOUNT}:",
            f"cd {workdir} && ./download_and_process_pretrained_weights.sh   # writes weights/resnet/...",
            f"# then copy weights/ to {weights} on the host (container.mounts: {weights}: {WEIGHTS_MOUNT})"]
