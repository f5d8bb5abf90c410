"""The first screen of a report: the verdict with its size, the published grid (`grid`), one line of set-up.

Published reproduction reports (DLPerf's README, NVIDIA's performance tables) open with a compact table
per precision and batch size; a reader of a benchbook report learns on the first screen whether the
numbers hold and by how much ("ratios 0.9998-1.0002, largest deviation -0.4%"), not only "reproduced".
On logs a publication measured itself (analysis-only, no run of ours), nothing was re-run: the numbers
are *consistent* with the logs by the rule; "reproduced" is kept for runs of our own (`Words`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

from . import configs, display

RULE_NAMES = {"nvidia": "NVIDIA's rule", "dlperf": "DLPerf's rule"}


@dataclass(frozen=True)
class Words:
    """How the page says a verdict: of our own runs ("reproduced") or of a publication's own logs,
    re-read ("consistent": the published numbers follow from them)."""

    own_runs: bool

    def __call__(self, verdict: str) -> str:
        """A verdict, or "measured" (a number of ours), as the page says it: of logs re-read, where nothing ran
        here, a number is "recomputed" from the logged records, never "measured"."""
        if self.own_runs:
            return verdict
        return {"reproduced": "consistent", "not reproduced": "not consistent", "measured": "recomputed",
                "partly reproduced": "partly consistent"}.get(verdict, verdict)


def words_for(log_dir, source) -> Words:
    """Verdicts of our own runs (launch mode, or a study folder with run records) say "reproduced"; of
    other logs, re-read, "consistent"."""
    from ..runfolder import records
    own = log_dir is None or (source.is_dir() and bool(records.find(source)))
    return Words(own_runs=own)


def percent(tolerance: float) -> str:
    """A relative tolerance as a percentage, to its own digits: 0.05 -> 5%, 0.025 -> 2.5%."""
    return f"{float(tolerance) * 100:.4g}%"


def rule_name(name: str | None) -> str:
    """The rule the numbers were recomputed with, in words: NVIDIA's rule, DLPerf's rule, the perf rule."""
    name = name or "nvidia"
    return RULE_NAMES.get(name, f"the {name} rule")


def size(comparison: pd.DataFrame) -> str:
    """How far measured is from published over the measured rows, in one form everywhere (the page, the index):
    the ratios to 4 decimals and the largest deviation, signed, to 2 decimals of a percent: "ratios
    0.9998–1.0002, largest deviation -0.40%" (one ratio: "ratio 1.0001, deviation +0.01%")."""
    measured = comparison[comparison["ratio"].notna()]
    if measured.empty:
        return ""
    ratios = measured["ratio"].astype(float)
    worst = float(measured.loc[measured["delta_pct"].abs().idxmax(), "delta_pct"])
    return deviation_words(ratios.min(), ratios.max(), worst, len(measured))


def deviation_words(low: float, high: float, worst_pct: float, count: int) -> str:
    """`size`'s form, from the lowest and highest ratio and the largest deviation in percent (signed)."""
    dev = display.signed(worst_pct, 2, "%")
    if count == 1:
        return f"ratio {low:.4f}, deviation {dev}"
    return f"ratios {low:.4f}–{high:.4f}, largest deviation {dev}"


FASTEST_RULE = ("a configuration is named the fastest only when its slowest repeat is faster than every repeat of "
                "the next one (their ranges of repeats do not overlap)")


def fastest(stats: pd.DataFrame) -> tuple[pd.Series, pd.Series | None, str]:
    """The configuration of the highest median, the next one, and whether the first is told apart from the next
    (FASTEST_RULE): "apart", "overlap" (their repeats' ranges overlap: indistinguishable), "single" (one of the two
    has a single run: no spread to judge by) or "alone" (one configuration)."""
    ranked = stats.sort_values("median", ascending=False)
    top = ranked.iloc[0]
    if len(ranked) == 1:
        return top, None, "alone"
    second = ranked.iloc[1]
    if int(top["runs"]) < 2 or int(second["runs"]) < 2:
        return top, second, "single"
    return top, second, "apart" if float(top["min"]) > float(second["max"]) else "overlap"


def fastest_words(stats: pd.DataFrame, unit: str) -> str:
    """The highest median in words, named "the fastest" only by FASTEST_RULE."""
    top, second, how = fastest(stats)
    own = configs.own_varying(stats)
    first = f"{display.fixed(top['median'])} {unit} ({configs.Configuration.of(top, own).sentence()})"
    if how == "alone":
        return f"the median {first}"
    nxt = f"{display.fixed(second['median'])} {unit} ({configs.Configuration.of(second, own).sentence()})"
    if how == "apart":
        return f"the fastest {first}: each of its repeats above every repeat of the next, {nxt}"
    if how == "single":
        return (f"the highest median {first}, the next {nxt}; not named the fastest: single runs have no "
                f"spread of repeats to tell a difference from noise ({FASTEST_RULE})")
    return (f"the two highest, {first} and {nxt}, are indistinguishable: their repeats' ranges overlap "
            f"({FASTEST_RULE})")


def sentence(what: str, on: str, reference, comparison: pd.DataFrame | None, summary: dict | None,
             stats: pd.DataFrame, unit: str, words: Words, rule: str | None = None,
             rule_url: str | None = None, caveat: str | None = None) -> display.Html:
    """The verdict and its size, then what was measured, on what, against which publication; then `caveat`
    (what weakens the verdict: the script itself printed another number than the rule's)."""
    if stats.empty:
        line = f"{what}: no run in {on} gave a throughput, so there is nothing to compare."
        return display.Html(f'<p class="bb-verdict">{html.escape(line)}</p>', line)
    configs_n = len(stats)
    if reference is None:
        line = (f"{what} on {on}: {configs_n} configuration{'s' * (configs_n != 1)} {words('measured')}, "
                f"{fastest_words(stats, unit)}; no published reference to compare with.")
        return display.Html(f'<p class="bb-verdict">{html.escape(line)}</p>', line)
    tol = float(comparison.attrs.get("tolerance", reference.tolerance))
    src = reference.source
    link = (f'<a href="{html.escape(src.url)}">{html.escape(src.title)}</a>' if src.url else html.escape(src.title))
    n = summary["rows"]
    if summary["measured"] == 0:
        pub = sorted({configs.Configuration.of(r.model_dump()).column_on() for r in reference.rows})
        own = configs.own_varying(stats)
        mine = sorted({configs.Configuration.of(r, own).column_on() for _, r in stats.iterrows()})
        verdict, how = "not measured", ""
        rest = (f"none of the {configs_n} configuration{'s' * (configs_n != 1)} in the logs "
                f"({configs.join_counts(mine)}) is one of the {n} published ({configs.join_counts(pub)}).")
    else:
        verdict = summary["overall"]
        extra = _off_words(comparison, summary)
        how = size(comparison)
        rest = (f"{summary['reproduced']} of {n} published configurations within ±{percent(tol)}"
                + (f" ({', '.join(extra)})" if extra else "") + (f"; {how}" if how else "") + ".")
    said = words(verdict)
    follows = not words.own_runs and verdict == "reproduced"
    rule_text = rule_name(rule)
    rule_markup = f'<a href="{html.escape(rule_url)}">{html.escape(rule_text)}</a>' if rule_url else html.escape(
        rule_text)
    lead_plain = f"the published numbers follow from these logs by {rule_text}: " if follows else ""
    lead_markup = f"the published numbers follow from these logs by {rule_markup}: " if follows else ""
    cls = "bb-reproduced" if verdict == "reproduced" else "bb-off"
    tail = f" {caveat}" if caveat else ""
    plain = f"{said.capitalize()}: {lead_plain}{rest} {what} on {on}, against {src.title}.{tail}"
    markup = (f'<p class="bb-verdict"><span class="{cls}">{html.escape(said.capitalize())}</span>: '
              f"{lead_markup}{html.escape(rest)} {html.escape(what)} on {html.escape(on)}, against {link}."
              f"{html.escape(tail)}</p>")
    return display.Html(markup, plain)


def _off_words(comparison: pd.DataFrame, summary: dict) -> list[str]:
    """How many are slower, faster or not measured; a cell the reference says no rule gives exactly is counted
    apart ("2 follow no exact rule"), not as slower or faster: its distance is the rule's, not a measurement's."""
    inexact = comparison[~comparison["exact_rule"].astype(bool) & comparison["verdict"].isin(["slower", "faster"])] \
        if "exact_rule" in comparison else comparison.iloc[:0]
    words = [f"{summary[k] - int((inexact['verdict'] == k).sum())} {k}" for k in ("slower", "faster", "not measured")]
    words = [w for w in words if not w.startswith("0 ")]
    if len(inexact):
        words.append(f"{len(inexact)} follow{'s' * (len(inexact) == 1)} no exact rule, each rule's distance in "
                     "the reference's notes")
    return words


SCRIPT_DIFFERS = 0.005  # a script's own summary this far from the rule's number is said in the headline


def script_caveat(runs: pd.DataFrame, unit: str, rule: str | None, source: str) -> str | None:
    """Where the script's own printed summary differs from the rule's number by more than SCRIPT_DIFFERS (the
    run that differs most): a verdict by that rule holds for the rule, not for what the script printed, and
    the headline says so with the rule's source (a rule fitted to the published number says it is)."""
    both = runs[["reported_throughput", "recomputed_throughput"]].apply(pd.to_numeric, errors="coerce").dropna() \
        if len(runs) else pd.DataFrame()
    both = both[both["recomputed_throughput"] > 0] if len(both) else both
    if both.empty:
        return None
    gap = both["reported_throughput"] / both["recomputed_throughput"] - 1
    worst = gap.abs().idxmax()
    if abs(gap[worst]) <= SCRIPT_DIFFERS:
        return None
    printed, recomputed = both.loc[worst, "reported_throughput"], both.loc[worst, "recomputed_throughput"]
    return (f"The script itself printed {display.fixed(printed)} {unit}, {abs(gap[worst]) * 100:.1f}% "
            f"{'less' if gap[worst] < 0 else 'more'} than the {display.fixed(recomputed)} of {rule_name(rule)}, "
            f"so the verdict holds for that rule, not for the script's own summary; the rule's source: {source}.")


def setup_line(logged: list[tuple[str, str]], reference) -> display.Html | None:
    """One line of set-up: what the logs state for every run (mode, iterations, warm-up, XLA, DALI, AMP...)
    and what the reference names (GPU, CPU, driver, container, CUDA, cuDNN)."""
    parts = []
    if logged:
        parts.append(("In the logs", ", ".join(f"{k} {v}" if v != "on" or not k.startswith("--") else k
                                               for k, v in logged)))
    if reference is not None:
        hw, sw = reference.hardware, reference.software
        published = [f"{hw.nodes * hw.gpus_per_node if hw.nodes > 1 else hw.gpus_per_node}x {hw.gpu}"]
        published += [hw.cpu] if hw.cpu else []
        published += [f"driver {hw.driver}"] if hw.driver else []
        published += [sw.container or sw.image] if (sw.container or sw.image) else []
        published += [f"{name.upper() if name == 'cuda' else 'cuDNN' if name == 'cudnn' else name} {version}"
                      for name, version in sw.libraries.items() if name in ("cuda", "cudnn")]
        parts.append(("Published on", ", ".join(published)))
    if not parts:
        return None
    plain = " · ".join(f"{k}: {v}" for k, v in parts)
    markup = " · ".join(f"<b>{html.escape(k)}</b>: {html.escape(v)}" for k, v in parts)
    return display.Html(f'<p class="bb-setup">{markup}</p>', plain)
