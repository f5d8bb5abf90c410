"""The notebooks' kernel, as `make setup` installs it into the project's environment
(`.venv/etc/ipython/`): a kernel that papermill or JupyterLab starts on this machine talks to it over
local TCP, and its start-up warning that this is not encrypted is left out of the terminal (every
`papermill notebooks/X.ipynb ...` printed it); its other messages are kept."""

import logging


class NotTheTcpWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Kernel is running over TCP without encryption")


c = get_config()  # noqa: F821 -- given by IPython when it reads this file
c.IPKernelApp.logging_config = {"filters": {"not_tcp": {"()": NotTheTcpWarning}},
                                "handlers": {"console": {"filters": ["not_tcp"]}}}
