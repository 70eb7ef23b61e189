"""The language-preference matrix as an SVG heatmap (a pure function; the leaderboard page embeds it).

A matrix is ``stats.preference.preference_matrix``'s: rows are query languages, columns document
languages; a cell's colour is the share of queries whose best-ranked relevant passage is in the
column's language (white 0% to dark blue 100%), its text that share and the mean rank of the
relevant passage in that language; its tooltip gives both with their 95% intervals, and the share
of queries whose passage there a tie ranked. Ranks and shares are means over random orders of tied
documents (docs/measures.md); where ties decided many cells, a note under the heatmaps says so.
"""
from __future__ import annotations

import html
import math
from typing import Mapping

from ..stats.preference import preference_matrix, tie_note

__all__ = ["preference_svg", "preference_section", "share_colour"]

_CELL_W, _CELL_H, _LABEL_W, _HEAD_H, _TITLE_H, _LEGEND_H = 84, 34, 56, 22, 20, 36
_MIN_W = 300  # room for the legend's lines


def share_colour(share: float | None) -> str:
    """``#rrggbb`` from white (0%) to dark blue (100%); light grey when the share is unknown."""
    if share is None or not math.isfinite(share):
        return "#eeeeee"
    t = min(max(share / 100.0, 0.0), 1.0)
    low, high = (247, 251, 255), (8, 48, 107)
    return "#" + "".join(f"{round(a + t * (b - a)):02x}" for a, b in zip(low, high))


def _num(x) -> str:
    return "–" if x is None or not math.isfinite(x) else (f"{x:.1f}" if abs(x) < 1000 else f"{x:.0f}")


def _value(cell: Mapping | None, key: str = "value") -> float | None:
    if not cell or cell.get(key) is None:
        return None
    return float(cell[key])


def preference_svg(matrix: Mapping, system: str = "") -> str:
    """An ``<svg class="preference">`` heatmap of ``matrix`` (width and height set, so that it is never
    clipped); ``system`` (optional) goes into the title."""
    esc = html.escape
    docs, queries = list(matrix["doc_langs"]), list(matrix["query_langs"])
    title_w = 8 * (len(str(matrix['pool'])) + len(system) + 3)  # bold text: about 8 px a character
    width = max(_LABEL_W + _CELL_W * len(docs) + 8, _MIN_W, title_w)
    height = _TITLE_H + _HEAD_H + _CELL_H * len(queries) + _LEGEND_H
    title = f"{matrix['pool']}" + (f" · {system}" if system else "")
    parts = [f'<svg class="preference" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}: language preference">',
             f'<text x="0" y="14" font-weight="bold">{esc(title)}</text>']
    top = _TITLE_H + _HEAD_H
    for j, d in enumerate(docs):
        x = _LABEL_W + j * _CELL_W + _CELL_W / 2
        parts.append(f'<text x="{x:.0f}" y="{_TITLE_H + 15}" text-anchor="middle">{esc(d)}</text>')
    for i, q in enumerate(queries):
        y = top + i * _CELL_H
        parts.append(f'<text x="0" y="{y + _CELL_H / 2 + 5:.0f}">q {esc(q)}</text>')
        for j, d in enumerate(docs):
            share_cell, rank_cell = matrix["best_share"][i][j], matrix["mean_rank"][i][j]
            share, rank = _value(share_cell), _value(rank_cell)
            x = _LABEL_W + j * _CELL_W
            ink = "#ffffff" if share is not None and share > 55 else "#000000"  # inline style: the page's CSS sets text fill
            tip = (f"queries in {q}, passages in {d}: best-ranked in {d} for {_num(share)}% "
                   f"[{_num(_value(share_cell, 'ci_low'))}, {_num(_value(share_cell, 'ci_high'))}] of the queries; "
                   f"mean rank {_num(rank)} [{_num(_value(rank_cell, 'ci_low'))}, {_num(_value(rank_cell, 'ci_high'))}]"
                   + _tie_tip(matrix, i, j))
            parts.append(f'<g class="cell"><rect x="{x}" y="{y}" width="{_CELL_W - 2}" height="{_CELL_H - 2}" '
                         f'fill="{share_colour(share)}"><title>{esc(tip)}</title></rect>'
                         f'<text x="{x + (_CELL_W - 2) / 2:.0f}" y="{y + 14}" text-anchor="middle" style="fill:{ink}">'
                         f'{_num(share)}%</text>'
                         f'<text x="{x + (_CELL_W - 2) / 2:.0f}" y="{y + 27}" text-anchor="middle" style="fill:{ink}" '
                         f'font-size="10">rank {_num(rank)}</text></g>')
    legend_y = top + _CELL_H * len(queries) + 16
    parts.append(f'<text x="0" y="{legend_y}" font-size="10">colour, %: queries whose best-ranked relevant</text>'
                 f'<text x="0" y="{legend_y + 13}" font-size="10">passage is in that language; rank: its mean rank</text>'
                 '</svg>')
    return "".join(parts)


def _tie_tip(matrix: Mapping, i: int, j: int) -> str:
    """The tooltip's tie part: the % of queries whose passage in this cell a tie ranked ("" if unknown)."""
    rows = matrix.get("tie_share")
    tie = _value(rows[i][j]) if rows else None
    return "" if tie is None else f"; tied with another document for {_num(tie)}% of the queries"


def preference_section(data: Mapping, pool_ids) -> str:
    """The page's "Language preference" block for a board's pools (``pool_ids``) of leaderboard
    ``data``: one heatmap per system and set of documents whose results hold preference rows; ""
    when none does."""

    svgs, notes = [], []
    for system, sysd in sorted(data["systems"].items()):
        records = []
        for pid in pool_ids:
            res = sysd["results"].get(pid)
            if res and res.get("preference"):
                records.append({**data["pools"][pid], "task": data["task"], "preference": res["preference"]})
        for matrix in preference_matrix(records):
            svgs.append(preference_svg(matrix, system))
            note = tie_note(matrix)
            if note:
                text = f"{matrix['pool']} · {system}: {note}"
                notes.append(f'<p class="note tie-note">{html.escape(text)}</p>')
    if not svgs:
        return ""
    return ('<h3>Language preference</h3><div class="plots preference-plots">' + "".join(svgs) + "</div>"
            + "".join(notes))
