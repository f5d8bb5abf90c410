"""The checks MLCommons runs, through mlperf-logging itself (`pip install benchbook[mlperf]`).

Per result folder: the compliance checker on each result file, the RCP checker (the runs' epochs to
converge against the reference convergence points at that batch size, which gives a normalisation
factor), and result_summarizer's own score. Its tools write into the folder they read (the RCP
checker deletes and rewrites scaling.json; both leave log files in the working folder), so they run
in a separate process, in a temporary folder, on a copy of the result files.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..core import userfiles
from . import results, rules
from .official import WEIGHTS_HISTORY

INSTALL = "pip install 'benchbook[mlperf]'"

# Runs in a child process inside the temporary folder: argv = copy, ruleset (X.Y.0), benchmark.
_SCRIPT = r"""
import json, logging, sys
logging.basicConfig(filename="mlperf_logging.log", level=logging.INFO)
folder, ruleset, benchmark = sys.argv[1:4]
out = {}
from mlperf_logging.compliance_checker import mlp_compliance
from mlperf_logging.result_summarizer import result_summarizer
files = sorted(__import__("glob").glob(folder + "/result_*.txt"))
verdicts = []
for f in files:
    try:
        checker = mlp_compliance.make_checker("training", ruleset, True, False)
        valid = mlp_compliance.main(f, f"training_{ruleset}/common.yaml", checker)[0]
        said = [*checker.overwritable.values(), *checker.not_overwritable]
        verdicts.append([f.rsplit("/", 1)[1], bool(valid), "", [str(m)[:300] for m in said][:20]])
    except Exception as exc:
        verdicts.append([f.rsplit("/", 1)[1], False, f"{type(exc).__name__}: {exc}", []])
out["compliance"] = verdicts
# result_summarizer first: the RCP checker deletes scaling.json (and writes its own) where it runs
try:
    found = result_summarizer._compute_strong_score_standalone(benchmark, "system", False, folder, "training",
                                                               ruleset)
    out["summarizer"] = found[0]
except Exception as exc:
    out["summarizer_error"] = f"{type(exc).__name__}: {exc}"
try:
    from mlperf_logging.rcp_checker import rcp_checker
    passed, message, norm = rcp_checker.check_directory(folder, "training", ruleset, False, False,
                                                        rcp_pass="pruned_rcps", set_scaling=True)
    out["rcp"] = [bool(passed), str(message), float(norm)]
except Exception as exc:
    out["rcp_error"] = f"{type(exc).__name__}: {exc}"
print("BENCHBOOK-CHECKS " + json.dumps(out))
"""


def available() -> bool:
    return importlib.util.find_spec("mlperf_logging") is not None


def official(folder: str | Path, round_: str, benchmark: str, timeout: float = 600) -> dict:
    """What mlperf-logging's tools say of a copy of `folder`: compliance per file, the RCP check
    (pass, message, normalisation), result_summarizer's score (minutes, or its error)."""
    ruleset = f"{rules.round_key(round_)}.0"
    with tempfile.TemporaryDirectory(prefix="benchbook-mlperf-") as tmp:
        copy = Path(tmp) / Path(folder).name
        copy.mkdir()
        for path in [*results.result_files(Path(folder)), Path(folder) / "scaling.json"]:
            try:  # a regular file only (a scaling.json linked to /proc/kmsg, a FIFO: not read, the score says so)
                with userfiles.open_regular(path) as source, open(copy / path.name, "wb") as target:
                    shutil.copyfileobj(source, target)
            except OSError:
                continue
        done = subprocess.run([sys.executable, "-c", _SCRIPT, str(copy), ruleset, benchmark], cwd=tmp,
                              capture_output=True, text=True, timeout=timeout, check=False)
    line = next((x for x in reversed(done.stdout.splitlines()) if x.startswith("BENCHBOOK-CHECKS ")), None)
    if line is None:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"mlperf-logging failed (exit {done.returncode}): {tail}"}
    return json.loads(line.split(" ", 1)[1])


def run(folder: str | Path, round_: str | None, benchmark: str, ours: dict | None = None) -> dict[str, str]:
    """The verdicts printed beside a folder's score; with `ours` (the folder's JSON row), where the official
    tools and benchbook differ, which check makes them differ and both numbers."""
    if not available():
        return {"checks": f"not run: mlperf-logging is not installed ({INSTALL})"}
    if round_ is None:
        return {"checks": "not run: the round is unknown (give --round)"}
    if rules.round_key(round_) == "0.5":
        return {"checks": "not run: mlperf-logging has no training 0.5.0 ruleset and does not read ':::MLPv0.5.0' "
                          "lines (the v0.5 rules are benchbook's training_0.5.yaml)"}
    found = official(folder, round_, benchmark)
    if "error" in found:
        return {"checks": found["error"]}
    runs = {d["file"]: d for d in (ours or {}).get("run_details", [])}
    failed = [f"{name}{' (' + why + ')' if why else ''}{_as_scored(runs.get(name))}"
              for name, ok, why, *_ in found["compliance"] if not ok]
    total = len(found["compliance"])
    verdicts = {"compliance": f"pass ({total} of {total} files)" if not failed else
                f"fail ({len(failed)} of {total} files: {', '.join(failed)})"}
    refused: list[str] = []
    committed = results._scaling(Path(folder), refused)
    if committed is None:  # a scaling.json benchbook refuses is not "no scaling.json"
        committed_text = refused[0]
    elif (Path(folder) / "scaling.json").is_file():
        committed_text = f"committed scaling.json {committed:.4f}, the factor of the published score"
    else:
        committed_text = "no committed scaling.json: the published score is unscaled"
    if float(rules.round_key(round_)) < 1.0:
        verdicts["rcp"] = f"not applicable: mlperf-logging's RCP check begins with v1.0; {committed_text}"
    elif "rcp" in found:
        passed, message, norm = found["rcp"]
        verdicts["rcp"] = (f"pass ({message}), normalisation {norm:.4f}; {committed_text}" if passed
                           else f"fail ({message}); {committed_text}")
    else:
        verdicts["rcp"] = f"not run by mlperf-logging: {found['rcp_error']}"
    if "summarizer" in found:
        verdicts["result_summarizer"] = _summarizer(found, round_, ours)
    else:
        verdicts["result_summarizer"] = f"failed: {found['summarizer_error']}"
    return verdicts


def _weights_initialization(found: dict, round_: str) -> str | None:
    """The cause where the files the official tool drops in a v1.1 folder fail only over weights_initialization."""
    if rules.round_key(round_) != "1.1":
        return None
    refused = [(name, said) for name, ok, _, *rest in found["compliance"] if not ok
               for said in [rest[0] if rest else []]]
    if not refused or not all(said and all("weights_initialization" in m or "initialized_tensors" in m
                                            for m in said) for _, said in refused):
        return None
    return f"{WEIGHTS_HISTORY} ({', '.join(name for name, _ in refused)})"


def _as_scored(detail: dict | None) -> str:
    """How the score took a file the compliance checker fails: a failed run too, or counted as logged."""
    if detail is None:
        return ""
    if not detail["converged"]:
        return f", a failed run in the score too: {detail['reason'][:240]}"
    return ", counted by benchbook: its time to train is read as logged"


def _summarizer(found: dict, round_: str, ours: dict | None) -> str:
    """result_summarizer's score, and where it is not benchbook's, both numbers and which check says why."""
    value = found["summarizer"]
    text = "no score" if value is None else f"{value:.4f} minutes"
    if rules.round_key(round_) == "0.6":
        return text + " (it reads v0.6's seconds as milliseconds: 1000x too small)"
    mine = (ours or {}).get("score_minutes")
    if ours is None or (value is not None and mine is not None and round(value, 4) == round(mine, 4)):
        return text + ("; benchbook the same" if ours is not None else "")
    both = f"{text}; benchbook {'no score' if mine is None else f'{mine:.4f} minutes'}"
    refused = [name for name, ok, *_ in found["compliance"] if not ok]
    aborted = [d["file"] for d in ours.get("run_details", []) if d["status"] not in (None, "success")]
    known = ours.get("official") or {}
    if known and (known.get("score_minutes") is None) == (value is None) and (
            value is None or round(known["score_minutes"], 4) == round(value, 4)):
        return f"{both}: {known['cause']}"
    if weights := _weights_initialization(found, round_):
        return f"{both}: {weights}"
    if refused:
        return (f"{both}: it drops the files its compliance checker fails ({', '.join(refused)}) as failed runs; "
                "benchbook scores what each log says (a rule checked after its round is not applied to it)")
    if aborted:
        return (f"{both}: from v0.7 its rules ask only that run_stop has a status (training_0.7.0/common.yaml:95) "
                f"and count {', '.join(aborted)}; benchbook counts a run that did not log success as failed")
    return f"{both}: a difference no known check explains"
