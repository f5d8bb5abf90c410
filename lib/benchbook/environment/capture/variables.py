"""The environment variables that change what the frameworks and libraries do, secrets redacted."""

from __future__ import annotations

import re

# Variables that change what the frameworks and libraries do (recorded in `variables`).
VARIABLE_PREFIXES = ("NCCL_", "TF_", "MXNET_", "HOROVOD_", "UCX_", "OMPI_MCA_", "CUDNN_")
VARIABLE_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
                  "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME")
# Names that match a prefix but are not behaviour: Terraform's TF_* settings (TF_VAR_* and TF_TOKEN_*
# may hold secrets), and version variables (NCCL_VERSION, MXNET_VERSION) that containers set and
# `container` records.
_NOT_VARIABLES = re.compile(r"^TF_(VAR|TOKEN|CLI|REGISTRY)_|^TF_(LOG|LOG_PATH|LOG_CORE|LOG_PROVIDER|INPUT|WORKSPACE|"
                            r"IN_AUTOMATION|DATA_DIR|PLUGIN_CACHE_DIR|IGNORE|APPEND_USER_AGENT)$|_VERSION$")
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_KEY|PRIVATE", re.IGNORECASE)


def variables(env: dict[str, str]) -> dict[str, str]:
    """The environment variables that change what the libraries do; secrets-like names redacted."""
    out = {}
    for name in sorted(env):
        if (name in VARIABLE_NAMES or name.startswith(VARIABLE_PREFIXES)) and not _NOT_VARIABLES.search(name):
            out[name] = "<redacted>" if _SECRET.search(name) else env[name]
    return out
