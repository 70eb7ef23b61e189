"""Per-query flips between two results of one pool (``clirbench compare --flips N``): the queries
whose value of one measure changes most from A to B, with the query's text and language and the
rank of each relevant document under A and under B.

Values come from the two per-query tables, ranks from the ranks tables beside them (results written
before ranks tables were kept have none: the ranks are then left out), query texts from the task's
data (``data_dir``, else where the task finds it: the embedded XQuAD). The default measure is MaxR
(the rank of the last relevant document: a translation or fine-tune that brings the other-language
passage up shows there first) when both tables hold it, else their first shared measure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..measures import direction
from ..results.files import RankedDoc, read_per_query, read_ranks, read_result
from ..tasks import get_task
from ..util.checks import check_int
from ..util.errors import ClirbenchError
from ..util.plural import plural

__all__ = ["DEFAULT_FLIP_MEASURE", "Flip", "Flips", "flips", "default_flip_measure", "query_texts",
           "format_flips", "flips_tsv", "change"]

DEFAULT_FLIP_MEASURE = "MaxR"
_TSV_HEADER = ("query_id", "query_lang", "query", "measure", "a", "b", "diff", "change", "doc_id", "doc_lang",
               "rank_a", "rank_b")


@dataclass(frozen=True)
class Flip:
    """One query: its value under A and B, and its relevant documents ``(doc id, language, rank
    under A, rank under B)`` in A's rank order (empty when the ranks are unknown)."""

    query_id: str
    query_lang: str
    text: str
    a: float
    b: float
    relevant: tuple[tuple[str, str, float, float], ...] = ()

    @property
    def diff(self) -> float:
        return self.b - self.a

    def to_dict(self, measure: str | None = None) -> dict:
        return {"query_id": self.query_id, "query_lang": self.query_lang, "text": self.text, "a": self.a,
                "b": self.b, "diff": self.diff, "change": change(measure, self.a, self.b) if measure else None,
                "relevant": [{"doc_id": d, "doc_lang": l, "rank_a": _rank_json(ra), "rank_b": _rank_json(rb)}
                             for d, l, ra, rb in self.relevant]}


@dataclass(frozen=True)
class Flips:
    """The top queries by |B − A| of ``measure``; ``ranks`` says whether both ranks tables were there."""

    measure: str
    requested: int
    queries: tuple[Flip, ...]
    ranks: bool

    def to_dict(self) -> dict:
        return {"measure": self.measure, "requested": self.requested, "order": "|B - A| descending",
                "ranks": self.ranks, "queries": [f.to_dict(self.measure) for f in self.queries]}


def _rank_json(r: float):
    return int(r) if math.isfinite(r) else None


def change(measure: str, a: float, b: float) -> str:
    """``B better``, ``B worse`` or ``tie`` by ``measure``'s direction (MaxR: lower is better); ""
    for a measure best at a target (SameLangFirst) or unknown."""
    way = direction(measure)
    if way not in ("up", "down") or a == b:
        return "tie" if way in ("up", "down") else ""
    return "B better" if (b > a) == (way == "up") else "B worse"


def default_flip_measure(names: Sequence[str]) -> str:
    """MaxR when among ``names``, else the first of them."""
    if not names:
        raise ClirbenchError("no measure to list flips of")
    return DEFAULT_FLIP_MEASURE if DEFAULT_FLIP_MEASURE in names else names[0]


def query_texts(record, data_dir=None) -> dict[str, str]:
    """``{query id: text}`` of a result's queries, from its task's data (``data_dir`` or the task's
    own place: the embedded XQuAD). A one-line error when the data cannot be read."""
    task = get_task(record.task.id)
    if task.card.kind == "parallel":
        collection = task.load([record.query_lang], data_dir=data_dir)
        return {q.id: q.text for q in collection.questions.get(record.query_lang, ())}
    langs = list(record.doc_langs) if len(record.doc_langs) == 2 else \
        sorted({record.doc_langs[0], record.query_lang})
    texts: dict[str, str] = {}
    for pool in task.pools(",".join(langs), record.scenario, [record.query_lang], record.pool_mode,
                           data_dir=data_dir):
        if pool.query_lang == record.query_lang and tuple(pool.doc_langs) == tuple(record.doc_langs):
            texts.update((q.id, q.text) for q in pool.queries)
    return texts


def _relevant(ranks_a: Sequence[RankedDoc] | None, ranks_b: Sequence[RankedDoc] | None) -> tuple:
    if ranks_a is None or ranks_b is None:
        return ()
    under_b = {d.doc_id: d.rank for d in ranks_b}
    seen = [(d.doc_id, d.doc_lang, d.rank, under_b.get(d.doc_id, math.nan)) for d in ranks_a]
    only_b = [(d.doc_id, d.doc_lang, math.nan, d.rank) for d in ranks_b if d.doc_id not in {s[0] for s in seen}]
    return tuple(seen + only_b)


def flips(a, b, n: int, measure: str | None = None, data_dir=None,
          texts: Mapping[str, str] | None = None) -> Flips:
    """The ``n`` queries of result files ``a`` and ``b`` (one pool) whose ``measure`` changes most,
    largest |B − A| first (equal ones by query id); queries where either value is undefined are left
    out. ``texts`` (``{query id: text}``) saves reading the task's data."""
    n = check_int(n, "--flips", 1, 1_000_000)
    ids_a, values_a = read_per_query(a)
    ids_b, values_b = read_per_query(b)
    shared = [m for m in values_a if m in values_b]
    measure = default_flip_measure(shared) if measure is None else str(measure)
    if measure not in shared:
        raise ClirbenchError(f"--flip-measure {measure[:60]!r}: not in both per-query tables; "
                             f"shared: {', '.join(shared) or 'none'}")
    if set(ids_a) != set(ids_b):
        raise ClirbenchError(f"cannot list flips of {a} and {b}: different query sets")
    order = {q: i for i, q in enumerate(ids_b)}
    va = np.asarray(values_a[measure], dtype=np.float64)
    vb = np.asarray(values_b[measure], dtype=np.float64)[[order[q] for q in ids_a]]
    diff = np.abs(vb - va)
    keep = [i for i in range(len(ids_a)) if not math.isnan(diff[i])]
    top = sorted(keep, key=lambda i: (-diff[i], ids_a[i]))[:n]
    record = read_result(a)
    if texts is None:
        texts = query_texts(record, data_dir)
    ranks_a, ranks_b = read_ranks(a), read_ranks(b)
    have_ranks = ranks_a is not None and ranks_b is not None
    out = []
    for i in top:
        q = ids_a[i]
        relevant = _relevant(ranks_a.get(q, ()), ranks_b.get(q, ())) if have_ranks else ()
        out.append(Flip(q, record.query_lang, texts.get(q, ""), float(va[i]), float(vb[i]), relevant))
    return Flips(measure, n, tuple(out), have_ranks)


def _rank_text(r: float) -> str:
    return "-" if math.isnan(r) else ("not retrieved" if math.isinf(r) else str(int(r)))


def _value(x: float) -> str:
    return f"{x:g}" if abs(x) >= 10 or x == int(x) else f"{x:.4f}"


def format_flips(result: Flips) -> str:
    """The flips as text: one block per query (id, language, B − A, text, ranks A → B)."""
    lines = [f"top {plural(len(result.queries), 'query')} by |B - A| of {result.measure} (of {result.requested} asked):"]
    for k, f in enumerate(result.queries, start=1):
        how = change(result.measure, f.a, f.b)
        lines.append(f"{k:>3}. {f.query_id} [{f.query_lang}]  {result.measure} A {_value(f.a)} -> "
                     f"B {_value(f.b)} (B - A {_value(f.diff)}{', ' + how if how else ''})")
        if f.text:
            lines.append(f"     {' '.join(f.text.split())}")
        if f.relevant:
            lines.append("     ranks A -> B: " + "; ".join(f"{d} ({l or '?'}) {_rank_text(ra)} -> {_rank_text(rb)}"
                                                       for d, l, ra, rb in f.relevant))
    if not result.ranks:
        lines.append("(ranks of the relevant documents unknown: a result has no ranks table beside it)")
    return "\n".join(lines)


def _tsv_field(x) -> str:
    return " ".join(str(x).split())


def flips_tsv(result: Flips) -> str:
    """The flips as TSV: one row per query and relevant document (one per query without ranks)."""
    lines = ["\t".join(_TSV_HEADER)]
    for f in result.queries:
        head = [f.query_id, f.query_lang, _tsv_field(f.text), result.measure, repr(f.a), repr(f.b), repr(f.diff),
                change(result.measure, f.a, f.b)]
        for d, l, ra, rb in f.relevant or (("", "", math.nan, math.nan),):
            ranks = ["" if math.isnan(r) else ("inf" if math.isinf(r) else str(int(r))) for r in (ra, rb)]
            lines.append("\t".join(head + [d, l] + ranks))
    return "\n".join(lines) + "\n"
