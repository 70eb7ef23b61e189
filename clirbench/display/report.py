"""Compact text tables of a run's results (rounding happens here, for display only)."""
from __future__ import annotations

from typing import NamedTuple

from ..identity import PoolKey
from ..measures import direction, parse
from ..scenarios import RETRIEVAL, SCENARIOS
from ..stats.correction import describe, family_size
from ..stats.preference import TIE_NOTE_AT, preference_matrix, tie_note
from ..stats.significance_tests import paired_test
from ..tasks import get_task
from ..util.errors import ClirbenchError
from ..util.plural import plural
from ..util.table import format_table
from .coverage import coverage_lines


def _cell(entry: dict | None) -> str:
    if entry is None or entry.get("value") is None:
        return "-"
    v, lo, hi = entry["value"], entry.get("ci_low"), entry.get("ci_high")
    if lo is None or hi is None:
        return f"{v:.2f}"
    return f"{v:.2f} [{lo:.2f},{hi:.2f}]"


def _task_summaries(records: list[dict]) -> list[str]:
    """Tables a task's loader adds (``summary_table(records)``: ko-en's CROSS-/MONO-AVG, LazRetrieval's average)."""
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


def legend(records: list[dict], names: list[str], gaps: bool = False, gap_family: str = "",
           columns: str = "|D|: documents in the pool; n: queries") -> list[str]:
    """What a newcomer needs to read the tables: the interval, the columns, each measure's direction."""
    boot = records[0].get("bootstrap") or {} if records else {}
    level = f"{100 * float(boot.get('confidence', 0.95)):g}%"
    resamples = ", ".join(sorted({str((r.get("bootstrap") or {}).get("resamples", "?")) for r in records}))
    lines = [f"[a,b]: {level} bootstrap interval ({resamples} resamples of the queries); {columns}"]
    groups: dict[tuple, list[str]] = {}
    for name in dict.fromkeys(names):
        way = direction(name)
        if way is None:
            continue
        family = parse(name).record
        label = _target_label(family, name, records) if way == "target" else f"{family.arrow} {family.direction_label}"
        groups.setdefault((("up", "down", "target").index(way), label), []).append(name)
    if groups:
        lines.append("; ".join(f"{label}: {', '.join(members)}" for (_, label), members in sorted(groups.items())))
    lines += _no_value(records, names)
    if gaps:
        lines.append(f"gap: paired difference by question, its bootstrap interval, p from a {paired_test().label} test"
                     + (f"; p_adj: {gap_family}" if gap_family else ""))
    return lines


def _no_value(records: list[dict], names: list[str]) -> list[str]:
    """The legend line for ``-`` cells: which measures have no value where, and why when it is the
    pool's single document language (SameLangFirst, PEER compare languages)."""
    def missing(r: dict, n: str) -> bool:  # no value, and no note of its own saying why (evaluate's MaxR)
        entry = r.get("measures", {}).get(n, {"value": 0}) or {}
        return entry.get("value") is None and not entry.get("note")

    empty = [n for n in dict.fromkeys(names) if any(missing(r, n) for r in records)]
    if not empty:
        return []
    def language_measure(name: str) -> bool:
        try:
            return parse(name).family in ("SameLangFirst", "PEER")
        except ValueError:
            return False
    one = [r for r in records if len(r.get("doc_langs") or ()) == 1]
    by_language = [n for n in empty if language_measure(n) and any(missing(r, n) for r in one)]
    other = [n for n in empty if n not in by_language]
    parts = [f"{', '.join(by_language)}: undefined on a pool whose documents are in one language (nothing to "
             f"compare languages by)"] if by_language else []
    parts += [f"{', '.join(other)}: undefined for every query of that pool"] if other else []
    return ["-: no value; " + "; ".join(parts)]


def _target_label(family, name: str, records: list[dict]) -> str:
    """``best at 50``, or the target on the run's pools of k document languages (SameLangFirst:
    ``best at 33.3`` for three; ``best at 100/k`` when the run mixes pool sizes)."""
    ks = sorted({len(r["doc_langs"]) for r in records if r.get("doc_langs")
                 and (r.get("measures", {}).get(name) or {}).get("value") is not None})
    if len(ks) == 1:
        return family.label_for(ks[0])
    if family.neutral is not None:
        return f"best at 100/k ({family.direction_label} with two languages; k: the pool's document languages)"
    return family.direction_label


def format_evaluation(report: dict) -> str:
    """``clirbench evaluate``'s table (its JSON report, ``Evaluation.to_dict`` with the file names):
    the run's measures as ``run`` prints a pool's, value [95% CI], then what was not evaluated and
    the legend."""
    names = list(report["measures"])
    header = ["run", "n"] + names
    body = [[str(report["run"]), str(report["num_queries"])] + [_cell(report["measures"][n]) for n in names]]
    lines = [f"qrels: {report['qrels']}"] + format_table(header, body, right=(1,)) + [""]
    lines += [f"{name}: {entry['note']}" for name, entry in report["measures"].items() if entry.get("note")]
    skipped = [(report["queries_in_run_without_judgements"], "of the run without judgements (left out)"),
               (report["queries_judged_not_in_run"], "judged but not in the run (left out)")]
    lines += [f"{plural(k, 'query')} {what}" for k, what in skipped if k]
    return "\n".join(lines + legend([report], names, columns="n: queries evaluated"))


def format_preference(matrix: dict) -> list[str]:
    """A language-preference matrix (``stats.preference.preference_matrix``) as compact text: per
    query language (row) and document language (column), the mean rank of the relevant passage in
    that language / the % of queries whose best-ranked relevant passage is in it."""
    def cell(i: int, j: int) -> str:
        rank, share = matrix["mean_rank"][i][j], matrix["best_share"][i][j]
        if rank is None or rank.get("value") is None or share is None or share.get("value") is None:
            return "-"
        return f"{rank['value']:.1f} / {share['value']:.1f}%"

    header = ["q \\ docs", *matrix["doc_langs"]]
    body = [[q, *(cell(i, j) for j in range(len(matrix["doc_langs"])))] for i, q in enumerate(matrix["query_langs"])]
    note = tie_note(matrix)
    return ([f"== language preference {matrix['pool']}: mean rank of the relevant passage in each document "
             f"language / % of queries whose best-ranked relevant passage is in it (CIs in the result files)"]
            + format_table(header, body, right=tuple(range(1, len(header)))) + ([note] if note else []) + [""])


EXPOSURE_COLUMNS = (("alpha_nDCG@20", "α-nDCG@20"), ("AWRF@10", "AWRF@10"), ("Top1_rel_qlang", "rel q-lang"),
                    ("Top1_rel_other", "rel other"), ("Top1_nonrel_qlang", "nonrel q-lang"),
                    ("Top1_nonrel_other", "nonrel other"))


def format_exposure(matrix: dict, records: list[dict]) -> list[str]:
    """Which languages fill the top of the rankings of one set of documents: per query language (row),
    the mean share of each document language among the top 10 (the matrix's ``top10_share``), then
    the records' alpha_nDCG@20, AWRF@10 and top-1 split; [] when the rows carry no shares."""
    shares = matrix.get("top10_share") or []
    if not any(c for row in shares for c in row):
        return []
    by_lang = {r["query_lang"]: r["measures"] for r in records}
    columns = [(n, label) for n, label in EXPOSURE_COLUMNS if any(n in m for m in by_lang.values())]

    def value(cell, digits: int) -> str:
        return "-" if not cell or cell.get("value") is None else f"{cell['value']:.{digits}f}"

    mlrs = matrix.get("mlrs") or []
    mlrs = mlrs if any(c for row in mlrs for c in row) else []
    header = ["q", *(f"top10 {d}" for d in matrix["doc_langs"]), *(label for _, label in columns),
              *(f"MLRS→{d}" for d in matrix["doc_langs"] if mlrs)]
    body = [[q, *(value(c, 1) for c in shares[i]),
             *(value(by_lang.get(q, {}).get(n), 2 if n.startswith(("alpha", "AWRF")) else 1) for n, _ in columns),
             *(value(c, 1) for c in (mlrs[i] if mlrs else []))]
            for i, q in enumerate(matrix["query_langs"])]
    return ([f"== language exposure {matrix['pool']}: % of each query's top 10 in each document language; "
             "alpha-nDCG@20 and AWRF@10 with language as the aspect; top-1: % of queries whose first document is "
             "relevant or not, in the query's language or another (random order of ties)"
             + ("; MLRS→L: % of the rank a passage of the top gains when rewritten in L" if mlrs else "")]
            + format_table(header, body, right=tuple(range(1, len(header)))) + [""])


def format_consistency(name: str, matrix) -> list[str]:
    """A ``stats.consistency.ConsistencyMatrix``: per pair of query languages, MRC@k and RBO@k [95% CI]."""
    mrc, rbo = matrix.names
    body = [[f"{cell.langs[0]}-{cell.langs[1]}", str(cell.summary[mrc].n), _cell(cell.summary[mrc].to_dict()),
             _cell(cell.summary[rbo].to_dict())] for cell in matrix.pairs]
    return ([f"== consistency across query languages {name}: the same question asked in two languages; "
             f"{mrc}: Spearman's rho of the two top {matrix.k} lists (1: the same order), {rbo}: rank-biased "
             f"overlap (p = {matrix.p:g}; 1: the same lists, 0: disjoint)"]
            + format_table(["queries", "n", mrc, rbo], body, right=(1,)) + [""])


_RERANK_EXPOSURE = ("Share@10", "AWRF@10", "alpha_nDCG@20", "SameLangFirst")
_PREFERENCE_ROWS = (("top10_share", "top10 {}"), ("best_share", "best in {}"), ("mean_rank", "rank in {}"))


def _rerank(record: dict) -> dict | None:
    """The record's reranking (``rank.rerank``: the ``rerank`` part of its ranking), or None."""
    ranking = (record.get("retriever") or {}).get("ranking") or {}
    return ranking.get("rerank") if isinstance(ranking, dict) else None


def format_reranking(records: list[dict], names: list[str]) -> list[str]:
    """What a reranking gives and costs, per pool of ``records`` that a reranking ranked: the recall
    ceiling (R@K of the first stage), pairs scored, seconds and pairs per second, the lists shorter
    than K; then per pool the measures ``names`` and the language exposure before → after (first
    stage, reranked, the paired difference with its interval, p Holm-adjusted over the pool's
    measures), and the preference row's cells (the share of each language in the top 10, of the
    best-ranked relevant passage, its mean rank); [] when none was reranked."""
    reranked = [(r, _rerank(r)) for r in records if _rerank(r)]
    if not reranked:
        return []
    first = reranked[0][1]
    stages = f"{first['first_stage']['spec']} → {first['second_stage']['spec']}"
    body = []
    for r, info in reranked:
        ceiling = info.get("recall_ceiling") or {}
        computed = f" ({info['pairs_computed']:,} by the model)" if info.get("pairs_computed") is not None else ""
        body.append([_label(r), f"{ceiling.get('measure', '-')} {_cell(ceiling) if ceiling else '-'}",
                     f"{info['pairs']:,}{computed}", f"{info['seconds']:.1f}",
                     "-" if info.get("pairs_per_s") is None else f"{info['pairs_per_s']:,.0f}",
                     str(info.get("short_lists", "-"))])
    top = "whole list" if first["k"] == "all" else f"top {first['k']}"
    lines = [f"== reranking {stages}, each query's {top}: the first stage's recall there is the ceiling; "
             f"pairs scored by the second stage, its seconds; short: queries with fewer than K candidates"]
    lines += format_table(["pool", "ceiling", "pairs", "s", "pairs/s", "short"], body, right=(2, 3, 4, 5)) + [""]
    rows = []
    for r, info in reranked:
        versus = info.get("versus_first_stage") or {}
        label = _label(r)
        wanted = [n for n in list(names) + list(_RERANK_EXPOSURE) if (versus.get("measures") or {}).get(n, {}).get("n")]
        for name in dict.fromkeys(wanted):
            rows.append(_versus_row(label, name, versus["measures"][name]))
            label = ""
        for part, title in _PREFERENCE_ROWS:
            for cell, row in (versus.get("preference") or {}).items():
                if cell.startswith(part + ":"):
                    rows.append(_versus_row(label, title.format(cell.split(":", 1)[1]), row))
                    label = ""
    if rows:
        lines += ["== reranked − first stage, paired by question: means, the difference [95% CI] and p ("
                  f"{reranked[0][1].get('versus_first_stage', {}).get('test', 'randomisation test')}, adjusted by "
                  "Holm over each pool's measures; the preference cells a family of their own)"]
        lines += format_table(["pool", "measure", "first", "reranked", "difference", "p_adj"], rows,
                              right=(2, 3, 5)) + [""]
    return lines


def _versus_row(label: str, name: str, row: dict) -> list[str]:
    def num(key: str, sign: str = "") -> str:
        return "-" if row.get(key) is None else f"{row[key]:{sign}.2f}"

    p = row.get("p_adjusted", row.get("p_value"))
    diff = "-" if row.get("diff") is None else f"{num('diff', '+')} [{num('ci_low', '+')},{num('ci_high', '+')}]"
    return [label, name, num("mean_a"), num("mean_b"), diff, "-" if p is None else f"{p:.3g}"]


def _label(record: dict) -> str:
    """A pool in the reranking tables: task/scenario, documents and query language."""
    task = f"{record['task']['id']}/{record['subset']}" if record.get("subset") else record["task"]["id"]
    return f"{task}/{record['scenario']} {_pool_label(record)}"


def _documents(record: dict) -> str:
    """The name ``preference_matrix`` gives a record's set of documents."""
    return "/".join(PoolKey.of(record).documents.parts[:-1])


def _pool_label(record: dict) -> str:
    """A pool in a note: its documents, pool mode (when not unique) and query language."""
    docs, query = seen_languages(record)
    mode = "" if record.get("pool_mode", "unique") == "unique" else f" ({record['pool_mode']})"
    return f"{docs}{mode} q {query}"


def tie_lines(records: list[dict]) -> list[str]:
    """A note for the pools whose ranks ties decided for ``TIE_NOTE_AT`` % or more of the relevant
    passages (the records' ``tie_share``); [] when none."""
    tied = [(_pool_label(r), r["tie_share"]) for r in records if (r.get("tie_share") or 0) >= TIE_NOTE_AT]
    if not tied:
        return []
    pools = ", ".join(f"{name} {share:.0f}%" for name, share in tied)
    return [f"ties: equal scores decided the rank of many relevant passages ({pools}); SameLangFirst, PEER and "
            f"the preference matrix average over random orders of tied documents, the other measures keep "
            f"trec_eval's order (doc id)"]


def _columns(report, scenario: str, rows: list) -> list[str]:
    """The measures of a scenario's table: those asked for, else the scenario's main ones, less any no
    row has (an index gives no rank-set measure)."""
    names = list(getattr(report, "measures", None) or report.main_measures.get(scenario)
                 or rows[0].record["measures"])
    return [n for n in names if any(n in o.record["measures"] for o in rows)] or names


def seen_languages(record: dict) -> tuple[str, str]:
    """The pool's document and query languages as the retriever saw them: ``zh→en`` for documents
    (or queries) translated from zh into en (``--translate``), else the languages themselves."""
    docs, query = list(record["doc_langs"]), record["query_lang"]
    t = record.get("translation") or {}
    source, target = set(t.get("source_langs") or ()), t.get("target_lang")
    if target and t.get("direction") == "docs":
        docs = [f"{lang}→{target}" if lang in source and lang != target else lang for lang in docs]
    elif target and t.get("direction") == "query" and query in source and query != target:
        query = f"{query}→{target}"
    return "+".join(docs), query


class _Row(NamedTuple):
    record: dict  # the record's JSON form: this is the CLI's edge
    path: object
    reused: bool


def _gap_family(gaps) -> str:
    """How the gaps' p-values were adjusted, and over how many tests ("" when not adjusted)."""
    rows = [row for gap in gaps for row in gap.measures.values()]
    methods = {row.correction for row in rows}
    if not rows or methods & {None, "none"}:
        return ""
    (method,) = methods
    return describe(method, family_size([row.p_value for row in rows]), "every measure of every gap of this run")


def format_outcomes(report) -> str:
    """One table per scenario of a ``RunResult`` with its measures (value [95% CI]), the gaps, a
    legend, a summary line."""
    lines: list[str] = []
    outcomes = [_Row(p.record.to_dict(), p.path, p.reused) for p in report.pools]
    translations = {(t["direction"], t["translator"]) for t in (o.record.get("translation") for o in outcomes) if t}
    lines += [f"translation: {direction} by {translator}" for direction, translator in sorted(translations)]
    shown: list[str] = []
    for scenario in (*SCENARIOS, RETRIEVAL):
        rows = [o for o in outcomes if o.record["scenario"] == scenario]
        if not rows:
            continue
        names = _columns(report, scenario, rows)
        shown += names
        header = ["pool", "docs", "q", "|D|", "n"] + names
        body = []
        for o in rows:
            r = o.record
            mode = "" if r["pool_mode"] == "unique" else f" ({r['pool_mode']})"
            task = f"{r['task']['id']}/{r['subset']}" if r.get("subset") else r["task"]["id"]
            body.append([f"{task}/{scenario}{mode}", *seen_languages(r),
                         str(r["pool_size"]), str(r["num_queries"])]
                        + [_cell(r["measures"].get(n)) for n in names])
        lines += [f"== {scenario}"] + format_table(header, body)
        lines += tie_lines([o.record for o in rows])
        lines += [""]
        if scenario == "multi":
            for matrix in preference_matrix(o.record for o in rows):
                lines += format_preference(matrix)
                lines += format_exposure(matrix, [o.record for o in rows if _documents(o.record) == matrix["pool"]])
            seen = [(r["query_lang"], seen_languages(r)[0]) for r in (o.record for o in rows) if r.get("translation")]
            if seen:
                lines[-1:-1] = ["(columns: the documents' original languages; translated, the retriever saw "
                                + "; ".join(f"{docs} for queries in {q}" for q, docs in seen) + ")"]
    for name, matrix in getattr(report, "consistency", ()):
        lines += format_consistency(name, matrix)
    lines += format_reranking([o.record for o in outcomes], shown)
    lines += _task_summaries([o.record for o in outcomes])
    for gap in report.gaps:
        l1, l2 = gap.doc_langs
        cells = ", ".join(f"{name} {g.diff:+.2f} [{g.ci_low:+.2f},{g.ci_high:+.2f}] p={g.p_value:.3g}"
                          + (f" p_adj={g.p_adjusted:.3g}" if g.correction not in (None, "none") else "")
                          for name, g in gap.measures.items())
        lines.append(f"gap {gap.scenario} {l1}+{l2} (q {l2} minus q {l1}): {cells}")
    lines += coverage_lines([o.record for o in outcomes])
    gap_names = [name for gap in report.gaps for name in gap.measures]
    if outcomes:
        lines += [""] * bool(report.gaps) + legend([o.record for o in outcomes], shown + gap_names, bool(report.gaps),
                                                   _gap_family(report.gaps))
    reused = sum(o.reused for o in outcomes)
    first = next((o.path for o in outcomes if o.path is not None), None)
    where = f"results under {first.parents[3]}" if first is not None else "no result written"
    encoded = getattr(report, "encoded", None)
    texts = "" if encoded is None else f"; {plural(encoded, 'text')} encoded"
    pools = plural(len(outcomes), "pool")
    lines.append(f"{pools} ({reused} reused) in {report.seconds:.1f} s{texts}; {where}")
    return "\n".join(lines)
