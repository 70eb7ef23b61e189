"""Static, self-contained HTML page per leaderboard: sortable tables, inline SVG plots, no CDN.

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

from . import store
from .significance import Board, boards, gaps

__all__ = ["esc", "render_page", "write_site", "SCRIPT"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")

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
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px;color:#444}
table{border-collapse:collapse;margin:6px 0 10px}th,td{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}
th{cursor:pointer;background:#f6f6f6;user-select:none}th:first-child,td:first-child{text-align:left}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
sup.g{color:#666;margin-left:2px}.ci{color:#777;font-size:12px}.muted{color:#777}
code{font-size:12px;background:#f4f4f4;padding:1px 4px;border-radius:3px;word-break:break-all}
.plots{display:flex;flex-wrap:wrap;gap:12px}svg text{font:11px system-ui,sans-serif;fill:#333}
"""


def esc(value) -> str:
    """HTML-escape any value (quotes too), for text and attribute values alike."""
    return _html.escape(str(value), quote=True)


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def _num_attr(x: float) -> str:
    return "" if x is None or math.isnan(x) else repr(float(x))


def _colors(systems: Sequence[str]) -> dict[str, str]:
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(systems)}


# ---------------------------------------------------------------------------------------------
# plots (inline SVG)


def bars_svg(board: Board) -> str:
    """Horizontal bars with CI whiskers, one per system."""
    rows = [r for r in board.rows if not math.isnan(r.value)]
    if not rows:
        return ""
    label_w, plot_w, row_h, top = 150, 300, 22, 22
    hi = max(max(r.ci_high if not math.isnan(r.ci_high) else r.value for r in rows), 1e-12)
    lo = min(0.0, min(r.value for r in rows))
    scale = lambda v: label_w + (v - lo) / (hi - lo) * plot_w  # noqa: E731
    height = top + row_h * len(rows) + 18
    target = board.family.target  # SameLangFirst: best at 50, marked by a dashed line
    title = board.title if target is None else f"{board.title} ({board.direction_label})"
    parts = [f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 60}" '
             f'height="{height}" role="img" aria-label="{esc(title)}">',
             f'<text x="0" y="14" font-weight="bold">{esc(title)}</text>']
    for i, r in enumerate(rows):
        y = top + i * row_h
        x0, x1 = scale(max(lo, 0.0)), scale(r.value)
        parts.append(f'<text x="0" y="{y + 15}">{esc(r.system[:24])}</text>')
        parts.append(f'<rect x="{min(x0, x1):.1f}" y="{y + 3}" width="{abs(x1 - x0):.1f}" height="{row_h - 8}" '
                     f'fill="#9ecae1"><title>{esc(r.system)}: {_fmt(r.value)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]</title></rect>')
        if not math.isnan(r.ci_low):
            a, b, m = scale(r.ci_low), scale(r.ci_high), y + row_h / 2 - 1
            parts.append(f'<path d="M{a:.1f} {m:.1f}H{b:.1f}M{a:.1f} {m - 5:.1f}V{m + 5:.1f}M{b:.1f} {m - 5:.1f}V{m + 5:.1f}" '
                         f'stroke="#08306b" stroke-width="1.5" fill="none"/>')
        parts.append(f'<text x="{label_w + plot_w + 6}" y="{y + 15}">{_fmt(r.value)}{esc(" " + r.group if r.group else "")}</text>')
    if target is not None and lo <= target <= hi:
        parts.append(f'<path class="target" d="M{scale(target):.1f} {top}V{height - 18}" stroke="#d62728" '
                     f'stroke-dasharray="4 3" fill="none"><title>{esc(board.direction_label)}</title></path>')
    parts.append(f'<text x="{label_w}" y="{height - 4}" class="muted">{_fmt(lo)}</text>'
                 f'<text x="{label_w + plot_w}" y="{height - 4}" text-anchor="end">{_fmt(hi)}</text></svg>')
    return "".join(parts)


def heatmap_svg(values: Mapping[str, Mapping[str, float]], title: str) -> str:
    """Systems × language pairs, diverging colours (red: L2 queries score higher, blue: lower)."""
    if not values:
        return ""
    systems = list(values)
    pairs = sorted({p for row in values.values() for p in row})
    span = max((abs(v) for row in values.values() for v in row.values()), default=1.0) or 1.0
    label_w, cell_w, cell_h, top = 150, 58, 26, 40
    width, height = label_w + cell_w * len(pairs) + 10, top + cell_h * len(systems) + 30
    parts = [f'<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{esc(title)}"><text x="0" y="14" font-weight="bold">{esc(title)}</text>']
    for j, pair in enumerate(pairs):
        parts.append(f'<text x="{label_w + j * cell_w + cell_w / 2:.0f}" y="{top - 6}" text-anchor="middle">{esc(pair)}</text>')
    for i, system in enumerate(systems):
        y = top + i * cell_h
        parts.append(f'<text x="0" y="{y + 17}">{esc(system[:24])}</text>')
        for j, pair in enumerate(pairs):
            v = values[system].get(pair)
            if v is None:
                continue
            t = min(1.0, abs(v) / span)
            shade = int(255 - 175 * t)
            fill = f"rgb(255,{shade},{shade})" if v > 0 else f"rgb({shade},{shade},255)"
            x = label_w + j * cell_w
            parts.append(f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}">'
                         f'<title>{esc(system)} {esc(pair)}: {v:+.3f}</title></rect>'
                         f'<text x="{x + cell_w / 2 - 1:.0f}" y="{y + 17}" text-anchor="middle">{v:+.2f}</text>')
    parts.append(f'<text x="0" y="{height - 6}" class="muted">gap for pair L1-L2 = mean with queries in L2 '
                 f'minus with queries in L1, paired by question; colour scale ±{_fmt(span)}</text></svg>')
    return "".join(parts)


def dots_svg(values: Mapping[str, Mapping[str, float]], title: str) -> str:
    """Groups (e.g. disciplines) as rows, one dot per system."""
    if not values:
        return ""
    systems = list(values)
    groups = sorted({g for row in values.values() for g in row})
    colors = _colors(systems)
    vmax = max((v for row in values.values() for v in row.values()), default=1.0) or 1.0
    label_w, plot_w, row_h, top = 170, 320, 18, 22
    height = top + row_h * len(groups) + 18 * (1 + len(systems))
    parts = [f'<svg class="dots" xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 20}" height="{height}" '
             f'role="img" aria-label="{esc(title)}"><text x="0" y="14" font-weight="bold">{esc(title)}</text>']
    for i, group in enumerate(groups):
        y = top + i * row_h + 12
        parts.append(f'<text x="0" y="{y + 4}">{esc(group[:28])}</text>'
                     f'<path d="M{label_w} {y}H{label_w + plot_w}" stroke="#eee"/>')
        for s in systems:
            v = values[s].get(group)
            if v is not None:
                parts.append(f'<circle cx="{label_w + v / vmax * plot_w:.1f}" cy="{y}" r="4.5" fill="{colors[s]}">'
                             f'<title>{esc(s)} · {esc(group)}: {_fmt(v)}</title></circle>')
    for k, s in enumerate(systems):
        y = top + row_h * len(groups) + 14 + 18 * k
        parts.append(f'<circle cx="{label_w + 6}" cy="{y - 4}" r="4.5" fill="{colors[s]}"/>'
                     f'<text x="{label_w + 16}" y="{y}">{esc(s[:40])}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# the page


def _breakdowns(data: Mapping, pids: Sequence[str]) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """``{(field, measure): {system: {group: mean over pools weighted by n}}}``."""
    sums: dict = {}
    for system, sysd in data["systems"].items():
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


def _table(group_boards: Sequence[Board], table_id: str) -> str:
    systems = sorted({r.system for b in group_boards for r in b.rows})
    head = ['<th data-type="text">system</th>']
    for b in group_boards:
        head.append(f'<th data-type="num" title="{esc(b.measure)}, {esc(b.direction_label)}; ± half the 95% CI; '
                    f'letters: significance groups">{esc(b.measure)} {esc(b.family.arrow)}</th>')
    body = []
    for s in systems:
        cells = [f'<td data-v="{esc(s)}">{esc(s)}</td>']
        for b in group_boards:
            row = next((r for r in b.rows if r.system == s), None)
            if row is None:
                cells.append('<td data-v="">–</td>')
                continue
            half = (row.ci_high - row.ci_low) / 2 if not math.isnan(row.ci_low) else math.nan
            ci = f' <span class="ci">± {_fmt(half)}</span>' if not math.isnan(half) else ' <span class="ci">(partial)</span>'
            group = f'<sup class="g">{esc(row.group)}</sup>' if row.group else ""
            if row.rank_interval:
                group += f' <span class="ci">{esc(row.rank_interval)}</span>'
            # click-sorting ranks a best-at-target column by distance from the target
            key = row.value if b.family.direction != "target" else b.family.goodness(row.value)
            cells.append(f'<td data-v="{_num_attr(key)}" title="95% CI [{_fmt(row.ci_low)}, {_fmt(row.ci_high)}], '
                         f'{row.pools} pools">{_fmt(row.value)}{ci}{group}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="sortable" id="{esc(table_id)}"><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


_ORDER = ("multi", "multi-1", "mono-same", "mono-cross", "retrieval")


def _scenario_order(item) -> tuple:
    (subset, scenario, mode), _ = item
    return (subset, _ORDER.index(scenario) if scenario in _ORDER else len(_ORDER), scenario, mode)


def render_page(data: Mapping) -> str:
    """The page of one leaderboard (a parsed leaderboard dict); every string escaped."""
    task = str(data.get("task", "?"))
    all_boards = boards(data)
    grouped: dict[tuple, list[Board]] = {}
    for b in all_boards:
        grouped.setdefault((b.subset, b.scenario, b.pool_mode), []).append(b)
    ds = data.get("dataset") or {}
    sig = data.get("significance") or {}
    out = [f"<h1>clirbench leaderboard · {esc(task)}</h1>",
           f'<p class="muted">{len(data["systems"])} systems, {len(data["pools"])} pools. Dataset {esc(ds.get("source"))}'
           f'{", revision " + esc(ds.get("revision")) if ds.get("revision") else ""}. Values: macro mean over a '
           f'scenario\'s pools; ± half the {esc(sig.get("confidence", 0.95))} bootstrap interval '
           f'({esc(sig.get("resamples", ""))} resamples, queries resampled per pool, paired across systems). '
           f'Systems sharing a letter are not significantly apart (paired bootstrap against the group leader). '
           f'Click a column to sort.</p>']
    for k, ((subset, scenario, mode), group_boards) in enumerate(sorted(grouped.items(), key=_scenario_order)):
        title = f"{subset + ' / ' if subset else ''}{scenario}{'' if mode == 'unique' else ' (' + mode + ')'}"
        out.append(f'<section><h2>{esc(title)}</h2>{_table(group_boards, f"table-{k}")}')
        out.append('<div class="plots">' + "".join(bars_svg(b) for b in group_boards) + "</div>")
        bilingual = any(len(data["pools"][p]["doc_langs"]) == 2 for p in group_boards[0].pools)
        if bilingual:
            measure = next((b.measure for b in group_boards if b.higher_is_better), group_boards[0].measure)
            gap = gaps(data, scenario, measure, subset, mode)
            if gap:
                out.append("<h3>Query-language gap</h3>" + heatmap_svg(gap, f"{title}: gap in {measure} per language pair"))
        for (fld, measure), values in sorted(_breakdowns(data, group_boards[0].pools).items()):
            out.append(f"<h3>By {esc(fld)}</h3>" + dots_svg(values, f"{title}: {measure} by {fld}"))
        out.append("</section>")
    from .costs import COST_HEADER, cost_cell

    out.append("<h2>Systems</h2><table class=\"sortable\" id=\"systems\"><thead><tr><th data-type=\"text\">system</th>"
               "<th data-type=\"text\">model</th><th data-type=\"text\">revision</th><th data-type=\"num\">pools</th>"
               "<th data-type=\"text\">hardware</th>" + COST_HEADER + "<th data-type=\"text\">made with</th></tr></thead><tbody>")
    from ..redact import redact_command

    for name, sysd in sorted(data["systems"].items()):
        ret = sysd.get("retriever") or {}
        model = _short(ret.get("model_id") or "")
        cmds = "<br>".join(f"<code>{esc(redact_command(c))}</code>" for c in sysd.get("commands") or [])
        cpus = sorted({str((r.get("hardware") or {}).get("cpu") or "") for r in sysd["results"].values()} - {""})
        out.append(f'<tr><td data-v="{esc(name)}">{esc(name)}</td><td data-v="{esc(model)}">'
                   f'{esc(model or "–")}</td><td data-v="{esc(ret.get("revision") or "")}">'
                   f'{esc(ret.get("revision") or "–")}</td><td data-v="{len(sysd["results"])}">{len(sysd["results"])}</td>'
                   f'<td data-v="{esc(", ".join(cpus))}">{esc(", ".join(cpus) or "–")}</td>{cost_cell(sysd)}'
                   f'<td data-v="">{cmds}</td></tr>')
    out.append("</tbody></table>")
    return _document(f"clirbench leaderboard · {task}", "".join(out))


def _document(title: str, body: str) -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{esc(title)}</title><style>{STYLE}</style></head>'
            f"<body>{body}<script>{SCRIPT}</script></body></html>\n")


def write_site(out_dir: str | os.PathLike, leaderboard_dir: str | os.PathLike = "leaderboards",
               tasks: Sequence[str] | None = None) -> list[Path]:
    """One page per leaderboard (``<task>.html``; ``store.page_names`` keeps them apart from
    ``index.html`` and from each other) plus ``index.html``; returns the pages written."""
    from ..atomic import write_text_atomic
    from ..errors import ClirbenchError

    lb_dir = Path(leaderboard_dir)
    names = list(tasks) if tasks else sorted(p.stem for p in lb_dir.glob("*.json"))
    if not names:
        raise ClirbenchError(f"{lb_dir}: no leaderboards")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, links = [], []
    pages = store.page_names(names)
    for task in names:
        path = store.path_for(task, lb_dir)
        data = store.load(path)  # checks data["task"] like a submitted task id: no path, scheme or markup
        if data["task"] != task:
            raise ClirbenchError(f"{path}: names task {store._show(data['task'])}, not {task}")
        page = out / pages[task]
        write_text_atomic(page, render_page(data))
        written.append(page)
        links.append(f'<li><a href="{esc(page.name)}">{esc(data["task"])}</a> · {len(data["systems"])} systems</li>')
    index = out / "index.html"
    write_text_atomic(index, _document("clirbench leaderboards", f"<h1>clirbench leaderboards</h1><ul>{''.join(links)}</ul>"))
    return [*written, index]
