"""Approximate top-k of a retriever that embeds, through a faiss index (``--index faiss:<factory>``;
the index: ``ann_index.py``), measured against exact.

The index proposes ``k + margin`` candidates per query; their scores are recomputed exactly (inner
products of the embeddings) and the top k kept under the tie rule (score descending, then doc id
descending). faiss breaks ties at the edge of its top-k arbitrarily (heap order, BLAS blocking), so
the margin makes a ``Flat`` index return the exact top-k unless more than ``margin`` documents tie at
the k-th score; such queries are counted (``boundary_ties_unresolved``). The recall of the ANN top-k
against the exact top-k (brute force, same tie rule) is measured on a seeded sample of queries.

Only measures a depth-k list gives are computed from ANN lists (nDCG, AP, RR, R, P, Success,
Complete, PEER, with a cutoff <= k); the rank-set measures (``Family.rank_set``: MaxR, MaxR_norm,
MaxR_norm_of_mean, SameLangFirst) need every relevant document's exact rank and are refused
(:func:`check_ann_measures`). Measures are read by their attributes (``cutoff``, ``record.rank_set``).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Collection, Mapping, Sequence

import numpy as np

from ..collection import texts_of
from ..util.checks import check_int
from ..util.errors import ClirbenchError
from .ann_index import AnnIndex, IndexSpec
from .capabilities import Embeds, name_of
from .head import DEFAULT_DEPTH, head_of_run
from .ranked import Ranked, RankingInfo
from .rows import rank_blocks, run_blocks
from .table import tie_keys

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["ann_run", "exact_topk", "rescore_topk", "measured_recall", "check_ann_measures", "split_ann_measures",
           "ann_depth", "DEFAULT_RECALL_SAMPLE", "DEFAULT_DEPTH", "AnnRanker"]

DEFAULT_RECALL_SAMPLE = 200  # queries whose exact top-k is computed to measure recall
_BLOCK_BYTES = 256 << 20  # one exact score block at most


def _order_rows(scores: np.ndarray, cols: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per row, the permutation sorting candidates by the tie rule (score desc, tie key desc); -1 cols last."""
    s = np.where(cols >= 0, scores, -np.inf).astype(np.float32)
    kk = np.where(cols >= 0, keys[np.maximum(cols, 0)], -1)
    return np.lexsort((-kk, -s), axis=-1)


def exact_topk(Q: np.ndarray, D: np.ndarray, k: int, keys: np.ndarray,
               exclude: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-k by inner product under the tie rule: (cols, scores), each (n, k), sorted.

    ``keys`` are ``table.tie_keys(doc_ids)``; ``exclude[i]`` are columns left out for row i.
    Rows with fewer than k documents are padded with col -1 and score -inf. Blocked matmul (float32).
    """
    n_q, n_d = len(Q), len(D)
    k = int(k)
    cols = np.full((n_q, k), -1, dtype=np.int64)
    vals = np.full((n_q, k), -np.inf, dtype=np.float32)
    if not n_q or not n_d:
        return cols, vals
    kk = min(k, n_d)
    step = max(1, _BLOCK_BYTES // (4 * n_d))
    Df = np.ascontiguousarray(D, dtype=np.float32)
    for a in range(0, n_q, step):
        b = min(a + step, n_q)
        S = np.ascontiguousarray(Q[a:b], dtype=np.float32) @ Df.T
        if exclude is not None:
            for r in range(a, b):
                if len(exclude[r]):
                    S[r - a, exclude[r]] = -np.inf
        part = np.argpartition(-S, kk - 1, axis=1)[:, :kk] if kk < n_d else np.tile(np.arange(n_d), (b - a, 1))
        top = np.take_along_axis(S, part, axis=1)
        kth = top.min(axis=1)
        ties = np.flatnonzero((S >= kth[:, None]).sum(axis=1) > kk)  # more docs at the k-th score than slots
        for r in ties:  # choose among the tied docs by the tie rule
            above = np.flatnonzero(S[r] > kth[r])
            tied = np.flatnonzero(S[r] == kth[r])
            tied = tied[np.argsort(-keys[tied], kind="stable")][:kk - len(above)]
            part[r] = np.concatenate([above, tied])
        top = np.take_along_axis(S, part, axis=1)
        o = _order_rows(top, part, keys)
        c, v = np.take_along_axis(part, o, axis=1), np.take_along_axis(top, o, axis=1)
        v_ok = np.isfinite(v)
        cols[a:b, :kk] = np.where(v_ok, c, -1)
        vals[a:b, :kk] = v
    return cols, vals


def measured_recall(Q: np.ndarray, D: np.ndarray, ann_cols: np.ndarray, k: int, keys: np.ndarray, *,
                    sample: int = DEFAULT_RECALL_SAMPLE, seed: int = 0,
                    exclude: Sequence[np.ndarray] | None = None) -> dict:
    """Recall@k of ANN top-k lists (``ann_cols`` (n, >=k), -1 = none) against the exact top-k.

    Per sampled query: |ANN top-k ∩ exact top-k| / |exact top-k|, averaged; the sample is ``sample``
    queries drawn without replacement with ``seed`` (all queries when there are fewer).
    """
    n = len(Q)
    size = min(int(sample), n)
    rows = np.sort(np.random.default_rng(seed).choice(n, size, replace=False)) if size < n else np.arange(n)
    ex = None if exclude is None else [exclude[i] for i in rows]
    t0 = time.perf_counter()
    exact, _ = exact_topk(Q[rows], D, k, keys, ex)
    per_query = []
    for i, r in enumerate(rows):
        want = set(exact[i][exact[i] >= 0].tolist())
        if want:
            got = set(ann_cols[r, :k][ann_cols[r, :k] >= 0].tolist())
            per_query.append(len(want & got) / len(want))
    return {"k": int(k), "recall": float(np.mean(per_query)) if per_query else float("nan"),
            "sample": int(size), "queries": int(n), "seed": int(seed),
            "min": float(np.min(per_query)) if per_query else float("nan"),
            "exact_s": round(time.perf_counter() - t0, 6)}


def rescore_topk(Q: np.ndarray, D: np.ndarray, cand: np.ndarray, k: int, keys: np.ndarray,
                 exclude: Sequence[np.ndarray] | None = None, complete: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact scores of the candidates ``cand`` (n, m; -1 = none), top k kept under the tie rule.

    Returns (cols, scores), each (n, k) padded with -1 / -inf, and the number of queries whose k-th
    kept score equals their last candidate's (documents tied with it may lie beyond the candidates;
    never counted when ``complete``: the candidates were the whole pool).
    """
    n = len(cand)
    cols = np.full((n, k), -1, dtype=np.int64)
    vals = np.full((n, k), -np.inf, dtype=np.float32)
    unresolved = 0
    m = cand.shape[1] if cand.ndim == 2 else 0
    if not n or not m:
        return cols, vals, 0
    step = max(1, (64 << 20) // max(1, m * D.shape[1] * 4))
    for a in range(0, n, step):  # in blocks of queries: the gathered candidate vectors stay small
        b = min(a + step, n)
        c = cand[a:b].astype(np.int64, copy=True)
        s = np.matmul(D[np.maximum(c, 0)], Q[a:b, :, None])[:, :, 0].astype(np.float32, copy=False)
        if exclude is not None:
            for r in range(a, b):
                c[r - a, np.isin(c[r - a], exclude[r])] = -1
        o = _order_rows(s, c, keys)
        c, s = np.take_along_axis(c, o, axis=1), np.take_along_axis(s, o, axis=1)
        s = np.where(c >= 0, s, -np.inf).astype(np.float32)
        full = (c >= 0).sum(axis=1)
        if not complete and m > k:
            kth = s[:, k - 1]
            last = s[np.arange(b - a), np.maximum(full - 1, 0)]
            unresolved += int(np.count_nonzero((full > k) & (kth == last)))
        kk = min(k, m)
        cols[a:b, :kk], vals[a:b, :kk] = c[:, :kk], s[:, :kk]
    return cols, vals, unresolved


def ann_run(retriever, queries: Sequence, docs: Sequence, spec: str | IndexSpec, k: int, *,
            exclusions: Mapping[str, Collection[str]] | None = None, margin: int | None = None,
            recall_sample: int = DEFAULT_RECALL_SAMPLE, seed: int = 0, device: str | None = None,
            train_size: int | None = None) -> tuple[dict[str, dict[str, float]], dict]:
    """Top-k run ``{qid: {docid: score}}`` of ``retriever`` (``capabilities.Embeds``) through a faiss index.

    ``queries``/``docs`` are ``Text`` items; ``exclusions[qid]`` docs leave that query's list.
    Scores are exact inner products of the cached embeddings of the ``k + margin`` candidates
    (``margin`` default k//10 + 10). ``info`` holds the index description, k, the measured recall and
    the number of queries whose k-th score ties beyond the margin.
    """
    k = check_int(k, "k", 1)
    margin = check_int(k // 10 + 10 if margin is None else margin, "margin", 0)
    doc_ids = [d.id for d in docs]
    keys = tie_keys(doc_ids)  # also refuses duplicate ids
    dindex = {d: i for i, d in enumerate(doc_ids)}
    D = np.ascontiguousarray(retriever.embed(texts_of(docs), "document"), dtype=np.float32)
    Q = np.ascontiguousarray(retriever.embed(texts_of(queries), "query"), dtype=np.float32)
    dim = max(D.shape[1] if D.ndim == 2 else 0, Q.shape[1] if Q.ndim == 2 else 0, 1)
    D, Q = D.reshape(len(D), dim), Q.reshape(len(Q), dim)  # an empty side may come back as (0, 0)
    exclude = None
    if exclusions:
        exclude = []
        for q in queries:
            try:
                exclude.append(np.array(sorted(dindex[d] for d in exclusions.get(q.id, ())), dtype=np.int64))
            except KeyError as exc:
                raise ValueError(f"excluded doc {exc.args[0]!r} of query {q.id!r} is not in the pool") from None
    extra = max((len(e) for e in exclude), default=0) if exclude else 0
    index = AnnIndex(spec, dim, device=device,
                     train_size=train_size, seed=seed).build(D)
    fetch = min(k + margin + extra, len(doc_ids)) if doc_ids else 0
    run: dict[str, dict[str, float]] = {q.id: {} for q in queries}
    ann_cols = np.full((len(queries), k), -1, dtype=np.int64)
    unresolved = 0
    if fetch:
        _, cand = index.search(Q, fetch)
        ann_cols, scores, unresolved = rescore_topk(Q, D, cand, k, keys, exclude, complete=fetch >= len(doc_ids))
        for i, q in enumerate(queries):
            keep = ann_cols[i] >= 0
            run[q.id] = {doc_ids[j]: float(v) for j, v in zip(ann_cols[i][keep].tolist(), scores[i][keep].tolist())}
    recall = measured_recall(Q, D, ann_cols, k, keys, sample=recall_sample, seed=seed, exclude=exclude) \
        if len(queries) and len(doc_ids) else {"k": k, "recall": float("nan"), "sample": 0, "queries": len(queries),
                                               "seed": seed}
    info = {"index": index.describe(), "k": k, "candidates": int(fetch), "rescored": "exact inner products",
            "boundary_ties_unresolved": unresolved, "recall": recall}
    return run, info


# ---------------------------------------------------------------------------------------------
# which measures an ANN run may give (``Measure`` objects, read by their attributes)


def split_ann_measures(measures, k: int | None = None) -> tuple[list, list]:
    """(allowed, refused) Measure lists: what a depth-k list gives (cutoff <= k) vs the rest.

    A measure is computable from a top-k list when its family is not a rank-set one and its cutoff,
    if any, is at most k; without a cutoff (nDCG, AP, RR) it is the value trec_eval gives on a
    depth-k run. MaxR, MaxR_norm, MaxR_norm_of_mean and SameLangFirst need every relevant
    document's rank in the whole pool.
    """
    allowed, refused = [], []
    for m in measures:
        ok = not m.record.rank_set and (k is None or m.cutoff is None or m.cutoff <= k)
        (allowed if ok else refused).append(m)
    return allowed, refused


def check_ann_measures(measures, k: int | None = None) -> list:
    """The measures, or one-line :class:`ClirbenchError` for any an ANN top-k list cannot give."""
    allowed, refused = split_ann_measures(measures, k)
    rank_set = [str(m) for m in refused if m.record.rank_set]
    if rank_set:
        verb = "needs" if len(rank_set) == 1 else "need"
        raise ClirbenchError(f"{', '.join(rank_set)} {verb} every relevant document's exact rank, which an "
                             f"approximate index (--index faiss:...) cannot give: use the exact path "
                             f"(--shards N) or drop them from --measures")
    if refused:
        verb = "needs" if len(refused) == 1 else "need"
        raise ClirbenchError(f"{', '.join(map(str, refused))} {verb} deeper lists than the ANN depth k={k}")
    return allowed


def ann_depth(measures) -> int:
    """k for an ANN run: the largest cutoff among ``measures`` (DEFAULT_DEPTH when none has one)."""
    cuts = [m.cutoff for m in measures]
    if not cuts or None in cuts:  # an uncut nDCG/AP/RR: trec_eval's usual depth
        return max([c for c in cuts if c is not None] + [DEFAULT_DEPTH])
    return max(cuts)


class AnnRanker:
    """Cutoff measures from a faiss index's top-k lists (``--index faiss:<factory>``), for a retriever
    that embeds. The record gets the index and its recall against the exact top-k on a sample of
    queries. Rank-set measures (MaxR, Complete@K over a missing document, ...) are refused before
    any work (``supports``), never approximated. The head of its ranking is its top-k run (at most
    ``depth`` deep; None: no head)."""

    def __init__(self, spec: str, k: int, device: str | None = None, depth: int | None = None) -> None:
        self.spec, self.k, self.device, self.depth = spec, k, device, depth

    @classmethod
    def for_measures(cls, spec: str, measures, device: str | None = None,
                     depth: int | None = None) -> "AnnRanker":
        """A ranker whose depth k is the largest cutoff of ``measures``."""
        return cls(spec, ann_depth(measures), device, depth)

    def supports(self, measures) -> None:
        check_ann_measures(measures, self.k)

    def accepts(self, retriever) -> None:
        """A one-line ClirbenchError unless ``retriever`` embeds texts (the index holds embeddings)."""
        if not isinstance(retriever, Embeds):
            raise ClirbenchError(f"--index {self.spec} needs a dense retriever (embeddings to index), "
                                 f"not {name_of(retriever)}")

    def rank(self, retriever, seen: "Pool", pool: "Pool") -> Ranked:
        self.accepts(retriever)
        run, info = ann_run(retriever, seen.queries, seen.docs, self.spec, self.k, exclusions=pool.exclusions,
                            device=self.device)
        head = None
        if self.depth:
            head = head_of_run(run, [q.id for q in pool.queries], [d.id for d in pool.docs],
                               [d.lang for d in pool.docs], pool.exclusions, min(self.depth, self.k))
        return Ranked(rank_blocks(run_blocks(pool, run), pool), RankingInfo("approximate top-k", approximate=True,
                                                                            **info), head)
