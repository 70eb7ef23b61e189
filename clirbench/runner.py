"""Run a retriever over a task's pools: score, rank, measure, write results (DESIGN §1)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence


from .collection import Pool
from .errors import ClirbenchError, UnknownNameError

DEFAULT_OUTPUT = "results"


def default_cache_dir() -> Path:
    """``$CLIRBENCH_CACHE_DIR``, else ``~/.cache/clirbench``."""
    env = os.environ.get("CLIRBENCH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "clirbench"


@dataclass(frozen=True)
class PoolOutcome:
    """One finished pool: where its result lies, the record, and whether it was reused."""

    pool_name: str
    path: Path
    record: dict
    reused: bool


def run(model, task: str = "xquad", langs: str | Sequence[str] | None = None, scenarios="all",
        query_langs: Sequence[str] | None = None, pool_mode: str = "unique", data_dir=None,
        output_dir=DEFAULT_OUTPUT, cache_dir=None, measures: Sequence[str] | None = None,
        resamples: int = 1000, seed: int = 42, overwrite: bool = False,
        query_prompt: str | None = None, doc_prompt: str | None = None, batch_size: int | None = None,
        device: str | None = None, progress: bool = True, task_options: dict | None = None,
        translation: Mapping | None = None) -> "RunReport":
    """Evaluate ``model`` (a spec string or a Retriever) on every pool of the sweep.

    ``langs`` picks language pairs for parallel tasks (``en,zh``, ``en+all``; default: the pivot
    with every other language) and what the task's loader documents for the others.

    Finished pools whose result file exists with the same settings are reused, unless ``overwrite``.
    ``translation`` (``{"direction": "query"|"docs", "translator": SPEC, "cache_dir", "quality"}``,
    see ``clirbench.translate.TranslationPlan.create``) translates each pool before scoring; such
    results go to the retriever folder with a ``+qt-<translator>``/``+dt-<translator>`` suffix.
    """
    from .checks import check_int, check_resamples, check_seed
    from .tasks import get_task
    from .retrievers import make_retriever

    resamples, seed = check_resamples(resamples), check_seed(seed)  # before any work
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", 1)
    t_start = time.perf_counter()
    task_obj = get_task(task)
    pools = task_obj.pools(langs, scenarios, query_langs, pool_mode, data_dir, **(task_options or {}))
    if not pools:
        raise ClirbenchError("nothing to run: no pool matches these languages and query languages")

    if isinstance(model, str):
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"
        retriever = make_retriever(model, cache_dir=cache, query_prompt=query_prompt,
                                   doc_prompt=doc_prompt, device=device, batch_size=batch_size)
    else:
        retriever = model
    measure_objs = _measures(measures)
    plan = None
    if translation:
        from .translate import TranslationPlan

        plan = TranslationPlan.create(translation, task=task_obj, data_dir=data_dir, task_options=task_options)
        if hasattr(plan.translator, "progress"):  # the translators' own bars follow --no-progress
            plan.translator.progress = progress
    settings = _Settings(retriever, measure_objs, resamples, seed, plan)

    todo, outcomes = [], []
    for pool in pools:
        path = _result_path(output_dir, retriever, pool, plan.slug if plan else "")
        existing = None if overwrite else _reusable(path, pool, settings)
        if existing is not None:
            outcomes.append(PoolOutcome(pool.name, path, existing, True))
        else:
            todo.append((pool, path))

    if hasattr(retriever, "progress"):
        retriever.progress = progress
    breakdown = getattr(task_obj.loader(), "write_breakdown", None)
    for pool, path in _progress(todo, progress, "pools"):
        record = _evaluate_pool(pool, retriever, settings, path)
        if breakdown is not None and breakdown(path, pool) is not None:
            record = read_result_dict(path)
        outcomes.append(PoolOutcome(pool.name, path, record, False))
    order = {p.name: i for i, p in enumerate(pools)}
    outcomes.sort(key=lambda o: order[o.pool_name])
    gaps = write_gaps(outcomes, resamples=resamples, seed=seed)
    return RunReport(outcomes=tuple(outcomes), gaps=tuple(gaps),
                     main_measures=dict(task_obj.card.main_measures), seconds=time.perf_counter() - t_start)


@dataclass(frozen=True)
class RunReport:
    """What ``run`` did: one outcome per pool, the query-language gaps, total wall time."""

    outcomes: tuple[PoolOutcome, ...]
    gaps: tuple[tuple[Path, dict], ...]
    main_measures: Mapping[str, Sequence[str]]  # per scenario, from the task card
    seconds: float


class _Settings:
    """What must match for a finished result to be reused: the data (its files' SHA-256, else its
    revision), the qrels, the retriever (spec, revision, prompts), the translation and the
    measures (names, bootstrap resamples and seed)."""

    def __init__(self, retriever, measures, resamples: int, seed: int, translation=None):
        self.retriever, self.translation = retriever, translation
        self.description = retriever.describe()
        self.measures = measures
        self.resamples, self.seed = resamples, seed

    def mismatch(self, result, pool: Pool) -> str | None:
        want = self.description
        checks = {
            "retriever": (result.retriever.spec, self.retriever.spec),
            "model revision": (result.retriever.revision, want.get("revision")),
            "prompts": (dict(result.retriever.prompts), dict(want.get("prompts") or {})),
            "bootstrap resamples": (result.bootstrap.resamples, self.resamples),
            "bootstrap seed": (result.bootstrap.seed, self.seed),
            "qrels": (result.qrels_sha256, pool.qrels_hash()),
            "translation": (_translation_key(result.translation),
                            self.translation.key() if self.translation else None),
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


def _translation_key(record) -> dict | None:
    return None if not record else {"direction": record.get("direction"), "translator": record.get("translator")}


def read_result_dict(path: Path) -> dict:
    from .results import read_result

    return read_result(path).to_dict()


def _measures(names: Sequence[str] | None):
    from .measures import DEFAULT_MEASURES, parse

    if not names:
        return DEFAULT_MEASURES
    try:
        return tuple(parse(n) for n in names)
    except ValueError as exc:
        raise UnknownNameError(str(exc)) from None


def _result_path(output_dir, retriever, pool: Pool, suffix: str = "") -> Path:
    from .results import result_path

    return result_path(output_dir, retriever.spec + suffix, pool.task, pool.scenario, pool.pool_mode,
                       pool.doc_langs, pool.query_lang, pool.subset)


def _reusable(path: Path, pool: Pool, settings: _Settings) -> dict | None:
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
    return result.to_dict()


def _progress(items, enabled: bool, desc: str):
    if not enabled or len(items) <= 1:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="pool")


def _evaluate_pool(pool: Pool, retriever, settings: _Settings, path: Path) -> dict:
    """Encode, score, rank, measure and write one pool; returns the written record."""
    from .measures import compute
    from .ranking import rank_relevant
    from .results import (BootstrapSettings, Result, RetrieverRef, TaskRef, Timings,
                          per_query_name, summarise, write_result)

    seen, translation, t_translate = pool, None, 0.0
    if settings.translation is not None:  # the retriever sees the translated texts; ids and langs stay
        seen, translation = settings.translation.apply(pool)
        t_translate = translation["seconds"]
    t0 = time.perf_counter()
    if hasattr(retriever, "prepare"):
        retriever.prepare(seen.queries, seen.docs)
    t1 = time.perf_counter()
    table = rank_relevant(retriever.score(seen.queries, seen.docs), [d.id for d in pool.docs],
                          [q.id for q in pool.queries], pool.qrels, pool.exclusions,
                          doc_langs=[d.lang for d in pool.docs], query_lang=pool.query_lang)
    t2 = time.perf_counter()
    per_query = compute(settings.measures, table)
    transforms = {str(m): (lambda x, m=m: m.from_mean(x, table)) for m in settings.measures if m.of_mean}
    summary = summarise(settings.measures, per_query, settings.resamples, settings.seed,
                        transforms=transforms)
    table_columns = {str(m): per_query[str(m)] for m in settings.measures if not m.of_mean}
    t3 = time.perf_counter()
    desc = dict(settings.description)
    retriever_ref = RetrieverRef(
        spec=retriever.spec, model_id=desc.pop("model_id", None), revision=desc.pop("revision", None),
        prompts=desc.pop("prompts", {}) or {}, settings={k: v for k, v in desc.items() if k != "spec"})
    result = Result(
        task=TaskRef(id=pool.task, source=str(pool.source.get("origin")), revision=pool.source.get("revision"),
                     files_sha256=pool.source.get("files_sha256") or None),
        subset=pool.subset, qrels_sha256=pool.qrels_hash(), scenario=pool.scenario, pool_mode=pool.pool_mode,
        pool_size=len(pool.docs), doc_langs=pool.doc_langs, query_lang=pool.query_lang,
        num_queries=len(table.query_ids), retriever=retriever_ref, measures=summary,
        bootstrap=BootstrapSettings(resamples=settings.resamples, seed=settings.seed),
        timings_s=Timings(encode=t1 - t0, translate=t_translate, search=t2 - t1, measure=t3 - t2,
                          total=time.perf_counter() - t0 + t_translate), translation=translation,
        per_query_file=per_query_name(path))
    written = write_result(result, (table.query_ids, table_columns), path)
    return written.to_dict()


def write_gaps(outcomes: Sequence[PoolOutcome], resamples: int = 1000, seed: int = 42) -> list[tuple[Path, dict]]:
    """Query-language gaps for every bilingual pool finished for both query languages."""
    from .bias import BILINGUAL_SCENARIOS, write_gap
    from .measures import MAIN_MEASURES

    by_pool: dict[tuple, dict[str, PoolOutcome]] = {}
    for o in outcomes:
        r = o.record
        if r["scenario"] in BILINGUAL_SCENARIOS and len(r["doc_langs"]) == 2:
            key = (r.get("subset", ""), r["scenario"], r["pool_mode"], tuple(r["doc_langs"]))
            by_pool.setdefault(key, {})[r["query_lang"]] = o
    gaps = []
    for (_, scenario, _, (l1, l2)), found in by_pool.items():
        if l1 in found and l2 in found:
            names = [str(m) for m in MAIN_MEASURES[scenario] if not m.of_mean]
            gaps.append(write_gap(found[l1].path, found[l2].path, names, resamples, seed))
    return gaps
