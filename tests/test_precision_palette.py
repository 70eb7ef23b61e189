"""The one rounding rule (clirbench.display.precision) and the one palette (clirbench.display.palette) every output
shares: docs/leaderboards.md, "Paper-ready output"."""
from __future__ import annotations

import pytest

from clirbench.display import palette
from clirbench.display.precision import board_decimals, decimals, fmt, fmt_interval, measure_decimals


@pytest.mark.parametrize("unit, widths, places", [
    ("fraction", [], 3), ("fraction", [0.012, 0.0082], 3), ("percent", [1.46, 3.2], 1), ("rank", [1.6, 5.3], 1),
    ("percent", [0.036, 0.19], 2),  # SameLangFirst 99.92 ± 0.04: one decimal would print ± 0.0
    ("percent", [0.0096], 3), ("fraction", [1e-7], 5), (None, [], 3)])
def test_decimals_by_unit_and_the_narrowest_interval(unit, widths, places):
    assert decimals(unit, widths) == places


def test_measure_decimals_and_formatting():
    assert measure_decimals("nDCG@10") == 3 and measure_decimals("MaxR") == 1 and measure_decimals("Complete@10") == 1
    assert measure_decimals("not-a-measure") == 3
    assert fmt(57.7461, 1) == "57.7" and fmt(-0.0001, 3) == "0.000" and fmt(0.0001, 3, sign=True) == "0.000"
    assert fmt(1.234, 2, sign=True) == "+1.23" and fmt(float("nan"), 2) == "–" and fmt(None, 2) == "–"
    assert fmt_interval(0.1, 0.2, 3) == "± 0.050" and fmt_interval(0.1, 0.2, 3, "bracket") == "[0.100, 0.200]"


def test_board_decimals_reads_the_ranked_rows_intervals():
    from clirbench.leaderboard import boards, load
    from pathlib import Path

    data = load(Path(__file__).resolve().parents[1] / "leaderboards" / "xquad.json")
    got = {b.title: board_decimals(b) for b in boards(data)}
    assert got["multi · Complete@10"] == 1 and got["multi · SameLangFirst"] == 2 and got["mono-cross · RR"] == 3


def test_a_gap_that_hurts_is_worse_whatever_the_direction():
    assert palette.meaning("up", -1.0) == palette.meaning("down", 1.0) == "worse"
    assert palette.meaning("up", 1.0) == palette.meaning("down", -1.0) == "better"
    assert palette.meaning("target", 1.0) == "higher" and palette.meaning("up", 0.0) == "none"
    assert palette.diverging(-2.0, 1.0, "up") == palette.diverging(2.0, 1.0, "down") == palette.WORSE
    assert palette.diverging(2.0, 1.0, "up") == palette.diverging(-2.0, 1.0, "down") == palette.BETTER
    assert palette.diverging(0.0, 1.0, "up") == palette.NEUTRAL == "#ffffff"
    half = palette.diverging(-0.5, 1.0, "up")  # half-way from white to WORSE, channel by channel
    assert half == "#" + "".join(f"{round(255 + (int(palette.WORSE[k:k + 2], 16) - 255) * 0.5):02x}" for k in (1, 3, 5))
    assert palette.light_text(palette.WORSE) and not palette.light_text(palette.NEUTRAL)
    # series colours follow the sorted names: the same systems get the same colours in every output
    assert palette.series_colours(["b", "a"]) == palette.series_colours(["a", "b", "a"]) == \
        {"a": palette.SERIES[0], "b": palette.SERIES[1]}
    assert palette.BETTER not in palette.SERIES and palette.WORSE not in palette.SERIES
