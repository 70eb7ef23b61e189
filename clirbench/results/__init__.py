"""Result records (DESIGN §6): one JSON per evaluated pool, per-query values in a TSV beside it.

A result ``<stem>.json`` names its per-query table ``<stem>.perquery.tsv`` (header
``query_id<TAB><measure>…``, one row per query, floats as Python ``repr``, NaN as ``nan``).
Both are written atomically; the table first, so a JSON on disk always has its table.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .. import __version__
from ..atomic import write_text_atomic
from ..errors import DataNotFoundError, MalformedDataError

__all__ = [
    "SCHEMA_VERSION", "TaskRef", "RetrieverRef", "MeasureValue", "BootstrapSettings", "Timings",
    "Hardware", "Result", "PerQuery", "summarise", "write_result", "read_result", "read_per_query",
    "hardware_info", "result_path", "per_query_name", "breakdown", "add_breakdown",
]

SCHEMA_VERSION = 1
MAX_CORES = 1 << 20  # hardware.cores above this is not a machine
_PER_QUERY_SUFFIX = ".perquery.tsv"
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
    def from_dict(cls, data: Mapping, name: str = "?") -> "MeasureValue":
        w = f"measures.{name}."
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
        from ..checks import check_resamples, check_seed

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
        from ..checks import check_int

        texts = [_get(data, k, (str,), w) for k in ("platform", "python", "cpu")]
        for k, v in zip(("platform", "python", "cpu"), texts):
            if not v.strip():
                raise ValueError(f"{w}{k} must be a non-empty string")
        cores = check_int(_get(data, "cores", (int,), w), w + "cores", 1, MAX_CORES)
        return cls(*texts, cores, _get(data, "gpu", (str, type(None)), w, None))


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


_COERCE = {"task": TaskRef, "retriever": RetrieverRef, "bootstrap": BootstrapSettings,
           "timings_s": Timings, "hardware": Hardware}


@dataclass(frozen=True)
class Result:
    """One evaluated pool (DESIGN §6). Nested parts may be given as dicts; they are validated."""

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
    hardware: Hardware | None = None  # None: filled from hardware_info()
    translation: Mapping[str, Any] | None = None
    subset: str = ""  # a data set or locale inside the task ("" when the task has one)
    created_at: str = field(default_factory=_utc_now)
    per_query_file: str = ""
    # optional: {field: {group: {"n": queries, measure: mean}}}, e.g. CLIRudit by discipline
    breakdown: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None
    clirbench_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        for name, cls in _COERCE.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, cls.from_dict(value))
        if self.hardware is None:
            object.__setattr__(self, "hardware", hardware_info())
        measures = {}
        for name, mv in self.measures.items():
            measures[str(name)] = MeasureValue.from_dict(mv, str(name)) if isinstance(mv, Mapping) else mv
        object.__setattr__(self, "measures", MappingProxyType(measures))
        object.__setattr__(self, "doc_langs", tuple(self.doc_langs))
        if self.translation is not None:
            object.__setattr__(self, "translation", _freeze(self.translation))
        if self.breakdown is not None:
            object.__setattr__(self, "breakdown", _check_breakdown(self.breakdown))
        for name, cls in (*_COERCE.items(), ("hardware", Hardware)):
            if not isinstance(getattr(self, name), cls):
                raise ValueError(f"{name} must be a {cls.__name__} or a dict")
        for name in ("pool_size", "num_queries", "schema_version"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
            object.__setattr__(self, name, int(value))
        if not self.doc_langs or not all(isinstance(l, str) and l for l in self.doc_langs):
            raise ValueError(f"doc_langs must be non-empty language tags, got {self.doc_langs!r}")
        if not all(isinstance(mv, MeasureValue) for mv in self.measures.values()):
            raise ValueError("measures must map names to MeasureValue or dicts")

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
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "Result":
        """Validate and build; raises ValueError naming the first bad key."""
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        version = _get(data, "schema_version", (int,), "")
        if version > SCHEMA_VERSION:
            raise ValueError(f"schema_version {version} is newer than this clirbench reads ({SCHEMA_VERSION}); upgrade clirbench")
        if version < 1:
            raise ValueError(f"schema_version must be >= 1, got {version}")
        known = ("schema_version", "clirbench_version", "task", "subset", "qrels_sha256", "scenario", "pool_mode",
                 "pool_size", "doc_langs", "query_lang", "num_queries", "retriever", "translation",
                 "measures", "bootstrap", "timings_s", "hardware", "created_at", "per_query_file", "breakdown")
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
            clirbench_version=_get(data, "clirbench_version", (str,), ""),
            schema_version=version,
        )

    @property
    def pool_key(self) -> tuple:
        """What must match for two results to be compared query by query."""
        return (self.task.id, self.subset, self.scenario, self.pool_mode, self.doc_langs, self.query_lang,
                self.qrels_sha256)


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


def breakdown(query_ids: Sequence[str], values: Mapping[str, np.ndarray],
              groups: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float | int | None]]:
    """Per group: ``n`` (queries in it) and each measure's mean over them (NaN values left out).

    ``groups[qid]`` lists a query's groups (a query may be in several); queries without one are
    left out of every group.
    """
    members: dict[str, list[int]] = {}
    for i, qid in enumerate(query_ids):
        for g in groups.get(qid, ()):
            members.setdefault(str(g), []).append(i)
    out: dict[str, dict[str, float | int | None]] = {}
    for g in sorted(members):
        idx = np.asarray(members[g])
        cell: dict[str, float | int | None] = {"n": int(len(idx))}
        for name, vec in values.items():
            col = np.asarray(vec, dtype=np.float64)[idx]
            col = col[~np.isnan(col)]
            cell[name] = float(col.mean()) if len(col) else None
        out[g] = cell
    return out


def add_breakdown(path: str | os.PathLike, field: str, groups: Mapping[str, Sequence[str]]) -> dict:
    """Compute the breakdown of the result at ``path`` from its per-query table; rewrite it atomically."""
    result = read_result(path)
    per_query = read_per_query(path)
    table = breakdown(per_query.query_ids, per_query.values, groups)
    merged = {**_thaw(result.breakdown or {}), field: table}
    updated = dataclasses.replace(result, breakdown=merged)
    body = json.dumps(updated.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomic(path, body)
    return table


# ---------------------------------------------------------------------------------------------
# summarising per-query vectors


def summarise(measures: Sequence[Any], per_query: Mapping[str, np.ndarray], resamples: int = 1000,
              seed: int = 42, confidence: float = 0.95,
              transforms: Mapping[str, Callable[[float], float]] | None = None) -> dict[str, MeasureValue]:
    """Per-query vectors -> ``{name: MeasureValue}``, one shared bootstrap for all measures.

    ``measures`` are measure objects or names (``str(m)`` keys ``per_query``). A value is the
    mean over the queries where the measure is defined (not NaN), its CI the percentile
    bootstrap. ``transforms[name]`` (required for measures with ``of_mean = True``) maps a mean
    to the reported value: value = f(mean), CI = f at the bootstrap percentile ends, ordered
    (so a decreasing f swaps them). ``f`` is called on one float at a time.
    """
    from ..stats import bootstrap_means, _percentiles

    transforms = dict(transforms or {})
    names = [str(m) for m in measures]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate measure names in {names}")
    for m, name in zip(measures, names):
        if getattr(m, "of_mean", False) and name not in transforms:
            raise ValueError(f"{name} is reported from the mean of its per-query values: pass transforms[{name!r}]")
    unknown = sorted(set(transforms) - set(names))
    if unknown:
        raise ValueError(f"transforms for measures not summarised: {', '.join(unknown)}")
    missing = [n for n in names if n not in per_query]
    if missing:
        raise ValueError(f"no per-query values for {', '.join(missing)}")
    if not names:
        return {}
    vectors = [np.asarray(per_query[n], dtype=np.float64) for n in names]
    lengths = {v.shape for v in vectors}
    if len(lengths) != 1 or vectors[0].ndim != 1:
        raise ValueError(f"per-query vectors must be 1-D of one length, got shapes {sorted(lengths)}")
    stack = np.stack(vectors, axis=1)
    defined = (~np.isnan(stack)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(defined > 0, np.nansum(stack, axis=0) / np.maximum(defined, 1), np.nan)
    low, high = _percentiles(bootstrap_means(stack, resamples, seed), confidence)
    out: dict[str, MeasureValue] = {}
    for j, name in enumerate(names):
        value, lo, hi = float(means[j]), float(low[j]), float(high[j])
        f = transforms.get(name)
        if f is not None:
            value, lo, hi = (float(f(x)) if not math.isnan(x) else math.nan for x in (value, lo, hi))
            lo, hi = min(lo, hi), max(lo, hi)
        out[name] = MeasureValue(value, lo, hi, int(defined[j]))
    return out


# ---------------------------------------------------------------------------------------------
# files


class PerQuery(NamedTuple):
    """Per-query values: ``query_ids`` and one float64 vector per measure, in that order."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]


def per_query_name(result_file: str | os.PathLike) -> str:
    """``x/en-zh.q-zh.json`` -> ``en-zh.q-zh.perquery.tsv`` (the name, relative to its folder)."""
    name = Path(result_file).name
    stem = name[:-5] if name.endswith(".json") else name
    return stem + _PER_QUERY_SUFFIX


def _bad_field(text: str) -> bool:
    return not text or any(c in text for c in "\t\n\r")


def _per_query_text(per_query) -> tuple[str, int]:
    ids, values = per_query
    ids = [str(q) for q in ids]
    if len(set(ids)) != len(ids):
        raise ValueError("per-query query ids are not unique")
    bad = [q for q in ids if _bad_field(q)]
    if bad:
        raise ValueError(f"query id {bad[0]!r} is empty or contains a tab or newline")
    names = [str(n) for n in values]
    if any(_bad_field(n) or n == "query_id" for n in names):
        raise ValueError(f"bad measure name among {names}")
    cols = [np.asarray(values[n], dtype=np.float64) for n in values]
    for name, col in zip(names, cols):
        if col.shape != (len(ids),):
            raise ValueError(f"per-query {name}: {col.shape} values for {len(ids)} queries")
    rows = np.stack(cols, axis=1).tolist() if cols else [[] for _ in ids]
    lines = ["\t".join(["query_id", *names])]
    lines.extend("\t".join([q, *map(repr, row)]) for q, row in zip(ids, rows))
    return "\n".join(lines) + "\n", len(ids)


def write_result(result: Result, per_query: PerQuery | tuple, path: str | os.PathLike) -> Result:
    """Write ``path`` (JSON) and its per-query table beside it, both atomically.

    ``per_query`` is ``(query_ids, {measure: vector})``. Returns the record as written (with
    ``per_query_file`` set).
    """
    path = Path(path)
    text, rows = _per_query_text(per_query)
    if rows != result.num_queries:
        raise ValueError(f"per-query table has {rows} rows but the result says num_queries={result.num_queries}")
    result = dataclasses.replace(result, per_query_file=per_query_name(path))
    body = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomic(path.parent / result.per_query_file, text)
    write_text_atomic(path, body)
    return result


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def read_result(path: str | os.PathLike) -> Result:
    """Load a result JSON; a malformed file raises MalformedDataError (a ValueError), one line."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataNotFoundError(f"{path}: no such result file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MalformedDataError(f"{path}: cannot read result file: {_one_line(exc)}") from None
    from ..strict import loads_json

    data = loads_json(raw, f"{path}: malformed result file")  # duplicate keys and deep nesting refused
    try:
        return Result.from_dict(data)
    except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise MalformedDataError(f"{path}: malformed result file: {_one_line(exc)}") from None


def read_per_query(path: str | os.PathLike) -> PerQuery:
    """Read a per-query table (or the one named by a result JSON at ``path``)."""
    path = Path(path)
    if path.suffix == ".json":
        result = read_result(path)
        if not result.per_query_file:
            raise MalformedDataError(f"{path}: result names no per-query table")
        path = path.parent / result.per_query_file
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataNotFoundError(f"{path}: no such per-query table") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MalformedDataError(f"{path}: cannot read per-query table: {_one_line(exc)}") from None

    def bad(why: str) -> MalformedDataError:
        return MalformedDataError(f"{path}: malformed per-query table: {why}")

    if not lines or lines[0].split("\t")[0] != "query_id":
        raise bad("the header must start with query_id")
    names = lines[0].split("\t")[1:]
    if len(set(names)) != len(names) or any(not n for n in names):
        raise bad("empty or duplicate measure names in the header")
    ids, cells = [], []
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != len(names) + 1:
            raise bad(f"line {lineno} has {len(parts)} fields, the header {len(names) + 1}")
        ids.append(parts[0])
        cells.append(parts[1:])
    if len(set(ids)) != len(ids):
        raise bad("duplicate query ids")
    try:
        matrix = np.array(cells, dtype=np.float64).reshape(len(ids), len(names))
    except ValueError as exc:
        raise bad(f"a value is not a number ({_one_line(exc)})") from None
    return PerQuery(tuple(ids), {n: matrix[:, j].copy() for j, n in enumerate(names)})


# ---------------------------------------------------------------------------------------------
# where results go, and on what they ran


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _gpu_name() -> str | None:
    torch = sys.modules.get("torch")  # never import torch just to ask
    if torch is not None:
        try:
            if torch.cuda.is_available():
                return str(torch.cuda.get_device_name(0))
        except Exception:  # noqa: BLE001 - a broken CUDA setup is just "no GPU" here
            pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=10, check=True).stdout.strip().splitlines()
            return out[0].strip() if out else None
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def hardware_info() -> Hardware:
    """The machine this process runs on (GPU name or None)."""
    return Hardware(platform=platform.platform(), python=platform.python_version(), cpu=_cpu_name(),
                    cores=os.cpu_count() or 1, gpu=_gpu_name())


_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]")


def _slug(text: str) -> str:
    """Filesystem-safe name: ``dense:intfloat/multilingual-e5-large`` -> ``dense__intfloat__multilingual-e5-large``."""
    slug = _UNSAFE.sub("_", re.sub(r"[:/\\]", "__", str(text)))
    if not slug.strip("."):
        raise ValueError(f"cannot make a file name from {text!r}")
    return "_" + slug if slug.startswith(".") else slug


def result_path(output_dir: str | os.PathLike, retriever_spec: str, task: str, scenario: str,
                pool_mode: str, doc_langs: Sequence[str], query_lang: str, subset: str = "") -> Path:
    """``<out>/<retriever slug>/<task>[/<subset>]/<scenario>/<pool_mode>/<L1>-<L2>.q-<Lq>.json``."""
    if isinstance(doc_langs, str):
        doc_langs = [doc_langs]
    langs = "-".join(_slug(l) for l in doc_langs)
    task_dir = Path(_slug(task)) / _slug(subset) if subset else Path(_slug(task))
    return (Path(output_dir) / _slug(retriever_spec) / task_dir / _slug(scenario) / _slug(pool_mode)
            / f"{langs}.q-{_slug(query_lang)}.json")
