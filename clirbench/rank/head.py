"""The head of a ranking: each query's top-K documents under the tie rule of ``table.py`` (score
descending, then document id descending byte-wise; excluded documents never appear; documents a
run did not return (-inf) neither). ``HeadBuilder`` keeps it from score blocks as a ranker computes
them (full rows, document shards, a device's tensors, float32 products with their error bound),
in memory O(queries x K + one block); ``head_of_run`` reads it from a ``{qid: {docid: score}}`` run.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Collection, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .bands import band_limits
from .products import BoundedBlock, BoundedScores, exact_scores
from .table import as_trec_scores, tie_keys

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["DEFAULT_DEPTH", "Head", "HeadBuilder", "head_of_run", "excluded_rows"]

DEFAULT_DEPTH = 1000  # K: a run's usual depth (trec_eval's), capped at the pool's size
_EXACT_ROWS = 8  # bounded blocks at most this many times K wide are scored exactly whole


@dataclass(frozen=True, eq=False)
class Head:
    """Each query's top-K documents, best first: ``docs[i, r]`` the index into ``doc_ids`` of query
    ``query_ids[i]``'s document at rank r + 1 (-1 past the end when fewer were ranked), ``scores``
    the float32 scores the ranks were decided on (-inf past the end)."""

    query_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    doc_langs: tuple[str, ...] | None
    docs: np.ndarray  # (n, K) int64
    scores: np.ndarray  # (n, K) float32

    def __post_init__(self) -> None:
        n = len(self.query_ids)
        if self.docs.ndim != 2 or self.docs.shape[0] != n or self.scores.shape != self.docs.shape:
            raise ValueError(f"docs {self.docs.shape} and scores {self.scores.shape} must be ({n}, K)")
        if self.doc_langs is not None and len(self.doc_langs) != len(self.doc_ids):
            raise ValueError("doc_langs must give one language per document")

    @property
    def depth(self) -> int:
        """K: the length of every query's list (padded with -1)."""
        return self.docs.shape[1]

    def rows(self) -> Iterator[tuple[str, int, str, float]]:
        """``(query id, rank, doc id, score)`` in order: by query, then rank (1-based)."""
        for qid, docs, scores in zip(self.query_ids, self.docs, self.scores):
            for r, (d, s) in enumerate(zip(docs.tolist(), scores.tolist())):
                if d < 0:
                    break
                yield qid, r + 1, self.doc_ids[d], s

    def to_run(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, every query present (empty when none ranked)."""
        run: dict[str, dict[str, float]] = {q: {} for q in self.query_ids}
        for qid, _, doc, score in self.rows():
            run[qid][doc] = score
        return run

    @cached_property
    def _langs(self) -> np.ndarray:
        return np.asarray(list(self.doc_langs) + [""], dtype=str)  # "" for -1 (past the end)

    def lang_of(self, docs):
        """The language of document index ``docs`` (an int, or an array such as ``self.docs``: ""
        at -1); a ValueError when the head has no languages."""
        if self.doc_langs is None:
            raise ValueError("this head has no document languages")
        out = self._langs[np.asarray(docs)]
        return str(out) if np.ndim(out) == 0 else out


def excluded_rows(exclusions: Mapping[str, Collection[str]], query_ids: Sequence[str],
                  doc_ids: Sequence[str]) -> dict[int, np.ndarray]:
    """Query row -> sorted doc indices of its excluded documents (ids not in the pool ignored)."""
    dindex = {d: i for i, d in enumerate(doc_ids)}
    out = {}
    for row, qid in enumerate(query_ids):
        cols = [dindex[d] for d in exclusions.get(qid, ()) if d in dindex]
        if cols:
            out[row] = np.unique(np.asarray(cols, dtype=np.int64))
    return out


class HeadBuilder:
    """Each query's top-K kept from score blocks ``add(start, block, cols)``: rows ``start:start+b``
    of the pool's queries against the documents ``cols`` (None: all; a slice or an index array).
    Blocks may cover one row many times with other columns (document shards); a document seen twice
    counts once. Thread-safe. ``tee``/``scorer`` feed it the blocks a ranker already computes."""

    def __init__(self, n_queries: int, keys: np.ndarray, depth: int = DEFAULT_DEPTH,
                 excluded: Mapping[int, np.ndarray] | None = None) -> None:
        if int(depth) < 1:
            raise ValueError(f"depth must be >= 1, not {depth}")
        self.keys = np.asarray(keys, dtype=np.int64)
        self.n_docs = len(self.keys)
        self.k = min(int(depth), self.n_docs)
        self.excluded = {int(r): np.asarray(c, dtype=np.int64) for r, c in (excluded or {}).items() if len(c)}
        self.ex_row = np.fromiter((r for r, c in sorted(self.excluded.items()) for _ in c), np.int64)
        self.ex_col = np.concatenate([c for _, c in sorted(self.excluded.items())]) if self.excluded else \
            np.zeros(0, np.int64)
        self.docs = np.full((n_queries, self.k), -1, dtype=np.int64)
        self.scores = np.full((n_queries, self.k), -np.inf, dtype=np.float32)
        self.lock = threading.Lock()
        self.ids: tuple | None = None  # (query_ids, doc_ids, doc_langs) of for_pool

    @classmethod
    def for_pool(cls, pool: "Pool", depth: int = DEFAULT_DEPTH) -> "HeadBuilder":
        """A builder over ``pool``'s queries and documents, with its exclusions; ``finish`` gives the Head."""
        query_ids = tuple(q.id for q in pool.queries)
        doc_ids = tuple(d.id for d in pool.docs)
        builder = cls(len(query_ids), tie_keys(doc_ids), depth, excluded_rows(pool.exclusions, query_ids, doc_ids))
        builder.ids = (query_ids, doc_ids, tuple(d.lang for d in pool.docs))
        return builder

    def finish(self) -> Head:
        if self.ids is None:
            raise ValueError("a HeadBuilder made without ids (for_pool) gives arrays only")
        return Head(*self.ids, self.docs, self.scores)

    # -- feeding -------------------------------------------------------------------------------

    def tee(self, blocks: Iterable[tuple[int, object]], cols=None) -> Iterator[tuple[int, object]]:
        """``blocks`` as they are, each also added: rows still to compute as their parts are computed,
        ``BoundedScores`` before the consumer sees them (a counter marks excluded documents in
        them), other blocks once the consumer has read them (its checks, NaN's first)."""
        for start, block in blocks:
            if isinstance(block, (BoundedBlock, BoundedScores)):
                yield start, self.watch(start, block, cols)
            else:
                yield start, block
                self.add(start, block, cols)

    def scorer(self, score_shard):
        """``score_shard(cols)`` whose blocks are also added (a document-shard scorer)."""
        def teed(cols):
            return self.tee(score_shard(cols), cols)
        return teed

    def watch(self, start: int, block, cols=None):
        """``block``, added now, or (a ``BoundedBlock``) a block adding each part as it is computed."""
        if isinstance(block, BoundedBlock):
            return _TeeBlock(block, self, start, cols)
        self.add(start, block, cols)
        return block

    def add(self, start: int, block, cols=None) -> None:
        """Merge the top-K of one block (scores, a torch tensor, or ``BoundedScores``)."""
        if not self.k:
            return
        cidx = None if cols is None else np.arange(self.n_docs)[cols] if isinstance(cols, slice) else \
            np.asarray(cols, dtype=np.int64)
        b, w = block.shape
        if not b or not w:
            return
        ex_r, ex_c = self._excluded_in(start, b, cidx, w)
        rows, local, score = _block_top(block, self.k, ex_r, ex_c, self.keys if cidx is None else self.keys[cidx])
        self._merge(start, rows, local if cidx is None else cidx[local], score)

    def _excluded_in(self, start: int, b: int, cidx, w: int) -> tuple[np.ndarray, np.ndarray]:
        """The excluded (row in block, column in block) pairs of rows ``start:start+b``."""
        e0, e1 = np.searchsorted(self.ex_row, [start, start + b])
        r, c = self.ex_row[e0:e1] - start, self.ex_col[e0:e1]
        if cidx is None or not len(r):
            return r, c
        order = np.argsort(cidx, kind="stable")
        pos = np.minimum(np.searchsorted(cidx[order], c), w - 1)
        hit = cidx[order][pos] == c
        return r[hit], order[pos[hit]]

    def _merge(self, start: int, row: np.ndarray, doc: np.ndarray, score: np.ndarray) -> None:
        if not len(row):
            return
        b = int(row.max()) + 1
        with self.lock:
            old_d, old_s = self.docs[start:start + b], self.scores[start:start + b]
            orow, oc = np.nonzero(old_d >= 0)
            row = np.r_[row, orow]
            doc = np.r_[doc, old_d[orow, oc]]
            score = np.r_[score, old_s[orow, oc]].astype(np.float32)
            order = np.lexsort((-self.keys[doc], -score.astype(np.float64), row))
            row, doc, score = row[order], doc[order], score[order]
            again = np.zeros(len(row), dtype=bool)  # a document seen twice
            again[1:] = (row[1:] == row[:-1]) & (doc[1:] == doc[:-1])
            row, doc, score = row[~again], doc[~again], score[~again]
            pos = np.arange(len(row)) - np.searchsorted(row, row, side="left")
            keep = pos < self.k
            old_d[:] = -1
            old_s[:] = -np.inf
            old_d[row[keep], pos[keep]] = doc[keep]
            old_s[row[keep], pos[keep]] = score[keep]


class _TeeBlock(BoundedBlock):
    """A ``BoundedBlock`` whose parts, as a ranker computes them, are also added to a HeadBuilder."""

    def __init__(self, block: BoundedBlock, builder: HeadBuilder, start: int, cols) -> None:
        self.__dict__.update(block.__dict__)
        self.inner, self.builder, self.start, self.cols = block, builder, start, cols

    def part(self, a: int, b: int) -> BoundedScores:
        scores = self.inner.part(a, b)
        self.builder.add(self.start + a, scores, self.cols)
        return scores


# -- one block's top-K ---------------------------------------------------------------------------


def _block_top(block, k: int, ex_r: np.ndarray, ex_c: np.ndarray, keys: np.ndarray):
    """(row, column, float32 score) of each row's top-k in one block, excluded pairs and -inf left out."""
    bounded = isinstance(block, BoundedScores)
    A = block.approx if bounded else block
    b, w = A.shape
    if bounded and isinstance(A, np.ndarray) and w <= _EXACT_ROWS * k:  # narrow: exact rows cost less
        A, bounded = exact_scores(block.Q, block.D), False
    elif not bounded and isinstance(A, np.ndarray):
        A = A if A.dtype == np.float32 else as_trec_scores(np.asarray(A))
    per_row = np.bincount(ex_r, minlength=b) if len(ex_r) else np.zeros(b, np.int64)
    kk = min(k + int(per_row.max()) + 1, w)
    top, vals = _top_columns(A, kk)  # (b, kk) columns and approximate scores, unordered
    ex_code = ex_r * w + ex_c
    valid = ~np.isin(np.arange(b)[:, None] * w + top, ex_code) if len(ex_code) else np.ones(top.shape, bool)
    exact = _exact_of(block, top, vals, bounded)
    valid &= exact > -np.inf
    lo = _threshold(exact, valid, k, block.err if bounded else None)
    # rows where a document outside the kk gathered may still reach the top k: scanned whole
    scan = np.flatnonzero(np.isfinite(lo) & (lo <= vals.min(axis=1))) if kk < w else np.zeros(0, np.int64)
    keep = valid & (vals >= lo[:, None])
    keep[scan] = False
    r, j = np.nonzero(keep)
    c = top[r, j]
    s = exact[r, j]
    if len(scan):
        r2, c2 = _scan_rows(A, scan, lo[scan])
        ok = ~np.isin(r2 * w + c2, ex_code) if len(ex_code) else np.ones(len(r2), bool)
        r2, c2 = r2[ok], c2[ok]
        s2 = block.exact(r2, c2) if bounded else _gather(A, r2, c2)
        r, c, s = np.r_[r, r2], np.r_[c, c2], np.r_[s, s2]
    keep = s > -np.inf
    r, c, s = r[keep], c[keep], s[keep].astype(np.float32)
    order = np.lexsort((-keys[c], -s.astype(np.float64), r))
    r, c, s = r[order], c[order], s[order]
    pos = np.arange(len(r)) - np.searchsorted(r, r, side="left")
    keep = pos < k
    return r[keep], c[keep], s[keep]


def _exact_of(block, top: np.ndarray, vals: np.ndarray, bounded: bool) -> np.ndarray:
    """The float32 scores the ranks are decided on, of the gathered ``top`` columns."""
    if not bounded:
        return vals
    rows = np.repeat(np.arange(top.shape[0]), top.shape[1])
    return block.exact(rows, top.ravel()).reshape(top.shape)


def _threshold(exact: np.ndarray, valid: np.ndarray, k: int, err) -> np.ndarray:
    """Per row the least score a top-k document can have (its k-th best valid score among the
    gathered; -inf when fewer than k: all of them are gathered), widened by ``err`` for
    approximate scores: a document whose approximate score is below it sorts after k others."""
    s = np.where(valid, exact, -np.inf).astype(np.float32)
    if s.shape[1] > k:
        kth = -np.partition(-s, k - 1, axis=1)[:, k - 1]
    else:
        kth = np.full(len(s), -np.inf, dtype=np.float32)
    if err is None:
        return kth
    finite = np.isfinite(kth)
    lo = np.full(len(kth), -np.inf)
    lo[finite] = band_limits(kth[finite], kth[finite], np.asarray(err)[finite])[0]
    return lo


def _top_columns(A, kk: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``kk`` columns holding its ``kk`` largest values (any order among ties), and those values."""
    w = A.shape[1]
    if not isinstance(A, np.ndarray):  # a torch tensor: chosen on its device
        values, idx = A.topk(kk, dim=1)
        return idx.cpu().numpy().astype(np.int64), values.float().cpu().numpy()
    if kk >= w:
        top = np.broadcast_to(np.arange(w), A.shape).copy()
    else:
        top = np.argpartition(A, w - kk, axis=1)[:, w - kk:]
    return top, np.take_along_axis(A, top, axis=1).astype(np.float32, copy=False)


def _scan_rows(A, rows: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every value >= ``lo[i]`` in row ``rows[i]``."""
    if not isinstance(A, np.ndarray):
        import torch  # lazy: optional, a device's block

        idx = torch.from_numpy(rows).to(A.device)
        bound = torch.from_numpy(lo.astype(np.float32)).to(A.device)
        i, c = torch.nonzero(A[idx] >= bound[:, None], as_tuple=True)
        return rows[i.cpu().numpy()], c.cpu().numpy().astype(np.int64)
    i, c = np.nonzero(A[rows] >= lo[:, None].astype(np.float32))
    return rows[i], c


def _gather(A, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    if isinstance(A, np.ndarray):
        return A[r, c].astype(np.float32, copy=False)
    import torch  # lazy: optional, a device's block

    return A[torch.from_numpy(r).to(A.device), torch.from_numpy(c).to(A.device)].float().cpu().numpy()


# -- a run ---------------------------------------------------------------------------------------


def head_of_run(run: Mapping[str, Mapping[str, float]], query_ids: Sequence[str] | None = None,
                doc_ids: Sequence[str] | None = None, doc_langs: Sequence[str] | None = None,
                exclusions: Mapping[str, Collection[str]] | None = None, depth: int = DEFAULT_DEPTH) -> Head:
    """The Head of a ``{qid: {docid: score}}`` run: its own order under the tie rule (float32
    scores), at most ``depth`` per query. ``query_ids``/``doc_ids`` default to the run's (in order
    of appearance; documents byte-sorted); documents outside ``doc_ids`` are left out, as the pool
    path leaves them, and so are ``exclusions`` and -inf scores."""
    query_ids = tuple(run) if query_ids is None else tuple(query_ids)
    doc_ids = tuple(sorted({d for hits in run.values() for d in hits}) if doc_ids is None else doc_ids)
    keys = tie_keys(doc_ids)
    k = min(max(int(depth), 1), len(doc_ids))
    col = {d: i for i, d in enumerate(doc_ids)}
    rows, cols, scores = [], [], []
    for row, qid in enumerate(query_ids):
        hits = [(col[d], s) for d, s in (run.get(qid) or {}).items() if d in col]
        rows.append(np.full(len(hits), row, dtype=np.int64))
        cols.append(np.fromiter((h[0] for h in hits), np.int64, len(hits)))
        scores.append(np.fromiter((h[1] for h in hits), np.float64, len(hits)))
    r, c = np.concatenate(rows or [np.zeros(0, np.int64)]), np.concatenate(cols or [np.zeros(0, np.int64)])
    s = as_trec_scores(np.concatenate(scores or [np.zeros(0)]))
    keep = s > -np.inf
    excluded = excluded_rows(exclusions or {}, query_ids, doc_ids)
    if excluded:
        codes = np.concatenate([row * len(doc_ids) + cs for row, cs in excluded.items()])
        keep &= ~np.isin(r * len(doc_ids) + c, codes)
    r, c, s = r[keep], c[keep], s[keep]
    order = np.lexsort((-keys[c], -s.astype(np.float64), r))
    r, c, s = r[order], c[order], s[order]
    pos = np.arange(len(r)) - np.searchsorted(r, r, side="left")
    keep = pos < k
    docs = np.full((len(query_ids), k), -1, dtype=np.int64)
    top = np.full((len(query_ids), k), -np.inf, dtype=np.float32)
    docs[r[keep], pos[keep]], top[r[keep], pos[keep]] = c[keep], s[keep]
    return Head(query_ids, doc_ids, None if doc_langs is None else tuple(doc_langs), docs, top)
