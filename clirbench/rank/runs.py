"""Ranks of relevant documents in a run: a ``{qid: {docid: score}}`` dict (``rank_run``), flat arrays
(``rank_run_arrays``), or a run grouped by query (``rank_in_segments``); the pool is unknown, so
relevant documents the run lacks get rank inf and |D| is NaN (the tie rule: ``table.py``). Each rank
comes with its tie counts: the run's entries of its query with exactly its score (``RankTable.tied``)
and those of them sorting before it; a relevant document the run lacks has none (rank inf)."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from .table import RankTable, TiedRanks, as_trec_scores, chunk_slices, finish_table, tie_keys

__all__ = ["rank_run", "rank_run_arrays", "rank_in_segments"]

_CHUNK = 1 << 20  # elements per temporary: small enough for malloc to reuse (no fresh page faults)
_TIE_PAIRS = 1 << 20  # tied (entry, relevant doc) pairs held before switching to vocabulary-wide keys


class _Ties:
    """Counts, per relevant row, tied entries (``tied``: the relevant entry itself included) and those
    whose doc id sorts first (byte-wise greater).

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
        self.tied = np.zeros(n_rows, dtype=np.int64)

    def add(self, rows: np.ndarray, docs: np.ndarray, counted: bool = False) -> None:
        if not counted:
            self.tied += np.bincount(rows, minlength=len(self.tied))
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
            self.add(rows, docs, counted=True)

    def counts(self) -> np.ndarray:
        if self.rows:
            rows, docs = np.concatenate(self.rows), np.concatenate(self.docs)
            ids = self.doc_ids
            a = np.array([ids[i] for i in docs.tolist()], dtype=object)
            b = np.array([ids[i] for i in self.rel_col[rows].tolist()], dtype=object)
            self.extra += np.bincount(rows[a > b], minlength=len(self.extra))  # str order = byte order
            self.rows, self.docs = [], []
        return self.extra


def _where(mask_of: Callable[[slice], np.ndarray], n: int) -> np.ndarray:
    """np.flatnonzero over [0, n) computed chunk by chunk (no n-sized temporary)."""
    parts = [ix.start + np.flatnonzero(mask_of(ix)) for ix in chunk_slices(n, _CHUNK)]
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
    if all(np.all(qidx[ix.start + 1:ix.stop + 1] >= qidx[ix]) for ix in chunk_slices(n - 1, _CHUNK)):
        bounds = np.arange(n_q + 1, dtype=qidx.dtype if n_q < np.iinfo(qidx.dtype).max else np.int64)
        run_len = np.diff(np.searchsorted(qidx, bounds))  # grouped by query (same dtype: no copy)
    else:
        run_len = sum((np.bincount(qidx[ix], minlength=n_q) for ix in chunk_slices(n, _CHUNK)),
                      np.zeros(n_q, np.int64))
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
    for ix in chunk_slices(n if len(sorted_key) else 0, _CHUNK):
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
        rank = _rank_entries(qidx, doc, score, run_len, entry, which, _Ties(doc_ids, rel_col, len(rank)), rank)
    else:
        rank = TiedRanks.of(rank, np.zeros(len(rank), np.int64), np.zeros(len(rank), np.int64))
    num_docs = np.full(len(evaluated), np.nan)
    return finish_table([query_ids[i] for i in evaluated], num_docs, t_of_row[rel_row], rank, rel_grade, None)


def _rank_entries(qidx, doc, score, run_len, entry, which, ties: _Ties, rank: np.ndarray) -> TiedRanks:
    """rank[which[i]] = 1 + number of entries of its query sorting before relevant entry[i]; with the
    tie counts."""
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
        for ix in chunk_slices(size, _CHUNK):
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
    before = ties.counts()
    rank += before
    tied = ties.tied
    tied[which] -= 1  # the relevant entry ties with itself
    return TiedRanks.of(rank, tied, before)


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
) -> TiedRanks:
    """1 + number of entries of its segment sorting before each ``entry`` (a run grouped by query),
    with the tie counts (the other entries of its segment with exactly its score, and those of them
    sorting before it).

    ``score`` holds trec_eval scores (float32, see ``as_trec_scores``; float64 for trec_eval 10's
    double scores, ``clirbench trec_eval``); entry i belongs to the
    segment ``starts[segment[i]]:ends[segment[i]]``. ``doc_before(a, b)`` says, for entry positions
    ``a`` and ``b`` with equal scores, whether a's doc id sorts first (byte-wise greater). Cost: one
    comparison per (entry, entry of its segment), done in chunks; ids are compared for ties only.
    """
    entry, segment = np.asarray(entry, dtype=np.int64), np.asarray(segment, dtype=np.int64)
    rank = np.ones(len(entry), dtype=np.float64)
    tied, tied_before = np.zeros(len(entry), np.int64), np.zeros(len(entry), np.int64)
    seg_len = (ends - starts).astype(np.int64)
    width = int(seg_len.max()) if len(seg_len) else 0
    if len(seg_len) * width <= 2 * int(seg_len.sum()) + _CHUNK:  # rows of a padded matrix (NaN: no entry)
        if (score.dtype in (np.float32, np.float64) and np.all(seg_len == width) and len(seg_len)
                and np.all(starts[1:] == ends[:-1])):  # the usual run: segments back to back, one depth
            padded = score[int(starts[0]):int(ends[-1])].reshape(-1, width)  # a view, no copy
        else:
            padded = np.full((len(seg_len), width), np.nan, dtype=score.dtype)
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
                tied[lo:lo + step] = np.bincount(ti, minlength=len(e))
                tied_before[lo:lo + step] = np.bincount(ti[before], minlength=len(e))
        return TiedRanks.of(rank + tied_before, tied, tied_before)
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
            tied[lo:hi] = np.bincount(owner[tie], minlength=hi - lo)
            tied_before[lo:hi] = np.bincount(owner[tie][before], minlength=hi - lo)
        lo = hi
    return TiedRanks.of(rank + tied_before, tied, tied_before)
