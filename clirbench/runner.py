"""Run a retriever over a task's pools (docs/architecture.md): the settings decided once, then for
each pool its finished record from the result store (``results.store``), or rank -> evaluate ->
write; then the query-language gaps."""
from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .cache.cost import fuse_reports
from .cache.layout import embeddings_dir
from .collection import Pool
from .evaluation import evaluate_pool, preference_table
from .formats.trec import read_run
from .identity import PoolKey, SystemKey
from .measures import DEFAULT_MEASURES, MAIN_MEASURES, head_depth, parse
from .rank.ann import split_ann_measures
from .rank.ann_index import parse_index_spec
from .rank.choose import choose_ranker
from .rank.head import head_of_run
from .rank.rerank import Candidates
from .results import (
    PerQuery,
    PoolResult,
    Result,
    ResultStore,
    RetrieverRef,
    RunIdentity,
    RunResult,
    Timings,
    hardware_info,
)
from .results.cost import cpu_name, pool_cost
from .retrievers import make_retriever
from .retrievers.encoders import check_device
from .run_config import RunConfig, split_rerank
from .stats.paired import BILINGUAL_SCENARIOS, correct_gaps, query_language_gap, write_gap
from .stats.consistency import consistency_path, run_consistency
from .stats.preference import pool_preference
from .tasks import get_task
from .translate import TranslationPlan
from .util.errors import ClirbenchError, UnknownNameError

__all__ = ["run", "write_gaps"]


def run(model, task="xquad", config: RunConfig | None = None, *, ranker=None, **options) -> RunResult:
    """Evaluate ``model`` (a spec string or a Retriever) on every pool of ``task``.

    ``task`` is a task id, a task object (``get_task(id)``) or a sequence of ``Pool``s, which are
    run as given (the data options then do not apply). The settings are a ``RunConfig`` and/or its
    options by name (``run("bm25", "xquad", langs="en,zh", resamples=200)``; see
    ``clirbench.run_config`` for every option). ``output_dir`` (default None) is the results
    folder: None writes no file, reuses nothing and computes the gaps in memory.

    Finished pools whose result file exists with the same settings are reused, unless ``overwrite``.
    A ``translation`` translates each pool before scoring; such results go to the retriever folder
    with a ``+qt-<translator>``/``+dt-<translator>`` suffix. The ranking options choose the ranker
    (``rank.choose.choose_ranker``): full rows, sharded counting, Ray, or an approximate index
    (results under a ``+ann-<factory>`` suffix, with the index's measured recall; rank-set measures
    refused). ``ranker`` (any object with the ``Ranker`` protocol: ``supports(measures)``,
    ``rank(retriever, seen_pool, pool) -> Ranked``) is used instead of that choice.

    ``rerank="SECOND@K"`` re-sorts each query's top K by the retriever SECOND (``rank.rerank``;
    results under ``<first>+rerank-<second>@K``); ``candidates=<TREC run file>`` is then the first
    stage, and ``model`` None.
    """
    c = config.with_options(**options) if config is not None else RunConfig.of(**options)  # checked: before any work
    if c.ranking.executor == "local":  # (Ray's workers may hold the GPU that this machine lacks)
        check_device(c.retrieval.device)
    t_start = time.perf_counter()
    first = _first_stage(model, c)
    task_obj, pools = _pools(task, c.data)
    settings = _Settings.of(first, pools, task_obj, c, ranker)
    store = ResultStore(c.output.output_dir, c.output.overwrite, c.output.save_run, c.ranking.depth)
    done, todo = _plan(pools, store, settings)
    retriever = settings.retriever
    for stage in (retriever, settings.second):
        if hasattr(stage, "progress"):
            stage.progress = c.output.progress
    encoded, t_stage = _encoded(retriever, settings.second), time.perf_counter()
    hardware = _encode_stage(todo, settings, c.ranking.executor) if todo else None
    t_stage = time.perf_counter() - t_stage
    heads = {}  # multi pools' heads, for the consistency across query languages
    for pool, path in _progress(todo, c.output.progress, "pools"):
        groups = task_obj.breakdown_groups(pool) if task_obj is not None else {}
        result, evaluation = _evaluate_pool(pool, settings, hardware, groups)
        if pool.scenario == "multi" and evaluation.head is not None:
            heads[pool.name] = evaluation.head
        head = evaluation.head.top(c.ranking.depth) if c.output.save_run and evaluation.head is not None else None
        done.append(store.save(pool.name, result, PerQuery(tuple(evaluation.query_ids), evaluation.columns()),
                               path, ranks=evaluation.table, head=head))
    order = {p.name: i for i, p in enumerate(pools)}
    done.sort(key=lambda o: order[o.name])
    gaps = write_gaps(done, resamples=c.statistics.resamples, seed=c.statistics.seed,
                      correction=c.statistics.correction)
    heads.update(_saved_heads(done, heads, pools, settings))
    consistency = run_consistency(done, heads, resamples=c.statistics.resamples, seed=c.statistics.seed)
    main = task_obj.card.main_measures if task_obj is not None else _main_measures(pools)
    return RunResult(pools=tuple(done), gaps=tuple(g for _, g in gaps), main_measures=dict(main),
                     consistency=tuple((name, matrix) for name, matrix, _ in consistency),
                     seconds=time.perf_counter() - t_start, gap_paths=tuple(p for p, _ in gaps),
                     measures=settings.asked, encoded=_encoded_since(encoded, retriever, settings.second),
                     encode_seconds=t_stage)


@dataclass(frozen=True)
class _Settings:
    """What the run does to every pool, decided once before any pool: the retriever (and its
    ``describe()``), the translation plan (None: none), the measures and their bootstrap, the ranker,
    the approximate index (None: exact ranks), the measures asked for (None: the default set), and
    the identity a finished record must have to be reused (``results.store.RunIdentity``: the data
    (its files' SHA-256, else its revision), the qrels, the retriever (spec, revision, prompts), the
    translation and the measures (names, bootstrap resamples and seed))."""

    retriever: Any
    description: Mapping
    translation: Any  # a translate.TranslationPlan or None
    measures: tuple
    resamples: int
    seed: int
    ranker: Any  # a Ranker
    index: str | None
    asked: tuple[str, ...] | None
    identity: RunIdentity
    second: Any = None  # the second stage of a reranking (None: none)

    @property
    def system(self) -> SystemKey:
        return self.identity.system

    @classmethod
    def of(cls, retriever, pools: Sequence[Pool], task_obj, c: RunConfig, ranker=None) -> "_Settings":
        """The settings of ``retriever`` on ``pools`` under ``c``, checked (measures, index, ranker,
        the candidates of a reranking) before any work; ``ranker`` replaces the one the ranking options
        choose."""
        measures, index = _measures(c.statistics.measures), c.ranking.index
        if index is not None:
            index = str(parse_index_spec(index))  # one line for a malformed factory, before any work
            if not c.statistics.measures:  # the default set without the rank-set measures an index cannot give
                measures = tuple(split_ann_measures(measures)[0])
        second, rerank = None, None
        if c.ranking.rerank is not None:
            spec, k = split_rerank(c.ranking.rerank)
            second = _retriever(spec, dataclasses.replace(c.retrieval, query_prompt=None, doc_prompt=None))
            rerank = (second, second.describe(), k)
            if not c.statistics.measures:
                measures = _rerank_defaults(measures, k, c.ranking.candidates is None)
            if isinstance(retriever, Candidates):
                retriever.check_pools(pools)
        plan = _translation_plan(c, task_obj)
        description = retriever.describe()
        system = SystemKey.of_run(retriever, plan, index, description, rerank)
        identity = RunIdentity(retriever.spec, system, dict(description.get("prompts") or {}),
                               c.statistics.resamples, c.statistics.seed, tuple(str(m) for m in measures))
        ranker = _ranker(ranker, c, pools, measures, retriever, second)
        asked = tuple(str(m) for m in measures) if c.statistics.measures else None
        return cls(retriever, description, plan, measures, c.statistics.resamples, c.statistics.seed, ranker, index,
                   asked, identity, second)


def _rerank_defaults(measures, k: int | None, whole_pool: bool) -> tuple:
    """The default set as a reranking gives it: without the measures read below its K from the head,
    and without the rank-set ones when the first stage is a candidates run (``rank.rerank``)."""
    return tuple(m for m in measures if not (m.record.needs_head and k is not None and (m.cutoff or 1) > k)
                 and not (m.record.rank_set and not whole_pool))


def _first_stage(model, c: RunConfig):
    """The first stage: the retriever ``model`` names (or is), or the ``candidates`` run file
    (``rank.rerank.Candidates``; ``model`` must then be None)."""
    if c.ranking.candidates is None:
        if model is None:
            raise ClirbenchError("no retriever: give a model (--model), or a first stage's run (--candidates) "
                                 "with --rerank")
        return _retriever(model, c.retrieval)
    if model is not None:
        raise ClirbenchError("--candidates is the first stage: give --model or --candidates, not both")
    return Candidates(read_run(c.ranking.candidates), str(c.ranking.candidates))


def _pools(task, data) -> tuple[Any, list[Pool]]:
    """``(task object or None, pools)`` of what ``run`` was given; no pool is an error."""
    if isinstance(task, str):
        task = get_task(task)
    if callable(getattr(task, "pools", None)):
        pools = task.pools(data.langs, data.scenarios, data.query_langs, data.pool_mode, data.data_dir,
                           **data.task_options)
    else:
        task, pools = None, _given_pools(task)
    if not pools:
        raise ClirbenchError("nothing to run: no pool matches these languages and query languages")
    return task, pools


def _retriever(model, retrieval):
    """``model`` itself, or the retriever its spec string names (``retrieval``: its build options)."""
    if not isinstance(model, str):
        return model
    cache = Path(retrieval.cache_dir) if retrieval.cache_dir is not None else embeddings_dir()
    return make_retriever(model, cache_dir=cache, **retrieval.builder())


def _translation_plan(c: RunConfig, task_obj):
    """The run's ``TranslationPlan`` (None without ``translation``); its bars follow ``progress``."""
    if not c.retrieval.translation:
        return None
    plan = TranslationPlan.create(c.retrieval.translation, task=task_obj, data_dir=c.data.data_dir,
                                  task_options=c.data.task_options)
    if hasattr(plan.translator, "progress"):  # the translators' own bars follow --no-progress
        plan.translator.progress = c.output.progress
    return plan


def _ranker(given, c: RunConfig, pools: Sequence[Pool], measures, retriever, second=None):
    """``given`` (checked against the measures), else the ranker the ranking options choose (a
    reranking by ``second`` when they say ``rerank``)."""
    if given is None:
        # the head costs time on every pool: kept as deep as the exposure measures read or --save-run saves
        depths = [d for d in (head_depth(measures), c.ranking.depth if c.output.save_run else None) if d]
        return choose_ranker(c.ranking, [len(p.docs) for p in pools], measures, c.retrieval.device, retriever,
                             depth=max(depths) if depths else None, second=second)
    given.supports(measures)
    return given


def _saved_heads(done, heads: Mapping, pools: Sequence[Pool], settings: "_Settings") -> dict:
    """The heads of reused ``multi`` pools, for the consistency across query languages of a set of
    documents of which this run ranked another pool (a resumed run): from their saved runs
    (``--save-run``), else ranked again (the head only; the records stay as they are). A set whose
    pools were all reused keeps the consistency file written before (one a run killed before writing
    it lacks is made)."""
    ranked = {PoolKey.of(o.record).documents for o in done if o.name in heads}
    if head_depth(settings.measures) is not None:  # the records' measures read heads: a missing file is made
        sizes = Counter(PoolKey.of(o.record).documents for o in done if o.record.scenario == "multi")
        ranked |= {PoolKey.of(o.record).documents for o in done if o.path is not None and o.record.scenario == "multi"
                   and len(o.record.doc_langs) >= 2 and sizes[PoolKey.of(o.record).documents] >= 2
                   and not consistency_path(o.path).exists()}
    by_name = {p.name: p for p in pools}
    out = {}
    for o in done:
        r = o.record
        if o.name in heads or PoolKey.of(r).documents not in ranked:
            continue
        pool = by_name[o.name]
        if r.run is not None and o.path is not None:
            run = read_run(o.path.parent / r.run.file)
            out[o.name] = head_of_run(run, [q.id for q in pool.queries], [d.id for d in pool.docs],
                                      [d.lang for d in pool.docs], pool.exclusions, r.run.depth)
        else:
            seen = pool if settings.translation is None else settings.translation.apply(pool)[0]
            if hasattr(settings.retriever, "prepare"):
                settings.retriever.prepare(seen.queries, seen.docs)
            out[o.name] = settings.ranker.rank(settings.retriever, seen, pool).head
    return {name: head for name, head in out.items() if head is not None}


def _plan(pools: Sequence[Pool], store: ResultStore, settings: _Settings):
    """``(finished, todo)``: the pools the store holds finished with these settings (``PoolResult``)
    and the others with the path each is to be written to (None in memory)."""
    done, todo = [], []
    for pool in pools:
        path = store.path(settings.system, pool)
        finished = store.reuse(pool, path, settings.identity)
        if finished is not None:
            done.append(finished)
        else:
            todo.append((pool, path))
    return done, todo


def _encode_stage(todo, settings: _Settings, executor: str):
    """Encode every text of the pools to compute at once (when the retriever can and nothing is
    translated, here); returns this machine's hardware, probed once per run, not per record."""
    hardware = hardware_info()
    retriever = settings.retriever
    if settings.translation is None and executor == "local" and hasattr(retriever, "encode_ahead"):
        retriever.encode_ahead(*_all_texts([pool for pool, _ in todo]))  # the encoding stage
    return hardware


def _all_texts(pools: Sequence[Pool]) -> tuple[list, list]:
    """The distinct queries and documents (by text, first seen) of ``pools``."""
    queries: dict[str, object] = {}
    docs: dict[str, object] = {}
    for pool in pools:
        for seen, texts in ((queries, pool.queries), (docs, pool.docs)):
            for t in texts:
                seen.setdefault(t.text, t)
    return list(queries.values()), list(docs.values())


def _encoded(*retrievers) -> int | None:
    """Texts encoded so far by the embedding caches of ``retrievers`` (or of their fused parts; None
    skipped); None: none has one."""
    parts = [r for retriever in retrievers if retriever is not None
             for r in (getattr(retriever, "retrievers", None) or (retriever,))]
    caches = [r.cache for r in parts if callable(getattr(getattr(r, "cache", None), "stats", None))]
    return sum(c.stats()["encoded"] for c in caches) if caches else None


def _encoded_since(before: int | None, *retrievers) -> int | None:
    """Texts encoded since ``_encoded`` gave ``before`` (None: no retriever has an embedding cache)."""
    return None if before is None else _encoded(*retrievers) - before


def _given_pools(pools) -> list[Pool]:
    """A user's sequence of pools, checked: Pool objects with distinct names."""
    if isinstance(pools, Pool):
        pools = [pools]
    try:
        pools = list(pools)
    except TypeError:
        raise TypeError(f"task must be a task id, a task or a sequence of Pool, not {type(pools).__name__}") from None
    bad = [type(p).__name__ for p in pools if not isinstance(p, Pool)]
    if bad:
        raise TypeError(f"task must be a task id, a task or a sequence of Pool; got a {bad[0]} in the sequence")
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise ClirbenchError(f"two pools share the name {next(n for n in names if names.count(n) > 1)!r}")
    return pools


def _main_measures(pools) -> dict[str, tuple[str, ...]]:
    """Main measures per scenario of user-built pools (those the scenario declares)."""
    return {p.scenario: tuple(str(m) for m in MAIN_MEASURES.get(p.scenario, ())) for p in pools}


def _measures(names: Sequence[str] | None):
    if not names:
        return DEFAULT_MEASURES
    try:
        return tuple(parse(n) for n in names)
    except ValueError as exc:
        raise UnknownNameError(str(exc)) from None


def _progress(items, enabled: bool, desc: str):
    if not enabled or len(items) <= 1:
        return items
    from tqdm.auto import tqdm  # lazy: tqdm's auto front end probes for a notebook

    return tqdm(items, desc=desc, unit="pool")


def _evaluate_pool(pool: Pool, settings: _Settings, hardware, groups: Mapping | None = None):
    """Encode, score, rank and measure one pool: ``(Result, PoolEvaluation)``, nothing written.

    ``groups`` (``Task.breakdown_groups``: ``{field: {qid: groups}}``) puts a per-group
    breakdown into the record.
    """
    retriever = settings.retriever
    seen, translation, t_translate = pool, None, 0.0
    if settings.translation is not None:  # the retriever sees the translated texts; ids and langs stay
        seen, translation = settings.translation.apply(pool)
        t_translate = translation["seconds"]
    t0 = time.perf_counter()
    if hasattr(retriever, "prepare"):
        retriever.prepare(seen.queries, seen.docs)
    t1 = time.perf_counter()
    evaluation = evaluate_pool(retriever, pool, settings.measures, settings.resamples, settings.seed,
                               seen=seen, ranker=settings.ranker)
    t_breakdown = time.perf_counter()
    breakdown = evaluation.breakdown(groups or {})
    preference = _preference(pool, evaluation, settings)
    t_search = evaluation.seconds["search"]
    cost = _cost(retriever, seen, len(evaluation.query_ids), t_search, translation, evaluation.encode)
    t_measure = evaluation.seconds["measure"] + time.perf_counter() - t_breakdown
    result = Result.of(
        pool, RetrieverRef.described(retriever.spec, settings.description, evaluation.ranking), evaluation.summary,
        len(evaluation.query_ids), resamples=settings.resamples, seed=settings.seed, hardware=hardware,
        timings_s=Timings(encode=t1 - t0, translate=t_translate, search=t_search, measure=t_measure,
                          total=time.perf_counter() - t0 + t_translate),
        translation=translation, breakdown=breakdown, preference=preference, cost=cost,
        tie_share=evaluation.table.tie_share)
    return result, evaluation


def _preference(pool: Pool, evaluation, settings: _Settings):
    """The pool's row of the language-preference matrix (``stats.preference``), when its ranks are
    exact (an approximate index does not rank every relevant passage exactly, nor does a candidates
    run rank the documents it lacks)."""
    if settings.index is not None or isinstance(settings.retriever, Candidates):
        return None
    return pool_preference(pool, preference_table(evaluation.table), settings.resamples, settings.seed)


def _cost(retriever, seen: Pool, num_queries: int, search_seconds: float, translation, second=None):
    """The record's ``cost`` section (``results.cost``): what the retriever reports about the pool it
    saw (encoding from the cache's records, index bytes), fused with ``second``, a reranking's second
    stage's encoding of the texts it scored (``cache.cost.fuse_reports``: their seconds add up), the
    search time, the translation."""
    report = retriever.cost(seen.queries, seen.docs) if callable(getattr(retriever, "cost", None)) else None
    if report is not None and second is not None:
        report = fuse_reports([report, second])
    return pool_cost(report, num_queries, search_seconds, translation, cpu_name())


def write_gaps(outcomes: Sequence[PoolResult], resamples: int = 1000, seed: int = 42,
               correction: str = "holm") -> list[tuple]:
    """Query-language gaps for every bilingual pool finished for both query languages, their
    p-values adjusted as one family (every measure of every gap of this run) by ``correction``;
    each written beside its results when those were written. ``[(path or None, Gap)]``."""
    by_pool: dict[PoolKey, dict[str, PoolResult]] = {}
    for o in outcomes:
        r = o.record
        if r.scenario in BILINGUAL_SCENARIOS and len(r.doc_langs) == 2:
            by_pool.setdefault(PoolKey.of(r).documents, {})[r.query_lang] = o
    pairs, gaps = [], []
    for key, found in by_pool.items():
        scenario, (l1, l2) = key.scenario, key.doc_langs
        if l1 in found and l2 in found:
            names = [str(m) for m in MAIN_MEASURES[scenario] if not m.of_mean
                     and all(str(m) in found[l].record.measures for l in (l1, l2))]
            if not names:  # none of the scenario's main measures was computed (e.g. --measures nDCG@10)
                continue
            pairs.append((found[l1], found[l2]))
            gaps.append(query_language_gap(found[l1], found[l2], names, resamples, seed))
    gaps = correct_gaps(gaps, correction)
    return [(None if first.path is None or second.path is None else write_gap(first.path, gap), gap)
            for (first, second), gap in zip(pairs, gaps)]
