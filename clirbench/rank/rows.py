"""Exact ranks of relevant documents from score rows over a whole pool (``rank_relevant``), under the
tie rule of ``table.py``: plain rows, or a float32 product with its error bound (``products``),
whose near-ties are scored exactly; with each rank its tie counts (``RankTable.tied``). Also a
``{qid: {docid: score}}`` run laid over a pool as rows (documents it lacks all tie at the bottom)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .bands import NOT_IEEE, band_limits, count_band
from .pairs import JudgedPairs, judged_pairs
from .parts import BlockParts
from .products import BoundedBlock, BoundedScores
from .table import RankTable, TiedRanks, as_trec_scores, tie_keys

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["rank_relevant", "rank_blocks", "run_blocks", "RUN_ROWS"]

RUN_ROWS = 256  # score rows per block when a {qid: {docid: score}} run is laid over a pool

_CHUNK = 1 << 20  # elements per temporary: small enough for malloc to reuse (no fresh page faults)


@dataclass(frozen=True)
class _Counts:
    """Per relevant pair: its rank, the other documents with exactly its score, those sorting before it."""

    rank: np.ndarray
    tied: np.ndarray
    before: np.ndarray

    @classmethod
    def empty(cls, m: int) -> "_Counts":
        return cls(np.full(m, np.nan), np.zeros(m, np.int64), np.zeros(m, np.int64))

    def put(self, a: int, b: int, greater: np.ndarray, tied: np.ndarray, before: np.ndarray) -> None:
        """Pairs ``a:b``: ``greater`` documents score higher, ``tied`` tie, ``before`` of those sort first."""
        self.rank[a:b] = 1 + greater + before
        self.tied[a:b] = tied
        self.before[a:b] = before

    def ranks(self) -> TiedRanks:
        return TiedRanks.of(self.rank, self.tied, self.before)


def rank_relevant(
    blocks: Iterable[tuple[int, np.ndarray]],
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    exclusions: Mapping[str, Collection[str]] = {},
    doc_langs: Sequence[str] | None = None,
    query_lang: str | None = None,
) -> RankTable:
    """Exact ranks of relevant docs from score rows over the whole pool.

    ``blocks`` yields ``(start, scores)``, ``scores`` of shape (b, len(doc_ids)) for
    ``query_ids[start:start+b]``; -inf marks a document the retriever did not return (it sorts
    after every returned one, by the same tie rule). Excluded docs leave the ranking and |D|.
    Every evaluated query (non-empty qrels) must be covered by exactly one block.
    """
    doc_ids, query_ids = list(doc_ids), list(query_ids)
    p = judged_pairs(doc_ids, query_ids, qrels, exclusions, doc_langs)
    keys = tie_keys(doc_ids)
    out = _Counts.empty(len(p.rel_row))
    seen = np.zeros(len(query_ids), dtype=bool)
    with BlockParts() as parts:
        for start, scores in blocks:
            _rank_block(start, scores, p, keys, out, seen, parts)
    missing = [query_ids[i] for i in p.evaluated if not seen[i]]
    if missing:
        raise ValueError(f"no scores for {len(missing)} evaluated queries, e.g. {missing[0]!r}")
    return p.finish(out.ranks(), doc_langs, query_lang)


def _rank_block(start: int, scores, p: JudgedPairs, keys: np.ndarray, out: _Counts, seen: np.ndarray,
                parts: BlockParts) -> None:
    """``rank_relevant``'s work for one block: the ranks of its relevant pairs, into ``out``."""
    n_q, n_docs = len(seen), len(keys)
    bounded = isinstance(scores, (BoundedScores, BoundedBlock))
    scores = scores if bounded else np.asarray(scores)
    if len(scores.shape) != 2 or scores.shape[1] != n_docs:
        raise ValueError(f"score block has shape {scores.shape}, expected (b, {n_docs})")
    stop = start + scores.shape[0]
    if start < 0 or stop > n_q:
        raise ValueError(f"score block rows {start}:{stop} outside {n_q} queries")
    if seen[start:stop].any():
        raise ValueError(f"score block rows {start}:{stop} overlap an earlier block")
    seen[start:stop] = True
    if isinstance(scores, BoundedBlock):  # rows still to compute
        parts.submit(scores, lambda part, a: _rank_bounded(part, start + a, p, keys, out))
        return
    if bounded:  # a float32 product + error bound (BoundedScores)
        _rank_bounded(scores, start, p, keys, out)
        return
    if np.issubdtype(scores.dtype, np.floating) and np.isnan(scores).any():
        raise ValueError(f"NaN score in rows {start}:{stop}")
    lo, hi = np.searchsorted(p.rel_row, [start, stop])
    step = max(1, _CHUNK // max(n_docs, 1))
    for a in range(lo, hi, step):
        b = min(a + step, hi)
        rows, cols = p.rel_row[a:b], p.rel_col[a:b]
        block = as_trec_scores(scores[rows - start])  # a copy: the caller's array is untouched
        _exclude(block, rows, p)
        s = block[np.arange(len(rows)), cols][:, None]
        tie = block == s  # the pair's own document included
        greater = np.count_nonzero(block > s, axis=1)
        tied = np.count_nonzero(tie, axis=1) - 1
        tie &= keys[None, :] > keys[cols][:, None]
        out.put(a, b, greater, tied, np.count_nonzero(tie, axis=1))


def _exclude(block: np.ndarray, rows: np.ndarray, p: JudgedPairs) -> None:
    """NaN (never sorts before) at the excluded docs of ``rows`` (row i of ``block`` is ``rows[i]``)."""
    e_lo, e_hi = np.searchsorted(p.ex_row, rows), np.searchsorted(p.ex_row, rows, side="right")
    cnt = e_hi - e_lo
    if cnt.sum():
        r = np.repeat(np.arange(len(rows)), cnt)
        e = np.repeat(e_lo - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
        block[r, p.ex_col[e]] = np.nan


def _rank_bounded(block, start: int, p: JudgedPairs, keys: np.ndarray, out: _Counts) -> None:
    """``rank_relevant`` over one ``BoundedScores`` block: the float32 product decides every document
    farther than its error bound from the relevant one's exact score; the rest are scored exactly."""
    A = block.approx
    if not block.finite and np.isnan(A).any():
        raise ValueError(f"NaN score in rows {start}:{start + A.shape[0]}")
    a0, a1 = np.searchsorted(p.rel_row, [start, start + A.shape[0]])
    step = max(1, _CHUNK // max(A.shape[1], 1))  # rows copied at a time
    e0, e1 = np.searchsorted(p.ex_row, [start, start + A.shape[0]])
    if a1 > a0 and e1 == e0 and p.rel_row[a1 - 1] - p.rel_row[a0] == a1 - a0 - 1:
        step = a1 - a0  # one pair per row, in order, nothing excluded: the block itself, in one go
    for a in range(a0, a1, step):
        b = min(a + step, a1)
        rows, cols = p.rel_row[a:b], p.rel_col[a:b]
        local = rows - start
        s = block.exact(local, cols)
        e0, e1 = np.searchsorted(p.ex_row, [rows[0], rows[-1] + 1])
        if e1 == e0 and rows[-1] - rows[0] == len(rows) - 1:
            R = A[local[0]:local[-1] + 1]  # distinct consecutive rows, nothing excluded: a view
        else:
            R = A[local]
            _exclude(R, rows, p)
        lo, hi = band_limits(s, s, block.err[local])
        own = R[np.arange(len(rows)), cols]
        if np.any((own < lo) | (own > hi)):
            raise RuntimeError(NOT_IEEE)
        gt, i, c, _ = count_band(R, lo, hi)
        keep = c != cols[i]
        i, c = i[keep], c[keep]
        ex = block.exact(local[i], c)
        tie = ex == s[i]
        before = tie & (keys[c] > keys[cols[i]])
        out.put(a, b, gt + np.bincount(i[ex > s[i]], minlength=b - a), np.bincount(i[tie], minlength=b - a),
                np.bincount(i[before], minlength=b - a))


def rank_blocks(blocks: Iterable[tuple[int, np.ndarray]], pool: "Pool") -> RankTable:
    """RankTable of score rows ``(start, (b, |D|) scores)`` over ``pool`` (its qrels, exclusions, languages)."""
    return rank_relevant(blocks, [d.id for d in pool.docs], [q.id for q in pool.queries], pool.qrels,
                         pool.exclusions, doc_langs=[d.lang for d in pool.docs], query_lang=pool.query_lang)


def run_blocks(pool: "Pool", run: Mapping[str, Mapping[str, float]],
               rows: int = RUN_ROWS) -> Iterator[tuple[int, np.ndarray]]:
    """Score rows of a ``{qid: {docid: score}}`` run laid over ``pool`` (-inf for documents not in it)."""
    doc_ids = [d.id for d in pool.docs]
    col = {d: i for i, d in enumerate(doc_ids)}
    qids = [q.id for q in pool.queries]
    for start in range(0, len(qids), rows):
        block = np.full((min(rows, len(qids) - start), len(doc_ids)), -np.inf, dtype=np.float32)
        for r, q in enumerate(qids[start:start + rows]):
            hits = run.get(q) or {}
            if hits:
                idx = np.fromiter((col[d] for d in hits), dtype=np.int64, count=len(hits))
                block[r, idx] = np.fromiter(hits.values(), dtype=np.float64, count=len(hits))
        yield start, block
