"""Exact ranks by counting per document shard (docs/large-pools.md).

The rank of a relevant document is 1 + the number of non-excluded pool documents that sort
before it under the tie rule of ``table.py`` (float32 score descending, then doc id descending
byte-wise; -inf = not returned, sorts last). That is a sum over document shards: each shard is
scored against a block of queries and, per (query, relevant doc), the shard documents sorting
before it are counted. Memory is O(queries x relevant + block x shard), never queries x pool. Beside
the count, the shard documents with exactly the relevant document's score are counted
(``RankTable.tied``), and those of them sorting before it (``tied_before``): they add up as the rest.

A shard scored before the shard holding a relevant document cannot compare against that
document's score yet. Three ways to know it, all exact:

- ``relevant_scores``: given (e.g. read from full rows: the fallback for any retriever);
- ``bounds``: an interval [lo, hi] that surely holds it (embeddings: the float64 dot product +- a
  rigorous float32 rounding-error bound). Shard docs above hi are counted, below lo ignored, the
  few inside are kept and resolved once the exact score is seen;
- neither: two passes over the shards, the first reading the relevant scores only.

Comparisons are always done on float32 values (``table.as_trec_scores``' rounding). The ranks
equal ``rows.rank_relevant``'s when the scores are the same float32 values the full-row path sees:
true for any scorer that gives a (query, doc) pair the same value whichever columns share its
block. Shard counts add up across processes (``ShardCounts``, ``ranks_from_counts``: Ray's tasks).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from .bands import NOT_IEEE, band_limits, count_band, round32
from .pairs import judged_pairs
from .parts import BlockParts
from .products import BoundedBlock, BoundedScores
from .shards import shards_of
from .table import RankTable, TiedRanks, as_trec_scores, tie_keys

__all__ = ["rank_relevant_sharded", "ShardCounts", "count_shard", "ranks_from_counts", "ShardCounter", "to_numpy"]


class ShardCounter:
    """Counts, per relevant pair, the shard documents that sort before its document."""

    def __init__(self, pairs, keys: np.ndarray, n_docs: int, check_nan: bool = True) -> None:
        self.p, self.keys, self.n_docs, self.check_nan = pairs, keys, n_docs, check_nan
        m = len(pairs.rel_row)
        self.count = np.zeros(m, dtype=np.int64)
        self.tied = np.zeros(m, dtype=np.int64)  # documents with exactly the pair's score
        self.tied_before = np.zeros(m, dtype=np.int64)  # those of them sorting before it (in ``count`` too)
        self.lo = np.full(m, -np.inf, dtype=np.float32)
        self.hi = np.full(m, np.inf, dtype=np.float32)
        self.known = np.zeros(m, dtype=bool)  # exact score known (lo == hi == score)
        self.held: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (pair, doc, score) in a band
        self.columns = np.zeros(len(pairs.query_ids), dtype=np.int64)  # columns seen per query row

    def fork(self) -> "ShardCounter":
        """A counter with this one's bounds and known scores and nothing counted: one per thread,
        added back with ``absorb(fork.partial())``."""
        other = ShardCounter(self.p, self.keys, self.n_docs, self.check_nan)
        other.lo, other.hi, other.known = self.lo.copy(), self.hi.copy(), self.known.copy()
        return other

    def set_exact(self, idx: np.ndarray, s: np.ndarray) -> None:
        s = as_trec_scores(np.asarray(s))
        self.lo[idx] = self.hi[idx] = s
        self.known[idx] = True

    def set_bounds(self, lo: np.ndarray, hi: np.ndarray) -> None:
        lo, hi = round32(lo, up=False), round32(hi, up=True)
        if np.any(lo > hi) or np.isnan(lo).any() or np.isnan(hi).any():
            raise ValueError("bounds must satisfy lo <= hi")
        keep = ~self.known
        self.lo[keep], self.hi[keep] = lo[keep], hi[keep]

    def own(self, start: int, cols, S) -> tuple[int, int, np.ndarray, np.ndarray]:
        """Pairs of rows start:start+b; among them those whose doc lies in ``cols`` and its column."""
        p = self.p
        a0, a1 = np.searchsorted(p.rel_row, [start, start + S.shape[0]])
        rc = p.rel_col[a0:a1]
        if isinstance(cols, slice):
            hit = np.flatnonzero((rc >= cols.start) & (rc < cols.stop))
            local = rc[hit] - cols.start
        else:
            order = np.argsort(cols, kind="stable")
            pos = np.minimum(np.searchsorted(cols[order], rc), max(len(cols) - 1, 0))
            hit = np.flatnonzero(cols[order][pos] == rc) if len(cols) else np.zeros(0, np.int64)
            local = order[pos[hit]]
        return a0, a1, a0 + hit, local

    def add(self, start: int, cols, S, owned: bool = False, xp=np) -> None:
        """Count shard ``cols`` (slice or index array) for query rows ``start:start+b`` of ``S``
        (scores, or a ``products.BoundedScores`` block: its product decides what lies farther than
        its error bound, the rest is scored exactly)."""
        bounded = S if isinstance(S, BoundedScores) else None
        if bounded is not None:
            S, owned = bounded.approx, True  # the block's own array: excluded docs are marked in it
        b, w = S.shape
        self.columns[start:start + b] += w
        if self.check_nan and not (bounded is not None and bounded.finite) and _isnan_any(S, xp):
            raise ValueError(f"NaN score in rows {start}:{start + b}")
        a0, a1, own, local = self.own(start, cols, S)
        if a0 == a1:
            return
        if len(own):
            self._see_own(start, own, local, S, bounded, xp)
        S = self._exclude(start, b, cols, S, owned, xp)
        own_local = np.full(a1 - a0, -1, dtype=np.int64)
        own_local[own - a0] = local
        rows = self.p.rel_row[a0:a1] - start
        # slot j: the j-th relevant pair of each query, so each slot's rows are distinct
        first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        slot = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
        kcols = self.keys[cols]
        for j in range(int(slot.max()) + 1):
            ix = np.flatnonzero(slot == j)
            r = rows[ix]
            if len(r) == b and r[0] == 0 and r[-1] == b - 1:
                R = S  # every row once, in order: no copy
            elif len(r) and r[-1] - r[0] == len(r) - 1:
                R = S[int(r[0]):int(r[-1]) + 1]
            else:
                R = S[_index(r, xp, S)]
            self._count(a0 + ix, R, own_local[ix], kcols, xp, bounded, r)

    def _see_own(self, start: int, own: np.ndarray, local: np.ndarray, S, bounded, xp) -> None:
        """The exact scores of the relevant pairs ``own`` (their documents at columns ``local`` of this
        shard), checked against their bounds and any score given before."""
        p = self.p
        rows = p.rel_row[own] - start
        if bounded is not None:
            s = bounded.exact(rows, local)
            lo, hi = band_limits(s, s, bounded.err[rows])
            approx = to_numpy(S[_index(rows, xp, S), _index(local, xp, S)])
            if np.any((approx < lo) | (approx > hi)):
                raise RuntimeError(NOT_IEEE)
        else:
            s = as_trec_scores(to_numpy(S[_index(rows, xp, S), _index(local, xp, S)]))
        bad = ~self.known[own] & ((s < self.lo[own]) | (s > self.hi[own]))
        if bad.any():
            raise RuntimeError("a score fell outside its error bound: the products are not IEEE float32 "
                               "(TF32 or reduced-precision matmul?); rank with exact scores instead")
        if np.any(self.known[own] & (s != self.hi[own])):
            raise ValueError("a relevant document's score differs from the one given (relevant_scores, "
                             "or the first pass): the scorer must give each pair one value")
        self.set_exact(own, s)

    def _exclude(self, start: int, b: int, cols, S, owned: bool, xp):
        """``S`` with NaN (never sorts before) at the excluded docs of rows ``start:start+b`` in
        ``cols``; a copy unless ``owned``."""
        p = self.p
        e0, e1 = np.searchsorted(p.ex_row, [start, start + b])
        if e1 == e0:
            return S
        ex_r, ex_c = p.ex_row[e0:e1], p.ex_col[e0:e1]
        if isinstance(cols, slice):
            sel = np.flatnonzero((ex_c >= cols.start) & (ex_c < cols.stop))
            ex_local = ex_c[sel] - cols.start
        else:
            where = np.full(self.n_docs, -1, dtype=np.int64)
            where[cols] = np.arange(len(cols))
            ex_local = where[ex_c]
            sel = np.flatnonzero(ex_local >= 0)
            ex_local = ex_local[sel]
        if len(sel):
            if not owned:
                S = S.clone() if xp is not np else S.copy()
            S[_index(ex_r[sel] - start, xp, S), _index(ex_local, xp, S)] = float("nan")
        return S

    def _count(self, pidx: np.ndarray, R, own_local: np.ndarray, kcols: np.ndarray, xp, bounded=None,
               rows=None) -> None:
        lo, hi = self.lo[pidx], self.hi[pidx]
        if bounded is not None:  # approximate scores: widen the band by the error, score the band exactly
            wide_lo, wide_hi = band_limits(lo, hi, bounded.err[rows])
            if xp is np:
                gt, i, c, _ = count_band(R, wide_lo, wide_hi)
            else:
                gt, i, c, _ = _count_band_on_device(R, wide_lo, wide_hi, xp)
            score = bounded.exact(rows[i], c)
            gt = gt + np.bincount(i[score > hi[i]], minlength=len(gt))
            inside = np.flatnonzero(score >= lo[i]) if len(i) else i
            inside = inside[score[inside] <= hi[i[inside]]]
            i, c, score = i[inside], c[inside], score[inside]
        elif xp is np:
            gt, i, c, score = count_band(R, lo, hi)
        else:
            gt, i, c, score = _count_band_on_device(R, lo, hi, xp)
        self.count[pidx] += gt
        keep = c != own_local[i]  # the relevant doc never counts against itself
        i, c, score = i[keep], c[keep], score[keep]
        if not len(i):
            return
        pt = pidx[i]
        known = self.known[pt]
        if known.any():  # exact score: the band holds the ties, decided by the tie keys
            k = np.flatnonzero(known)
            before = kcols[c[k]] > self.keys[self.p.rel_col[pt[k]]]
            self.count += np.bincount(pt[k][before], minlength=len(self.count))
            self.tied += np.bincount(pt[k], minlength=len(self.count))
            self.tied_before += np.bincount(pt[k][before], minlength=len(self.count))
        if not known.all():
            u = np.flatnonzero(~known)
            self.held.append((pt[u], kcols[c[u]], score[u]))

    def partial(self) -> "ShardCounts":
        """What this counter saw, to be added to another's (``absorb``)."""
        held = [np.concatenate([h[i] for h in self.held]) for i in range(3)] if self.held else \
            [np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)]
        known = np.flatnonzero(self.known)
        return ShardCounts(self.count.copy(), self.columns.copy(), known, self.hi[known].copy(), *held,
                           self.tied.copy(), self.tied_before.copy())

    def absorb(self, part: "ShardCounts") -> None:
        """Add the counts of a shard counted elsewhere (with the same pairs and bounds)."""
        if part.count.shape != self.count.shape or part.columns.shape != self.columns.shape:
            raise ValueError("shard counts of another pool")
        self.count += part.count
        self.columns += part.columns
        if part.tied is not None:
            self.tied += part.tied
            self.tied_before += part.tied_before
        if len(part.known):
            again = self.known[part.known]
            if np.any(self.hi[part.known][again] != part.exact[again]):
                raise ValueError("two shards gave one relevant pair different scores")
            self.set_exact(part.known, part.exact)
        if len(part.held_pair):
            self.held.append((part.held_pair, part.held_key, part.held_score))

    def ranks(self, query_ids: Sequence[str]) -> TiedRanks:
        """1 + the count of every relevant pair, with its tie counts (``pairs.finish`` reads both)."""
        p = self.p
        ev = np.asarray(p.evaluated, dtype=np.int64)
        short = ev[self.columns[ev] != self.n_docs]
        if len(short):
            raise ValueError(f"scores cover {self.columns[short[0]]} of {self.n_docs} documents for query "
                             f"{query_ids[short[0]]!r}; each query needs every document exactly once")
        if not self.known.all():
            raise ValueError("no score seen for a relevant document")
        if self.held:
            pair = np.concatenate([h[0] for h in self.held])
            key = np.concatenate([h[1] for h in self.held])
            score = np.concatenate([h[2] for h in self.held])
            s, krel = self.hi[pair], self.keys[p.rel_col[pair]]
            tie = score == s
            before = (score > s) | (tie & (key > krel))
            self.count += np.bincount(pair[before], minlength=len(self.count))
            self.tied += np.bincount(pair[tie], minlength=len(self.count))
            self.tied_before += np.bincount(pair[tie & (key > krel)], minlength=len(self.count))
            self.held = []
        return TiedRanks.of(1.0 + self.count, self.tied, self.tied_before)


@dataclass
class ShardCounts:
    """One shard's part of the ranks (bounds mode): per relevant pair the shard documents surely
    sorting before it (``count``), the exact scores of the pairs whose document is in the shard
    (``known`` pair indices, ``exact`` float32), the documents scored inside a pair's bound
    (``held_*``: pair index, tie key, float32 score), resolved once every exact score is known, and
    per pair the documents with exactly its score and those of them sorting before it (``tied``,
    ``tied_before``; None in counts made before they were kept)."""

    count: np.ndarray
    columns: np.ndarray  # per query row, the documents scored
    known: np.ndarray
    exact: np.ndarray
    held_pair: np.ndarray
    held_key: np.ndarray
    held_score: np.ndarray
    tied: np.ndarray | None = None
    tied_before: np.ndarray | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def count_shard(score_shard: Callable[[object], Iterable[tuple[int, object]]], cols, pairs, keys: np.ndarray,
                n_docs: int, lo: np.ndarray, hi: np.ndarray, *, local=None, xp=np,
                check_nan: bool = True) -> ShardCounts:
    """Count one document shard ``cols`` (pool columns: slice or index array) against every query.

    ``pairs`` is ``ranking.judged_pairs`` of the pool, ``keys`` its ``tie_keys``, ``lo``/``hi``
    an interval holding each relevant pair's float32 score (``dense_bounds``). ``score_shard`` is
    called with ``local`` (default ``cols``): a scorer that holds only this shard's documents
    takes ``slice(0, n)``. ``ranks_from_counts`` adds the shards up.
    """
    counter = ShardCounter(pairs, keys, n_docs, check_nan)
    counter.set_bounds(lo, hi)
    _count_shards(counter, lambda _: score_shard(cols if local is None else local), [cols], xp)
    return counter.partial()


def _count_shards(counter: ShardCounter, score_shard, shards: Sequence, xp) -> None:
    """Count every block of every shard into ``counter``; blocks still to compute
    (``products.BoundedBlock``) are computed and counted on ``parts.BlockParts``' threads,
    each into its own fork of the counter, added back at the end."""
    forks: list[ShardCounter] = []
    own = threading.local()

    def mine() -> ShardCounter:
        mine_here = getattr(own, "counter", None)
        if mine_here is None:
            mine_here = own.counter = counter.fork()
            forks.append(mine_here)
        return mine_here

    with BlockParts() as parts:
        for cols in shards:
            for start, S in score_shard(cols):
                if isinstance(S, BoundedBlock):
                    parts.submit(S, lambda block, a, start=start, cols=cols: mine().add(start + a, cols, block))
                else:
                    counter.add(start, cols, _as_scores(S, xp), owned=False, xp=xp)
    for f in forks:
        counter.absorb(f.partial())


def ranks_from_counts(parts: Iterable[ShardCounts], pairs, keys: np.ndarray, n_docs: int, lo: np.ndarray,
                      hi: np.ndarray, query_ids: Sequence[str]) -> TiedRanks:
    """The rank of every relevant pair with its tie counts (``pairs.finish`` makes the RankTable) from
    the counts of shards partitioning the pool, computed with the same ``lo``/``hi``."""
    counter = ShardCounter(pairs, keys, n_docs)
    counter.set_bounds(lo, hi)
    for part in parts:
        counter.absorb(part)
    return counter.ranks(query_ids)


def _isnan_any(S, xp) -> bool:
    return bool(np.isnan(S).any()) if xp is np else bool(xp.isnan(S).any())


def _count_band_on_device(R, lo: np.ndarray, hi: np.ndarray, xp):
    """``ranking.count_band`` for a torch tensor, counted on its device: per row the count of entries
    > hi, and the entries in [lo, hi] as numpy (row, col, score)."""
    lo_t, hi_t = xp.from_numpy(lo).to(R.device), xp.from_numpy(hi).to(R.device)
    above = R > hi_t[:, None]
    band = (R >= lo_t[:, None]) & ~above
    i, c = (x.cpu().numpy() for x in xp.nonzero(band, as_tuple=True))
    return above.sum(1).cpu().numpy(), i, c, R[band].float().cpu().numpy()


def _index(a: np.ndarray, xp, like):
    return a if xp is np else xp.from_numpy(np.ascontiguousarray(a)).to(like.device)


def to_numpy(x) -> np.ndarray:
    """A score block as numpy: itself, or a torch tensor copied from its device as float32."""
    return x if isinstance(x, np.ndarray) else x.float().cpu().numpy()


def rank_relevant_sharded(
    score_shard: Callable[[object], Iterable[tuple[int, np.ndarray]]],
    shards: int | Sequence,
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    exclusions: Mapping[str, Collection[str]] = {},
    doc_langs: Sequence[str] | None = None,
    query_lang: str | None = None,
    *,
    relevant_scores: np.ndarray | None = None,
    bounds: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
    xp=np,
    check_nan: bool = True,
) -> RankTable:
    """``rank_relevant``'s RankTable (identical), from scores computed one document shard at a time.

    ``score_shard(cols)`` yields ``(start, scores)``, ``scores`` of shape (b, n) for queries
    ``start:start+b`` and the documents ``cols`` (a slice, or an index array); together its blocks
    cover every query row once. ``shards`` is a count (contiguous near-equal slices) or the list of
    ``cols``, which must partition the pool. ``relevant_scores`` (one per relevant pair, in the
    order of ``ranking.judged_pairs``) or ``bounds(rows, cols) -> (lo, hi)`` make it one pass;
    without them the shards holding relevant documents are scored twice (the scorer must then be
    deterministic). ``xp=torch`` when the scorer yields torch tensors (counting on their device);
    ``check_nan=False`` skips the per-block NaN scan where the scorer rules NaN out.
    """
    doc_ids, query_ids = list(doc_ids), list(query_ids)
    pairs = judged_pairs(doc_ids, query_ids, qrels, exclusions, doc_langs)
    counter = ShardCounter(pairs, tie_keys(doc_ids), len(doc_ids), check_nan)
    parts = shards_of(shards, len(doc_ids))
    if relevant_scores is not None:
        counter.set_exact(np.arange(len(pairs.rel_row)), relevant_scores)
    elif bounds is not None:
        counter.set_bounds(*bounds(pairs.rel_row, pairs.rel_col))
    else:  # pass 1: the relevant documents' own scores
        own_shard = np.zeros(len(doc_ids), dtype=bool)
        own_shard[pairs.rel_col] = True
        for cols in parts:
            if own_shard[cols].any():
                for start, S in score_shard(cols):
                    _, _, own, local = counter.own(start, cols, S)
                    if len(own) and isinstance(S, (BoundedBlock, BoundedScores)):  # exact scores, no product
                        counter.set_exact(own, S.exact(pairs.rel_row[own] - start, local))
                    elif len(own):
                        rows = _index(pairs.rel_row[own] - start, xp, S)
                        counter.set_exact(own, to_numpy(S[rows, _index(local, xp, S)]))
    _count_shards(counter, score_shard, parts, xp)
    return pairs.finish(counter.ranks(query_ids), doc_langs, query_lang)


def _as_scores(S, xp):
    if isinstance(S, BoundedScores):  # counted as it is
        return S
    if xp is np:
        S = np.asarray(S)
        return S if S.dtype == np.float32 else as_trec_scores(S)  # float32: NaN checked by the counter
    return S.float() if S.dtype != xp.float32 else S
