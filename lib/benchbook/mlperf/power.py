"""Energy to train, where a result folder has power logs (`power/<result>/node_*.txt`, `sw_*.txt`), as
mlperf-logging's result_summarizer computes it (4.1.68, result_summarizer.py:693-765): per node, the
power readings between power_measurement_start and _stop integrated over time, scaled to the run's time
to train, times the logged conversion efficiency; per switch, its interconnect_power_est times the time
to train; the result's energy is the mean over the runs its time score counts, times scaling.json.
The logs are MLLOG lines with times in ms, read as result files are (`logs.textio`)."""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import LogError
from ..logs import textio
from ..logs.parsers.mllog import TOKEN_V07, LineError, parse_v07

KEYS = ("power_measurement_start", "power_reading", "power_measurement_stop", "conversion_eff",
        "interconnect_power_est")
# What a logged number may be: watts of one node or switch from 0 to MAX_WATTS (the largest MLPerf power nodes
# draw a few kW; a megawatt is no reading of one), a conversion efficiency above 0 and at most 1. A value
# outside is refused with its file, line and key: a negative watt would give a negative energy, 1e308 an
# overflow, NaN a null without a word.
MAX_WATTS = 1e6
_RANGES = {"power_reading": (0.0, MAX_WATTS, "watts from 0 to 1e6"),
           "interconnect_power_est": (0.0, MAX_WATTS, "watts from 0 to 1e6"),
           "conversion_eff": (0.0, 1.0, "an efficiency above 0, at most 1")}


def _records(path) -> list[tuple[float, str, float | None]]:
    """(time in ms, key, the logged number) of the power records of one file, in the file's order;
    LogError (file and line) for a record that does not parse."""
    out = []
    for chunk in textio.chunks(path):
        for number, line in enumerate(chunk.text.split("\n"), chunk.first_line):
            at = line.find(TOKEN_V07)
            if at < 0 or not any(k in line for k in KEYS):
                continue
            try:
                time, key, value, _ = parse_v07(line[at + len(TOKEN_V07):])
            except LineError as exc:
                raise LogError(str(path), f"line {number}: {exc}") from None
            number_logged = value.get("value") if isinstance(value, dict) else value
            out.append((time, key, _checked(path, number, key, number_logged)))
    return out


def _checked(path, number: int, key: str, value) -> float | None:
    """The logged number of a power record, within its key's range (LogError names file, line and key)."""
    if key not in _RANGES:
        return None
    low, high, what = _RANGES[key]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise LogError(str(path), f"line {number}: {key} = {str(value)[:40]!r}: expected {what}")
    x = float(value)
    if not (math.isfinite(x) and (low < x if key == "conversion_eff" else low <= x) and x <= high):
        raise LogError(str(path), f"line {number}: {key} = {x!r}: expected {what}")
    return x


def _node(path, ttt_ms: float) -> float:
    records = sorted(_records(path), key=lambda r: r[0])  # by time, as _compute_power_node sorts them
    starts = [t for t, k, _ in records if k == "power_measurement_start"]
    if not starts:
        raise LogError(str(path), "no power_measurement_start")
    start = starts[-1]
    stops = [t for t, k, _ in records if k == "power_measurement_stop" and t >= start]
    readings = [(t, v) for t, k, v in records if k == "power_reading" and v is not None and t >= start
                and (not stops or t <= stops[0])]
    stop = stops[0] if stops else max((t for t, _ in readings), default=start)
    if stop <= start:
        raise LogError(str(path), "power_measurement_stop is not after power_measurement_start")
    efficiency = next((v for _, k, v in reversed(records) if k == "conversion_eff" and v is not None), 1.0)
    previous, total = start, 0.0
    for t, watts in readings:
        total += watts * (t - previous)
        previous = t
    return efficiency * total * ttt_ms / (stop - start) / 1000


def _switch(path, ttt_ms: float) -> float:
    """As _compute_power_sw: in the file's order, the first interconnect_power_est, and the last
    conversion_eff before it."""
    efficiency, watts = 1.0, 0.0
    for _, key, value in _records(path):
        if key == "conversion_eff" and value is not None:
            efficiency = value
        elif key == "interconnect_power_est" and value is not None:
            watts = value
            break
    return efficiency * watts * ttt_ms / 1000


def run_energy(folder: Path, result_file: str, minutes: float) -> float:
    """Joules of one run (its result file's name, its time to train in minutes); LogError says why not."""
    logs = folder / "power" / result_file.split(".")[0]
    nodes = sorted(logs.glob("node_*.txt"))
    if not nodes:
        raise LogError(str(logs), "no node_*.txt power log")
    ttt_ms = minutes * 60_000.0
    return math.fsum([*(_node(p, ttt_ms) for p in nodes), *(_switch(p, ttt_ms) for p in sorted(logs.glob("sw_*.txt")))])


def energy(folder: Path, run_details: list[dict], factor: float, problems: list[str]) -> float | None:
    """The result's energy in joules: the mean over the runs counted in its score, times `factor`."""
    counted = [d for d in run_details if d["role"] == "counted" and d["minutes"] is not None]
    try:
        each = [run_energy(folder, d["file"], d["minutes"]) for d in counted]
        joules = math.fsum(each) / len(each) * factor if each else None
    except LogError as exc:
        problems.append(f"{exc}: no energy for the result")
        return None
    except OverflowError:
        problems.append(f"{folder / 'power'}: the energy overflows a float: no energy for the result")
        return None
    if joules is not None and not (math.isfinite(joules) and joules >= 0):
        problems.append(f"{folder / 'power'}: the energy is {joules!r}, not a finite number of joules from 0: no "
                        "energy for the result")
        return None
    return joules
