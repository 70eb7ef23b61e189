"""Run a retriever over a task's pools: score, rank, measure, write results (docs/architecture.md)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping, Sequence


from .collection import Pool
from .cache.layout import embeddings_dir
from .util.errors import ClirbenchError, UnknownNameError
from .results import PerQuery, PoolResult, RunResult
from .run_config import DEFAULT_OUTPUT, RunConfig

__all__ = ["run", "write_gaps", "DEFAULT_OUTPUT"]


def run(model, task="xquad", config: RunConfig | None = None, **options) -> RunResult:
    """Evaluate ``model`` (a spec string or a Retriever) on every pool of ``task``.

    ``task`` is a task id, a task object (``get_task(id)``) or a sequence of ``Pool``s, which are
    run as given (the data options then do not apply). The settings are a ``RunConfig`` and/or its
    options by name (``run("bm25", "xquad", langs="en,zh", resamples=200)``; see
    ``clirbench.run_config`` for every option). ``output_dir=None`` writes no file: nothing is
    reused, the gaps are computed in memory.

    Finished pools whose result file exists with the same settings are reused, unless ``overwrite``.
    A ``translation`` translates each pool before scoring; such results go to the retriever folder
    with a ``+qt-<translator>``/``+dt-<translator>`` suffix. The ranking options choose the ranker
    (``evaluation.choose_ranker``): full rows, sharded counting, Ray, or an approximate index (results
    under a ``+ann-<factory>`` suffix, with the index's measured recall; rank-set measures refused).
    """
    from .tasks import get_task
    from .retrievers import make_retriever

    c = config.with_options(**options) if config is not None else RunConfig.of(**options)  # checked: before any work
    data, out = c.data, c.output
    if c.ranking.executor == "local":  # (Ray's workers may hold the GPU that this machine lacks)
        from .retrievers.encoders import check_device

        check_device(c.retrieval.device)
    t_start = time.perf_counter()
    if isinstance(task, str):
        task = get_task(task)
    if callable(getattr(task, "pools", None)):
        task_obj = task
        pools = task_obj.pools(data.langs, data.scenarios, data.query_langs, data.pool_mode, data.data_dir,
                               **data.task_options)
    else:
        task_obj, pools = None, _given_pools(task)
    if not pools:
        raise ClirbenchError("nothing to run: no pool matches these languages and query languages")

    if isinstance(model, str):
        cache = Path(c.retrieval.cache_dir) if c.retrieval.cache_dir is not None else embeddings_dir()
        retriever = make_retriever(model, cache_dir=cache, **c.retrieval.builder())
    else:
        retriever = model
    measure_objs = _measures(c.statistics.measures)
    index = c.ranking.index
    if index is not None:
        from .rank.ann import split_ann_measures
        from .rank.ann_index import parse_index_spec

        index = str(parse_index_spec(index))  # one line for a malformed factory, before any work
        if not c.statistics.measures:  # the default set without the rank-set measures an index cannot give
            measure_objs = tuple(split_ann_measures(measure_objs)[0])
    plan = None
    if c.retrieval.translation:
        from .translate import TranslationPlan

        plan = TranslationPlan.create(c.retrieval.translation, task=task_obj, data_dir=data.data_dir,
                                      task_options=data.task_options)
        if hasattr(plan.translator, "progress"):  # the translators' own bars follow --no-progress
            plan.translator.progress = out.progress
    settings = _Settings(retriever, measure_objs, c.statistics.resamples, c.statistics.seed, plan, index=index)
    from .rank.choose import choose_ranker

    settings.ranker = choose_ranker(c.ranking, [len(p.docs) for p in pools], measure_objs, c.retrieval.device,
                                    retriever)

    todo, outcomes = [], []
    for pool in pools:
        path = None if out.output_dir is None else _result_path(out.output_dir, settings.system, pool)
        existing = None if out.overwrite or path is None else _reusable(path, pool, settings)
        if existing is not None:
            outcomes.append(PoolResult.read(pool.name, path, existing, reused=True))
        else:
            todo.append((pool, path))

    if hasattr(retriever, "progress"):
        retriever.progress = out.progress
    encoded, t_stage = _encoded(retriever), time.perf_counter()
    if todo:
        from .results import hardware_info

        settings.hardware = hardware_info()  # probed once per run, not per record
        if plan is None and c.ranking.executor == "local" and hasattr(retriever, "encode_ahead"):
            retriever.encode_ahead(*_all_texts([pool for pool, _ in todo]))  # the encoding stage
    t_stage = time.perf_counter() - t_stage
    for pool, path in _progress(todo, out.progress, "pools"):
        groups = task_obj.breakdown_groups(pool) if task_obj is not None else {}
        result, evaluation = _evaluate_pool(pool, retriever, settings, groups)
        if path is not None:
            result = _write(result, evaluation, path)
        outcomes.append(PoolResult(pool.name, result, PerQuery(tuple(evaluation.query_ids), evaluation.columns()),
                                   path, False))
    order = {p.name: i for i, p in enumerate(pools)}
    outcomes.sort(key=lambda o: order[o.name])
    gaps = write_gaps(outcomes, resamples=c.statistics.resamples, seed=c.statistics.seed,
                      correction=c.statistics.correction)
    main = task_obj.card.main_measures if task_obj is not None else _main_measures(pools)
    encoded = None if encoded is None else _encoded(retriever) - encoded
    return RunResult(pools=tuple(outcomes), gaps=tuple(g for _, g in gaps), main_measures=dict(main),
                     seconds=time.perf_counter() - t_start, gap_paths=tuple(p for p, _ in gaps),
                     measures=tuple(str(m) for m in measure_objs) if c.statistics.measures else None,
                     encoded=encoded, encode_seconds=t_stage)


def _all_texts(pools: Sequence[Pool]) -> tuple[list, list]:
    """The distinct queries and documents (by text, first seen) of ``pools``."""
    queries: dict[str, object] = {}
    docs: dict[str, object] = {}
    for pool in pools:
        for seen, texts in ((queries, pool.queries), (docs, pool.docs)):
            for t in texts:
                seen.setdefault(t.text, t)
    return list(queries.values()), list(docs.values())


def _encoded(retriever) -> int | None:
    """Texts encoded so far by the embedding caches of ``retriever`` (or of its fused parts); None: none."""
    caches = [r.cache for r in (getattr(retriever, "retrievers", None) or (retriever,))
              if callable(getattr(getattr(r, "cache", None), "stats", None))]
    return sum(c.stats()["encoded"] for c in caches) if caches else None


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
    from .measures import MAIN_MEASURES

    return {p.scenario: tuple(str(m) for m in MAIN_MEASURES.get(p.scenario, ())) for p in pools}


class _Settings:
    """What must match for a finished result to be reused: the data (its files' SHA-256, else its
    revision), the qrels, the retriever (spec, revision, prompts), the translation and the
    measures (names, bootstrap resamples and seed)."""

    def __init__(self, retriever, measures, resamples: int, seed: int, translation=None, hardware=None,
                 index: str | None = None):
        from .identity import SystemKey

        self.retriever, self.translation, self.hardware = retriever, translation, hardware
        self.ranker = None  # the run's evaluation.Ranker (choose_ranker)
        self.index = index  # an approximate index's spec (None: exact ranks)
        self.description = retriever.describe()
        self.system = SystemKey.of_run(retriever, translation, index, self.description)
        self.measures = measures
        self.resamples, self.seed = resamples, seed

    def mismatch(self, result, pool: Pool) -> str | None:
        from .identity import PoolKey

        want, have = self.description, result.system_key
        checks = {
            "retriever": (result.retriever.spec, self.retriever.spec),
            "model revision": (have.revision, self.system.revision),
            "translation": (have.translation, self.system.translation),
            "ranking": (have.ranking, self.system.ranking),
            "prompts": (dict(result.retriever.prompts), dict(want.get("prompts") or {})),
            "bootstrap resamples": (result.bootstrap.resamples, self.resamples),
            "bootstrap seed": (result.bootstrap.seed, self.seed),
            "qrels": (result.qrels_sha256, PoolKey.of(pool).qrels_sha256),
        }
        data = _data_mismatch(result.task, pool.source)
        if data is not None:
            return data
        for what, (have, need) in checks.items():
            if have != need:
                return what
        missing = [str(m) for m in self.measures if str(m) not in result.measures]
        return f"measures ({', '.join(missing)})" if missing else None


def _data_mismatch(task_ref, source) -> str | None:
    """Why the data a result was computed from is not the pool's data, or None when it is.

    Files hashed on both sides must agree (a pool may hash more files than an earlier run that
    loaded fewer languages); with no hashes on either side, the revisions must agree.
    """
    have = dict(task_ref.files_sha256 or {})
    need = dict(source.get("files_sha256") or {})
    if have or need:
        common = sorted(set(have) & set(need))
        if not common:
            return f"data (no common hashed file: {', '.join(sorted(have)) or 'none'} vs {', '.join(sorted(need)) or 'none'})"
        changed = [name for name in common if have[name] != need[name]]
        return f"data (SHA-256 of {', '.join(changed)})" if changed else None
    if task_ref.revision != source.get("revision"):
        return f"data revision ({task_ref.revision} vs {source.get('revision')})"
    return None


def _measures(names: Sequence[str] | None):
    from .measures import DEFAULT_MEASURES, parse

    if not names:
        return DEFAULT_MEASURES
    try:
        return tuple(parse(n) for n in names)
    except ValueError as exc:
        raise UnknownNameError(str(exc)) from None


def _result_path(output_dir, system, pool: Pool) -> Path:
    """Where the result of ``system`` (an ``identity.SystemKey``) on ``pool`` lies."""
    from .identity import PoolKey
    from .results import result_path

    return result_path(output_dir, system, PoolKey.of(pool))


def _reusable(path: Path, pool: Pool, settings: _Settings):
    """The finished result at ``path`` if it was made with the same settings; None to compute.

    A finished result made with other settings is never overwritten silently.
    """
    from .results import read_per_query, read_result

    if not path.exists():
        return None
    try:
        result = read_result(path)
        read_per_query(path)
    except ValueError:
        return None  # half-written or damaged: recompute
    why = settings.mismatch(result, pool)
    if why is not None:
        raise ClirbenchError(f"{path} exists with different {why}; pass --overwrite to replace it "
                             f"or --output to write elsewhere")
    return result


def _progress(items, enabled: bool, desc: str):
    if not enabled or len(items) <= 1:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="pool")


def _evaluate_pool(pool: Pool, retriever, settings: _Settings, groups: Mapping | None = None):
    """Encode, score, rank and measure one pool: ``(Result, PoolEvaluation)``, nothing written.

    ``groups`` (``Task.breakdown_groups``: ``{field: {qid: groups}}``) puts a per-group
    breakdown into the record.
    """
    from .evaluation import evaluate_pool
    from .results import BootstrapSettings, Result, RetrieverRef, TaskRef, Timings

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
    ranking = evaluation.ranking  # how the ranks were obtained (sharded, Ray, ANN); None: full rows
    t_breakdown = time.perf_counter()
    breakdown = evaluation.breakdown(groups or {})
    preference = _preference(pool, evaluation, settings)
    t_search = evaluation.seconds["search"]
    cost = _cost(retriever, seen, len(evaluation.query_ids), t_search, translation)
    t_measure = evaluation.seconds["measure"] + time.perf_counter() - t_breakdown
    desc = dict(settings.description)
    retriever_ref = RetrieverRef(
        spec=retriever.spec, model_id=desc.pop("model_id", None), revision=desc.pop("revision", None),
        prompts=desc.pop("prompts", {}) or {},
        settings={**{k: v for k, v in desc.items() if k != "spec"}, **({"ranking": ranking} if ranking else {})})
    result = Result(
        task=TaskRef(id=pool.task, source=str(pool.source.get("origin")), revision=pool.source.get("revision"),
                     files_sha256=pool.source.get("files_sha256") or None),
        subset=pool.subset, qrels_sha256=pool.qrels_hash(), scenario=pool.scenario, pool_mode=pool.pool_mode,
        pool_size=len(pool.docs), doc_langs=pool.doc_langs, query_lang=pool.query_lang,
        num_queries=len(evaluation.query_ids), retriever=retriever_ref, measures=evaluation.summary,
        bootstrap=BootstrapSettings(resamples=settings.resamples, seed=settings.seed),
        timings_s=Timings(encode=t1 - t0, translate=t_translate, search=t_search, measure=t_measure,
                          total=time.perf_counter() - t0 + t_translate), translation=translation,
        hardware=settings.hardware, breakdown=breakdown, preference=preference,
        cost=cost)
    return result, evaluation


def _preference(pool: Pool, evaluation, settings: _Settings):
    """The pool's row of the language-preference matrix (``stats.preference``), when its ranks are
    exact (an approximate index does not rank every relevant passage exactly)."""
    if settings.index is not None:
        return None
    from .stats.preference import pool_preference

    return pool_preference(pool, evaluation.table, settings.resamples, settings.seed)


def _cost(retriever, seen: Pool, num_queries: int, search_seconds: float, translation):
    """The record's ``cost`` section (``results.cost``): what the retriever reports about the pool it
    saw (encoding from the cache's records, index bytes), the search time, the translation."""
    from .results.cost import cpu_name, pool_cost

    report = retriever.cost(seen.queries, seen.docs) if callable(getattr(retriever, "cost", None)) else None
    return pool_cost(report, num_queries, search_seconds, translation, cpu_name())


def _write(result, evaluation, path: Path):
    """Write a pool's record, its per-query table and its ranks table (atomically); returns the record
    as written."""
    from .results import write_result

    return write_result(result, (evaluation.query_ids, evaluation.columns()), path, ranks=evaluation.table)


def write_gaps(outcomes: Sequence[PoolResult], resamples: int = 1000, seed: int = 42,
               correction: str = "holm") -> list[tuple]:
    """Query-language gaps for every bilingual pool finished for both query languages, their
    p-values adjusted as one family (every measure of every gap of this run) by ``correction``;
    each written beside its results when those were written. ``[(path or None, Gap)]``."""
    from .stats.paired import BILINGUAL_SCENARIOS, correct_gaps, query_language_gap, write_gap
    from .measures import MAIN_MEASURES

    from .identity import PoolKey

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
