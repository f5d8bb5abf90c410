"""The model registry: one module per model, each registering a `ModelSpec` (see spec.py).

Adding a model is adding a module here (and importing it below), its study files under params/, its
references under params/references/, and its tests; nothing else in the library names a model.
"""

from __future__ import annotations

from .spec import (
    CommandBuilder,
    DataLayout,
    ModelSpec,
    ReferenceReport,
    flags,
    framework_workload,
    get,
    names,
    of_logs,
    register,
    specs,
    workload_script,
)

# Registration, in the order that error messages and choices list the models.
from . import resnet50_tf, resnet50_mxnet, maskrcnn_tf2, resnet50_pytorch  # noqa: E402,F401,I001  isort:skip

__all__ = ["CommandBuilder", "DataLayout", "ModelSpec", "ReferenceReport", "flags", "framework_workload", "get",
           "names", "of_logs", "register", "specs", "workload_script"]
