"""Ranks of relevant documents under trec_eval's tie rule (docs/measures.md).

Documents sort by score descending; equal scores sort by doc id descending, compared byte-wise
(trec_eval's ``strcmp(p2->docno, p1->docno)``). For valid UTF-8, byte order equals Python's
code-point order of ``str``, so plain ``sorted`` gives it. trec_eval stores scores as C ``float``,
so "equal" means equal after rounding to float32 (0.3 and 0.30000000000000004 tie there, so do
1e20 and 1.000000000001e20): every function here rounds scores to float32 before comparing.
Rank = 1 + number of documents sorting before.

Evaluated queries follow pytrec_eval: a query is evaluated when it has a non-empty qrels entry
(judged, even if every grade is 0) and was ranked (pool path: it is in ``query_ids``; run path:
it is a key of the run, even with no documents). Queries outside the qrels are dropped. A query
whose judgements are all grade <= 0 is kept with no rows: the trec_eval measures give it 0 (as
pytrec_eval does), the rank-set measures (MaxR, Complete@K, SameLangFirst, ...) NaN.
"""
from __future__ import annotations

from collections import deque
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Iterator, Mapping, Sequence

import numpy as np

__all__ = ["RankTable", "tie_keys", "judged_pairs", "JudgedPairs", "rank_relevant", "rank_run", "rank_run_arrays",
           "rank_in_segments", "Ranked", "ExactRanker", "rank_blocks", "run_blocks", "RUN_ROWS", "round32",
           "count_band", "band_limits", "BlockParts", "blas_threads"]

RUN_ROWS = 256  # score rows per block when a {qid: {docid: score}} run is laid over a pool

_CHUNK = 1 << 20  # elements per temporary: small enough for malloc to reuse (no fresh page faults)
_TIE_PAIRS = 1 << 20  # tied (entry, relevant doc) pairs held before switching to vocabulary-wide keys


@dataclass(frozen=True)
class RankTable:
    """Ranks of every relevant (grade > 0) judgement, flat, grouped by query."""

    query_ids: tuple[str, ...]  # n evaluated queries, in order
    num_docs: np.ndarray  # (n,) float: |D| after exclusions; nan if unknown (TREC runs)
    qidx: np.ndarray  # (m,) int64 index into query_ids, sorted ascending
    rank: np.ndarray  # (m,) float64, 1-based; inf when not retrieved and |D| unknown
    grade: np.ndarray  # (m,) float64 > 0
    same_lang: np.ndarray | None = None  # (m,) bool: doc language == query language
    doc_lang: np.ndarray | None = None  # (m,) str: language tag of the judged document (PEER)
    doc_id: np.ndarray | None = None  # (m,) str: the judged document's id (a pool's ranks file)

    def __post_init__(self) -> None:
        n, m = len(self.query_ids), len(self.qidx)
        if self.num_docs.shape != (n,):
            raise ValueError(f"num_docs has shape {self.num_docs.shape}, expected ({n},)")
        optional = tuple(a for a in ("same_lang", "doc_lang", "doc_id") if getattr(self, a) is not None)
        for name in ("rank", "grade") + optional:
            if getattr(self, name).shape != (m,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({m},)")
        if m and (self.qidx[0] < 0 or self.qidx[-1] >= n or np.any(np.diff(self.qidx) < 0)):
            raise ValueError("qidx must be sorted ascending and index query_ids")
        if m and not np.all(self.grade > 0):
            raise ValueError("RankTable holds relevant judgements only (grade > 0)")

    @property
    def num_rel(self) -> np.ndarray:
        """(n,) number of relevant documents per query."""
        return np.bincount(self.qidx, minlength=len(self.query_ids))


def tie_keys(doc_ids: Sequence[str]) -> np.ndarray:
    """int64 key per doc: its position in byte-wise ascending id order (bigger key sorts earlier on equal score)."""
    ids = list(doc_ids)
    if ids and max(map(len, ids)) <= 64 and not any("\x00" in d for d in ids):
        arr = np.array(ids)  # numpy 'U' compares code points = UTF-8 byte order (no NULs here)
        order = np.argsort(arr, kind="stable")
        dup = np.flatnonzero(arr[order[1:]] == arr[order[:-1]])
        if len(dup):
            raise ValueError(f"duplicate doc id {ids[order[dup[0]]]!r}")
    else:
        order = np.asarray(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
        for a, b in zip(order, order[1:]):
            if ids[a] == ids[b]:
                raise ValueError(f"duplicate doc id {ids[a]!r}")
    keys = np.empty(len(ids), dtype=np.int64)
    keys[order] = np.arange(len(ids), dtype=np.int64)
    return keys


def as_trec_scores(a: np.ndarray) -> np.ndarray:
    """Scores as trec_eval compares them: float32 (a copy unless already float32)."""
    flat = a.reshape(-1)
    if np.issubdtype(a.dtype, np.floating) and any(np.isnan(flat[ix]).any() for ix in _chunks(len(flat))):
        raise ValueError("NaN score")
    with np.errstate(over="ignore"):
        return a.astype(np.float32, copy=False)


def _doc_index(doc_ids: Sequence[str]) -> dict[str, int]:
    index = {d: i for i, d in enumerate(doc_ids)}
    if len(index) != len(doc_ids):
        from ..util.strict import first_duplicate

        raise ValueError(f"duplicate doc id {first_duplicate(doc_ids)[0]!r}")
    return index


def finish_table(query_ids, num_docs, t, rank, grade, same, doc_lang=None, doc_id=None) -> RankTable:
    order = np.lexsort((np.asarray(rank, dtype=np.float64), t))
    arrays = dict(
        num_docs=np.array(num_docs, dtype=np.float64),
        qidx=np.asarray(t, dtype=np.int64)[order],
        rank=np.asarray(rank, dtype=np.float64)[order],
        grade=np.asarray(grade, dtype=np.float64)[order],
        same_lang=None if same is None else np.asarray(same, dtype=bool)[order],
        doc_lang=None if doc_lang is None else np.asarray(doc_lang, dtype=str)[order],
        doc_id=None if doc_id is None else np.asarray(doc_id, dtype=object)[order],
    )
    for a in arrays.values():
        if a is not None:
            a.flags.writeable = False
    return RankTable(query_ids=tuple(query_ids), **arrays)


@dataclass(frozen=True)
class JudgedPairs:
    """The (query row, doc column) pairs a pool ranking needs: relevant judgements and exclusions.

    ``rel_row``/``ex_row`` are sorted ascending (rows index ``query_ids``); ``evaluated`` lists the
    rows of the evaluated queries; ``num_docs`` their |D| after exclusions.
    """

    query_ids: tuple[str, ...]
    evaluated: list[int]
    num_docs: np.ndarray
    rel_row: np.ndarray
    rel_col: np.ndarray
    rel_grade: list
    ex_row: np.ndarray
    ex_col: np.ndarray
    rel_doc: tuple[str, ...] = ()  # the document id of each relevant pair, in ``rel_*`` order

    def finish(self, rank: np.ndarray, doc_langs: Sequence[str] | None = None,
               query_lang: str | None = None) -> RankTable:
        """The RankTable of these pairs given ``rank`` (one per relevant pair, in ``rel_*`` order)."""
        rel_col = self.rel_col
        t_of_row = np.full(len(self.query_ids), -1, dtype=np.int64)
        t_of_row[self.evaluated] = np.arange(len(self.evaluated))
        same = doc_lang = None
        if doc_langs is not None:
            doc_lang = np.asarray(doc_langs, dtype=object)[rel_col] if len(rel_col) else np.zeros(0, str)
            if query_lang is not None:
                same = doc_lang == query_lang if len(rel_col) else np.zeros(0, bool)
        doc_id = self.rel_doc if len(self.rel_doc) == len(rel_col) else None
        return finish_table([self.query_ids[i] for i in self.evaluated], self.num_docs, t_of_row[self.rel_row],
                       rank, self.rel_grade, same, doc_lang, doc_id)


def judged_pairs(
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    exclusions: Mapping[str, Collection[str]] = {},
    doc_langs: Sequence[str] | None = None,
) -> JudgedPairs:
    """Check a pool's ids, qrels and exclusions (as ``rank_relevant`` does) and index its pairs."""
    doc_ids, query_ids = list(doc_ids), list(query_ids)
    n_docs, n_q = len(doc_ids), len(query_ids)
    dindex = _doc_index(doc_ids)
    if doc_langs is not None and len(doc_langs) != n_docs:
        raise ValueError(f"doc_langs has {len(doc_langs)} entries for {n_docs} docs")
    if len(set(query_ids)) != n_q:
        from ..util.strict import first_duplicate

        raise ValueError(f"duplicate query id {first_duplicate(query_ids)[0]!r}")

    evaluated = [i for i, q in enumerate(query_ids) if qrels.get(q)]
    rel_row, rel_col, rel_grade, rel_doc, ex_row, ex_col = [], [], [], [], [], []
    num_docs = np.full(len(evaluated), float(n_docs))
    no_exclusions = frozenset()
    for t, i in enumerate(evaluated):
        q = query_ids[i]
        excl = no_exclusions
        if exclusions.get(q):
            excl = set()
            for d in exclusions[q]:
                if d not in dindex:
                    raise ValueError(f"excluded doc {d!r} of query {q!r} is not in the pool")
                excl.add(dindex[d])
            num_docs[t] -= len(excl)
            ex_row.extend([i] * len(excl))
            ex_col.extend(sorted(excl))
        for d, g in qrels[q].items():
            col = dindex.get(d)
            if col is None:
                raise ValueError(f"qrels doc {d!r} of query {q!r} is not in the pool")
            if g > 0:
                if col in excl:
                    raise ValueError(f"relevant doc {d!r} of query {q!r} is excluded")
                rel_row.append(i)
                rel_col.append(col)
                rel_grade.append(g)
                rel_doc.append(d)
    return JudgedPairs(tuple(query_ids), evaluated, num_docs, np.asarray(rel_row, dtype=np.int64),
                       np.asarray(rel_col, dtype=np.int64), rel_grade, np.asarray(ex_row, dtype=np.int64),
                       np.asarray(ex_col, dtype=np.int64), tuple(rel_doc))


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
    rank = np.full(len(p.rel_row), np.nan)
    seen = np.zeros(len(query_ids), dtype=bool)
    with BlockParts() as parts:
        for start, scores in blocks:
            _rank_block(start, scores, p, keys, rank, seen, parts)
    missing = [query_ids[i] for i in p.evaluated if not seen[i]]
    if missing:
        raise ValueError(f"no scores for {len(missing)} evaluated queries, e.g. {missing[0]!r}")
    return p.finish(rank, doc_langs, query_lang)


def _rank_block(start: int, scores, p: JudgedPairs, keys: np.ndarray, rank: np.ndarray, seen: np.ndarray,
                parts: "BlockParts") -> None:
    """``rank_relevant``'s work for one block: the ranks of its relevant pairs, into ``rank``."""
    n_q, n_docs = len(seen), len(keys)
    bounded = hasattr(scores, "approx") or hasattr(scores, "part")
    scores = scores if bounded else np.asarray(scores)
    if len(scores.shape) != 2 or scores.shape[1] != n_docs:
        raise ValueError(f"score block has shape {scores.shape}, expected (b, {n_docs})")
    stop = start + scores.shape[0]
    if start < 0 or stop > n_q:
        raise ValueError(f"score block rows {start}:{stop} outside {n_q} queries")
    if seen[start:stop].any():
        raise ValueError(f"score block rows {start}:{stop} overlap an earlier block")
    seen[start:stop] = True
    if hasattr(scores, "part"):  # rows still to compute (retrievers.dense.BoundedBlock)
        parts.submit(scores, lambda part, a: _rank_bounded(part, start + a, p, keys, rank))
        return
    if bounded:  # a float32 product + error bound (retrievers.dense.BoundedScores)
        _rank_bounded(scores, start, p, keys, rank)
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
        beats = (block > s) | ((block == s) & (keys[None, :] > keys[cols][:, None]))
        rank[a:b] = 1 + np.count_nonzero(beats, axis=1)


class BlockParts:
    """Computes ``BoundedBlock`` rows on the BLAS's thread count of threads: each thread computes one
    part's product on one BLAS thread and hands it to ``work(scores, offset)`` (a ``BoundedScores``
    of rows ``offset:offset + b`` of the block), so the counting spreads over the cores like the
    product. One thread: the parts are worked in turn, in the caller's thread. Parts of at most two
    blocks are queued; a part's scores exist only while a thread works on it, so at most one
    block's worth of scores is held. Leaving the ``with`` waits for every part (or, on an error,
    drops the queued ones) and lifts the one-thread limit."""

    def __init__(self) -> None:
        self.threads = 0
        self.pool = None
        self.stack = ExitStack()
        self.queued: deque = deque()  # per block, its parts' futures

    def __enter__(self) -> "BlockParts":
        return self

    def submit(self, block, work: Callable[[object, int], None]) -> None:
        if not self.threads:
            self.threads = blas_threads()
            if self.threads > 1:
                from concurrent.futures import ThreadPoolExecutor
                from threadpoolctl import ThreadpoolController

                self.stack.enter_context(ThreadpoolController().limit(limits=1, user_api="blas"))
                self.pool = self.stack.enter_context(ThreadPoolExecutor(self.threads, "clirbench-rank"))
        n = block.shape[0]
        step = max(1, -(-n // self.threads))
        if self.pool is None:
            for a in range(0, n, step):
                work(block.part(a, a + step), a)
            return
        self.queued.append([self.pool.submit(_work_on_part, work, block, a, a + step) for a in range(0, n, step)])
        while len(self.queued) > 2:
            for f in self.queued.popleft():
                f.result()

    def __exit__(self, kind, *_) -> None:
        try:
            if kind is None:
                while self.queued:
                    for f in self.queued.popleft():
                        f.result()
        finally:
            for fs in self.queued:
                for f in fs:
                    f.cancel()
            self.stack.close()


def _work_on_part(work, block, a: int, b: int) -> None:
    work(block.part(a, b), a)


def blas_threads() -> int:
    """The thread count of the loaded BLAS (threadpoolctl; OPENBLAS_NUM_THREADS and the like set it)."""
    from threadpoolctl import threadpool_info

    return max([i.get("num_threads") or 1 for i in threadpool_info() if i.get("user_api") == "blas"], default=1)


def _exclude(block: np.ndarray, rows: np.ndarray, p: JudgedPairs) -> None:
    """NaN (never sorts before) at the excluded docs of ``rows`` (row i of ``block`` is ``rows[i]``)."""
    e_lo, e_hi = np.searchsorted(p.ex_row, rows), np.searchsorted(p.ex_row, rows, side="right")
    cnt = e_hi - e_lo
    if cnt.sum():
        r = np.repeat(np.arange(len(rows)), cnt)
        e = np.repeat(e_lo - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
        block[r, p.ex_col[e]] = np.nan


def round32(x: np.ndarray, up: bool) -> np.ndarray:
    """float32 values <= x (up=False) or >= x (up=True), the nearest such."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)
    if up:
        return np.where(f.astype(np.float64) < x, np.nextafter(f, np.float32(np.inf)), f)
    return np.where(f.astype(np.float64) > x, np.nextafter(f, np.float32(-np.inf)), f)


def band_limits(lo: np.ndarray, hi: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 ``(lo', hi')`` for approximate scores within ``err`` of the true dot product: an
    approximate score > hi' is surely a canonical float32 score > ``hi``, one < lo' surely < ``lo``."""
    up = np.nextafter(np.asarray(hi, np.float32), np.float32(np.inf)).astype(np.float64) + err
    down = np.nextafter(np.asarray(lo, np.float32), np.float32(-np.inf)).astype(np.float64) - err
    return round32(down, up=False), round32(up, up=True)


def count_band(R: np.ndarray, lo: np.ndarray, hi: np.ndarray, rows: int = 64):
    """Per row the count of entries > hi, and the entries in [lo, hi] as (row, col, score); in row
    chunks whose boolean temporaries stay in cache (about 3x faster than whole-block passes). A
    chunk with few entries >= lo (a good retriever's: the relevant document near the top) is
    counted from those entries alone, with one comparison pass instead of two."""
    n, w = R.shape
    gt = np.empty(n, dtype=np.int64)
    above, atleast = np.empty((min(rows, n), w), dtype=bool), np.empty((min(rows, n), w), dtype=bool)
    parts = []
    for a in range(0, n, rows):
        b = min(a + rows, n)
        t, u = above[:b - a], atleast[:b - a]
        np.greater_equal(R[a:b], lo[a:b, None], out=u)
        if np.count_nonzero(u) <= u.size >> 6:  # sparse: gather the entries >= lo, split them at hi
            i, c = np.divmod(np.flatnonzero(u), w)
            v = R[a + i, c]
            over = v > hi[a + i]
            gt[a:b] = np.bincount(i[over], minlength=b - a)
            inside = np.flatnonzero(~over)
            if len(inside):
                parts.append((a + i[inside], c[inside], v[inside]))
            continue
        np.greater(R[a:b], hi[a:b, None], out=t)
        for r in range(b - a):  # count_nonzero of one row: a popcount, 1.5x a casting row sum
            gt[a + r] = np.count_nonzero(t[r])
        np.not_equal(t, u, out=u)  # lo <= x <= hi
        flat = np.flatnonzero(u)  # 1-d: a 2-d np.nonzero costs several times more
        if len(flat):
            i, c = np.divmod(flat, w)
            parts.append((a + i, c, R[a + i, c]))
    if not parts:
        return gt, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return (gt,) + tuple(np.concatenate(x) for x in zip(*parts))


_NOT_IEEE = ("a float32 product fell outside its error bound: the products are not IEEE float32 (TF32 or "
             "reduced-precision matmul?); rank with exact scores instead")


def _rank_bounded(block, start: int, p: JudgedPairs, keys: np.ndarray, rank: np.ndarray) -> None:
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
            raise RuntimeError(_NOT_IEEE)
        gt, i, c, _ = count_band(R, lo, hi)
        keep = c != cols[i]
        i, c = i[keep], c[keep]
        ex = block.exact(local[i], c)
        before = (ex > s[i]) | ((ex == s[i]) & (keys[c] > keys[cols[i]]))
        rank[a:b] = 1 + gt + np.bincount(i[before], minlength=b - a)


class _Ties:
    """Counts, per relevant row, tied entries whose doc id sorts first (byte-wise greater).

    Ids are compared only for the docs that tie (usually few); past a size, it switches to the
    tie keys of the whole vocabulary.
    """

    def __init__(self, doc_ids: Sequence[str], rel_col: np.ndarray, n_rows: int) -> None:
        self.doc_ids, self.rel_col = doc_ids, rel_col
        self.keys: np.ndarray | None = None
        self.rows: list[np.ndarray] = []
        self.docs: list[np.ndarray] = []
        self.pending = 0
        self.extra = np.zeros(n_rows, dtype=np.int64)

    def add(self, rows: np.ndarray, docs: np.ndarray) -> None:
        if self.keys is not None:
            k = self.keys
            self.extra += np.bincount(rows[k[docs] > k[self.rel_col[rows]]], minlength=len(self.extra))
            return
        self.rows.append(rows)
        self.docs.append(docs)
        self.pending += len(rows)
        if self.pending > max(_TIE_PAIRS, len(self.doc_ids) // 4):
            self.keys = tie_keys(self.doc_ids)
            rows, docs = np.concatenate(self.rows), np.concatenate(self.docs)
            self.rows, self.docs = [], []
            self.add(rows, docs)

    def counts(self) -> np.ndarray:
        if self.rows:
            rows, docs = np.concatenate(self.rows), np.concatenate(self.docs)
            ids = self.doc_ids
            a = np.array([ids[i] for i in docs.tolist()], dtype=object)
            b = np.array([ids[i] for i in self.rel_col[rows].tolist()], dtype=object)
            self.extra += np.bincount(rows[a > b], minlength=len(self.extra))  # str order = byte order
            self.rows, self.docs = [], []
        return self.extra


def _chunks(n: int) -> Iterator[slice]:
    return (slice(a, min(a + _CHUNK, n)) for a in range(0, n, _CHUNK))


def _where(mask_of: Callable[[slice], np.ndarray], n: int) -> np.ndarray:
    """np.flatnonzero over [0, n) computed chunk by chunk (no n-sized temporary)."""
    parts = [ix.start + np.flatnonzero(mask_of(ix)) for ix in _chunks(n)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def rank_run_arrays(
    qidx: np.ndarray,
    doc: np.ndarray,
    score: np.ndarray,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
) -> RankTable:
    """Ranks of relevant docs from a top-k run held as flat arrays.

    Entry i says: query ``query_ids[qidx[i]]`` retrieved ``doc_ids[doc[i]]`` with ``score[i]``
    (any order; no duplicate (query, doc) pairs). Every query of ``query_ids`` with non-empty qrels
    is evaluated, even with no entries (pytrec_eval evaluates an empty run dict too). Relevant docs
    not retrieved get rank inf, |D| is nan; qrels docs absent from ``doc_ids`` are not retrieved.
    Cost: one chunked pass over the entries per retrieved relevant doc of the query that has most
    of them, restricted to the queries that still have one; temporaries stay chunk-sized.
    """
    qidx, doc, score = np.asarray(qidx), np.asarray(doc), np.asarray(score)
    if not (qidx.ndim == doc.ndim == score.ndim == 1 and len(qidx) == len(doc) == len(score)):
        raise ValueError("qidx, doc and score must be 1-d arrays of equal length")
    n, n_q, n_docs = len(qidx), len(query_ids), len(doc_ids)
    if n and (qidx.min() < 0 or qidx.max() >= n_q or doc.min() < 0 or doc.max() >= n_docs):
        raise ValueError("qidx or doc index out of range")
    score = as_trec_scores(score)
    if all(np.all(qidx[ix.start + 1:ix.stop + 1] >= qidx[ix]) for ix in _chunks(n - 1)):
        bounds = np.arange(n_q + 1, dtype=qidx.dtype if n_q < np.iinfo(qidx.dtype).max else np.int64)
        run_len = np.diff(np.searchsorted(qidx, bounds))  # grouped by query (same dtype: no copy)
    else:
        run_len = sum((np.bincount(qidx[ix], minlength=n_q) for ix in _chunks(n)), np.zeros(n_q, np.int64))
    evaluated = [i for i, q in enumerate(query_ids) if qrels.get(q)]
    t_of_row = np.full(n_q, -1, dtype=np.int64)
    t_of_row[evaluated] = np.arange(len(evaluated))

    # index only the relevant docs: a dict over a large vocabulary costs more than everything else
    wanted = {d for i in evaluated for d, g in qrels[query_ids[i]].items() if g > 0}
    dindex: dict[str, int] = {}
    for i, d in enumerate(doc_ids):
        if d in wanted:
            if d in dindex:
                raise ValueError(f"duplicate doc id {d!r}")
            dindex[d] = i
    rel_row, rel_col, rel_grade = [], [], []
    for i in evaluated:
        for d, g in qrels[query_ids[i]].items():
            if g > 0:
                rel_row.append(i)
                rel_col.append(dindex.get(d, -1))
                rel_grade.append(g)
    rel_row = np.asarray(rel_row, dtype=np.int64)
    rel_col = np.asarray(rel_col, dtype=np.int64)
    rank = np.full(len(rel_row), np.inf)

    # Which run entries are relevant: filter by doc first (cheap), then match (query, doc) keys.
    known = np.flatnonzero(rel_col >= 0)
    rel_key = rel_row[known] * n_docs + rel_col[known]
    order = np.argsort(rel_key, kind="stable")
    sorted_key = rel_key[order]
    is_rel_doc = np.zeros(n_docs, dtype=bool)
    is_rel_doc[rel_col[known]] = True
    entries, whiches = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for ix in _chunks(n if len(sorted_key) else 0):
        cand = ix.start + np.flatnonzero(is_rel_doc[doc[ix]])
        cand_key = qidx[cand].astype(np.int64) * n_docs + doc[cand]
        pos = np.minimum(np.searchsorted(sorted_key, cand_key), len(sorted_key) - 1)
        hit = sorted_key[pos] == cand_key
        entries.append(cand[hit])
        whiches.append(known[order[pos[hit]]])
    entry = np.concatenate(entries)  # run entries that are relevant judgements
    which = np.concatenate(whiches)  # their rows in rel_*
    if len(np.unique(which)) != len(which):
        values, counts = np.unique(which, return_counts=True)
        twice = int(values[counts > 1][0])
        raise ValueError(f"duplicate (query, doc) pair in run: ({query_ids[int(rel_row[twice])]!r}, "
                         f"{doc_ids[int(rel_col[twice])]!r})")
    if len(entry):
        _rank_entries(qidx, doc, score, run_len, entry, which, _Ties(doc_ids, rel_col, len(rank)), rank)
    num_docs = np.full(len(evaluated), np.nan)
    return finish_table([query_ids[i] for i in evaluated], num_docs, t_of_row[rel_row], rank, rel_grade, None)


def _rank_entries(qidx, doc, score, run_len, entry, which, ties: _Ties, rank: np.ndarray) -> None:
    """rank[which[i]] = 1 + number of entries of its query sorting before relevant entry[i]."""
    n, n_q = len(qidx), len(run_len)
    ent_q, ent_s = qidx[entry].astype(np.int64), score[entry]
    # slot j = j-th retrieved relevant doc of its query; one pass per slot
    o = np.argsort(ent_q, kind="stable")
    ent_q, ent_s, which = ent_q[o], ent_s[o], which[o]
    starts = np.flatnonzero(np.r_[True, np.diff(ent_q) != 0])
    slot = np.arange(len(ent_q)) - np.repeat(starts, np.diff(np.r_[starts, len(ent_q)]))
    per_q = np.bincount(ent_q, minlength=n_q)
    subset = None  # positions of the entries still worth scanning (None: all)
    size = n
    for j in range(int(slot.max()) + 1):
        sel = slot == j
        active = per_q > j
        need = int(run_len[active].sum())
        if need * 16 < size:  # few entries left: keep their positions (at most size / 2 bytes)
            subset = _where(lambda ix: active[qidx[ix]], n) if subset is None else subset[active[qidx[subset]]]
            size = len(subset)
        local = need * 2 < size  # else filter inside each chunk
        thr = np.full(n_q, np.nan, dtype=np.float32)  # NaN: no relevant doc in this slot
        thr[ent_q[sel]] = ent_s[sel]
        row_of_q = np.full(n_q, -1, dtype=np.int64)
        row_of_q[ent_q[sel]] = which[sel]
        counts = np.zeros(n_q, dtype=np.int64)
        for ix in _chunks(size):
            pos = np.arange(ix.start, ix.stop) if subset is None else subset[ix]
            if subset is None and not local:
                pos = ix
            cq = qidx[pos]
            if local:
                keep = np.flatnonzero(active[cq])
                pos, cq = (pos[keep] if subset is not None else ix.start + keep), cq[keep]
            cs, ts = score[pos], thr[cq]
            counts += np.bincount(cq[cs > ts], minlength=n_q)
            tie = np.flatnonzero(cs == ts)
            if len(tie):
                ties.add(row_of_q[cq[tie]], doc[pos][tie])
        rank[which[sel]] = 1 + counts[ent_q[sel]]
    rank += ties.counts()


def rank_run(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]]) -> RankTable:
    """Ranks of relevant docs in a TREC run ``{qid: {docid: score}}``; pool unknown (|D| = nan).

    Evaluated queries are those pytrec_eval evaluates: in the run (even with no docs) and with
    non-empty qrels, in run order.
    """
    vocab: dict[str, int] = {}
    qs = [q for q in run if qrels.get(q)]
    sizes = [len(run[q]) for q in qs]
    total = sum(sizes)
    doc = np.fromiter((vocab.setdefault(d, len(vocab)) for q in qs for d in run[q]), np.int64, count=total)
    score = np.fromiter((s for q in qs for s in run[q].values()), np.float64, count=total)  # rounded later
    qidx = np.repeat(np.arange(len(qs), dtype=np.int64), sizes)
    return rank_run_arrays(qidx, doc, score, qs, list(vocab), qrels)


def rank_in_segments(
    score: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    entry: np.ndarray,
    segment: np.ndarray,
    doc_before: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """1 + number of entries of its segment sorting before each ``entry`` (a run grouped by query).

    ``score`` holds trec_eval scores (float32, see ``as_trec_scores``); entry i belongs to the
    segment ``starts[segment[i]]:ends[segment[i]]``. ``doc_before(a, b)`` says, for entry positions
    ``a`` and ``b`` with equal scores, whether a's doc id sorts first (byte-wise greater). Cost: one
    comparison per (entry, entry of its segment), done in chunks; ids are compared for ties only.
    """
    entry, segment = np.asarray(entry, dtype=np.int64), np.asarray(segment, dtype=np.int64)
    rank = np.ones(len(entry), dtype=np.float64)
    seg_len = (ends - starts).astype(np.int64)
    width = int(seg_len.max()) if len(seg_len) else 0
    if len(seg_len) * width <= 2 * int(seg_len.sum()) + _CHUNK:  # rows of a padded matrix (NaN: no entry)
        if (score.dtype == np.float32 and np.all(seg_len == width) and len(seg_len)
                and np.all(starts[1:] == ends[:-1])):  # the usual run: segments back to back, one depth
            padded = score[int(starts[0]):int(ends[-1])].reshape(-1, width)  # a view, no copy
        else:
            padded = np.full((len(seg_len), width), np.nan, dtype=np.float32)
            owner = np.repeat(np.arange(len(seg_len)), seg_len)
            col = np.arange(len(owner)) - np.repeat(np.cumsum(seg_len) - seg_len, seg_len)
            padded[owner, col] = score[np.repeat(starts, seg_len) + col]
        step = max(1, _CHUNK // max(width, 1))
        for lo in range(0, len(entry), step):
            e, g = entry[lo:lo + step], segment[lo:lo + step]
            rows, thr = padded[g], score[e][:, None]
            rank[lo:lo + step] += np.count_nonzero(rows > thr, axis=1)
            ti, tj = np.nonzero(rows == thr)
            pos = starts[g[ti]] + tj
            keep = pos != e[ti]
            if keep.any():
                ti, pos = ti[keep], pos[keep]
                before = np.asarray(doc_before(pos, e[ti]), dtype=bool)
                rank[lo:lo + step] += np.bincount(ti[before], minlength=len(e))
        return rank
    lens = seg_len[segment]
    lo = 0
    while lo < len(entry):  # chunks of entries whose segments hold about _CHUNK positions together
        hi = lo + max(1, int(np.searchsorted(np.cumsum(lens[lo:]), _CHUNK, side="right")))
        ln = lens[lo:hi]
        owner = np.repeat(np.arange(hi - lo), ln)
        first = np.repeat(np.cumsum(ln) - ln, ln)
        pos = np.repeat(starts[segment[lo:hi]].astype(np.int64), ln) + np.arange(len(owner)) - first
        s, thr = score[pos], score[entry[lo:hi]][owner]
        rank[lo:hi] += np.bincount(owner[s > thr], minlength=hi - lo)
        tie = np.flatnonzero((s == thr) & (pos != entry[lo:hi][owner]))
        if len(tie):
            before = np.asarray(doc_before(pos[tie], entry[lo:hi][owner[tie]]), dtype=bool)
            rank[lo:hi] += np.bincount(owner[tie][before], minlength=hi - lo)
        lo = hi
    return rank


# ----------------------------------------------------------------------------- pools and rankers


@dataclass(frozen=True)
class Ranked:
    """A ranker's answer (``evaluation.Ranker``): the ranks of the relevant documents, and how they
    were obtained (None: full score rows, nothing to record)."""

    table: RankTable
    info: Mapping | None = None


def rank_blocks(blocks: Iterable[tuple[int, np.ndarray]], pool) -> RankTable:
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


class ExactRanker:
    """The default ranker: ``retriever.score`` over the whole pool in query blocks, exact ranks by the
    tie rule (memory: one block of score rows at a time)."""

    def supports(self, measures) -> None:
        """Every measure: the ranks are exact at any depth."""

    def rank(self, retriever, seen, pool) -> Ranked:
        score = getattr(retriever, "score_bounded", retriever.score)  # dense: float32 product + exact band
        return Ranked(rank_blocks(score(seen.queries, seen.docs), pool))
