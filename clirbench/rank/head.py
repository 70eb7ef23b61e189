"""The head of a ranking: each query's top-K documents under the tie rule of ``table.py`` (score
descending, then document id descending byte-wise; excluded documents never appear; documents a
run did not return (-inf) neither). ``HeadBuilder`` keeps it from score blocks as a ranker computes
them (full rows, document shards, a device's tensors, float32 products with their error bound),
in memory O(queries x (K + languages) + one block); ``head_of_run`` reads it from a ``{qid: {docid:
score}}`` run. Both also count the head's ``tail``: the documents outside it tied with its K-th score.
Over 500 lines: the builder's merge, its blocks' top-K and its tail counting share private helpers
and state; split, they would import private names across modules.
"""
from __future__ import annotations

import dataclasses
import hashlib
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Collection, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .bands import band_limits, round32
from .products import BoundedBlock, BoundedScores, exact_scores
from .table import as_trec_scores, tie_keys

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["DEFAULT_DEPTH", "Head", "HeadBuilder", "head_of_run", "excluded_rows", "order_codes"]

DEFAULT_DEPTH = 1000  # K: a run's usual depth (trec_eval's), capped at the pool's size
_EXACT_ROWS = 16  # bounded blocks at most this many times K wide are scored exactly whole (float64 BLAS)
_CHUNK = 1 << 22  # scores compared at a time
_LAST = np.uint64(2 ** 64 - 1)  # the order code of an empty slot


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
    # (n, L) int64, L = len(langs): per query, the documents outside its list (ranked, not excluded)
    # whose float32 score equals its K-th score, by language; all 0 for a list not full. None: unknown
    tail: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.query_ids)
        if self.docs.ndim != 2 or self.docs.shape[0] != n or self.scores.shape != self.docs.shape:
            raise ValueError(f"docs {self.docs.shape} and scores {self.scores.shape} must be ({n}, K)")
        if self.doc_langs is not None and len(self.doc_langs) != len(self.doc_ids):
            raise ValueError("doc_langs must give one language per document")
        if self.tail is not None and np.shape(self.tail) != (n, len(self.langs)):
            raise ValueError(f"tail {np.shape(self.tail)} must be ({n}, {len(self.langs)}): one column per language")

    @cached_property
    def langs(self) -> tuple[str, ...]:
        """The columns of ``tail``: the documents' languages, sorted (one "" when the head has none)."""
        return ("",) if self.doc_langs is None else tuple(sorted(set(self.doc_langs)))

    def select(self, query_ids: Sequence[str]) -> "Head":
        """The rows of ``query_ids``, in that order (a KeyError for an id not in this head)."""
        at = {q: i for i, q in enumerate(self.query_ids)}
        rows = np.asarray([at[q] for q in query_ids], dtype=np.int64)
        return Head(tuple(query_ids), self.doc_ids, self.doc_langs, self.docs[rows], self.scores[rows],
                    None if self.tail is None else self.tail[rows])

    def top(self, k: int) -> "Head":
        """Each query's first ``k`` documents (``self`` when ``k`` >= K), with the tail at the new end:
        the documents after position k tied with the k-th score, those of the old tail too when the
        k-th score is the K-th."""
        if k >= self.depth:
            return self
        if k < 1:
            raise ValueError(f"a head keeps at least one document per query, not {k}")
        docs, scores = self.docs[:, :k], self.scores[:, :k]
        tail = None
        if self.tail is not None:
            kth = np.where(docs[:, -1] >= 0, scores[:, -1], np.nan)  # NaN: a list shorter than k ties nothing
            past = (self.scores[:, k:] == kth[:, None]) & (self.docs[:, k:] >= 0)
            lang = np.searchsorted(np.asarray(self.langs), np.asarray(self._langs))[np.maximum(self.docs[:, k:], 0)] \
                if self.doc_langs is not None else np.zeros(past.shape, dtype=np.int64)
            n, n_langs = len(self.query_ids), len(self.langs)
            rows = np.broadcast_to(np.arange(n)[:, None], past.shape)
            tail = np.bincount(rows[past] * n_langs + lang[past], minlength=n * n_langs).reshape(n, n_langs)
            tail += np.where((kth == self.scores[:, -1])[:, None], self.tail, 0)
        return Head(self.query_ids, self.doc_ids, self.doc_langs, docs.copy(), scores.copy(), tail)

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
    counts once. Thread-safe. ``tee``/``scorer`` feed it the blocks a ranker already computes.

    ``tail[i, l]``: the documents seen outside row i's top-K whose score equals its K-th, of language
    ``langs[l]`` (``doc_langs`` sorted; one "" without them). Counted as the blocks come: a block's
    documents tied with the K-th that its merge pushes past K (or ``_block_top`` leaves out of a row
    with more than 2K candidates), reset whenever the K-th score rises. A document fed again in the
    rows and column set it was fed in (a shard scored twice, as counting in two passes does) is
    skipped, so it counts once; column sets that overlap in part (no ranker feeds them: its shards
    partition the pool) leave the tail unknown (``tail_exact`` False, ``finish`` gives None)."""

    def __init__(self, n_queries: int, keys: np.ndarray, depth: int = DEFAULT_DEPTH,
                 excluded: Mapping[int, np.ndarray] | None = None, doc_langs: Sequence[str] | None = None) -> None:
        if int(depth) < 1:
            raise ValueError(f"depth must be >= 1, not {depth}")
        self.keys = np.asarray(keys, dtype=np.int64)
        self.n_docs = len(self.keys)
        self.langs = ("",) if doc_langs is None else tuple(sorted(set(doc_langs)))
        self.lang_index = np.zeros(self.n_docs, np.int64) if doc_langs is None else \
            np.searchsorted(np.asarray(self.langs, dtype=str), np.asarray(list(doc_langs), dtype=str))
        self.doc_of_key = np.empty_like(self.keys)  # keys are a permutation of 0..n-1
        self.doc_of_key[self.keys] = np.arange(self.n_docs)
        self.k = min(int(depth), self.n_docs)
        self.excluded = {int(r): np.asarray(c, dtype=np.int64) for r, c in (excluded or {}).items() if len(c)}
        self.ex_row = np.fromiter((r for r, c in sorted(self.excluded.items()) for _ in c), np.int64)
        self.ex_col = np.concatenate([c for _, c in sorted(self.excluded.items())]) if self.excluded else \
            np.zeros(0, np.int64)
        self.docs = np.full((n_queries, self.k), -1, dtype=np.int64)
        self.scores = np.full((n_queries, self.k), -np.inf, dtype=np.float32)
        self.tail = np.zeros((n_queries, len(self.langs)), dtype=np.int64)
        self.tail_exact = True  # False once column sets overlapping in part were fed
        self.lock = threading.Lock()
        self.ids: tuple | None = None  # (query_ids, doc_ids, doc_langs) of for_pool
        self._shard_of: dict = {}  # a column set's form (None, slice, index digest) -> its shard number
        self._owner = np.full(self.n_docs, -1, dtype=np.int64)  # column -> the first shard holding it
        self._sizes: list[int] = []  # documents per shard
        self._fed: list[_Spans] = []  # per shard, the rows fed

    @classmethod
    def for_pool(cls, pool: "Pool", depth: int = DEFAULT_DEPTH) -> "HeadBuilder":
        """A builder over ``pool``'s queries and documents, with its exclusions; ``finish`` gives the Head."""
        query_ids = tuple(q.id for q in pool.queries)
        doc_ids = tuple(d.id for d in pool.docs)
        doc_langs = tuple(d.lang for d in pool.docs)
        builder = cls(len(query_ids), tie_keys(doc_ids), depth, excluded_rows(pool.exclusions, query_ids, doc_ids),
                      doc_langs)
        builder.ids = (query_ids, doc_ids, doc_langs)
        return builder

    def finish(self) -> Head:
        if self.ids is None:
            raise ValueError("a HeadBuilder made without ids (for_pool) gives arrays only")
        return Head(*self.ids, self.docs, self.scores, self.tail if self.tail_exact else None)

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
        cidx = None if cols is None else np.arange(*cols.indices(self.n_docs)) if isinstance(cols, slice) else \
            np.asarray(cols, dtype=np.int64)
        b, w = block.shape
        if not b or not w:
            return
        ex_r, ex_c = self._excluded_in(start, b, cidx, w)
        with self.lock:  # the k-th score so far: a block's documents below it cannot enter
            fresh = self._fed[self._shard(cols, cidx)].claim(start, start + b)
            floor = self.scores[start:start + b, -1].copy()
        if not fresh.any():  # fed before: its documents are in the head or its tail already
            return
        keys, langs = (self.keys, self.lang_index) if cidx is None else (self.keys[cidx], self.lang_index[cidx])
        (rows, local, score), spill = _block_top(block, self.k, ex_r, ex_c, floor, keys, (langs, len(self.langs)))
        if not fresh.all():
            keep = fresh[rows]
            rows, local, score = rows[keep], local[keep], score[keep]
            if spill[0] is not None:
                spill[1][~fresh] = np.nan
        self._merge(start, rows, local if cidx is None else cidx[local], score, spill)

    def _shard(self, cols, cidx) -> int:
        """The number of the column set ``cols`` (``cidx`` its indices): the same for the same set in
        any form; a set overlapping an earlier one in part marks the tail unknown. Under the lock."""
        form = None if cols is None else ("slice",) + cols.indices(self.n_docs) if isinstance(cols, slice) else \
            (len(cidx), hashlib.blake2b(np.ascontiguousarray(cidx).tobytes(), digest_size=16).digest())
        shard = self._shard_of.get(form)
        if shard is None:
            cidx = np.arange(self.n_docs) if cidx is None else cidx
            owners = np.unique(self._owner[cidx])
            distinct = len(np.unique(cidx)) == len(cidx)
            if distinct and len(owners) == 1 and owners[0] >= 0 and self._sizes[owners[0]] == len(cidx):
                shard = int(owners[0])  # a set seen before, in another form
            else:
                self.tail_exact &= distinct and not (owners >= 0).any()
                shard = len(self._sizes)
                self._sizes.append(len(cidx))
                self._fed.append(_Spans())
                self._owner[cidx[self._owner[cidx] < 0]] = shard
            self._shard_of[form] = shard
        return shard

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

    def _merge(self, start: int, row: np.ndarray, doc: np.ndarray, score: np.ndarray, spill) -> None:
        """Merge entries (``row`` ascending) into the lists of rows ``start:``, and count the tail:
        entries pushed past K tied with the new K-th, and ``spill`` = (counts (b, L), score (b,)),
        each row's candidates ``_block_top`` left out that tie with ``score``."""
        if not len(row):
            return
        b = int(row.max()) + 1
        pos = np.arange(len(row)) - np.searchsorted(row, row, side="left")
        new_d = np.full((b, int(pos.max()) + 1), -1, dtype=np.int64)
        new_s = np.full(new_d.shape, -np.inf, dtype=np.float32)
        new_d[row, pos], new_s[row, pos] = doc, score
        with self.lock:
            old_d, old_s = self.docs[start:start + b], self.scores[start:start + b]
            if (old_d[:, 0] >= 0).any():
                new_d, new_s = np.concatenate([old_d, new_d], axis=1), np.concatenate([old_s, new_s], axis=1)
            code = order_codes(new_s, self.keys[np.maximum(new_d, 0)])
            code[new_d < 0] = _LAST
            code.sort(axis=1)  # codes are unique per document: equal neighbours are one document seen twice
            again = np.zeros(code.shape, dtype=bool)
            again[:, 1:] = (code[:, 1:] == code[:, :-1]) & (code[:, 1:] != _LAST)
            if again.any():
                code[again] = _LAST
                code.sort(axis=1)
            kth_before = old_s[:, -1].copy()
            d, s = self._decode(code)
            w = min(code.shape[1], self.k)
            old_d[:, :w], old_s[:, :w] = d[:, :w], s[:, :w]
            old_d[:, w:], old_s[:, w:] = -1, -np.inf
            self._count_tail(start, kth_before, d[:, self.k:], s[:, self.k:], spill)

    def _count_tail(self, start: int, kth_before: np.ndarray, past_d: np.ndarray, past_s: np.ndarray,
                    spill) -> None:
        """The tail of rows ``start:start+b`` after a merge: reset where the K-th score rose, plus the
        documents pushed past K (``past_d``/``past_s``, -1 padded) and ``spill`` tied with the K-th."""
        b = len(kth_before)
        kth = self.scores[start:start + b, -1]
        tail = self.tail[start:start + b]
        tail[kth != kth_before] = 0
        r, c = np.nonzero((past_d >= 0) & (past_s == kth[:, None]))
        if len(r):
            n_langs = len(self.langs)
            tail += np.bincount(r * n_langs + self.lang_index[past_d[r, c]], minlength=b * n_langs).reshape(b, n_langs)
        if spill[0] is not None:
            tied = spill[1][:b] == kth
            tail[tied] += spill[0][:b][tied]

    def _decode(self, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(doc, score) of ``order_codes`` (-1, -inf for the padding)."""
        pad = code == _LAST
        key = (np.uint64(0xFFFFFFFF) - (code & np.uint64(0xFFFFFFFF))).astype(np.int64)
        doc = np.where(pad, -1, self.doc_of_key[np.where(pad, 0, key)])
        up = np.uint64(0xFFFFFFFF) - (code >> np.uint64(32))
        bits = np.where(up >= np.uint64(0x80000000), up & np.uint64(0x7FFFFFFF), ~up & np.uint64(0xFFFFFFFF))
        score = bits.astype(np.uint32).view(np.float32)
        return doc, np.where(pad, np.float32(-np.inf), score)


class _Spans:
    """Row ranges fed so far, disjoint and sorted (touching ones joined)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []

    def claim(self, a: int, b: int) -> np.ndarray:
        """Which rows of ``a:b`` were not fed before (a mask); all of them are now."""
        fresh = np.ones(b - a, dtype=bool)
        lo, hi, keep = a, b, []
        for s, e in self.spans:
            if e < a or s > b:
                keep.append((s, e))
            else:
                fresh[max(s, a) - a:max(min(e, b) - a, 0)] = False
                lo, hi = min(lo, s), max(hi, e)
        self.spans = sorted(keep + [(lo, hi)])
        return fresh


class _TeeBlock(BoundedBlock):
    """A ``BoundedBlock`` whose parts, as a ranker computes them, are also added to a HeadBuilder."""

    def __init__(self, block: BoundedBlock, builder: HeadBuilder, start: int, cols) -> None:
        self.__dict__.update(block.__dict__)
        self.inner, self.builder, self.start, self.cols = block, builder, start, cols

    def part(self, a: int, b: int) -> BoundedScores:
        scores = self.inner.part(a, b)
        self.builder.add(self.start + a, scores, self.cols)
        return scores


def order_codes(scores: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """uint64 codes ascending in the tie rule's order: float32 score descending (-0.0 equal to 0.0),
    then tie key descending (keys < 2**32)."""
    bits = (np.asarray(scores, dtype=np.float32) + np.float32(0)).view(np.uint32).astype(np.uint64)
    up = np.where(bits >= np.uint64(0x80000000), ~bits & np.uint64(0xFFFFFFFF), bits | np.uint64(0x80000000))
    return ((np.uint64(0xFFFFFFFF) - up) << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - np.asarray(keys).astype(np.uint64))


# -- one block's top-K ---------------------------------------------------------------------------


def _block_top(block, k: int, ex_r: np.ndarray, ex_c: np.ndarray, floor: np.ndarray, keys: np.ndarray,
               langs: tuple[np.ndarray, int]):
    """(row, column, float32 score), rows ascending, of the documents of one block that may enter each
    row's top-k (at most 2k a row: its best), excluded pairs and -inf left out. ``floor[i]``: a score
    k documents seen before reach (-inf: none yet), so only the block's documents at or above it can
    enter; rows without one find the block's own k-th best. ``keys``: the block columns' tie keys.
    Also the spill: (counts (b, L) by ``langs`` = (the columns' language index, L), the score (b,)) of
    the candidates left out of a row (past its best k) with the score of its k-th kept; (None, None)
    when none were. The documents below ``lo`` score below the row's final k-th, never equal."""
    bounded = isinstance(block, BoundedScores)
    A = block.approx if bounded else block
    b, w = A.shape
    if bounded and isinstance(A, np.ndarray) and w <= _EXACT_ROWS * k:  # narrow: exact rows cost less
        A, bounded = exact_scores(block.Q, block.D), False
    elif not bounded and isinstance(A, np.ndarray):
        A = A if A.dtype == np.float32 else as_trec_scores(np.asarray(A))
    err = np.asarray(block.err, dtype=np.float64) if bounded else None
    lo = _lower_limit(floor, err, approximate=False)
    need = np.flatnonzero(~np.isfinite(floor))
    if len(need):
        kth = _kth_valid(A, need, k, ex_r, ex_c)
        lo[need] = np.maximum(lo[need], _lower_limit(kth, None if err is None else err[need], approximate=True))
    lo = np.maximum(lo, -np.finfo(np.float32).max)  # never -inf (not returned)
    out, spill = [], (None, None)
    step = max(1, _CHUNK // max(w, 1))
    for a in range(0, b, step):  # rows in chunks: candidates of bounded size, however many tie
        r, c = _at_least(A[a:a + step], lo[a:a + step])
        r += a
        if len(ex_r):
            ok = ~np.isin(r * w + c, ex_r * w + ex_c)
            r, c = r[ok], c[ok]
        s = _canonical_scores(block, r, c) if bounded else _gather(A, r, c)
        if len(r) and np.bincount(r - a).max() > 2 * k:  # many ties at the k-th score: the best k of each row
            if spill[0] is None:
                spill = (np.zeros((b, langs[1]), np.int64), np.full(b, np.nan, np.float32))
            r, c, s = _best_k(r, c, s, k, keys, langs, spill)
        out.append((r, c, s))
    r, c, s = zip(*out) if out else ([np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.float32)])
    return (np.concatenate(r), np.concatenate(c), np.concatenate(s)), spill


def _best_k(r, c, s, k: int, keys: np.ndarray, langs: tuple[np.ndarray, int], spill):
    """The best k entries of each row (``r`` ascending) in the tie rule's order; the entries left out
    with the score of their row's k-th kept are counted into ``spill`` (by language) at that score."""
    order = np.lexsort((order_codes(s, keys[c]), r))
    r, c, s = r[order], c[order], s[order]
    pos = np.arange(len(r)) - np.searchsorted(r, r, side="left")
    keep = pos < k
    last = keep & (pos == k - 1)  # rows with more than k: their k-th kept
    kth = np.full(len(spill[1]), np.nan, np.float32)
    kth[r[last]] = s[last]
    tied = ~keep & (s == kth[r])
    if tied.any():
        spill[1][r[last]] = s[last]
        np.add.at(spill[0], (r[tied], langs[0][c[tied]]), 1)
    return r[keep], c[keep], s[keep]


def _lower_limit(kth: np.ndarray, err, approximate: bool) -> np.ndarray:
    """The least score (float32) a document needs to sort at or above a document scored ``kth``:
    ``kth`` itself, or, for approximate scores within ``err`` of the true products, the least
    approximate score whose exact score may reach it (``bands.band_limits``); an ``approximate``
    kth first becomes the least exact score its document can have (kth - err, rounded down)."""
    lo = np.asarray(kth, dtype=np.float32).copy()
    if err is None:
        return lo
    finite = np.isfinite(lo)
    if finite.any():
        sure = lo[finite]
        if approximate:  # exact scores >= kth - err, rounded to float64 and then float32: downwards
            down = sure.astype(np.float64) - err[finite]
            sure = round32(down - np.abs(down) * 2.0 ** -52, up=False)
        lo[finite] = band_limits(sure, sure, err[finite])[0]
    return lo


def _kth_valid(A, rows: np.ndarray, k: int, ex_r: np.ndarray, ex_c: np.ndarray) -> np.ndarray:
    """Per row of ``rows`` the k-th largest score of ``A`` outside the excluded pairs (-inf when fewer)."""
    w = A.shape[1]
    if k > w:
        return np.full(len(rows), -np.inf, dtype=np.float32)
    at = np.full(A.shape[0], -1, dtype=np.int64)
    at[rows] = np.arange(len(rows))
    ex = at[ex_r] >= 0
    if not isinstance(A, np.ndarray):  # a torch tensor: on its device
        import torch  # lazy: optional, a device's block

        P = A[torch.from_numpy(rows).to(A.device)].float()
        if ex.any():
            P[torch.from_numpy(at[ex_r[ex]]).to(A.device), torch.from_numpy(ex_c[ex]).to(A.device)] = -np.inf
        return P.topk(k, dim=1).values[:, -1].cpu().numpy()
    out = np.empty(len(rows), dtype=np.float32)
    step = max(1, _CHUNK // max(w, 1))
    buf = np.empty((min(step, len(rows)), w), dtype=np.float32)  # reused: no fresh pages per chunk
    for a in range(0, len(rows), step):
        P = buf[:min(step, len(rows) - a)]
        np.take(A, rows[a:a + len(P)], axis=0, out=P)
        hit = ex & (at[ex_r] >= a) & (at[ex_r] < a + len(P))
        P[at[ex_r[hit]] - a, ex_c[hit]] = -np.inf
        P.partition(w - k, axis=1)
        out[a:a + len(P)] = P[:, w - k]
    return out


def _at_least(A, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every score >= ``lo`` of its row, by row then column."""
    if not isinstance(A, np.ndarray):
        import torch  # lazy: optional, a device's block

        r, c = torch.nonzero(A >= torch.from_numpy(lo).to(A.device)[:, None], as_tuple=True)
        return r.cpu().numpy().astype(np.int64), c.cpu().numpy().astype(np.int64)
    flat = np.flatnonzero(A >= lo[:, None])  # 1-d: a 2-d nonzero costs several times more
    return np.divmod(flat, A.shape[1])


def _canonical_scores(block: BoundedScores, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``products.exact_scores``' ``fl32(fl64(q . d))`` of the pairs ``(r[i], c[i])`` (r ascending): a
    float64 product per row, rounded to float32 where its error bound (any summation order) decides
    the rounding, as ``ExactScores`` does; the others scored by ``block.exact``."""
    Q = np.asarray(block.Q, dtype=np.float64)
    D = block.D
    out = np.empty(len(r), dtype=np.float64)
    err = np.empty(len(r), dtype=np.float64)
    edge = np.searchsorted(r, np.arange(len(Q) + 1))
    dim = Q.shape[1] if Q.ndim == 2 else 0
    gamma = (dim + 2) * 2.0 ** -53 * (1 + 2.0 ** -20)
    buf = np.empty((int(np.diff(edge).max(initial=0)), D.shape[1] if D.ndim == 2 else 0))  # reused
    for i in np.flatnonzero(np.diff(edge)).tolist():
        a, b = edge[i], edge[i + 1]
        Dc = buf[:b - a]
        np.copyto(Dc, D[c[a:b]])  # float32 products are exact in float64
        out[a:b] = Dc @ Q[i]
        err[a:b] = gamma * np.sqrt(Q[i] @ Q[i]) * np.sqrt(np.einsum("ij,ij->i", Dc, Dc))
    lo, hi = (out - err).astype(np.float32), (out + err).astype(np.float32)
    open_ = np.flatnonzero(lo != hi)
    if len(open_):
        lo[open_] = block.exact(r[open_], c[open_])
    return lo


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
    head = Head(query_ids, doc_ids, None if doc_langs is None else tuple(doc_langs), docs, top)
    lang = np.searchsorted(np.asarray(head.langs, dtype=str), np.asarray(list(doc_langs or ()), dtype=str)) \
        if doc_langs is not None else np.zeros(len(doc_ids), np.int64)
    tied = ~keep & (s == top[r, k - 1]) if k else keep  # past K, tied with the K-th (never -inf)
    n, n_langs = len(query_ids), len(head.langs)
    tail = np.bincount(r[tied] * n_langs + lang[c[tied]], minlength=n * n_langs).reshape(n, n_langs)
    return dataclasses.replace(head, tail=tail.astype(np.int64))
