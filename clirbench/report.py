"""Compact text tables of a run's results (rounding happens here, for display only)."""
from __future__ import annotations

from .scenarios import RETRIEVAL, SCENARIOS


def _cell(entry: dict | None) -> str:
    if entry is None or entry.get("value") is None:
        return "-"
    v, lo, hi = entry["value"], entry.get("ci_low"), entry.get("ci_high")
    if lo is None or hi is None:
        return f"{v:.2f}"
    return f"{v:.2f} [{lo:.2f},{hi:.2f}]"


def format_table(header: list[str], rows: list[list[str]], right: tuple[int, ...] = (),
                 rule: bool = True) -> list[str]:
    """The lines of a plain-text table (the one formatter of the CLI's tables): columns padded to
    their widest cell, two spaces apart, the columns in ``right`` right-aligned, a dashed rule
    under the header unless ``rule`` is False."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.rjust(w) if i in right else c.ljust(w)
                              for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [fmt(header)] + ([fmt(["-" * w for w in widths])] if rule else []) + [fmt(r) for r in rows]


def _task_summaries(records: list[dict]) -> list[str]:
    """Tables a task's loader adds (``summary_table(records)``: ko-en's CROSS-/MONO-AVG, LazRetrieval's average)."""
    from .errors import ClirbenchError
    from .tasks import get_task

    lines = []
    for task_id in dict.fromkeys(r["task"]["id"] for r in records):
        if ":" in task_id:
            continue
        try:
            loader = get_task(task_id).loader()
        except ClirbenchError:
            continue
        table = loader.summary_table(records)
        if table:
            lines += [table, ""]
    return lines


def format_outcomes(report) -> str:
    """One table per scenario with its main measures (value [95% CI]), then the gaps."""
    lines: list[str] = []
    outcomes = list(report.outcomes)
    translations = {(t["direction"], t["translator"]) for t in (o.record.get("translation") for o in outcomes) if t}
    lines += [f"translation: {direction} by {translator}" for direction, translator in sorted(translations)]
    for scenario in (*SCENARIOS, RETRIEVAL):
        rows = [o for o in outcomes if o.record["scenario"] == scenario]
        if not rows:
            continue
        names = list(report.main_measures.get(scenario) or rows[0].record["measures"])
        header = ["pool", "docs", "q", "|D|", "n"] + names
        body = []
        for o in rows:
            r = o.record
            mode = "" if r["pool_mode"] == "unique" else f" ({r['pool_mode']})"
            task = f"{r['task']['id']}/{r['subset']}" if r.get("subset") else r["task"]["id"]
            body.append([f"{task}/{scenario}{mode}", "+".join(r["doc_langs"]), r["query_lang"],
                         str(r["pool_size"]), str(r["num_queries"])]
                        + [_cell(r["measures"].get(n)) for n in names])
        lines += [f"== {scenario}"] + format_table(header, body) + [""]
    lines += _task_summaries([o.record for o in outcomes])
    for path, gap in report.gaps:
        l1, l2 = gap["doc_langs"]
        cells = ", ".join(
            f"{name} {g['diff']:+.2f} [{g['ci_low']:+.2f},{g['ci_high']:+.2f}] p={g['p_value']:.3g}"
            for name, g in gap["measures"].items())
        lines.append(f"gap {gap['scenario']} {l1}+{l2} (q {l2} minus q {l1}): {cells}")
    reused = sum(o.reused for o in outcomes)
    out_dir = outcomes[0].path.parents[3] if outcomes else None
    lines.append(f"{len(outcomes)} pools ({reused} reused) in {report.seconds:.1f} s; results under {out_dir}")
    return "\n".join(lines)
