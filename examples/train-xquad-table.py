"""The table of the alignment experiment in docs/training.md, from the results ``train-xquad-align.sh`` wrote.

    python examples/train-xquad-table.py RESULTS_DIR BASE_SPEC [LANGS]

Per model (rows, the base first): multi-pool Max@R, Max@R_norm, Complete@10 with the German
queries (mean [95% CI]), the query-language gap of Max@R (de − en queries), mono-same nDCG@1 (de
queries); and for each trained model the paired difference against the base (``clirbench
compare``: B − A, bootstrap CI, randomisation p) on the same measures. Markdown on stdout.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from clirbench.stats.paired import compare


def _fmt(m: dict) -> str:
    return f"{m['value']:.2f} [{m['ci_low']:.2f}, {m['ci_high']:.2f}]"


def _diff(row) -> str:
    """A ``stats.paired.PairedDifference`` as ``+d [lo, hi] p=...``."""
    return f"{row.diff:+.2f} [{row.ci_low:+.2f}, {row.ci_high:+.2f}] p={row.p_value:.4f}"


def main(results: str, base: str, langs: str = "en,de") -> None:
    l1, l2 = langs.split(",")
    found: dict[str, dict[str, Path]] = {}
    for path in sorted(Path(results).rglob("*.q-*.json")):  # one result per pool and query language
        record = json.loads(path.read_text(encoding="utf-8"))
        spec = record["retriever"]["spec"]
        key = f"{record['scenario']}/q-{record['query_lang']}"
        found.setdefault(spec, {})[key] = path
        if record["scenario"] == "multi" and record["query_lang"] == l1:
            found[spec]["gap"] = path.with_name(path.name.split(".q-")[0] + ".gap.json")
    order = ("nce", "jsd", "jsd+nce", "nce-psg")  # docs/training.md's rows; anything else (merges) after them
    short = lambda s: Path(s.split(":", 1)[-1]).name  # noqa: E731
    specs = sorted(found, key=lambda s: (s != base, order.index(short(s)) if short(s) in order else 9, s))
    head = ("| model | multi Max@R (q-de) | Max@R_norm | Complete@10 | gap Max@R (de − en) | mono-same nDCG@1 (q-de) |")
    print(head.replace("de", l2).replace("en)", f"{l1})"))
    print("|---|---|---|---|---|---|")
    for spec in specs:
        multi = json.loads(found[spec][f"multi/q-{l2}"].read_text())["measures"]
        mono = json.loads(found[spec][f"mono-same/q-{l2}"].read_text())["measures"]
        gap = json.loads(found[spec]["gap"].read_text())["measures"]["MaxR"]
        name = Path(spec.split(":", 1)[-1]).name if spec != base else "base"
        print(f"| {name} | {_fmt(multi['MaxR'])} | {_fmt(multi['MaxR_norm'])} | {_fmt(multi['Complete@10'])} | "
              f"{gap['diff']:+.2f} [{gap['ci_low']:+.2f}, {gap['ci_high']:+.2f}] | {_fmt(mono['nDCG@1'])} |")
    print()
    print("| model − base | multi Max@R | Max@R_norm | Complete@10 | mono-same nDCG@1 |")
    print("|---|---|---|---|---|")
    for spec in specs[1:]:
        c_multi = compare(found[base][f"multi/q-{l2}"], found[spec][f"multi/q-{l2}"],
                          measures=["MaxR", "MaxR_norm", "Complete@10"]).measures
        c_mono = compare(found[base][f"mono-same/q-{l2}"], found[spec][f"mono-same/q-{l2}"],
                         measures=["nDCG@1"]).measures
        name = Path(spec.split(":", 1)[-1]).name
        print(f"| {name} | {_diff(c_multi['MaxR'])} | {_diff(c_multi['MaxR_norm'])} | "
              f"{_diff(c_multi['Complete@10'])} | {_diff(c_mono['nDCG@1'])} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
