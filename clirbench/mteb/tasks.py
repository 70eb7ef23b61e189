"""clirbench pools as MTEB retrieval tasks (``mteb.abstasks.retrieval.AbsTaskRetrieval``).

Each pool is an MTEB subset whose ``eval_langs`` are ``[query language, *document languages]``.
MTEB searches the whole pool (``top_k`` = pool size), so its run ranks every document; clirbench's
measures are then computed from that run with clirbench's tie rule (score desc as float32, doc id
desc) and added to MTEB's scores; a measure without a value on a pool (NaN: SameLangFirst or
Share@10 on one document language) is left out of them (the plugin writes finite numbers only).
The language exposure measures (Share@10, AWRF@10, alpha_nDCG@20, the top-1 split) read the run's
head, which ``evaluation.evaluate_scores`` builds from MTEB's run when they are asked; MLRS@K, which
re-scores passages with the retriever, is refused. multi-1 exclusions: the model is wrapped in a
search wrapper that drops each query's excluded documents from MTEB's run before MTEB or clirbench
scores it, so MTEB's own scores are right for multi-1 too.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

import numpy as np
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata

from ..collection import Pool
from ..evaluation import evaluate_scores
from ..measures import DEFAULT_MEASURES, parse
from ..tasks import get_task
from ..util.errors import ClirbenchError
from .names import mteb_language, score_key, subset_name, task_name

__all__ = ["ClirbenchRetrievalTask", "get_tasks", "make_task", "pool_scores", "SPLIT", "TASK_METADATA_DEFAULTS"]

SPLIT = "test"
_LICENSES = {"cc-by-sa-4.0", "cc-by-4.0", "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "mit", "apache-2.0"}

TASK_METADATA_DEFAULTS: dict[str, Any] = dict(
    type="Retrieval", category="t2t", modalities=["text"], eval_splits=[SPLIT], date=None,
    domains=None, task_subtypes=None, annotations_creators="derived", dialect=None,
    sample_creation="found",
)


def pool_scores(pool: Pool, run: Mapping[str, Mapping[str, float]], measures):
    """(RankTable, per-query {name: vector}, {name: value}) of ``pool`` from an MTEB run.

    A value is the mean over the queries where the measure is defined (``of_mean`` measures: the
    function of that mean), as in clirbench's result records; missing documents rank last.
    """

    evaluation = evaluate_scores(run, pool, measures, resamples=0)
    values = {str(m): evaluation.summary[str(m)].value for m in measures}
    return evaluation.table, evaluation.per_query, values


class _ExcludingSearch:
    """Search wrapper that removes each query's excluded documents (multi-1) from the run."""

    def __init__(self, inner, exclusions: Mapping[str, frozenset[str]]) -> None:
        self.inner = inner
        self.exclusions = exclusions
        self.mteb_model_meta = inner.mteb_model_meta

    def index(self, corpus, **kwargs):
        return self.inner.index(corpus, **kwargs)

    def search(self, queries, **kwargs):
        from mteb.models import SearchEncoderWrapper

        if not isinstance(self.inner, SearchEncoderWrapper):
            kwargs.pop("timer", None)
        run = self.inner.search(queries, **kwargs)
        for qid, excluded in self.exclusions.items():
            hits = run.get(qid)
            if hits:
                for d in excluded:
                    hits.pop(d, None)
        return run


def _search_model(model):
    from mteb.models import (
        CrossEncoderProtocol,
        EncoderProtocol,
        SearchCrossEncoderWrapper,
        SearchEncoderWrapper,
        SearchProtocol,
    )

    if isinstance(model, EncoderProtocol) and not isinstance(model, SearchProtocol):
        return SearchEncoderWrapper(model)
    if isinstance(model, CrossEncoderProtocol):
        return SearchCrossEncoderWrapper(model)
    return model


class ClirbenchRetrievalTask(AbsTaskRetrieval):
    """Base class; ``make_task`` builds one subclass per (task, subset, scenario, pool mode)."""

    pools: Mapping[str, Pool] = {}  # MTEB subset -> pool
    measures: tuple = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # MTEB ranks the whole pool: every document gets a score (exact ranks at any depth)
        self._top_k = max([max(self.k_values)] + [len(p.docs) for p in self.pools.values()])
        # (subset, split) -> (RankTable, per-query vectors) of the last evaluation, for to_results
        self.per_query: dict[tuple[str, str], tuple[Any, dict[str, np.ndarray]]] = {}

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        from datasets import Dataset

        self.dataset = {}
        for subset, pool in self.pools.items():
            self.dataset[subset] = {SPLIT: {
                "corpus": Dataset.from_dict({"id": [d.id for d in pool.docs], "text": [d.text for d in pool.docs]}),
                "queries": Dataset.from_dict({"id": [q.id for q in pool.queries],
                                              "text": [q.text for q in pool.queries]}),
                "relevant_docs": {q: dict(rel) for q, rel in pool.qrels.items()},
                "top_ranked": None,
            }}
        self.data_loaded = True

    def _evaluate_subset(self, model, data_split, *, hf_subset: str, **kwargs: Any):
        pool = self.pools[hf_subset]
        if pool.exclusions:
            model = _ExcludingSearch(_search_model(model), pool.exclusions)
        return super()._evaluate_subset(model, data_split, hf_subset=hf_subset, **kwargs)

    def task_specific_scores(self, scores, qrels, results, hf_split: str, hf_subset: str) -> dict[str, float]:
        """clirbench's measures from MTEB's run, with clirbench's tie rule (per-query values kept)."""
        pool = self.pools[hf_subset]
        table, per_query, values = pool_scores(pool, results, self.measures)
        self.per_query[(hf_subset, hf_split)] = (table, per_query)
        out = {score_key(name): v for name, v in values.items() if np.isfinite(v)}
        out["clirbench_num_queries"] = len(table.query_ids)
        out["clirbench_pool_size"] = len(pool.docs)
        return out


def _main_score(scenario: str, card, measures) -> str:
    names = list(card.main_measures.get(scenario, ())) + [str(m) for m in measures]

    for name in names:
        m = parse(name)
        if m.higher_is_better and m in measures:
            return score_key(m)
    raise ClirbenchError(f"no higher-is-better measure among {names} for MTEB's main score")


def _reference(card) -> str | None:
    """The card's homepage or paper when it is a web address (MTEB wants a URL or nothing)."""
    for key in ("homepage", "paper"):
        url = card.source.get(key)
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            return url
    return None


def _dataset(card, source: Mapping[str, Any]) -> dict[str, str]:
    """MTEB's ``dataset``: the hub id and its revision, or the local origin and a hash of its files.

    Informational (the task loads its pools itself); for local data the revision is the first 16 hex
    digits of the SHA-256 of the files' hashes, so a changed file changes it; ``unpinned`` otherwise.
    """

    origin = str(source.get("origin") or card.source.get("hub") or card.id)
    path = origin[len("hub:"):] if origin.startswith("hub:") else origin
    files = source.get("files_sha256") or {}
    if source.get("revision"):
        revision = str(source["revision"])
    elif files:
        revision = hashlib.sha256(json.dumps(dict(files), sort_keys=True).encode()).hexdigest()[:16]
    else:
        revision = "unpinned"
    return {"path": path, "revision": revision}


def _eval_langs(card, by_subset: Mapping[str, Pool]) -> dict[str, list[str]]:
    """subset -> [query language, *document languages] in MTEB's codes; one line if one has none."""
    try:
        return {s: [mteb_language(p.query_lang)] + [mteb_language(l) for l in p.doc_langs]
                for s, p in by_subset.items()}
    except ValueError as exc:
        raise ClirbenchError(f"task {card.id}: {exc}") from None


def make_task(card, scenario: str, pool_mode: str, subset: str, pools: Sequence[Pool], measures) -> ClirbenchRetrievalTask:
    """An instance of a new AbsTaskRetrieval subclass holding ``pools`` (all of one scenario and mode)."""
    by_subset = {subset_name(p.doc_langs, p.query_lang): p for p in pools}
    if len(by_subset) != len(pools):
        raise ClirbenchError("two pools map to the same MTEB subset")
    first = pools[0]
    source = first.source or {}
    license_ = str(card.license).lower()
    metadata = TaskMetadata(
        name=task_name(card.id, scenario, pool_mode, subset),
        description=f"{card.name} (clirbench), scenario {scenario}, pool mode {pool_mode}"
                    + (f", subset {subset}" if subset else "") + ". " + " ".join(card.description.split()),
        reference=_reference(card),
        dataset=_dataset(card, source),
        eval_langs=_eval_langs(card, by_subset),
        main_score=_main_score(scenario, card, measures),
        license=license_ if license_ in _LICENSES else "not specified",
        bibtex_citation=card.citation or "",
        **TASK_METADATA_DEFAULTS,
    )
    cls = type(f"Clirbench_{card.id}_{scenario}_{pool_mode}_{subset}".replace("-", "_"),
               (ClirbenchRetrievalTask,),
               {"metadata": metadata, "pools": dict(by_subset), "measures": tuple(measures),
                "__module__": __name__})
    return cls()


def get_tasks(tasks: str | Sequence[str], langs=None, scenarios="all", query_langs=None,
              pool_mode: str = "unique", data_dir=None, measures: Sequence[str] | None = None,
              **task_options) -> list[ClirbenchRetrievalTask]:
    """See ``clirbench.mteb.get_tasks``."""

    measure_objs = tuple(parse(m) for m in measures) if measures else DEFAULT_MEASURES
    rescoring = [str(m) for m in measure_objs if m.family == "MLRS"]
    if rescoring:  # the evaluator sees MTEB's run only, never the retriever
        raise ClirbenchError(f"{', '.join(rescoring)}: MLRS re-scores each passage's version in another language "
                             f"with the retriever; MTEB gives clirbench a run only (use clirbench run --measures)")
    out = []
    for tid in [tasks] if isinstance(tasks, str) else list(tasks):
        task = get_task(tid)
        pools = task.pools(langs, scenarios, query_langs, pool_mode, data_dir, **task_options)
        groups: dict[tuple[str, str, str], list[Pool]] = {}
        for p in pools:
            groups.setdefault((p.subset, p.scenario, p.pool_mode), []).append(p)
        for (subset, scenario, mode), group in groups.items():
            out.append(make_task(task.card, scenario, mode, subset, group, measure_objs))
    return out
