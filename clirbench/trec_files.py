"""``clirbench evaluate``'s front end: TREC qrels and run files -> ``results.Evaluation`` (the
kernel, ``evaluation.evaluate_ranked_run``, does the measuring; ``clirbench.trec_files`` scores runs
already in memory)."""
from __future__ import annotations

import collections
import dataclasses
import functools
import json
import re
from typing import Mapping, Sequence

import numpy as np

from .evaluation import evaluate_ranked_run
from .formats.doc_langs import check_covered, read_doc_langs
from .formats.trec import check_inputs, is_stream, read_qrels, read_trec_run, rereadable
from .measures import TOP1_SPLIT, compute, parse
from .rank.head import head_of_run
from .rank.judged_head import judge_head
from .rank.run_file import rank_run_file
from .rank.runs import rank_run
from .results.run_report import Evaluation, PerQuery
from .stats.summary import summarise
from .trec_eval.names import lookup
from .util.atomic import write_text_atomic
from .util.checks import check_resamples, check_seed
from .util.errors import UnknownNameError
from .util.strict import language_tag, shown


PRESETS: dict[str, tuple[str, ...]] = {
    # NeuCLIR's official measures (ir_measures names); an MLIR run (a map of >= 2 languages) adds MLIR_MEASURES
    "neuclir": ("nDCG@20", "AP", "R@100", "R@1000", "Judged@20"),
}
MLIR_MEASURES: dict[str, tuple[str, ...]] = {"neuclir": ("alpha_nDCG@20",)}
PER_LANGUAGE: dict[str, tuple[str, ...]] = {"neuclir": ("nDCG@20",)}  # also on each language's documents
# the exposure families that compare with the query's language: NaN without --query-lang
QUERY_LANG_FAMILIES = ("Share", "Top1_rel_qlang", "Top1_rel_other", "Top1_nonrel_qlang", "Top1_nonrel_other")


def evaluate_files(qrels_path, run_path, measures=None, resamples: int = 1000, seed: int = 42,
                   per_query_path=None, *, doc_langs=None, query_lang: str | None = None, preset: str | None = None):
    """A typed ``results.Evaluation`` of TREC files; malformed lines give a one-line error naming file
    and line (``evaluate_trec_files`` without the report's extra fields)."""
    return evaluate_trec_files(qrels_path, run_path, measures, resamples, seed, per_query_path,
                               doc_langs=doc_langs, query_lang=query_lang, preset=preset)[0]


def evaluate_trec_files(qrels_path, run_path, measures=None, resamples: int = 1000, seed: int = 42,
                        per_query_path=None, *, doc_langs=None, query_lang: str | None = None,
                        preset: str | None = None) -> tuple[Evaluation, dict]:
    """A typed ``results.Evaluation`` of TREC files and the report's extra fields (``preset``,
    ``run_tag``, ``doc_langs``, ``query_lang``: none without those options).

    The run is read by the pyarrow reader (``rank.run_file``) straight into ranks; a file it cannot
    vouch for, or no pyarrow, goes through the strict pure-Python reader (same result, slower); both
    follow ``formats.trec``'s rules. ``-`` is standard input; a stream (``-``, a pipe, a FIFO) is
    read once (the run into a temporary copy, deleted after). ``per_query_path`` (``.tsv`` or
    ``.jsonl``) also gets one ``query_id, measure, value`` record per evaluated query and measure
    (as ir_measures' ``-q``).

    ``doc_langs`` (a ``docid lang`` file or a BEIR corpus, ``formats.doc_langs``) gives the
    documents' languages: the exposure measures (``Share@10``, ``alpha_nDCG@20``, ...) are then
    computed on the run's head; every document of the run, and every relevant document of an
    evaluated query, must be in it. ``query_lang``: the queries' language (Share@k and the Top-1
    split compare with it; without it they are NaN, with a note). ``preset`` (``neuclir``):
    ``PRESETS`` first, then ``measures``; a map of two or more languages adds ``MLIR_MEASURES`` and
    each ``PER_LANGUAGE`` measure on the run and qrels restricted to each language's documents
    (``nDCG@20[zh]``: NaN for a query without judged documents in that language or without any of
    them in the run, as evaluating the restricted files leaves it out).
    """

    resamples, seed = check_resamples(resamples), check_seed(seed)  # before reading any file
    if per_query_path is not None and not str(per_query_path).endswith((".tsv", ".jsonl")):
        raise ValueError(f"--per-query {per_query_path}: the name must end in .tsv or .jsonl")
    query_lang = None if query_lang is None else language_tag(query_lang, "--query-lang")
    langs = None if doc_langs is None else read_doc_langs(doc_langs)
    names = _preset_names(preset, measures, langs)
    kernel, by_trec = _split_measures(names)
    head_names = _head_measures(kernel, langs)
    check_inputs(qrels_path, run_path)
    qrels, run, fast = _read(qrels_path, run_path, bool(by_trec) or langs is not None)
    table = fast[0]
    if langs is not None:
        check_map(langs, run.scores, qrels, table.query_ids, (str(run_path), str(qrels_path), str(doc_langs)))
    if head_names:
        table = _with_head(table, qrels, run.scores, langs, query_lang, head_names)

    kernel_names = kernel if names is None or kernel else ["RR"]  # RR: a placeholder, dropped below
    evaluation = evaluate_ranked_run(table, qrels, fast[1], kernel_names, resamples, seed)
    if by_trec:
        evaluation = _with_trec_eval_measures(evaluation, qrels, run, names, kernel, by_trec)
    if preset is not None and _is_mlir(langs):
        evaluation = _with_per_language(evaluation, qrels, run.scores, langs, PER_LANGUAGE[preset])
    evaluation = _without_query_lang(evaluation, head_names, query_lang)
    if per_query_path is not None:
        _write_per_query(per_query_path, *evaluation.per_query)
    return evaluation, _extras(preset, langs, query_lang, run, doc_langs)


def _read(qrels_path, run_path, need_run: bool):
    """(qrels, the run's ``TrecRun`` when ``need_run`` or without the fast path, else None,
    (RankTable, the run's query ids))."""
    read = functools.cache(lambda: read_qrels(qrels_path))
    if is_stream(run_path):
        read()  # the qrels first, as trec_eval: one writer may feed the qrels, then the run
    with rereadable(run_path) as run_file:  # the run itself, or a copy of a stream's bytes
        fast = rank_run_file(run_file, read)  # reads the qrels while its thread parses the run's first blocks
        qrels = read()  # read already; or (no fast path) read now, its errors before the run's
        run = read_trec_run(run_file, name=run_path) if fast is None or need_run else None
    if fast is None:
        fast = rank_run(run.scores, qrels), list(run.scores)
    return qrels, run, fast


def _preset_names(preset: str | None, measures, langs: Mapping[str, str] | None) -> list[str] | None:
    """The names to compute: the preset's (and its MLIR measures on a multilingual map), then
    ``measures``, each once."""
    if preset is None:
        return None if measures is None else [str(m) for m in measures]
    if preset not in PRESETS:
        raise UnknownNameError(f"--preset {shown(preset)}: unknown; known: {', '.join(PRESETS)}")
    names = list(PRESETS[preset]) + (list(MLIR_MEASURES[preset]) if _is_mlir(langs) else [])
    return list(dict.fromkeys(names + [str(m) for m in measures or ()]))


def _is_mlir(langs: Mapping[str, str] | None) -> bool:
    """A multilingual (MLIR) collection: a map of two or more document languages."""
    return langs is not None and len(set(langs.values())) >= 2


def _head_measures(kernel: Sequence[str] | None, langs) -> list[str]:
    """The kernel names that read the run's head (the exposure families); one line when the map is missing."""
    names = [n for n in kernel or () if getattr(parse(n).record, "needs_head", False)]
    if names and langs is None:
        raise UnknownNameError(f"{', '.join(names)}: the language exposure measures need the documents' "
                               f"languages: give --doc-langs (a 'docid lang' file or a BEIR corpus)")
    return names


def _relevant(qrels, query_ids) -> set[str]:
    return {d for q in query_ids for d, g in qrels.get(q, {}).items() if g > 0}


def check_map(langs, scores, qrels, query_ids, names: tuple[str, str, str]) -> None:
    """Every document of the run, and every relevant document of an evaluated query, has a language;
    else one line naming (run, qrels, map) ``names``, the count and the first ids missing."""
    run_name, qrels_name, map_name = names
    check_covered(langs, {d for hits in scores.values() for d in hits}, run_name, map_name)
    check_covered(langs, _relevant(qrels, query_ids), qrels_name, map_name, "judged relevant for an evaluated query")


def _with_head(table, qrels, scores, langs, query_lang, head_names):
    """``table`` with its judged head (``RankTable.head``): each query's top documents, as deep as
    ``_head_depth`` (the head's tail counts the tie group that crosses its end). The head holds the run's and the relevant documents and one of each other
    language of the map; its language mix (``lang_counts``) is the map's."""
    judged = _relevant(qrels, table.query_ids)
    listed = {d for hits in scores.values() for d in hits} | judged
    present, missing = {langs[d] for d in listed}, len(set(langs.values()))
    others: dict[str, str] = {}
    for d, lang in langs.items():  # one document of each language the run and qrels lack, in no row
        if len(present) + len(others) == missing:
            break
        if lang not in present:
            others.setdefault(lang, d)
    doc_ids = sorted(listed | set(others.values()))
    depth = _head_depth(scores, table.query_ids, head_names)
    head = head_of_run(scores, table.query_ids, doc_ids, [langs[d] for d in doc_ids], depth=depth)
    judged_head = judge_head(head, qrels, table.query_ids, query_lang or "")
    counts = collections.Counter(langs.values())
    judged_head = dataclasses.replace(judged_head, lang_counts={k: counts[k] for k in sorted(counts)})
    return dataclasses.replace(table, head=judged_head)


def _head_depth(scores, query_ids, head_names: Sequence[str]) -> int:
    """The largest cutoff of ``head_names`` (1 without one); with a top-1 split, at least every
    query's top tie group (equal float32 score): the table has no languages for the relevant
    documents of a top group longer than the head."""
    depth = max(parse(n).cutoff or 1 for n in head_names)
    if any(str(m) in head_names for m in TOP1_SPLIT):
        for q in query_ids:
            ranked = np.asarray(list((scores.get(q) or {}).values()), dtype=np.float32)
            depth = max(depth, int(np.count_nonzero(ranked == ranked.max(initial=-np.inf))))
    return depth


def _with_per_language(evaluation: Evaluation, qrels, scores, langs, names: Sequence[str]) -> Evaluation:
    """``evaluation`` with ``name[lang]`` for each document language: ``name`` on the run and qrels
    restricted to that language's documents, over the run's queries judged in that language (one
    that retrieved none of them scores 0); NaN for the others."""
    ids = evaluation.per_query[0]
    position = {q: i for i, q in enumerate(ids)}
    columns = {}
    for lang in sorted(set(langs.values())):
        run_l = {q: {d: s for d, s in hits.items() if langs[d] == lang} for q, hits in scores.items()}
        qrels_l = {q: judged for q, judged in ((q, {d: g for d, g in js.items() if langs.get(d) == lang})
                                               for q, js in qrels.items()) if judged}
        column = {f"{n}[{lang}]": np.full(len(ids), np.nan) for n in names}
        if any(q in qrels_l for q in run_l):
            part = evaluate_ranked_run(rank_run(run_l, qrels_l), qrels_l, list(run_l), list(names), 1,
                                       evaluation.seed)
            rows = [position[q] for q in part.per_query[0]]
            for n in names:
                column[f"{n}[{lang}]"][rows] = part.per_query[1][str(parse(n))]
        columns.update(column)
    summary = summarise(list(columns), columns, evaluation.resamples, evaluation.seed)
    notes = {n: f"NaN: no query of the run is judged in {n.rpartition('[')[2][:-1]}"
             for n, column in columns.items() if np.isnan(column).all()}
    return dataclasses.replace(evaluation, measures={**evaluation.measures, **summary},
                               per_query=PerQuery(ids, {**evaluation.per_query[1], **columns}),
                               notes={**evaluation.notes, **notes})


def _without_query_lang(evaluation: Evaluation, head_names: Sequence[str], query_lang: str | None) -> Evaluation:
    """Without ``query_lang``, the measures that compare with the query's language are NaN, with a note."""
    names = [n for n in head_names if parse(n).family in QUERY_LANG_FAMILIES]
    if query_lang is not None or not names:
        return evaluation
    ids, values = evaluation.per_query
    columns = {n: np.full(len(ids), np.nan) for n in names}
    summary = summarise(names, columns, evaluation.resamples, evaluation.seed)
    notes = {n: "NaN: it compares with the queries' language; give --query-lang" for n in names}
    return dataclasses.replace(evaluation, measures={n: summary.get(n, m) for n, m in evaluation.measures.items()},
                               per_query=PerQuery(ids, {**values, **columns}), notes={**evaluation.notes, **notes})


def exposure_per_query(qrels, scores, names: Sequence[str], query_ids: Sequence[str], langs: Mapping[str, str],
                       query_lang: str | None = None) -> dict[str, np.ndarray]:
    """``{name: (n,) values}`` of the exposure measures ``names`` on ``scores`` (``{qid: {docid:
    score}}``) for each of ``query_ids`` (judged queries; one missing from ``scores`` has an empty
    ranking), as ``evaluate_trec_files`` computes them (``clirbench trec_eval --doc-langs``)."""
    head_names = _head_measures(list(names), langs)
    if len(head_names) != len(names):
        other = next(n for n in names if n not in head_names)
        raise UnknownNameError(f"{other}: not a language exposure measure")
    run = {q: dict(scores.get(q) or {}) for q in query_ids}
    check_map(langs, run, qrels, query_ids, ("the run", "the qrels", "the document-language map"))
    table = _with_head(rank_run(run, qrels), qrels, run, langs, query_lang, head_names)
    values = compute(head_names, table)
    position = {q: i for i, q in enumerate(table.query_ids)}
    order = [position[q] for q in query_ids]
    nan = query_lang is None
    return {n: np.full(len(order), np.nan) if nan and parse(n).family in QUERY_LANG_FAMILIES
            else np.asarray(values[str(parse(n))], dtype=np.float64)[order] for n in names}


def run_tag_parts(tag: str) -> dict:
    """A run tag as NeuCLIR names runs: ``{"tag", "team", "flags"}``, the tag cut at every ``-`` and
    ``_``, the first piece the team, the others the flags in order (empty pieces dropped):
    ``hltcoe-plaid_mt-td`` -> team ``hltcoe``, flags ``["plaid", "mt", "td"]``."""
    pieces = [p for p in re.split(r"[-_]", tag) if p]
    return {"tag": tag, "team": pieces[0] if pieces else "", "flags": pieces[1:]}


def _extras(preset, langs, query_lang, run, doc_langs) -> dict:
    """The report's fields besides the evaluation's: none without ``--preset`` or ``--doc-langs``."""
    out: dict = {}
    if preset is not None:
        out["preset"] = preset
        out["run_tag"] = run_tag_parts(run.runid)
    if langs is not None:
        counts = collections.Counter(langs.values())
        out["doc_langs"] = {"file": str(doc_langs), "documents": {k: counts[k] for k in sorted(counts)},
                            "mlir": _is_mlir(langs)}
        out["query_lang"] = query_lang
    return out


def _split_measures(measures) -> tuple[list[str] | None, list[str]]:
    """The names the measure kernel gives, and the rest when trec_eval's measures give them (ir_measures'
    ``Bpref``, ``Judged@10``, ``P(rel=2)@5``; trec_eval's ``ndcg_cut_10``); unknown names raise."""
    if measures is None:
        return None, []

    kernel, by_trec = [], []
    for name in map(str, measures):
        try:
            kernel.append(str(parse(name)))
        except ValueError as exc:
            if lookup(name) is None:
                raise UnknownNameError(f"{exc}; or an ir_measures / trec_eval name such as Bpref, Judged@10, "
                                       f"P(rel=2)@5, ndcg_cut_10") from None
            by_trec.append(name)
    return kernel, by_trec


def _with_trec_eval_measures(evaluation, qrels, run, measures, kernel, by_trec):
    """``evaluation`` with the trec_eval-computed measures added, in the order asked, on the same queries."""

    from .trec_eval.names import lookup, per_query  # lazy: a local name

    ids, values = per_query(qrels, run.scores if hasattr(run, "scores") else run, by_trec)
    position = {q: i for i, q in enumerate(ids)}
    order = [position[q] for q in evaluation.per_query[0]]
    columns = {n: np.asarray(values[n], dtype=np.float64)[order] for n in by_trec}
    summary = summarise(by_trec, columns, evaluation.resamples, evaluation.seed,
                        transforms=_summary_rules(by_trec, columns))
    for n in by_trec:
        if lookup(n).summary == "gm":  # per query: max(value, 0.00001), whose geometric mean is reported
            columns[n] = np.exp(columns[n])
    all_columns = {**dict(evaluation.per_query[1]), **columns}
    names = [str(m) for m in measures]
    if not kernel:
        all_columns.pop("RR")
    kept = [n if n in all_columns else str(parse(n)) for n in names]
    merged = {**evaluation.measures, **summary}
    return dataclasses.replace(evaluation, measures={n: merged[n] for n in kept},
                               per_query=PerQuery(evaluation.per_query[0], {n: all_columns[n] for n in kept}))


def _summary_rules(names, columns) -> dict:
    """trec_eval's summary of each name that is not a mean, as a function of the bootstrap's mean
    (exact for the percentile interval, the functions being increasing): gm_map, gm_bpref: exp of
    the mean of the per-query logs; the counts (NumRet, num_rel, ...): the sum, n times the mean;
    NumQ, num_q: the number of queries."""

    out = {}
    for n in names:
        rule = lookup(n).summary
        count = int(np.count_nonzero(~np.isnan(columns[n])))
        if rule == "gm":
            out[n] = np.exp
        elif rule in ("sum", "count"):
            out[n] = lambda mean, count=count: mean * count
    return out


def _write_per_query(path, query_ids: Sequence[str], per_query: Mapping[str, np.ndarray]) -> None:
    """One record per (query, measure); NaN (undefined) and inf (needs the full ranking) as null."""

    jsonl = str(path).endswith(".jsonl")
    lines = []
    for name, values in per_query.items():
        for q, v in zip(query_ids, values.tolist()):
            finite = v == v and abs(v) != float("inf")
            if jsonl:
                lines.append(json.dumps({"query_id": q, "measure": name, "value": v if finite else None}))
            else:
                lines.append(f"{q}\t{name}\t{repr(v) if finite else 'null'}")
    write_text_atomic(path, ("" if jsonl else "query_id\tmeasure\tvalue\n") + "\n".join(lines) + "\n")
