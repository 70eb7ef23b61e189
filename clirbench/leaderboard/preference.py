"""The language-preference matrix as an SVG heatmap (a pure function; the leaderboard page embeds it).

A matrix is ``stats.preference.preference_matrix``'s: rows are query languages, columns document
languages; a cell's colour is the share of queries whose best-ranked relevant passage is in the
column's language (white 0% to dark blue 100%), its text that share and the mean rank of the
relevant passage in that language; its tooltip gives both with their 95% intervals, and the share
of queries whose passage there a tie ranked. Ranks and shares are means over random orders of tied
documents (docs/measures.md); where ties decided many cells, a note under the heatmaps says so.

Beside each heatmap whose records hold them, ``share_svg`` draws the same rows and columns with the
mean % of each query's top 10 in the column's language (``preference.top10_share``: which languages
fill the top of the ranking, relevant or not), the query's own language outlined, the neutral mix
(100/k on these parallel pools) in the legend, each cell's 95% interval under its value.
"""
from __future__ import annotations

import html
import math
from typing import Mapping

from ..measures import Share
from ..stats.preference import SHARE_PART, preference_matrix, tie_note

__all__ = ["preference_svg", "share_svg", "has_shares", "preference_section", "share_colour"]

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


def has_shares(matrix: Mapping) -> bool:
    """Whether ``matrix`` holds top-10 shares (rows recorded before they were kept do not)."""
    return any(_value(c) is not None for row in matrix.get(SHARE_PART) or () for c in row)


def share_svg(matrix: Mapping, system: str = "") -> str:
    """An ``<svg class="exposure">`` of ``matrix``'s top-10 shares: rows query languages, columns
    document languages, a cell's colour and text the mean % of each query's top 10 in that language
    (the scale of ``share_colour``), its 95% interval under it and in its tooltip, the query's own
    language outlined; a missing cell is grey with "–"."""
    esc = html.escape
    docs, queries = list(matrix["doc_langs"]), list(matrix["query_langs"])
    neutral = Share.record.target_for(len(docs))
    title = f"{matrix['pool']}" + (f" · {system}" if system else "")
    title_w = 8 * (len(title) + len(" · top 10"))
    width = max(_LABEL_W + _CELL_W * len(docs) + 8, _MIN_W, title_w)
    height = _TITLE_H + _HEAD_H + _CELL_H * len(queries) + _LEGEND_H
    parts = [f'<svg class="exposure" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}: top-10 language shares">',
             f'<text x="0" y="14" font-weight="bold">{esc(title)} · top 10</text>']
    top = _TITLE_H + _HEAD_H
    for j, d in enumerate(docs):
        x = _LABEL_W + j * _CELL_W + _CELL_W / 2
        parts.append(f'<text x="{x:.0f}" y="{_TITLE_H + 15}" text-anchor="middle">{esc(d)}</text>')
    rows = matrix.get(SHARE_PART) or [[None] * len(docs) for _ in queries]
    for i, q in enumerate(queries):
        y = top + i * _CELL_H
        parts.append(f'<text x="0" y="{y + _CELL_H / 2 + 5:.0f}">q {esc(q)}</text>')
        for j, d in enumerate(docs):
            cell = rows[i][j]
            share, low, high = _value(cell), _value(cell, "ci_low"), _value(cell, "ci_high")
            x = _LABEL_W + j * _CELL_W
            own = d == q
            ink = "#ffffff" if share is not None and share > 55 else "#000000"  # inline style: the page's CSS sets text fill
            outline = ' stroke="#000000" stroke-width="2"' if own else ""
            tip = (f"queries in {q}: {_num(share)}% [{_num(low)}, {_num(high)}] of each one's top 10 in {d} "
                   f"(mean over {cell.get('n') if cell else '–'} queries; neutral {neutral:.1f}%)"
                   + ("; the query's own language" if own else ""))
            parts.append(f'<g class="share{" own" if own else ""}" data-v="{"" if share is None else repr(share)}">'
                         f'<rect x="{x + 1}" y="{y + 1}" width="{_CELL_W - 4}" height="{_CELL_H - 4}" '
                         f'fill="{share_colour(share)}"{outline}><title>{esc(tip)}</title></rect>'
                         f'<text x="{x + (_CELL_W - 2) / 2:.0f}" y="{y + 14}" text-anchor="middle" style="fill:{ink}">'
                         f'{_num(share)}{"%" if share is not None else ""}</text>'
                         f'<text x="{x + (_CELL_W - 2) / 2:.0f}" y="{y + 27}" text-anchor="middle" style="fill:{ink}" '
                         f'font-size="10">{f"[{_num(low)}, {_num(high)}]" if low is not None else ""}</text></g>')
    legend_y = top + _CELL_H * len(queries) + 16
    parts.append(f'<text x="0" y="{legend_y}" font-size="10">colour, %: mean share of each query\'s top 10 in</text>'
                 f'<text x="0" y="{legend_y + 13}" font-size="10">that language; neutral {neutral:.1f}%; outlined: own '
                 'language</text></svg>')
    return "".join(parts)


def _tie_tip(matrix: Mapping, i: int, j: int) -> str:
    """The tooltip's tie part: the % of queries whose passage in this cell a tie ranked ("" if unknown)."""
    rows = matrix.get("tie_share")
    tie = _value(rows[i][j]) if rows else None
    return "" if tie is None else f"; tied with another document for {_num(tie)}% of the queries"


def preference_section(data: Mapping, pool_ids) -> str:
    """The page's "Language preference" block for a board's pools (``pool_ids``) of leaderboard
    ``data``: one heatmap per system and set of documents whose results hold preference rows, with
    its top-10 shares beside it (``share_svg``) where they hold them; "" when none does."""

    svgs, notes = [], []
    for system, sysd in sorted(data["systems"].items()):
        records = []
        for pid in pool_ids:
            res = sysd["results"].get(pid)
            if res and res.get("preference"):
                records.append({**data["pools"][pid], "task": data["task"], "preference": res["preference"]})
        for matrix in preference_matrix(records):
            if has_shares(matrix):  # beside it, kept together: which languages fill the top 10
                svgs.append(f'<div class="pair">{preference_svg(matrix, system)}{share_svg(matrix, system)}</div>')
            else:
                svgs.append(preference_svg(matrix, system))
            note = tie_note(matrix)
            if note:
                text = f"{matrix['pool']} · {system}: {note}"
                notes.append(f'<p class="note tie-note">{html.escape(text)}</p>')
    if not svgs:
        return ""
    heading = "Language preference" + (" · which languages fill the top 10" if any('class="exposure"' in s for s in svgs)
                                       else "")
    return (f'<h3>{heading}</h3><div class="plots preference-plots">' + "".join(svgs) + "</div>" + "".join(notes))
