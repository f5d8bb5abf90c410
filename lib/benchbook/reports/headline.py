"""The top of a report: one sentence with the verdict, then the table in the published form.

Published reproduction reports (DLPerf's README, NVIDIA's performance tables) open with a compact
table per precision and batch size; a reader of a benchbook report should not have to scroll past
environment and launch tables to learn whether the numbers were reproduced. `sentence` says what was
reproduced, on what, against which publication and how many configurations are within tolerance;
`published_form` is a row per GPU count and a column group per precision x batch size with the
published number, the measured one, their ratio and the verdict, the speedup against 1 GPU and the
AMP / FP32 speedup.
"""

from __future__ import annotations

import html

import pandas as pd

from . import display

PRECISION_NAMES = {"fp32": "FP32", "amp": "AMP", "fp16": "FP16", "tf32": "TF32", "bf16": "BF16"}
MAX_COLUMNS = 16  # value columns of the wide form that fit 1400 px; more: one row per configuration
PRECISION_ORDER = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 3, "amp": 4}


def _gpus(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def join_counts(values) -> str:
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def group_label(precision: str, batch: int, xla, vary_xla: bool) -> str:
    name = f"{PRECISION_NAMES.get(precision, precision)} bs{batch}"
    return name + ((" XLA" if xla is True else " no XLA") if vary_xla else "")


def configuration_label(gpus, processes, precision: str, batch: int, xla) -> str:
    """A configuration in words, for a line of text or the index page: "8 GPUs, AMP, batch 256, XLA",
    "1 GPU, FP32, batch 64", "CPU, 2 processes, FP32, batch 8" (processes only on the CPU, where they vary)."""
    count = _gpus(gpus)
    if count == 0:
        many = _gpus(processes)
        place = "CPU" + (f", {many} processes" if many and many > 1 else "")
    else:
        place = f"{display.text(gpus)} GPU" + "s" * (count != 1)
    words = [place, PRECISION_NAMES.get(precision, str(precision)), f"batch {batch}"]
    return ", ".join(words + (["XLA"] if xla is True else []))


def _printed(pub) -> str:
    """A comparison row's published number as the report printed it (its text in the reference file)."""
    text = pub.get("published_printed")
    return display.as_printed(pub["published"] if display.missing(text) else text)


def _decimals(pub) -> int:
    """The decimals the report printed a number with (381.46: 2, 1412: 0, 3038.730: 3), to show the
    measured one alike."""
    return len(_printed(pub).partition(".")[2])


def percent(tolerance: float) -> str:
    """A relative tolerance as a percentage, to its own digits: 0.05 -> 5%, 0.025 -> 2.5%."""
    return f"{float(tolerance) * 100:.4g}%"


def _verdict_label(comparison: pd.DataFrame) -> str:
    """"verdict ±5%": the tolerance of the verdicts (references.compare keeps it in `attrs`)."""
    tol = comparison.attrs.get("tolerance")
    return f"verdict ±{percent(tol)}" if tol is not None else "verdict"


def _place(row) -> tuple:
    """Where a configuration ran, as the table's row key: (GPUs, 0), or (0, processes) on the CPU, where
    runs of 1 and 2 MPI processes are rows of their own."""
    gpus = _gpus(row["gpus"])
    if gpus != 0:
        return (gpus, 0)
    processes = _gpus(row.get("processes"))
    return (0, processes if processes else 1)


def _place_label(place: tuple) -> str:
    gpus, processes = place
    if gpus == 0:
        return "CPU" if processes == 1 else f"CPU, {processes} processes"
    return display.text(gpus)


def _place_order(place: tuple) -> tuple:
    return (place[0] is None, place[0] or 0, place[1])


def _measured_speedup(stats: pd.DataFrame) -> dict[tuple, float]:
    """metrics.aggregate's speedup of each GPU configuration that has one (a measured 1-GPU baseline
    that some other configuration is compared with); none for the others."""
    return {(_place(r), r["precision"], int(r["batch_size"]), str(r["xla"])): float(r["speedup"])
            for _, r in stats.iterrows() if _gpus(r["gpus"]) and not display.missing(r.get("speedup"))}


def published_form(stats: pd.DataFrame, comparison: pd.DataFrame | None, unit: str = "images/s") -> display.Html:
    """A row per GPU count; per precision x batch: published, measured, ratio, verdict, speedup.

    Without a reference (or where it has no number) the published, ratio and verdict columns are left
    out; the AMP / FP32 column group appears when both precisions were measured at one batch size.
    """
    if stats.empty:
        return display.note("no run in the logs gave a throughput: nothing to tabulate")
    vary_xla = stats["xla"].astype(str).nunique() > 1
    published = {}
    if comparison is not None and not comparison.empty:
        for _, r in comparison.iterrows():
            key = ((_gpus(r["gpus"]), 0), r["precision"], int(r["batch_size"]), str(r["xla"]))
            published[key] = r
    speedup = _measured_speedup(stats)
    groups = sorted({(r["precision"], int(r["batch_size"]), str(r["xla"])) for _, r in stats.iterrows()} |
                    {(k[1], k[2], k[3]) for k in published},
                    key=lambda g: (g[1], PRECISION_ORDER.get(g[0], 9), g[2]))
    gpu_rows = sorted({_place(r) for _, r in stats.iterrows()} | {k[0] for k in published}, key=_place_order)
    with_ref = bool(published)
    show_speedup = bool(speedup) and any(g and g > 1 for g, _processes in gpu_rows)
    verdict_label = _verdict_label(comparison) if with_ref else "verdict"
    sub = (["published", "measured", "ratio", verdict_label] if with_ref else ["measured", "runs"])
    sub += ["speedup"] if show_speedup else []
    amp_pairs = sorted({b for p, b, _x in groups if p == "amp"} & {b for p, b, _x in groups if p == "fp32"})
    measured = {(_place(r), r["precision"], int(r["batch_size"]), str(r["xla"])): r
                for _, r in stats.iterrows()}

    if len(groups) * len(sub) > MAX_COLUMNS:  # too wide for a screen: a row per configuration instead
        return _long_form(groups, gpu_rows, measured, published, speedup, with_ref, vary_xla, unit, verdict_label)
    where = "ran on" if all(g == 0 for g, _processes in gpu_rows) else "GPUs"  # what the first column says
    head1 = f'<th rowspan="2">{where}</th>' + "".join(
        f'<th colspan="{len(sub)}">{html.escape(group_label(p, b, x == "True", vary_xla))} ({html.escape(unit)})</th>'
        for p, b, x in groups)
    head1 += "".join(f'<th rowspan="2">AMP/FP32 bs{b}</th>' for b in amp_pairs)
    head2 = "".join(f"<th>{html.escape(s)}</th>" for _ in groups for s in sub)
    body, plain = [], [" | ".join([where] + [group_label(p, b, x == "True", vary_xla) for p, b, x in groups])]
    for g in gpu_rows:
        cells = [(_place_label(g), "")]
        for p, b, x in groups:
            m, pub = measured.get((g, p, b, x)), published.get((g, p, b, x))
            value = m["median"] if m is not None else None
            if with_ref:
                verdict = pub["verdict"] if pub is not None else ("no published number" if m is not None else None)
                cls = "bb-reproduced" if verdict == "reproduced" else ("bb-off" if verdict in ("slower", "faster")
                                                                       else "")
                cells += [(_printed(pub) if pub is not None else display.DASH, "num"),
                          (display.fixed(value, _decimals(pub) if pub is not None else 2), "num"),
                          (display.significant(pub["ratio"]) if pub is not None else display.DASH, "num"),
                          (display.text(verdict), cls)]
            else:
                cells += [(display.fixed(value), "num"), (display.text(m["runs"]) if m is not None else "–", "num")]
            if show_speedup:
                cells.append((display.fixed(speedup.get((g, p, b, x)), 2), "num"))
        for b in amp_pairs:
            amp = [measured.get((g, "amp", b, x)) for x in ("True", "False", "<NA>", "?")]
            fp32 = [measured.get((g, "fp32", b, x)) for x in ("True", "False", "<NA>", "?")]
            amp = next((r for r in amp if r is not None), None)
            fp32 = next((r for r in fp32 if r is not None), None)
            ratio = float(amp["median"]) / float(fp32["median"]) if amp is not None and fp32 is not None else None
            cells.append((display.fixed(ratio, 2), "num"))
        body.append("<tr>" + "".join(f'<td class="{c}">{html.escape(v)}</td>' for v, c in cells) + "</tr>")
        plain.append(" | ".join(v for v, _ in cells))
    markup = (f'<table class="bb-table bb-headline"><thead><tr>{head1}</tr><tr>{head2}</tr></thead>'
              f"<tbody>{''.join(body)}</tbody></table>")
    return display.Html(markup, "\n".join(plain))


def _long_form(groups, gpu_rows, measured, published, speedup, with_ref, vary_xla, unit, verdict_label
               ) -> display.Html:
    rows = []
    for p, b, x in groups:
        for g in gpu_rows:
            m, pub = measured.get((g, p, b, x)), published.get((g, p, b, x))
            if m is None and pub is None:
                continue
            row = {"configuration": group_label(p, b, x == "True", vary_xla), "GPUs": _place_label(g)}
            if with_ref:
                row[f"published {unit}"] = _printed(pub) if pub is not None else None
            decimals = _decimals(pub) if pub is not None else 2
            row[f"measured {unit}"] = display.fixed(m["median"], decimals) if m is not None else None
            if with_ref:
                row["ratio"] = display.significant(pub["ratio"]) if pub is not None else None
                row[verdict_label] = pub["verdict"] if pub is not None else "no published number"
            row["speedup"] = display.fixed(speedup.get((g, p, b, x)), 2) if speedup else None
            fp32 = measured.get((g, "fp32", b, x))
            row["AMP/FP32"] = (display.fixed(float(m["median"]) / float(fp32["median"]), 2)
                               if p == "amp" and m is not None and fp32 is not None else None)
            rows.append(row)
    frame = pd.DataFrame(rows)
    for col in ("speedup", "AMP/FP32"):
        if frame[col].map(display.missing).all():
            frame = frame.drop(columns=col)
    table = display.table(frame, empty="nothing measured", numeric=[c for c in frame if c not in
                                                                      ("configuration", verdict_label)])
    return display.Html(table.markup.replace('class="bb-table"', 'class="bb-table bb-headline"', 1), table.plain)


def sentence(what: str, on: str, reference, comparison: pd.DataFrame | None, summary: dict | None,
             stats: pd.DataFrame, unit: str = "images/s") -> display.Html:
    """One sentence: what was reproduced, on what, against which publication, how many within tolerance."""
    if stats.empty:
        line = f"{what}: no run in {on} gave a throughput, so there is nothing to compare."
        return display.Html(f'<p class="bb-verdict">{html.escape(line)}</p>', line)
    configs = len(stats)
    if reference is None:
        best = stats.sort_values("median", ascending=False).iloc[0]
        fastest = configuration_label(best.get("gpus"), best.get("processes"), best["precision"],
                                      int(best["batch_size"]), best.get("xla"))
        line = (f"{what} on {on}: {configs} configuration{'s' * (configs != 1)} measured, the fastest "
                f"{display.fixed(best['median'])} {unit} ({fastest}); no published reference to compare with.")
        return display.Html(f'<p class="bb-verdict">{html.escape(line)}</p>', line)
    tol = float(comparison.attrs.get("tolerance", reference.tolerance)) if comparison is not None else 0.05
    src = reference.source
    link = (f'<a href="{html.escape(src.url)}">{html.escape(src.title)}</a>' if src.url else html.escape(src.title))
    n = summary["rows"] if summary else 0
    if summary and summary["measured"] == 0:
        pub = sorted({group_label(r.precision, r.batch_size, None, False) + f" on {r.gpus} GPU"
                      for r in reference.rows})
        mine = sorted({group_label(r["precision"], int(r["batch_size"]), None, False) + f" on {r['gpus']} GPU"
                       for _, r in stats.iterrows()})
        verdict = "not measured"
        rest = (f"none of the {configs} configuration{'s' * (configs != 1)} in the logs ({join_counts(mine)}) "
                f"is one of the {n} published ({join_counts(pub)}).")
    else:
        verdict = summary["overall"]
        extra = [f"{summary[k]} {k}" for k in ("slower", "faster", "not measured") if summary[k]]
        rest = (f"{summary['reproduced']} of {n} published configurations within ±{percent(tol)}"
                + (f" ({', '.join(extra)})" if extra else "") + ".")
    cls = "bb-reproduced" if verdict == "reproduced" else "bb-off"
    plain = f"{verdict.capitalize()}: {what} on {on}, against {src.title}: {rest}"
    markup = (f'<p class="bb-verdict"><span class="{cls}">{html.escape(verdict.capitalize())}</span>: '
              f"{html.escape(what)} on {html.escape(on)}, against {link}: {html.escape(rest)}</p>")
    return display.Html(markup, plain)
