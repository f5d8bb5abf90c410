"""ResNet-50 v1.5 training with PyTorch, on the CPU or on one GPU.

Run with the Python of an environment that has torch, numpy and scikit-learn (see
requirements/pytorch.txt, or a Python named by BENCHBOOK_PYTHON_PYTORCH); benchbook itself need
not be installed there:

    python resnet50_pytorch.py --mode training_benchmark --batch_size 8 --image_size 32 --threads 2
    python resnet50_pytorch.py --mode train_and_evaluate --image_size 32 --batch_size 32
    python resnet50_pytorch.py --device cuda --precision amp --batch_size 256 --image_size 224 \\
        --num_iter 120 --warmup_steps 20 --channels_last

The network is torchvision's `resnet50` (v1.5: stride 2 in each first bottleneck's 3x3 conv, not
its 1x1) written out here, since no CPU build of torchvision is at hand. Precisions: `fp32`;
`bf16` (autocast to bfloat16, CPU or GPU); on a GPU `tf32` (TF32 matmuls and convolutions, as
NGC's A100 numbers) and `amp` (autocast to float16 with a GradScaler, NVIDIA's `--amp`). `fp32` on a
GPU turns TF32 off. `--channels_last` is NVIDIA's `--memory-format nhwc`; `--compile` runs the model
through `torch.compile` (compiled during the first steps: keep them in the warm-up). Each step's
time is taken around the step and the loss's `.item()`, which waits for the device. `--threads N`
sets torch's intra- and inter-op threads.
"""

from __future__ import annotations

import argparse
import sys

if __package__:
    from . import _common as common
else:  # run as a script: the sibling module is on sys.path
    import _common as common

WORKLOAD = "resnet50_pytorch"
FRAMEWORK = "pytorch"
GPU_PRECISIONS = ("fp32", "tf32", "amp", "bf16")


def split_args(argv=None) -> tuple[argparse.Namespace, list[str]]:
    """This script's own options (device, precision, memory format, compile), and the rest for
    the shared command line (_common), whose --precision knows only fp32 and bf16."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--precision", choices=GPU_PRECISIONS, default="fp32")
    p.add_argument("--channels_last", action="store_true", help="NHWC memory format (NVIDIA's --memory-format nhwc)")
    p.add_argument("--compile", action="store_true", help="torch.compile the train step")
    own, rest = p.parse_known_args(argv)
    if "-h" in rest or "--help" in rest:
        p.print_help()
    shared = "bf16" if own.precision == "bf16" else "fp32"
    return own, [*rest, "--precision", shared]


def build_model(torch, num_classes: int):
    """ResNet-50 v1.5 as torchvision builds it: Bottleneck with the stride on conv2 (the 3x3), He
    (fan_out) conv weights, BatchNorm gammas 1 (torchvision's zero_init_residual and NVIDIA's
    --last-bn-0-init are off by default)."""
    nn = torch.nn

    def bn(channels: int):
        # PyTorch's momentum is the weight of the new batch: 1 - 0.9.
        return nn.BatchNorm2d(channels, eps=common.BN_EPSILON, momentum=1.0 - common.BN_MOMENTUM)

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int):
            super().__init__()
            out = width * common.EXPANSION
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), bn(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False), bn(width)
            self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), bn(out)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != out:
                self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride=stride, bias=False), bn(out))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            return self.relu(self.bn3(self.conv3(y)) + identity)

    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), bn(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, stride=2, padding=1)]
    cin = 64
    for stage, (blocks, width) in enumerate(zip(common.LAYERS, common.WIDTHS, strict=True)):
        for block in range(blocks):
            layers.append(Bottleneck(cin, width, 2 if stage > 0 and block == 0 else 1))
            cin = width * common.EXPANSION
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    return model


def precision_problem(torch, own: argparse.Namespace) -> str | None:
    """Why this precision cannot run on this device (None when it can)."""
    if own.device == "cuda" and not torch.cuda.is_available():
        return f"--device cuda: this PyTorch {torch.__version__} sees no CUDA device"
    if own.device == "cpu" and own.precision in ("tf32", "amp"):
        return f"--precision {own.precision} is a GPU precision; on the CPU use fp32 or bf16"
    if own.device == "cuda" and own.precision == "bf16" and not torch.cuda.is_bf16_supported():
        return "--precision bf16: this GPU has no bfloat16 support"
    return None


def main(argv=None) -> int:
    own, rest = split_args(argv)
    args = common.parse_args(FRAMEWORK, rest)
    import numpy as np
    import torch

    problem = precision_problem(torch, own)
    if problem:
        common.reject(problem)
    args.precision = own.precision  # the Summary and PARAMETER line name what ran
    if args.threads:
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    device = torch.device(own.device)
    if own.device == "cuda":  # TF32 only where asked: fp32 means full FP32 (NVIDIA's V100 column)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = own.precision == "tf32"
        torch.backends.cudnn.benchmark = True
    logger = common.DLLogger()
    pairs = common.parameters(args, workload=WORKLOAD, framework=FRAMEWORK, version=torch.__version__)
    gpus = 1 if own.device == "cuda" else 0
    pairs = [("device", own.device) if k == "device" else ("gpus", gpus) if k == "gpus" else (k, *v)
             for k, *v in pairs]
    pairs += [("channels_last", own.channels_last), ("compile", own.compile)]
    if own.device == "cuda":
        pairs += [("gpu_name", torch.cuda.get_device_name(0).replace("  ", " "))]
    start = logger.log("PARAMETER", pairs)

    memory = torch.channels_last if own.channels_last else torch.contiguous_format
    model = build_model(torch, args.num_classes).to(device, memory_format=memory)
    # Weight decay on conv and linear weights only (not BatchNorm, not biases), as in the other scripts.
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    optimizer = torch.optim.SGD([{"params": decay, "weight_decay": args.weight_decay},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    cast = {"bf16": torch.bfloat16, "amp": torch.float16}.get(own.precision)
    scaler = torch.amp.GradScaler("cuda") if own.precision == "amp" else None

    net = torch.compile(model) if own.compile else model  # compiled on the first step (a warm-up step)

    def forward_backward(x, y):
        with torch.autocast(own.device, dtype=cast or torch.float32, enabled=cast is not None):
            loss = loss_fn(net(x).float(), y)
        (scaler.scale(loss) if scaler else loss).backward()
        return loss

    def put(x, y):
        xt = torch.from_numpy(np.ascontiguousarray(x)).to(device, non_blocking=True)
        return xt.contiguous(memory_format=memory), torch.from_numpy(np.asarray(y, dtype=np.int64)).to(device)

    def step(x, y, lr):
        model.train()
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        loss = forward_backward(x, y)
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        return loss.item()  # waits for the device: the step has finished

    def predict(x):
        model.eval()
        with torch.no_grad(), torch.autocast(own.device, dtype=cast or torch.float32, enabled=cast is not None):
            return net(x).float().cpu().numpy()

    hooks = common.Hooks(put=put, train_step=step, predict=predict, layout="NCHW")
    common.run(args, logger, hooks, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
