"""The notebooks' kernel, as `make setup` installs it into the project's environment
(`.venv/etc/ipython/`). Two lines of its log are left out of the terminal; its other messages are kept:
- a kernel that papermill or JupyterLab starts on this machine talks to it over local TCP, and its
  start-up warning that this is not encrypted was printed by every `papermill notebooks/X.ipynb ...`;
- jupyter_client's shutdown_kernel always interrupts the kernel (SIGINT) before asking it to shut down
  (jupyter_client/manager.py, `_async_shutdown_kernel`); under load that signal can land while the kernel
  still finishes the handler of the last cell's request, after its reply, and ipykernel then logs
  "KeyboardInterrupt caught in kernel" (ipykernel/kernelbase.py, `dispatch_shell`). The cell had ended;
  an interrupt inside a cell is that cell's KeyboardInterrupt error, which stays in the notebook."""

import logging

LEFT_OUT = ("Kernel is running over TCP without encryption", "KeyboardInterrupt caught in kernel")


class NotTheShutdownNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(LEFT_OUT)


c = get_config()  # noqa: F821 -- given by IPython when it reads this file
c.IPKernelApp.logging_config = {"filters": {"quiet": {"()": NotTheShutdownNoise}},
                                "handlers": {"console": {"filters": ["quiet"]}}}
