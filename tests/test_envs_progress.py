"""An environment's install says how it goes while it runs (issue 39: three builds printed nothing for 3 minutes)."""

from __future__ import annotations

import sys

from benchbook.environment import envs


def test_a_long_step_says_how_long_it_has_run_and_the_logs_last_line(tmp_path, monkeypatch):
    monkeypatch.setattr(envs, "PROGRESS_EVERY", 0.2)
    log = tmp_path / "install.log"
    said = []
    child = "import time; print('Collecting numpy==1.23.5', flush=True); time.sleep(1.0); raise SystemExit(3)"
    with open(log, "w") as out:
        code = envs._run_saying([sys.executable, "-c", child], out, log, lambda s, last: said.append((s, last)))
    assert code == 3  # the step's own exit code, for the caller's error
    assert len(said) >= 2 and said[-1][1] == "Collecting numpy==1.23.5"
    assert [s for s, _ in said] == sorted(s for s, _ in said) and said[0][0] >= 0.2


def test_a_quick_step_says_nothing(tmp_path):
    log = tmp_path / "install.log"
    said = []
    with open(log, "w") as out:
        assert envs._run_saying([sys.executable, "-c", "pass"], out, log, lambda *a: said.append(a)) == 0
    assert said == []


def test_the_last_line_is_read_from_the_end_and_fits_a_terminal_line(tmp_path):
    log = tmp_path / "install.log"
    log.write_text("x" * 100_000 + "\n" + "Downloading " + "y" * 300 + "\n\n")
    last = envs._last_line(log)
    assert last.startswith("Downloading ") and len(last) == 100 and last.endswith("…")
    log.write_text("")
    assert envs._last_line(log) == "no output yet"


def test_a_failed_installs_last_lines_come_from_the_logs_end_only(tmp_path):
    log = tmp_path / "install.log"
    log.write_text("".join(f"Collecting package{i}\n" for i in range(500_000)) + "ERROR: no matching distribution\n")
    lines = envs._last_lines(log)
    assert lines[-1] == "ERROR: no matching distribution" and 0 < len(lines) < 1000
