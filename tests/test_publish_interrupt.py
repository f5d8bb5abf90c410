"""Ctrl-C during a publish's kernel start ends `benchbook publish` with exit 130, wherever it lands (issue 38, 4).

The publish runs in a process group of its own. Each case stops it at a named point of the kernel's start (the
test wraps the library function there: no hook in benchbook), waits until it is there, then sends SIGINT to the
group, as a terminal's Ctrl-C does. The HTML exporter made beside the kernel is one that never ends: what a thread
that imports meets when the interrupt leaves CPython's import lock held by the main thread (publish then waited
for it forever, `futex_wait`, the entry left `publishing`).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
EXIT_BOUND_S = 60  # a publish whose exit waits for a thread that never ends waits forever; under load it takes ~10 s

CHILD = r"""
import asyncio, os, signal, sys, threading, time
from pathlib import Path

signal.signal(signal.SIGINT, signal.default_int_handler)  # started from a background job, it may be ignored
import jupyter_client.provisioning.local_provisioner as provisioner
from jupyter_client.asynchronous.client import AsyncKernelClient
from papermill.engines import NotebookExecutionManager

from benchbook import cli
from benchbook.reports import publish

point, marker = sys.argv[1], Path(sys.argv[2])


def pause(name):
    if name == point:
        marker.write_text(name)
        time.sleep(300)  # interrupted by the test's SIGINT


def after(name, function):
    def wrapped(*args, **kwargs):
        result = function(*args, **kwargs)
        pause(name)
        return result
    return wrapped


async def ready(self, *args, **kwargs):
    await waiting(self, *args, **kwargs)
    pause("kernel replied")

waiting = AsyncKernelClient.wait_for_ready
provisioner.launch_kernel = after("kernel process started", provisioner.launch_kernel)
AsyncKernelClient.start_channels = after("channels open", AsyncKernelClient.start_channels)
AsyncKernelClient.wait_for_ready = ready
NotebookExecutionManager.cell_start = after("first cell starts", NotebookExecutionManager.cell_start)
publish._html_exporter = lambda: threading.Event().wait()  # a thread that never ends
sys.exit(cli.main(sys.argv[3:]))
"""


@pytest.mark.parametrize("point", ["kernel process started", "channels open", "kernel replied", "first cell starts"])
def test_ctrl_c_during_the_kernel_start_ends_publish_with_130(tmp_path, point):
    marker, reports = tmp_path / "paused", tmp_path / "reports"
    argv = ["publish", "--logs", str(FIXTURES / "ngc_tf1"), "--model", "resnet50_tf", "--reports", str(reports),
            "--force", "--quiet"]
    child = subprocess.Popen([sys.executable, "-c", CHILD, point, str(marker), *argv], start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        began = time.monotonic()
        while not marker.exists():  # the publish reaches the point at its own pace
            assert child.poll() is None, child.communicate()
            assert time.monotonic() - began < 600, f"publish never reached {point!r}"
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGINT)
        try:
            out, err = child.communicate(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"publish still running {EXIT_BOUND_S} s after Ctrl-C at {point!r}")
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
    assert marker.read_text() == point
    assert child.returncode == 130 and "benchbook: interrupted" in err, (out, err)
    entry = json.loads((reports / "ngc_tf1" / "entry.json").read_text())
    assert entry["status"] == "publishing" and "interrupted: publish again" in entry["error"]
