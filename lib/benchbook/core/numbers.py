"""Numbers as a message shows them: a warning never prints 309 digits of 1e308, nor "+inf%".

Standard library only, so that every layer's messages may use it (the analysis's rate warnings, the
MLPerf rules' verdicts, the parsers' notes)."""

from __future__ import annotations

import math

BIG = 1e12  # from here on a number is shown by its first digits and its exponent


def shown(value: float | int | None, decimals: int = 2) -> str:
    """`value` with `decimals` decimals while that is short (below BIG), else three significant digits
    and an exponent (1e+308); NaN and the infinities in words; an integer too large for a float by
    its number of digits."""
    if value is None:
        return "none"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= BIG:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # (str() of 5,000 digits is refused)
        sign = "-" if value < 0 else ""
        return f"{sign}about 10^{digits - 1} ({digits} digits)" if digits > 300 else f"{value:.3g}"
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "infinity" if number > 0 else "minus infinity"
    return f"{number:.{decimals}f}" if abs(number) < BIG else f"{number:.3g}"


def change(value: float, base: float) -> str:
    """How far `value` is from `base`, in words: "+12.3%", past +-1000% a factor ("2.6e+304 times"),
    "not comparable" where either is NaN or infinite or `base` is 0."""
    if not (math.isfinite(value) and math.isfinite(base)) or base == 0:
        return "not comparable"
    ratio = (value - base) / base
    if abs(ratio) <= 10:
        return f"{100 * ratio:+.1f}%"
    factor = shown(value / base, 1)
    return f"{factor} times" if value / base > 0 else f"{factor} times (the sign changed)"


def finite(value):
    """A JSON value with every float that is not finite as None (strict JSON has no NaN): the CLI's --json."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value
