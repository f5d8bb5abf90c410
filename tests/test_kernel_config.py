"""notebooks/ipython/ipython_kernel_config.py, the kernel `make setup` configures: what it leaves out of the
terminal, tried on a real kernel."""

from __future__ import annotations

import os
import shutil
import signal
import time

from jupyter_client.manager import KernelManager

from conftest import ROOT

SLOW_HANDLER = """
import pathlib, time
def slow_complete(*args):
    pathlib.Path({marker!r}).touch()
    time.sleep(20)
get_ipython().kernel.shell_handlers["complete_request"] = slow_complete
"""


def _kernel_stderr_after_an_interrupt_inside_a_handler(tmp_path, config):
    """Start a kernel with the configuration file `config` (its profile's, read after the environment's),
    let a request's handler run outside any cell, interrupt it there as jupyter_client's shutdown_kernel does,
    and return what the kernel wrote to stderr."""
    ipython = tmp_path / "ipython"
    (ipython / "profile_default").mkdir(parents=True)
    shutil.copy(config, ipython / "profile_default" / "ipython_kernel_config.py")
    marker, stderr = tmp_path / "in-handler", tmp_path / "kernel.stderr"
    manager = KernelManager(kernel_name="python3")
    with open(stderr, "w") as err:
        manager.start_kernel(env={**os.environ, "IPYTHONDIR": str(ipython)}, stderr=err)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        client.execute_interactive(SLOW_HANDLER.format(marker=str(marker)), timeout=60)
        client.complete("x")
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the kernel never ran the request's handler"
        manager.signal_kernel(signal.SIGINT)
        client.execute_interactive("1", timeout=60)  # the kernel has logged what the interrupt made it log
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return stderr.read_text(encoding="utf-8")


def test_an_interrupt_outside_any_cell_leaves_no_error_on_the_terminal(tmp_path):
    """jupyter_client interrupts the kernel before every shutdown; landing inside a handler, after the last
    cell, it made ipykernel log "KeyboardInterrupt caught in kernel" on papermill's terminal under load."""
    unfiltered = tmp_path / "unfiltered.py"  # the kernel's own logging, whatever .venv/etc/ipython holds
    unfiltered.write_text("c = get_config()\nc.IPKernelApp.logging_config = {}\n", encoding="utf-8")
    assert "KeyboardInterrupt caught in kernel" in _kernel_stderr_after_an_interrupt_inside_a_handler(
        tmp_path / "bare", unfiltered)  # what the configuration leaves out is there without it
    said = _kernel_stderr_after_an_interrupt_inside_a_handler(
        tmp_path / "ours", ROOT / "notebooks" / "ipython" / "ipython_kernel_config.py")
    assert "KeyboardInterrupt" not in said, said
