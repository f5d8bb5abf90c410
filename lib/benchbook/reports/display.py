"""How the notebooks show a table or a note: text a reader reads, never pandas' raw rendering.

pandas' notebook rendering cuts text at 50 characters, shows the index, `None`, `NaN`, `<NA>`, lists as
`['a']` and floats to six decimals. `table` renders a frame as escaped HTML with every value written
for reading: a dash for what is missing, integer counts, times in UTC to the second, ratios to 3
significant digits, throughputs with the decimals of the table, text wrapped in its cell (never cut).
An empty frame collapses to one line that says why (`note`).
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from ..core import config

DASH = "–"
# "-" is the placeholder records and descriptions write for "none": shown as the dash like the rest.
MISSING_TEXT = config.MISSING_TEXT
STYLE = ("<style>.bb-table{border-collapse:collapse;margin:0.4em 0 1em 0;font-size:13px}"
         ".bb-table th,.bb-table td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left!important;"
         "vertical-align:top;white-space:pre-wrap;overflow-wrap:break-word;max-width:48em}"
         ".bb-table td.num{text-align:right!important;font-variant-numeric:tabular-nums;white-space:nowrap}"
         ".bb-headline{font-size:12px}.bb-headline th,.bb-headline td{padding:2px 5px}"
         ".bb-table th{background:#f3f3f3}.bb-note{color:#555;font-style:italic;margin:0.3em 0 1em 0}"
         ".bb-verdict{font-size:17px;line-height:1.45;margin:0.4em 0 0.8em 0;max-width:70em}"
         ".bb-reproduced{color:#1a7f37;font-weight:600}.bb-off{color:#b35900;font-weight:600}"
         ".bb-scroll{overflow-x:auto;max-width:100%}.bb-table caption{caption-side:top;text-align:left;"
         "font-weight:600;padding:2px 0}.bb-setup{color:#333;margin:0.2em 0 0.8em 0;max-width:90em}"
         ".bb-nav{font-size:13px;margin:0 0 0.6em 0;overflow-wrap:anywhere}"
         ".bb-speedup td{background:#fafafa;color:#333}.bb-speedup td:first-child{min-width:7em}"
         "@media (max-width:700px){.jp-RenderedHTMLCommon h1{font-size:1.5em!important;line-height:1.25}"
         ".bb-verdict{font-size:15px}}</style>")


def missing(value) -> bool:
    """None, NaN, NA, NaT, an empty list or mapping, and the text pandas or a log uses for them."""
    return config.missing(value)


def utc(value) -> str:
    """A time as `YYYY-MM-DD HH:MM:SS UTC`: epoch seconds, a datetime, or `20261124T100301Z` style text."""
    if missing(value):
        return DASH
    try:
        if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
            stamp = pd.Timestamp(float(value), unit="s", tz="UTC")
        else:
            stamp = pd.Timestamp(value)
            stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    except (ValueError, TypeError, OverflowError):
        return str(value)
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC")


def significant(value, digits: int = 3) -> str:
    """A ratio to `digits` significant digits: 1.00, 0.987, 12.3."""
    if missing(value):
        return DASH
    x = float(value)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)
    return f"{x:.{decimals}f}"


def decimals(printed) -> int:
    """The decimals of a number as its source printed it: "381.46" -> 2, "1412" -> 0, "3038.730" -> 3
    (2 where there is no printed text), the digits a number compared with it is shown to."""
    return len(str(printed).partition(".")[2]) if not missing(printed) else 2


def logged_time(seconds) -> str:
    """A log's own clock time, `YYYY-MM-DD HH:MM:SS`, with no time zone: DLLogger and Python's logging
    print the machine's local time without one, so it is never called UTC."""
    if missing(seconds):
        return DASH
    return pd.Timestamp(float(seconds), unit="s").strftime("%Y-%m-%d %H:%M:%S") + " (the log's clock, no time zone)"


def fixed(value, decimals: int = 2) -> str:
    return DASH if missing(value) else f"{float(value):.{decimals}f}"


def signed(value, decimals: int = 2, unit: str = "") -> str:
    """A deviation with its sign, to `decimals`: "+0.06", "-0.40"; no sign where it rounds to zero ("0.00",
    never "-0.00": a score equal to the published one is no deviation down)."""
    if missing(value):
        return DASH
    shown = f"{float(value):+.{decimals}f}"
    return (shown[1:] if float(shown) == 0 else shown) + unit


def as_printed(value) -> str:
    """A published number as its report printed it: 1412, 381.46, 7601.888 (no float noise). Text (the
    reference file's printed form, 3038.730) is shown as it is; a float cannot keep a trailing zero."""
    if missing(value):
        return DASH
    if isinstance(value, str):
        return value
    return f"{float(value):.6f}".rstrip("0").rstrip(".")


def text(value) -> str:
    """Any other value, for reading: a dash when missing, lists joined, booleans as yes/no."""
    if missing(value):
        return DASH
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, list | tuple | set):
        return "; ".join(text(v) for v in value if not missing(v)) or DASH
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime | pd.Timestamp):
        return utc(value)
    return str(value)


class Html:
    """HTML the notebook displays as is (and prints as text outside a notebook)."""

    def __init__(self, markup: str, plain: str):
        self.markup, self.plain = markup, plain

    def _repr_html_(self) -> str:
        return STYLE + self.markup

    def __repr__(self) -> str:
        return self.plain

    def __str__(self) -> str:
        return self.plain


def note(line: str) -> Html:
    """One line in place of an empty table or figure, saying why it is empty."""
    return Html(f'<p class="bb-note">{html.escape(line)}</p>', line)


def _is_number(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def cells(frame: pd.DataFrame, formats: Mapping[str, object] | None = None) -> list[list[str]]:
    """Each value of the frame as the text a reader sees (see the module's docstring)."""
    formats = dict(formats or {})
    out = []
    for _, row in frame.iterrows():
        line = []
        for col in frame.columns:
            fmt = formats.get(col)
            value = row[col]
            if callable(fmt):
                line.append(fmt(value) if not missing(value) else DASH)
            elif isinstance(fmt, int) and not isinstance(fmt, bool):
                line.append(fixed(value, fmt))
            else:
                line.append(text(value))
        out.append(line)
    return out


def _wrapping(text: str) -> str:
    """`text` escaped, a line break allowed after each `/`: a path, a repository or an address too long for
    its column wraps at its parts (training_results_v0.7/NVIDIA/results/...), not mid-word."""
    return html.escape(text).replace("/", "/<wbr>")


def table(frame: pd.DataFrame, empty: str, formats: Mapping[str, object] | None = None,
          numeric: Iterable[str] = ()) -> Html:
    """The frame as a readable HTML table (no index column, nothing cut), or `empty` as one line."""
    if frame is None or frame.empty:
        return note(empty)
    frame = frame.reset_index() if _named_index(frame) else frame
    right = {c for c in frame.columns if c in set(numeric) or (formats and c in formats) or _is_number(frame[c])}
    rows = cells(frame, formats)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(
        f'<td class="num">{html.escape(v)}</td>' if c in right and v != DASH else f"<td>{_wrapping(v)}</td>"
        for c, v in zip(frame.columns, r, strict=True)) + "</tr>" for r in rows)
    plain = "\n".join(" | ".join(r) for r in [list(map(str, frame.columns)), *rows])
    return Html(f'<table class="bb-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>', plain)


def key_values(pairs: Iterable[tuple[str, object]], header: tuple[str, ...] = ("", "value")) -> Html:
    """A two-or-more-column table of labels and values, every value wrapped, never cut."""
    rows = [list(p) for p in pairs]
    return table(pd.DataFrame(rows, columns=list(header)), empty="nothing to show")


def _named_index(frame: pd.DataFrame) -> bool:
    return any(n is not None and str(n) != "" for n in frame.index.names)
