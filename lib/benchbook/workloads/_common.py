"""What the ResNet-50 training scripts share: command line, DLLogger lines, data, timing, the loop.

The scripts run with the Python of a framework's own virtual environment, where benchbook is not
installed, so these modules import only the standard library and numpy (scikit-learn lazily, for
the digits data; mpi4py lazily, for more than one MPI rank). A script imports this module as a
sibling (`import _common`) and uses every shared name through it; benchbook's tests import it as
`benchbook.workloads._common`. It gathers its parts, each importing its siblings the same two
ways: `_common_cli` (command line, PARAMETER pairs), `_common_dllogger` (log lines),
`_common_timing` (step records, Summary, learning rate), `_common_data` (synthetic and digits
data, top-k), `_common_mpi` (processes and MPI ranks), `_common_loop` (the loop), `_common_mllog` (MLPerf's
MLLOG records, `--mllog`) and `_common_resnet` (ResNet-50's shape, the Keras builder).

The framework scripts supply three functions to `run`:

- `put(x, y)`: numpy batch (images in the script's layout, int labels) -> device tensors;
- `train_step(x, y, lr) -> float`: one SGD step on device tensors, returning the loss as a
  Python float, which synchronises (the step has finished when it returns);
- `predict(x) -> numpy logits`: inference-mode forward pass, synchronised;

and, for data-parallel runs, `sync()`: make the ranks' model state one and check it.

Log lines follow NVIDIA DLLogger's stdout format, the one the NGC TensorFlow and MXNet ResNet-50
scripts print: `DLL <date> <time> - <step> key : value [unit]  key : value ...`, pairs two spaces
apart, one line per iteration, one `Epoch: E` line per evaluation and a `Summary:` line last.

Data-parallel training across MPI ranks (TensorFlow; `mpirun -np N python resnet50_tf.py ...`): a
script asks `launched_size()` (the launcher's environment variables, nothing imported) and
`connect()` (mpi4py, imported only for more than one rank) for its `World`, and passes it to
`run`. Every rank trains on its own shard of each global batch of `batch_size x processes`
images (rank r takes rows r*b..(r+1)*b-1 of it: synthetic images of the global batch's seed, or a
slice of the digits' shared shuffled order); the script averages the gradients across ranks
(one Allreduce per step) so that all ranks apply the same update. Only rank 0 prints DLLogger
lines, and they speak for the whole job: `train.ips` is `processes x batch_size / step time`
(global images/s, as the Horovod-based NGC scripts report), the PARAMETER line carries
`processes : N`, and the logged loss is the mean over ranks. Evaluation is sharded: each rank
scores its contiguous part of the validation split and the counts are summed with Allreduce, so
every rank knows the same accuracy; the time-to-train stop decision is rank 0's, broadcast, so no
rank waits for one that has stopped. Before each evaluation and at the end the script's `sync`
hook makes the ranks' state one (BatchNorm moving statistics averaged) and checks that every rank
holds the same weights.
"""

from __future__ import annotations

try:
    from ._common_cli import DATASETS, MODEL, MODES, PRECISIONS, build_parser, parameters, parse_args, reject
    from ._common_data import (
        VAL_FRACTION,
        Digits,
        epoch_order,
        eval_batches,
        load_digits,
        split_indices,
        synthetic,
        to_layout,
        topk_loss,
        upsample,
    )
    from ._common_dllogger import TIMESTAMP, DLLogger, format_line, format_pairs, format_step, format_value
    from ._common_loop import Hooks, Result, evaluate, run
    from ._common_mllog import MLPerfLog
    from ._common_mpi import (
        ALIGN,
        RANK_VARS,
        SIZE_VARS,
        MpiWorld,
        World,
        aligned_empty,
        connect,
        diverged,
        fingerprint,
        launched_size,
        shard,
        synthetic_shard,
    )
    from ._common_resnet import BN_EPSILON, BN_MOMENTUM, EXPANSION, LAYERS, WIDTHS, keras_resnet50_stages
    from ._common_timing import StepRecord, Summary, lr_at, step_pairs, summarize
except ImportError:  # run as a script's sibling file (`import _common`), not as a package
    from _common_cli import DATASETS, MODEL, MODES, PRECISIONS, build_parser, parameters, parse_args, reject
    from _common_data import (
        VAL_FRACTION,
        Digits,
        epoch_order,
        eval_batches,
        load_digits,
        split_indices,
        synthetic,
        to_layout,
        topk_loss,
        upsample,
    )
    from _common_dllogger import TIMESTAMP, DLLogger, format_line, format_pairs, format_step, format_value
    from _common_loop import Hooks, Result, evaluate, run
    from _common_mllog import MLPerfLog
    from _common_mpi import (
        ALIGN,
        RANK_VARS,
        SIZE_VARS,
        MpiWorld,
        World,
        aligned_empty,
        connect,
        diverged,
        fingerprint,
        launched_size,
        shard,
        synthetic_shard,
    )
    from _common_resnet import BN_EPSILON, BN_MOMENTUM, EXPANSION, LAYERS, WIDTHS, keras_resnet50_stages
    from _common_timing import StepRecord, Summary, lr_at, step_pairs, summarize

# Every shared name, for the scripts (`common.<name>`).
__all__ = ["ALIGN", "BN_EPSILON", "BN_MOMENTUM", "DATASETS", "EXPANSION", "LAYERS", "MODEL", "MODES", "PRECISIONS",
           "RANK_VARS", "SIZE_VARS", "TIMESTAMP", "VAL_FRACTION", "WIDTHS", "DLLogger", "Digits", "Hooks", "MLPerfLog",
           "MpiWorld", "Result", "StepRecord", "Summary", "World", "aligned_empty", "build_parser", "connect",
           "diverged", "epoch_order", "eval_batches", "evaluate", "fingerprint", "format_line", "format_pairs",
           "format_step", "format_value", "keras_resnet50_stages", "launched_size", "load_digits", "lr_at",
           "parameters", "parse_args", "reject", "run", "shard", "split_indices", "step_pairs", "summarize",
           "synthetic", "synthetic_shard", "to_layout", "topk_loss", "upsample"]
