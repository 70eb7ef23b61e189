"""Result records (docs/results.md): the typed, validated record of one evaluated pool.

Over 500 lines because it is the whole record schema (docs/results.md), every section's dataclass
with its strict reader, kept together so that the schema has one home.

``Result.from_dict`` validates strictly and names the first bad key; records are frozen (nested
mappings read-only). Files live in ``results.files``; hardware is probed by ``results.hardware``.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import os
import platform
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import numpy as np

from .. import __version__
from ..identity import PoolKey, SystemKey
from ..util.checks import check_int, check_resamples, check_seed
from ..util.strict import json_kind
from .cost import Cost, cpu_name
from .saved_run import RunFile

__all__ = ["SCHEMA_VERSION", "TaskRef", "RetrieverRef", "MeasureValue", "BootstrapSettings", "Timings",
           "Hardware", "Cost", "Result", "PREFERENCE_PARTS", "check_preference"]

SCHEMA_VERSION = 1
MAX_CORES = 1 << 20  # hardware.cores above this is not a machine
_MISSING = object()

# ---------------------------------------------------------------------------------------------
# small helpers: freezing and checked reads


def _freeze(value: Any) -> Any:
    """Deep read-only copy: dicts become MappingProxyType, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _thaw(value: Any) -> Any:
    """Plain JSON-able copy of a frozen value (NaN floats become None)."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _type_name(types: tuple) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


def _get(data: Mapping, key: str, types: tuple, where: str, default: Any = _MISSING) -> Any:
    if key not in data:
        if default is _MISSING:
            raise ValueError(f"missing key {where}{key}")
        return default
    value = data[key]
    # bool is an int subclass: accept it only where bool is asked for
    if isinstance(value, bool) and bool not in types:
        raise ValueError(f"{where}{key} must be {_type_name(types)}, got {value!r}")
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, types):
        raise ValueError(f"{where}{key} must be {_type_name(types)}, got {type(value).__name__}")
    return value


def _section(data: Mapping, key: str, where: str = "") -> Mapping:
    return _get(data, key, (Mapping,), where)


def _no_extra(data: Mapping, known: Iterable[str], where: str) -> None:
    extra = sorted(set(data) - set(known))
    if extra:
        raise ValueError(f"unknown key(s) {', '.join(where + k for k in extra)}")


def _float_or_nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


# ---------------------------------------------------------------------------------------------
# the record


@dataclass(frozen=True)
class TaskRef:
    """Which data: task id, dataset source and revision, optional per-file SHA-256."""

    id: str
    source: str
    revision: str | None = None
    files_sha256: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.files_sha256 is not None:
            object.__setattr__(self, "files_sha256", _freeze(self.files_sha256))

    def to_dict(self) -> dict:
        out = {"id": self.id, "source": self.source, "revision": self.revision}
        if self.files_sha256 is not None:
            out["files_sha256"] = _thaw(self.files_sha256)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "TaskRef":
        w = "task."
        _no_extra(data, ("id", "source", "revision", "files_sha256"), w)
        files = _get(data, "files_sha256", (Mapping, type(None)), w, None)
        if files is not None and not all(isinstance(v, str) for v in files.values()):
            raise ValueError("task.files_sha256 values must be strings")
        return cls(_get(data, "id", (str,), w), _get(data, "source", (str,), w),
                   _get(data, "revision", (str, type(None)), w, None), files)


@dataclass(frozen=True)
class RetrieverRef:
    """Which system: spec string, model id and revision, prompts, free-form settings.

    On disk the settings sit beside the fixed keys in the ``retriever`` object.
    """

    spec: str
    model_id: str | None = None
    revision: str | None = None
    prompts: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    _FIXED = ("spec", "model_id", "revision", "prompts")

    def __post_init__(self) -> None:
        clash = sorted(set(self.settings) & set(self._FIXED))
        if clash:
            raise ValueError(f"retriever settings may not use the reserved key(s) {', '.join(clash)}")
        object.__setattr__(self, "prompts", _freeze(self.prompts))
        object.__setattr__(self, "settings", _freeze(self.settings))

    @classmethod
    def described(cls, spec: str, description: Mapping, ranking: Mapping | None = None) -> "RetrieverRef":
        """The ref of a retriever from its ``describe()``: model id, revision and prompts taken out,
        the rest its settings, with ``ranking`` (how the ranks were obtained; None: full rows)."""
        desc = dict(description)
        return cls(spec=spec, model_id=desc.pop("model_id", None), revision=desc.pop("revision", None),
                   prompts=desc.pop("prompts", {}) or {},
                   settings={**{k: v for k, v in desc.items() if k != "spec"}, **({"ranking": ranking} if ranking else {})})

    def to_dict(self) -> dict:
        return {"spec": self.spec, "model_id": self.model_id, "revision": self.revision,
                "prompts": _thaw(self.prompts), **_thaw(self.settings)}

    @classmethod
    def from_dict(cls, data: Mapping) -> "RetrieverRef":
        w = "retriever."
        prompts = _get(data, "prompts", (Mapping,), w, {})
        for role, text in prompts.items():
            if not isinstance(text, (str, type(None))):
                raise ValueError(f"retriever.prompts.{role} must be a string or null")
        spec = _get(data, "spec", (str,), w)
        if not spec.strip():
            raise ValueError("retriever.spec must be a non-empty string")
        return cls(spec, _get(data, "model_id", (str, type(None)), w, None),
                   _get(data, "revision", (str, type(None)), w, None), prompts,
                   {k: v for k, v in data.items() if k not in cls._FIXED})


@dataclass(frozen=True)
class MeasureValue:
    """A reported measure: value (mean, or a function of it), percentile CI, queries it is over."""

    value: float
    ci_low: float
    ci_high: float
    n: int

    def to_dict(self) -> dict:
        return _thaw({"value": float(self.value), "ci_low": float(self.ci_low),
                      "ci_high": float(self.ci_high), "n": int(self.n)})

    @classmethod
    def from_dict(cls, data: Mapping, name: str = "?", where: str | None = None) -> "MeasureValue":
        w = where or f"measures.{name}."
        _no_extra(data, ("value", "ci_low", "ci_high", "n"), w)
        nums = [_float_or_nan(_get(data, k, (float, type(None)), w)) for k in ("value", "ci_low", "ci_high")]
        n = _get(data, "n", (int,), w)
        if n < 0:
            raise ValueError(f"{w}n must be >= 0, got {n}")
        return cls(*nums, n)


@dataclass(frozen=True)
class BootstrapSettings:
    resamples: int = 1000
    seed: int = 42
    confidence: float = 0.95
    method: str = "percentile"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "BootstrapSettings":
        w = "bootstrap."
        _no_extra(data, ("resamples", "seed", "confidence", "method"), w)

        resamples = check_resamples(_get(data, "resamples", (int,), w, 1000), w + "resamples")
        seed = check_seed(_get(data, "seed", (int,), w, 42), w + "seed")
        confidence = _get(data, "confidence", (float,), w, 0.95)
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"{w}confidence must be in (0, 1), got {confidence!r}")
        method = _get(data, "method", (str,), w, "percentile")
        if method != "percentile":
            raise ValueError(f"{w}method must be 'percentile', got {method!r}")
        return cls(resamples, seed, confidence, method)


@dataclass(frozen=True)
class Timings:
    """Wall-clock seconds per stage."""

    encode: float = 0.0
    translate: float = 0.0
    search: float = 0.0
    measure: float = 0.0
    total: float = 0.0

    def to_dict(self) -> dict:
        return {k: float(v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping) -> "Timings":
        w = "timings_s."
        names = [f.name for f in dataclasses.fields(cls)]
        _no_extra(data, names, w)
        values = [_get(data, k, (float,), w, 0.0) for k in names]
        for k, v in zip(names, values):
            if not (math.isfinite(v) and v >= 0.0):
                raise ValueError(f"{w}{k} must be a finite number of seconds >= 0, got {v!r}")
        return cls(*values)


@dataclass(frozen=True)
class Hardware:
    platform: str
    python: str
    cpu: str
    cores: int
    gpu: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "Hardware":
        w = "hardware."
        _no_extra(data, ("platform", "python", "cpu", "cores", "gpu"), w)

        texts = [_get(data, k, (str,), w) for k in ("platform", "python", "cpu")]
        for k, v in zip(("platform", "python", "cpu"), texts):
            if not v.strip():
                raise ValueError(f"{w}{k} must be a non-empty string")
        cores = check_int(_get(data, "cores", (int,), w), w + "cores", 1, MAX_CORES)
        return cls(*texts, cores, _get(data, "gpu", (str, type(None)), w, None))

    @classmethod
    def this_machine(cls, gpu: str | None = None) -> "Hardware":
        """This machine's platform, Python, CPU and cores; ``gpu`` as given (nothing is probed for it:
        ``results.hardware.hardware_info`` does that, once per run)."""
        return cls(platform=platform.platform(), python=platform.python_version(), cpu=cpu_name(),
                   cores=os.cpu_count() or 1, gpu=gpu)


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


_COERCE = {"task": TaskRef, "retriever": RetrieverRef, "bootstrap": BootstrapSettings,
           "timings_s": Timings, "hardware": Hardware}


@dataclass(frozen=True)
class Result:
    """One evaluated pool (docs/results.md). Nested parts may be given as dicts; they are validated."""

    task: TaskRef
    qrels_sha256: str
    scenario: str
    pool_mode: str
    pool_size: int  # |D| before per-query exclusions
    doc_langs: tuple[str, ...]
    query_lang: str
    num_queries: int
    retriever: RetrieverRef
    measures: Mapping[str, MeasureValue]
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)
    timings_s: Timings = field(default_factory=Timings)
    hardware: Hardware | None = None  # None: Hardware.this_machine(), without a GPU name
    translation: Mapping[str, Any] | None = None
    subset: str = ""  # a data set or locale inside the task ("" when the task has one)
    created_at: str = field(default_factory=_utc_now)
    per_query_file: str = ""
    # optional: {field: {group: {"n": queries, measure: mean}}}, e.g. CLIRudit by discipline
    breakdown: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None
    # optional (multi pools): this query language's row of the language-preference matrix,
    # {"mean_rank": {doc lang: MeasureValue}, "best_share": {doc lang: MeasureValue}} (stats.preference)
    preference: Mapping[str, Mapping[str, MeasureValue]] | None = None
    cost: Cost | None = None  # optional: the system's cold cost on this pool (results/cost.py)
    # optional: the % of relevant judgements whose rank a tie decided (rank.table.RankTable.tie_share)
    tie_share: float | None = None
    run: RunFile | None = None  # optional: the saved run beside the record (results/saved_run.py, --save-run)
    clirbench_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        for name, cls in _COERCE.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, cls.from_dict(value))
        if self.hardware is None:
            object.__setattr__(self, "hardware", Hardware.this_machine())
        measures = {}
        for name, mv in self.measures.items():
            measures[str(name)] = MeasureValue.from_dict(mv, str(name)) if isinstance(mv, Mapping) else mv
        object.__setattr__(self, "measures", MappingProxyType(measures))
        object.__setattr__(self, "doc_langs", tuple(self.doc_langs))
        if self.translation is not None:
            object.__setattr__(self, "translation", _freeze(self.translation))
        if self.breakdown is not None:
            object.__setattr__(self, "breakdown", _check_breakdown(self.breakdown))
        for name, cls in (("cost", Cost), ("run", RunFile)):
            object.__setattr__(self, name, _optional_part(name, cls, getattr(self, name)))
        for name, cls in (*_COERCE.items(), ("hardware", Hardware)):
            if not isinstance(getattr(self, name), cls):
                raise ValueError(f"{name} must be a {cls.__name__} or a dict")
        for name in ("pool_size", "num_queries", "schema_version"):
            object.__setattr__(self, name, _count(name, getattr(self, name)))
        if not self.doc_langs or not all(isinstance(l, str) and l for l in self.doc_langs):
            raise ValueError(f"doc_langs must be non-empty language tags, got {self.doc_langs!r}")
        if not all(isinstance(mv, MeasureValue) for mv in self.measures.values()):
            raise ValueError("measures must map names to MeasureValue or dicts")
        if self.preference is not None:
            object.__setattr__(self, "preference", check_preference(self.preference, self.doc_langs,
                                                                    self.pool_size))
        object.__setattr__(self, "tie_share", _percentage("tie_share", self.tie_share))

    @classmethod
    def of(cls, pool, retriever: RetrieverRef, measures: Mapping, num_queries: int, *, resamples: int, seed: int,
           hardware: Hardware | None, **parts) -> "Result":
        """The record of ``pool`` (a ``collection.Pool``): its task, data source, qrels hash, languages
        and size from the pool; the system, the measures, the bootstrap and the optional ``parts``
        (``timings_s``, ``translation``, ``breakdown``, ``preference``, ``cost``) as given. The one
        builder of a pool's record: the runner and the MTEB conversion call it."""
        source = pool.source
        return cls(task=TaskRef(id=pool.task, source=str(source.get("origin")), revision=source.get("revision"),
                                files_sha256=source.get("files_sha256") or None),
                   subset=pool.subset, qrels_sha256=pool.qrels_hash(), scenario=pool.scenario,
                   pool_mode=pool.pool_mode, pool_size=len(pool.docs), doc_langs=pool.doc_langs,
                   query_lang=pool.query_lang, num_queries=num_queries, retriever=retriever, measures=measures,
                   bootstrap=BootstrapSettings(resamples=resamples, seed=seed), hardware=hardware, **parts)

    def to_dict(self) -> dict:
        """JSON-able dict in the on-disk key order (NaN written as null)."""
        return {
            "schema_version": self.schema_version,
            "clirbench_version": self.clirbench_version,
            "task": self.task.to_dict(),
            "subset": self.subset,
            "qrels_sha256": self.qrels_sha256,
            "scenario": self.scenario,
            "pool_mode": self.pool_mode,
            "pool_size": self.pool_size,
            "doc_langs": list(self.doc_langs),
            "query_lang": self.query_lang,
            "num_queries": self.num_queries,
            "retriever": self.retriever.to_dict(),
            "translation": None if self.translation is None else _thaw(self.translation),
            "measures": {k: v.to_dict() for k, v in self.measures.items()},
            "bootstrap": self.bootstrap.to_dict(),
            "timings_s": self.timings_s.to_dict(),
            "hardware": self.hardware.to_dict(),
            "created_at": self.created_at,
            "per_query_file": self.per_query_file,
            **({} if self.breakdown is None else {"breakdown": _thaw(self.breakdown)}),
            **({} if self.preference is None else {"preference": {
                part: {lang: mv.to_dict() for lang, mv in row.items()} for part, row in self.preference.items()}}),
            **({} if self.cost is None else {"cost": self.cost.to_dict()}),
            **({} if self.tie_share is None else {"tie_share": float(self.tie_share)}),
            **({} if self.run is None else {"run": self.run.to_dict()}),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "Result":
        """Validate and build; raises ValueError naming the first bad key."""
        if not isinstance(data, Mapping):
            raise ValueError(f"not a result record: {json_kind(data)}, expected a JSON object")
        version = _get(data, "schema_version", (int,), "")
        if version > SCHEMA_VERSION:
            raise ValueError(f"schema_version {version} is newer than this clirbench reads ({SCHEMA_VERSION}); upgrade clirbench")
        if version < 1:
            raise ValueError(f"schema_version must be >= 1, got {version}")
        known = ("schema_version", "clirbench_version", "task", "subset", "qrels_sha256", "scenario", "pool_mode",
                 "pool_size", "doc_langs", "query_lang", "num_queries", "retriever", "translation",
                 "measures", "bootstrap", "timings_s", "hardware", "created_at", "per_query_file", "breakdown",
                 "preference", "cost", "tie_share", "run")
        _no_extra(data, known, "")
        doc_langs = _get(data, "doc_langs", (list,), "")
        if not all(isinstance(l, str) for l in doc_langs):
            raise ValueError("doc_langs must be a list of strings")
        measures = _section(data, "measures")
        created = _get(data, "created_at", (str,), "")
        try:
            _dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"created_at is not an ISO timestamp: {created!r}") from None
        return cls(
            task=TaskRef.from_dict(_section(data, "task")),
            subset=_get(data, "subset", (str,), "", ""),
            qrels_sha256=_get(data, "qrels_sha256", (str,), ""),
            scenario=_get(data, "scenario", (str,), ""),
            pool_mode=_get(data, "pool_mode", (str,), ""),
            pool_size=_get(data, "pool_size", (int,), ""),
            doc_langs=tuple(doc_langs),
            query_lang=_get(data, "query_lang", (str,), ""),
            num_queries=_get(data, "num_queries", (int,), ""),
            retriever=RetrieverRef.from_dict(_section(data, "retriever")),
            measures={str(k): MeasureValue.from_dict(_get(measures, k, (Mapping,), "measures."), k)
                      for k in measures},
            bootstrap=BootstrapSettings.from_dict(_section(data, "bootstrap")),
            timings_s=Timings.from_dict(_section(data, "timings_s")),
            hardware=Hardware.from_dict(_section(data, "hardware")),
            translation=_get(data, "translation", (Mapping, type(None)), "", None),
            created_at=created,
            per_query_file=_get(data, "per_query_file", (str,), ""),
            breakdown=_get(data, "breakdown", (Mapping, type(None)), "", None),
            preference=_get(data, "preference", (Mapping, type(None)), "", None),
            cost=_cost(data),
            tie_share=_get(data, "tie_share", (float, type(None)), "", None),
            run=_get(data, "run", (Mapping, type(None)), "", None),
            clirbench_version=_get(data, "clirbench_version", (str,), ""),
            schema_version=version,
        )

    @property
    def pool_key(self):
        """What must match for two results to be compared query by query (``identity.PoolKey``)."""

        return PoolKey.of(self)

    @property
    def system_key(self):
        """The system this result is of (``identity.SystemKey``)."""

        return SystemKey.of_record(self)


def _optional_part(name: str, cls: type, value: Any) -> Any:
    """An optional section (``cost``, ``run``): None, a ``cls``, or its dict read by ``cls.from_dict``."""
    if isinstance(value, Mapping):
        value = cls.from_dict(value)
    if value is not None and not isinstance(value, cls):
        raise ValueError(f"{name} must be a {cls.__name__}, a dict or None")
    return value


def _count(name: str, value: Any) -> int:
    """``value`` as a plain int, refused unless a non-negative integer (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def _percentage(name: str, value: Any) -> float | None:
    """``value`` as a float, refused unless a number in [0, 100] (a bool is not one); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0 <= value <= 100:
        raise ValueError(f"{name} must be a percentage in [0, 100], got {value!r}")
    return float(value)


def _cost(data: Mapping) -> Cost | None:
    """The optional ``cost`` section, validated (absent or null: None)."""
    value = _get(data, "cost", (Mapping, type(None)), "", None)
    return None if value is None else Cost.from_dict(value)


def _check_breakdown(value: Mapping) -> Mapping:
    """Validate ``{field: {group: {"n": int, measure: float or None}}}`` and freeze it."""
    for fld, groups in value.items():
        if not isinstance(groups, Mapping):
            raise ValueError(f"breakdown.{fld} must be an object of groups")
        for group, cell in groups.items():
            if not isinstance(cell, Mapping) or not isinstance(cell.get("n"), int) or isinstance(cell.get("n"), bool):
                raise ValueError(f"breakdown.{fld}.{group} must be an object with an integer n")
            for name, v in cell.items():
                if name != "n" and v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise ValueError(f"breakdown.{fld}.{group}.{name} must be a number or null")
    return _freeze({f: {g: {k: (float(v) if k != "n" and v is not None else v) for k, v in c.items()}
                        for g, c in gs.items()} for f, gs in value.items()})


#: the parts of a preference row: mean rank of the relevant passage per document language, and the
#: percentage of queries whose best-ranked relevant passage is in that language (stats.preference)
PREFERENCE_PARTS = ("mean_rank", "best_share")
#: optional parts: the percentage of queries whose passage in that language a tie ranked, the mean
#: percentage of the top 10 in that language (Share@10(L)) and MLRS@K toward that language (when asked)
PREFERENCE_OPTIONAL = ("tie_share", "top10_share", "mlrs")


def check_preference(value: Mapping, doc_langs, pool_size: int) -> Mapping:
    """Validate a preference row and freeze it: the parts ``mean_rank`` and ``best_share`` (and the
    optional ``PREFERENCE_OPTIONAL``), each with exactly the pool's document languages, each cell a
    ``MeasureValue`` (or its dict) within range (a rank in [1, pool size], a share in [0, 100], ci_low <= ci_high)."""
    if not isinstance(value, Mapping):
        raise ValueError("preference must be an object")
    if len(set(doc_langs)) != len(doc_langs):
        raise ValueError(f"doc_langs must be distinct languages to hold a preference row, got {list(doc_langs)}")
    _no_extra(value, PREFERENCE_PARTS + PREFERENCE_OPTIONAL, "preference.")
    out = {}
    for part in PREFERENCE_PARTS + tuple(p for p in PREFERENCE_OPTIONAL if p in value):
        row = _get(value, part, (Mapping,), "preference.")
        if set(row) != set(doc_langs):
            raise ValueError(f"preference.{part} must have one cell per document language "
                             f"({', '.join(doc_langs)}), got {', '.join(map(str, row)) or 'none'}")
        # a pool size below 1 is the record's own error (reported by its checks), not the row's
        low, high = (1.0, float(pool_size) if pool_size >= 1 else math.inf) if part == "mean_rank" else (0.0, 100.0)
        cells = {}
        for lang in doc_langs:
            mv = row[lang]
            mv = MeasureValue.from_dict(mv, where=f"preference.{part}.{lang}.") if isinstance(mv, Mapping) else mv
            if not isinstance(mv, MeasureValue):
                raise ValueError(f"preference.{part}.{lang} must be an object with value, ci_low, ci_high, n")
            nums = [x for x in (mv.value, mv.ci_low, mv.ci_high) if not math.isnan(x)]
            if any(not low - 1e-6 <= x <= high + 1e-6 for x in nums):
                raise ValueError(f"preference.{part}.{lang} out of range [{low:g}, {high:g}]")
            if not math.isnan(mv.ci_low) and not math.isnan(mv.ci_high) and mv.ci_low > mv.ci_high + 1e-6:
                raise ValueError(f"preference.{part}.{lang}: ci_low above ci_high")
            cells[str(lang)] = mv
        out[part] = MappingProxyType(cells)
    return MappingProxyType(out)
