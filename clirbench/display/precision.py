"""One rounding rule for every display of a measure's values: the leaderboard page (cells, bars,
axes, gap heatmap), the text, Markdown and LaTeX tables, ``compare --format latex`` and the plots.

A column of one measure has one number of decimals, for its values and their intervals alike:
the measure's unit gives the base (``fraction`` 3: 0.852; ``percent`` and ``rank`` 1: 57.7, 35.2),
and a column whose narrowest interval half-width would round to zero gets the decimals that show
its first significant digit (99.92 ± 0.04), at most two more than the base. Rounding is for display
only: files keep every digit.
"""
from __future__ import annotations

import math
from typing import Iterable

__all__ = ["BASE_DECIMALS", "MAX_EXTRA", "decimals", "measure_decimals", "board_decimals", "fmt", "fmt_interval"]

BASE_DECIMALS = {"fraction": 3, "percent": 1, "rank": 1}
MAX_EXTRA = 2
DASH = "–"


def decimals(unit: str | None, half_widths: Iterable[float] = ()) -> int:
    """Decimals of a column of ``unit`` whose intervals have ``half_widths`` (see the module)."""
    base = BASE_DECIMALS.get(unit or "", 3)
    widths = [abs(float(h)) for h in half_widths if h is not None and math.isfinite(h) and h != 0]
    if not widths:
        return base
    need = -math.floor(math.log10(min(widths)))  # the narrowest one's first significant digit
    if round(min(widths), max(base, need)) == 0:  # 0.0096 at 2 decimals is 0.01: still shown
        need += 1
    return min(base + MAX_EXTRA, max(base, need))


def measure_decimals(measure: str, half_widths: Iterable[float] = ()) -> int:
    """``decimals`` for a measure by name (its family's unit); an unknown name counts as a fraction."""
    from ..measures import parse  # lazy: numpy

    try:
        unit = parse(measure).record.unit
    except ValueError:
        unit = None
    return decimals(unit, half_widths)


def fmt(x: float | None, places: int, sign: bool = False) -> str:
    """``x`` with ``places`` decimals (``sign``: a leading ``+`` on positives); ``–`` for none/NaN.
    A value that rounds to zero is ``0.000``, never ``-0.000`` or ``+0.000``."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    text = f"{float(x):{'+' if sign else ''}.{places}f}"
    if float(text) == 0:
        text = f"{0.0:.{places}f}"
    return text


def fmt_interval(low: float, high: float, places: int, style: str = "pm") -> str:
    """An interval as ``± half its length`` (``pm``) or ``[low, high]`` (``bracket``), ``places`` decimals."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return ""
    if style == "pm":
        return f"± {fmt((high - low) / 2, places)}"
    return f"[{fmt(low, places)}, {fmt(high, places)}]"


def board_decimals(board) -> int:
    """``decimals`` of a leaderboard board's column (``significance.Board``): its measure's unit and
    its ranked rows' interval half-widths."""
    return measure_decimals(board.measure, [(r.ci_high - r.ci_low) / 2 for r in board.rows if r.rank is not None])
