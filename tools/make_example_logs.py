"""Write the project's example logs: synthetic runs in each NGC format, for demos and smoke tests.

The rates are drawn from a seeded generator around made-up means, so the files are the same on
every machine; they show the formats (rank tags, several runs in a file, summary tables), not any
real hardware. Usage: python tools/make_example_logs.py examples/logs
"""

from __future__ import annotations

import math
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

T0 = datetime(2026, 1, 5, 9, 0, 0)


def tf1_run(rng: random.Random, gpus: int, batch: int, amp: bool, iters: int = 120, warmup: int = 20) -> str:
    per_gpu = (900.0 if amp else 360.0) * (batch / 128) ** 0.05
    rate = per_gpu * gpus * (0.97 if gpus > 1 else 1.0)
    t = T0
    lines = [f"DLL {t:%Y-%m-%d %H:%M:%S.%f} - PARAMETER arch : resnet50  mode : training_benchmark  "
             f"data_dir : /data/tfrecords  batch_size : {batch}  num_iter : {iters}  iter_unit : batch  "
             f"warmup_steps : {warmup}  display_every : 1  use_xla : True  use_dali : True  "
             f"use_tf_amp : {amp}  precision : {'fp16' if amp else 'fp32'} ",
             f"Num GPUs {gpus}", f"Per-GPU Batch Size {batch}", "Starting Model Training..."]
    rates = []
    for step in range(iters):
        r = rate * (0.6 if step < 3 else 1.0) * rng.uniform(0.97, 1.03)
        t += timedelta(seconds=gpus * batch / r)
        lines.append(f"DLL {t:%Y-%m-%d %H:%M:%S.%f} - (0, {step}) total_ips : {r} ")
        if step >= warmup:
            rates.append(r)
    lines += ["Ending Model Training ...",
              f"DLL {t:%Y-%m-%d %H:%M:%S.%f} - () train_throughput : {math.fsum(rates) / len(rates)} images/s "]
    return "\n".join(lines) + "\n"


def mxnet_file(rng: random.Random, batch: int, amp: bool) -> str:
    out = []
    for gpus in (1, 8):
        ranks = range(gpus)
        rate = (1200.0 if amp else 370.0) * gpus * (0.96 if gpus > 1 else 1.0)
        args = (f"amp=False, arch='resnetv15', batch_size={batch * gpus}, data_backend='dali-gpu', "
                f"dtype='{'float16' if amp else 'float32'}', gpus={list(range(gpus))}, kv_store='horovod', "
                f"mode='train', num_epochs=3, report='benchmark_report.json-{gpus},{batch}'")
        t = T0
        for r in ranks:
            out.append(f"[1,{r}]<stderr>:{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}:INFO: "
                       f"Start with arguments Namespace({args})")
        means = []
        for epoch in range(3):
            for a in range(0, 200, 20):
                r_ = rate * rng.uniform(0.98, 1.02)
                t += timedelta(seconds=20 * batch * gpus / r_)
                if epoch:
                    means.append(r_)
                for r in ranks:
                    out.append(f"[1,{r}]<stderr>:{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}:INFO: "
                               f"Epoch[{epoch}] Batch [{a}-{a + 19}]\tSpeed: {r_ * rng.uniform(0.999, 1.001)} "
                               f"samples/sec\tLR: 0.1\t")
        for r in ranks:
            out.append(f"[1,{r}]<stderr>:{t:%Y-%m-%d %H:%M:%S},000:INFO: Experiment took: 60.0 sec")
        out.append(f"# mean {sum(means) / len(means):.5g}")
    totals = [line.split()[-1] for line in out if line.startswith("# mean")]
    out = [line for line in out if not line.startswith("# mean")]
    out += ["train.total_ips", f"           |    {batch}    |", "------------------------",
            f"     1     |   {totals[0]}  |", f"     8     |   {totals[1]}  |", ""]
    return "\n".join(out) + "\n"


def maskrcnn_file(rng: random.Random, gpus: int, batch: int, amp: bool) -> str:
    p = "[1,0]<stdout>:[MaskRCNN] INFO    : "
    out = [p + "Horovod successfully initialized ..."]
    if amp:
        out.append(p + "[train] AMP is activated - Experiment Feature")
    out.append(p + "[train] XLA is activated - Experiment Feature")
    rate = (9.0 if amp else 5.5) * gpus * (0.85 if gpus > 1 else 1.0) * (1 + (batch - 2) * 0.04)
    t = 1767600000.0
    logged = []
    for it in range(5, 205, 5):
        r = round(rate * rng.uniform(0.97, 1.03) * (0.02 if it == 5 else 1.0), 1)
        t += 5 * batch * gpus / max(r, 0.1)
        logged.append(r)
        out += [p + f"timestamp: {t}", p + f"iteration: {it}", p + f"throughput: {r} samples/sec",
                p + f"Total loss: {round(3.0 - it / 150, 5)}", "[1,0]<stdout>:"]
    out += [p + "Average throughput: " + str(logged[-1]) + " samples/sec", p + "Total processed steps: 200",
            p + "Total processing time: 0h 03m 00s", p + "Job finished with status: `SUCCESS`", "-" * 80,
            f'horovodrun -np {gpus} python /workspace/mask_rcnn_main.py --mode train --total_steps 200 '
            f'--xla --train_batch_size {batch}{" --amp" if amp else ""}', "-" * 80]
    return "\n".join(out) + "\n"


def main(folder: str) -> None:
    root = Path(folder)
    rng = random.Random(20260105)
    for gpus, nodes_dir in ((1, "1n1g"), (4, "1n4g"), (8, "1n8g")):
        for prec, batch in (("fp32", 128), ("amp", 224)):
            for repeat in (1, 2, 3):
                path = root / "ngc-tf1-resnet50" / nodes_dir / f"r50_b{batch}_{prec}_{repeat}.log"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(tf1_run(rng, gpus, batch, prec == "amp"))
    for prec in ("fp32", "amp"):
        path = root / "ngc-mxnet-resnet50" / f"mxnet_gpu1_gpu8_{prec}_bs96.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(mxnet_file(rng, 96, prec == "amp"))
        for gpus in (1, 8):
            path = root / "ngc-tf2-maskrcnn" / f"tf_gpu{gpus}_{prec}_bs2.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(maskrcnn_file(rng, gpus, 2, prec == "amp"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/logs")
