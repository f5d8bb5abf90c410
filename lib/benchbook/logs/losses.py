"""The loss components a log prints beside each record's total loss, as a tidy frame.

NGC TF2 Mask R-CNN prints, after each logged block's throughput, `FastRCNN box loss: 0.52801`,
`Mask loss`, `RPN total loss`... (NVIDIA/DeepLearningExamples TensorFlow2/Segmentation/MaskRCNN
mask_rcnn/hooks/logging_hook.py: one line a metric of the block). The parser gives them as
columns a chunk (`events.LOSSES`); here each gets its run (the run whose lines hold it) and its
iteration (that of the run's last record at or before its line). Formats that log no component
give an empty frame with the same columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .assemble import RunDraft

LOSS_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the loss component",
    "iteration": "iteration of the run's last record at or before that line (-1 when none)",
    "component": "the component's name as logged, e.g. \"FastRCNN box loss\"",
    "value": "its value as logged",
}


def file_losses(chunks: list[dict], drafts: list[RunDraft], records: dict[str, np.ndarray]) -> dict:
    """The loss components of a file as columns run, line, iteration, value, and component (codes
    into `names`). `records` are the file's record columns with their `run` (analysis)."""
    import numpy as np

    names = sorted({name for c in chunks for name in c["names"]})
    if not chunks:
        return {"run": np.empty(0, np.int64), "line": np.empty(0, np.int64), "iteration": np.empty(0, np.int64),
                "component": np.empty(0, np.int32), "value": np.empty(0, float), "names": names}
    line = np.concatenate([c["line"] for c in chunks])
    value = np.concatenate([c["value"] for c in chunks])
    code = {name: i for i, name in enumerate(names)}
    component = np.concatenate([np.array([code[n] for n in c["names"]], dtype=np.int32)[c["component"]]
                                for c in chunks])
    # A run's lines reach up to where the next run starts (a component before the first run is the first's).
    run = np.maximum(np.searchsorted([d.first_line for d in drafts], line, side="right") - 1, 0)
    last = np.searchsorted(records["line"], line, side="right") - 1  # the file's records are in line order
    own = (last >= 0) & (records["run"][np.maximum(last, 0)] == run)
    iteration = np.where(own, records["iteration"][np.maximum(last, 0)], -1)
    return {"run": run.astype(np.int64), "line": line, "iteration": iteration.astype(np.int64),
            "component": component, "value": value, "names": names}


def frame(files: list[tuple[str, dict]]) -> pd.DataFrame:
    """One frame of the loss components of every file, LOSS_COLUMNS in order. `source` and
    `component` are categorical: millions of rows repeat a few names."""
    import numpy as np
    import pandas as pd

    files = [(source, cols) for source, cols in files if len(cols["line"])]
    names = sorted({name for _, cols in files for name in cols["names"]})
    code = {name: i for i, name in enumerate(names)}
    sizes = [len(cols["line"]) for _, cols in files]
    data = {"source": pd.Categorical.from_codes(np.repeat(np.arange(len(files)), sizes),
                                                categories=pd.Index([source for source, _ in files], dtype=object))}
    for name in ("run", "line", "iteration", "value"):
        data[name] = np.concatenate([cols[name] for _, cols in files]) if files else \
            np.empty(0, float if name == "value" else np.int64)
    own = [np.array([code[n] for n in cols["names"]], dtype=np.int32)[cols["component"]] for _, cols in files]
    data["component"] = pd.Categorical.from_codes(np.concatenate(own) if own else np.empty(0, np.int32),
                                                  categories=pd.Index(names, dtype=object))
    return pd.DataFrame(data, columns=list(LOSS_COLUMNS))
