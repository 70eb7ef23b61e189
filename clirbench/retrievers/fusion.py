"""Fusion of two or more retrievers (spec ``fusion:<method>(A, B, ...)``).

Grammar::

    fusion:<method>(<part>, <part>[, ...][; <name>=<value>[, <name>=<value>]])
    <part> := <retriever spec>[@<weight>]

Parts split at top-level commas (inside balanced parentheses commas belong to the part, so fusions
nest); a trailing ``@<number>`` is the part's weight (default 1). Methods:

- ``rrf``: reciprocal rank fusion, fused(d) = sum_i w_i / (k + rank_i(d)); parameter ``k``
  (default 60). rank_i(d) = 1 + the number of pool documents that sub-retriever i scores strictly
  higher (scores compared as float32, as trec_eval does), so documents with equal scores -- copies
  of one text -- share a rank and get equal fused scores, and doc ids do not affect fused scores.
- ``wsum``: weighted sum of per-query normalised scores, fused(d) = sum_i w_i * norm_i(d);
  parameter ``norm`` = ``min-max`` (default; (s - min) / (max - min), 0 when all are equal) or
  ``zscore`` ((s - mean) / std over the pool, 0 when std is 0).

Every sub-retriever scores the whole pool and fusion combines full rows, so the fused ranking of
the whole pool is exact. A document a sub-retriever did not return (-inf, a top-k retriever)
contributes nothing to ``rrf`` and the row's lowest normalised value to ``wsum``; one that no
sub-retriever returned stays -inf. Statistics (ranks, min, max, mean, std) are over the pool the
retriever is given: multi-1 exclusions are applied afterwards by the ranking.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from ..cache.cost import fuse_reports
from ..collection import Text
from ..util.errors import ClirbenchError
from .spec import canonical_family, make_retriever, spec_params

__all__ = ["FusionSpec", "parse_fusion", "FusionRetriever", "from_spec", "competition_ranks",
           "normalise_rows", "METHODS", "NORMS"]

METHODS = {"rrf": {"k": 60.0}, "wsum": {"norm": "min-max"}}
MAX_DEPTH = 8  # fusions nested in fusions (parentheses); deeper specs are refused before parsing
MAX_PARTS = 32  # retrievers fused by one fusion
NORMS = ("min-max", "zscore")
_HEAD = re.compile(r"^\s*([A-Za-z][\w-]*)\s*\((.*)\)\s*$", re.S)
_WEIGHT = re.compile(r"^(.*?)\s*@\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$", re.S)


@dataclass(frozen=True)
class FusionSpec:
    """A parsed ``fusion:`` argument: method, parts as (spec, weight), parameters with defaults filled in."""

    method: str
    parts: tuple[tuple[str, float], ...]
    params: tuple[tuple[str, object], ...]


def _split_top(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside parentheses; unbalanced parentheses are an error."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ClirbenchError(f"unbalanced ')' in fusion spec {text!r}")
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ClirbenchError(f"unbalanced '(' in fusion spec {text!r}")
    out.append("".join(cur))
    return out


def parse_fusion(arg: str) -> FusionSpec:
    """Parse what follows ``fusion:`` (see the module docstring)."""
    usage = "expected fusion:rrf(A,B[,...][;k=60]) or fusion:wsum(A@w,B@w[,...][;norm=min-max|zscore])"
    depth = deepest = 0
    for ch in arg:  # linear, before any recursive parse (a spec nested 300 deep is refused here)
        depth += (ch == "(") - (ch == ")")
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise ClirbenchError(f"fusion spec nested {deepest} deep (at most {MAX_DEPTH} levels of parentheses)")
    m = _HEAD.match(arg)
    if not m:
        raise ClirbenchError(f"malformed fusion spec {arg!r}: {usage}")
    method, body = m.group(1).lower(), m.group(2)
    if method not in METHODS:
        raise ClirbenchError(f"unknown fusion method {method!r}: {usage}")
    sections = _split_top(body, ";")
    if len(sections) > 2:
        raise ClirbenchError(f"fusion spec {arg!r} has more than one ';': {usage}")
    parts = []
    for raw in _split_top(sections[0], ","):
        raw = raw.strip()
        weight = 1.0
        w = _WEIGHT.match(raw)
        if w and w.group(1).count("(") == w.group(1).count(")"):
            raw, weight = w.group(1).strip(), float(w.group(2))
            if not (math.isfinite(weight) and weight > 0):
                raise ClirbenchError(f"fusion weight must be a positive number, not {w.group(2)!r}")
        if not raw:
            raise ClirbenchError(f"empty retriever in fusion spec {arg!r}: {usage}")
        parts.append((raw, weight))
    if len(parts) < 2:
        raise ClirbenchError(f"fusion needs at least two retrievers, got {len(parts)} in {arg!r}")
    if len(parts) > MAX_PARTS:
        raise ClirbenchError(f"fusion of {len(parts)} retrievers (at most {MAX_PARTS})")
    params = dict(METHODS[method])
    if len(sections) == 2:
        for name, value in spec_params(sections[1], ",", f"fusion:{method}").items():
            if name not in params:
                raise ClirbenchError(f"unknown fusion parameter {name!r} for {method}: "
                                     f"expected {', '.join(f'{k}=' for k in params)}")
            params[name] = _param(method, name, value)
    return FusionSpec(method, tuple(parts), tuple(params.items()))


def _param(method: str, name: str, value: str):
    if name == "k":
        try:
            k = float(value)
        except ValueError:
            k = float("nan")
        if not (math.isfinite(k) and k >= 0):
            raise ClirbenchError(f"rrf parameter k must be a number >= 0, not {value!r}")
        return k
    if value not in NORMS:
        raise ClirbenchError(f"unknown normalisation {value!r}: expected {' or '.join(NORMS)}")
    return value


def _fmt(x: float) -> str:
    """Shortest text that parses back to ``x`` (``2`` rather than ``2.0``)."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Per row, 1 + the number of entries with a strictly higher float32 score (ties share the best rank)."""
    s = np.asarray(scores, dtype=np.float32)
    n = s.shape[1]
    order = np.argsort(-s, axis=1, kind="stable")
    sv = np.take_along_axis(s, order, axis=1)
    first = np.zeros(s.shape, dtype=np.int64)
    if n:
        new = np.ones(s.shape, dtype=bool)
        new[:, 1:] = sv[:, 1:] != sv[:, :-1]
        first = np.maximum.accumulate(np.where(new, np.arange(n)[None, :], 0), axis=1)
    ranks = np.empty_like(first)
    np.put_along_axis(ranks, order, first + 1, axis=1)
    return ranks


def normalise_rows(scores: np.ndarray, norm: str) -> np.ndarray:
    """Per-row ``min-max`` or ``zscore`` over the finite entries; -inf (not returned) gets the row's lowest value."""
    s = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(s)
    cnt = finite.sum(axis=1, keepdims=True)
    safe = np.where(finite, s, 0.0)
    if norm == "min-max":
        lo = np.where(finite, s, np.inf).min(axis=1, keepdims=True, initial=np.inf)
        hi = np.where(finite, s, -np.inf).max(axis=1, keepdims=True, initial=-np.inf)
        span = hi - lo
        ok = np.isfinite(span) & (span > 0)
        out = np.where(ok, (safe - np.where(ok, lo, 0.0)) / np.where(ok, span, 1.0), 0.0)
    elif norm == "zscore":
        mean = safe.sum(axis=1, keepdims=True) / np.maximum(cnt, 1)
        dev = np.where(finite, s - mean, 0.0)
        std = np.sqrt((dev ** 2).sum(axis=1, keepdims=True) / np.maximum(cnt, 1))
        out = np.where(std > 0, dev / np.where(std > 0, std, 1.0), 0.0)
    else:
        raise ValueError(f"unknown normalisation {norm!r}")
    low = np.where(finite, out, np.inf).min(axis=1, keepdims=True, initial=np.inf)
    return np.where(finite, out, np.where(np.isfinite(low), low, 0.0))


class FusionRetriever:
    """Fuses the full score rows of several retrievers (see the module docstring)."""

    def __init__(self, retrievers: Sequence, method: str = "rrf", weights: Sequence[float] | None = None,
                 k: float = 60.0, norm: str = "min-max") -> None:
        if len(retrievers) < 2:
            raise ValueError("fusion needs at least two retrievers")
        if method not in METHODS:
            raise ValueError(f"unknown fusion method {method!r}")
        if norm not in NORMS:
            raise ValueError(f"unknown normalisation {norm!r}")
        self.retrievers = tuple(retrievers)
        self.weights = tuple(float(w) for w in (weights or [1.0] * len(self.retrievers)))
        if len(self.weights) != len(self.retrievers):
            raise ValueError("one weight per retriever")
        self.method, self.k, self.norm = method, float(k), norm
        parts = ",".join(r.spec + ("" if w == 1 else f"@{_fmt(w)}") for r, w in zip(self.retrievers, self.weights))
        if method == "rrf":
            params = "" if self.k == 60 else f";k={_fmt(self.k)}"
        else:
            params = "" if norm == "min-max" else f";norm={norm}"
        self.spec = f"fusion:{method}({parts}{params})"
        self._progress = False

    @property
    def progress(self) -> bool:
        return self._progress

    @progress.setter
    def progress(self, value: bool) -> None:  # the runner sets it: pass it on
        self._progress = value
        for r in self.retrievers:
            if hasattr(r, "progress"):
                r.progress = value

    def describe(self) -> dict:
        parts = [r.describe() for r in self.retrievers]
        out = {"spec": self.spec, "family": "fusion", "method": self.method,
               "revision": ";".join(f"{p.get('spec')}={p.get('revision')}" for p in parts),
               "weights": list(self.weights), "components": parts,
               "pool": "full score rows of every component over the whole pool"}
        out.update({"k": self.k} if self.method == "rrf" else {"norm": self.norm})
        return out

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        for r in self.retrievers:
            if hasattr(r, "prepare"):
                r.prepare(queries, docs)

    def encode_ahead(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """The runner's encoding stage for the parts that have one (dense parts)."""
        for r in self.retrievers:
            if hasattr(r, "encode_ahead"):
                r.encode_ahead(queries, docs)

    def cost(self, queries: Sequence[Text], docs: Sequence[Text]):
        """The parts' costs together (``results.cost.fuse_reports``); None when a part reports none."""

        parts = [r.cost(queries, docs) if hasattr(r, "cost") else None for r in self.retrievers]
        return None if any(p is None for p in parts) else fuse_reports(parts)

    def fuse(self, rows: Sequence[np.ndarray]) -> np.ndarray:
        """Fused float64 scores from one aligned block of rows per component."""
        returned = np.zeros(rows[0].shape, dtype=bool)
        fused = np.zeros(rows[0].shape, dtype=np.float64)
        for s, w in zip(rows, self.weights):
            s = np.asarray(s)
            fin = np.isfinite(s)
            if np.isposinf(s).any():
                raise ValueError("+inf score: fusion needs finite scores (or -inf for not returned)")
            returned |= fin
            if self.method == "rrf":
                fused += np.where(fin, w / (self.k + competition_ranks(s)), 0.0)
            else:
                fused += w * normalise_rows(s, self.norm)
        fused[~returned] = -np.inf
        return fused

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield fused ``(start, scores[b, len(docs)])`` blocks; components' blocks are re-aligned."""
        streams = [iter(r.score(queries, docs)) for r in self.retrievers]
        current: list[tuple[int, np.ndarray] | None] = [None] * len(streams)
        n_q, start = len(queries), 0
        while start < n_q:
            for i, stream in enumerate(streams):  # make each component's block cover row ``start``
                while current[i] is None or current[i][0] + len(current[i][1]) <= start:
                    try:
                        s, b = next(stream)
                    except StopIteration:
                        raise ValueError(f"{self.retrievers[i].spec} yielded no scores for query row {start}") from None
                    if s > start:
                        raise ValueError(f"{self.retrievers[i].spec} skipped query rows {start}:{s}")
                    current[i] = (s, np.asarray(b))
            stop = min(s + len(b) for s, b in current)
            yield start, self.fuse([b[start - s:stop - s] for s, b in current])
            start = stop


def check_spec(arg: str) -> None:
    """Check ``fusion:<arg>`` and every part's family and syntax, building nothing (``sweep --dry-run``)."""

    for spec, _ in parse_fusion(arg).parts:
        canonical_family(spec)


def from_spec(arg: str, options: dict) -> FusionRetriever:
    """Build ``fusion:<method>(...)``: every part through ``make_retriever`` with the same options."""

    parsed = parse_fusion(arg)
    subs = [make_retriever(spec, **options) for spec, _ in parsed.parts]
    params = dict(parsed.params)
    return FusionRetriever(subs, parsed.method, [w for _, w in parsed.parts], **params)
