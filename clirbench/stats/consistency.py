"""The consistency matrix across query languages (docs/measures.md#consistency-across-query-languages-mrck-rbo):
for every unordered pair of query languages over the same documents (MRC@k and RBO@k are symmetric),
the per-question values of ``measures.consistency`` and their means over the questions with
percentile bootstrap intervals resampling questions (one shared resampling for both measures,
``stats.summary``)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from ..identity import PoolKey, split_pool_stem
from ..measures.consistency import DEFAULT_K, DEFAULT_P, TwinValues, consistency_values
from ..results.records import MeasureValue
from ..util.atomic import write_text_atomic
from .summary import summarise

if TYPE_CHECKING:
    from ..rank.head import Head

__all__ = ["PairConsistency", "ConsistencyMatrix", "consistency_matrix", "consistency_path", "run_consistency"]


@dataclass(frozen=True, eq=False)
class PairConsistency:
    """One cell: query languages ``langs`` = (a, b), the per-question values, and their summary
    ``{"MRC@k": MeasureValue, "RBO@k": MeasureValue}`` (n: the questions where each is defined)."""

    langs: tuple[str, str]
    values: TwinValues
    summary: dict[str, MeasureValue]

    def to_dict(self) -> dict:
        """JSON-able: languages, summary, the questions' ids in a and b and their values (NaN: None)."""
        return {"langs": list(self.langs),
                "measures": {name: value.to_dict() for name, value in self.summary.items()},
                "query_ids": {"a": list(self.values.query_ids_a), "b": list(self.values.query_ids_b)},
                "per_query": {name: [None if math.isnan(v) else v for v in col.tolist()]
                              for name, col in self.values.columns().items()}}


@dataclass(frozen=True, eq=False)
class ConsistencyMatrix:
    """Every unordered pair of ``langs`` (a before b in ``langs``' order), the lists' depth ``k`` and
    RBO's ``p``."""

    langs: tuple[str, ...]
    k: int
    p: float
    pairs: tuple[PairConsistency, ...]

    @property
    def names(self) -> tuple[str, str]:
        """``("MRC@k", "RBO@k")``."""
        return f"MRC@{self.k}", f"RBO@{self.k}"

    def pair(self, a: str, b: str) -> PairConsistency:
        """The cell of languages a and b, in either order; KeyError when the matrix lacks it."""
        for cell in self.pairs:
            if set(cell.langs) == {a, b} and a != b:
                return cell
        raise KeyError(f"no consistency cell for {a}-{b}")

    def table(self, measure: str) -> list[list[MeasureValue | None]]:
        """``langs`` × ``langs`` of ``measure``'s summaries, symmetric, None on the diagonal."""
        return [[None if a == b else self.pair(a, b).summary[measure] for b in self.langs] for a in self.langs]

    def to_dict(self) -> dict:
        return {"langs": list(self.langs), "k": self.k, "p": self.p, "pairs": [c.to_dict() for c in self.pairs]}


def consistency_matrix(heads: Mapping[str, "Head"], k: int = DEFAULT_K, p: float = DEFAULT_P,
                       resamples: int = 1000, seed: int = 42, confidence: float = 0.95,
                       twins: Mapping[tuple[str, str], Mapping[str, str]] | None = None) -> ConsistencyMatrix:
    """The matrix of ``heads`` (query language -> the head of its pool; all over the same documents):
    per unordered pair, ``measures.consistency.consistency_values`` summarised by question, each
    pair's bootstrap drawn from ``seed``. ``twins[(a, b)]`` maps a's query ids to b's where they are
    not shared (``twin_rows``)."""
    langs = tuple(heads)
    if len(langs) < 2:
        raise ValueError(f"a consistency matrix needs two query languages or more, got {len(langs)}")
    cells = []
    for a, b in combinations(langs, 2):
        values = consistency_values(heads[a], heads[b], k, p, (twins or {}).get((a, b)))
        summary = summarise(values.names, values.columns(), resamples, seed, confidence)
        cells.append(PairConsistency((a, b), values, summary))
    return ConsistencyMatrix(langs, int(k), float(p), tuple(cells))


def consistency_path(result: str | Path) -> Path:
    """``…/en-zh.q-en.json`` → ``…/en-zh.consistency.json``, beside the pool's results."""
    path = Path(result)
    stem = split_pool_stem(path.name)
    return path.with_name((stem[0] if stem else path.name) + ".consistency.json")


def run_consistency(outcomes: Sequence, heads: Mapping[str, "Head"], k: int = DEFAULT_K, resamples: int = 1000,
                    seed: int = 42) -> list[tuple[str, ConsistencyMatrix, Path | None]]:
    """The matrices of a run: for each set of ``multi`` documents of two or more languages whose pools
    for two or more query languages have a head at least ``k`` deep in ``heads`` (pool name -> head),
    ``(documents' name, matrix, file)``, each written atomically beside its results (None: in memory).
    Pools without a head (reused from an earlier run) are left out."""
    groups: dict = {}
    for o in outcomes:
        head = heads.get(o.name)
        r = o.record
        if r.scenario == "multi" and len(r.doc_langs) >= 2 and head is not None and \
                min(head.depth, len(head.doc_ids)) >= min(k, len(head.doc_ids)):
            groups.setdefault(PoolKey.of(r).documents, []).append((r.query_lang, head, o.path))
    out = []
    for key, found in groups.items():
        if len(found) < 2:
            continue
        order = {lang: i for i, lang in enumerate(key.doc_langs)}
        found.sort(key=lambda f: (order.get(f[0], len(order)), f[0]))
        matrix = consistency_matrix({lang: head for lang, head, _ in found}, k, DEFAULT_P, resamples, seed)
        target = None if found[0][2] is None else consistency_path(found[0][2])
        if target is not None:
            write_text_atomic(target, json.dumps(matrix.to_dict(), indent=2) + "\n")
        out.append(("/".join(key.parts[:-1]), matrix, target))
    return out
