"""The colours every output shares (the leaderboard page and the ``clirbench plot`` figures), one
meaning each: ``BETTER`` (blue) and ``WORSE`` (red) by the measure's direction, so a gap that hurts
is red whether its measure is higher- or lower-is-better; ``HIGHER`` / ``LOWER`` (green / purple,
no judgement) for a measure best at a target (SameLangFirst), whose difference's sign says nothing
of better or worse; white for no difference; ``SERIES`` for systems and languages (Okabe-Ito,
colour-blind safe, without the red and blue that mean worse and better).
"""
from __future__ import annotations

import math

__all__ = ["BETTER", "WORSE", "HIGHER", "LOWER", "NEUTRAL", "SERIES", "MUTED", "BAR", "WHISKER", "TARGET", "ends", "diverging",
           "meaning", "series_colours", "light_text"]

BETTER = "#2166ac"
WORSE = "#b2182b"
HIGHER = "#1b7837"
LOWER = "#762a83"
NEUTRAL = "#ffffff"
MUTED = "#999999"
BAR, WHISKER, TARGET = "#c9c9c9", "#333333", "#333333"  # bars of a value, its interval, a target line: no judgement
SERIES = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000", "#f0e442")


def ends(direction: str) -> tuple[str, str]:
    """``(colour of a negative difference, colour of a positive one)`` for a measure's direction
    (``up``, ``down`` or ``target``)."""
    if direction == "up":
        return WORSE, BETTER
    if direction == "down":
        return BETTER, WORSE
    return LOWER, HIGHER


def meaning(direction: str, value: float) -> str:
    """``better``, ``worse``, ``higher``, ``lower`` or ``none`` (0 or NaN): what a difference's colour says."""
    if value is None or math.isnan(value) or value == 0:
        return "none"
    if direction == "target":
        return "higher" if value > 0 else "lower"
    return "better" if (value > 0) == (direction == "up") else "worse"


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def diverging(value: float, span: float, direction: str) -> str:
    """``#rrggbb`` of a difference on a scale centred on 0: white at 0, the ``ends`` colour at
    ``|value| >= span``, linear in between (RGB); NaN or ``span <= 0`` is white."""
    if value is None or math.isnan(value) or span <= 0 or value == 0:
        return NEUTRAL
    t = min(1.0, abs(value) / span)
    end = _rgb(ends(direction)[value > 0])
    return "#" + "".join(f"{round(255 + (c - 255) * t):02x}" for c in end)


def light_text(fill: str) -> bool:
    """Whether text on ``fill`` reads better white than dark (relative luminance below 0.3)."""
    r, g, b = (c / 255 for c in _rgb(fill))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] < 0.3


def series_colours(names) -> dict[str, str]:
    """``{name: colour}`` for systems (or languages), by their sorted order: the same names get the
    same colours in every output; a ninth name reuses the first colour."""
    return {name: SERIES[i % len(SERIES)] for i, name in enumerate(sorted(dict.fromkeys(names)))}
