"""Reranking: each query's top K of a first stage rescored by a second stage and re-sorted
(``clirbench run --model FIRST --rerank SECOND@K``; ``--candidates run.txt`` reads the first stage
from a TREC run file). Both retrievers are passed in (this layer knows them by their capabilities).

The ranking it gives (docs/measures.md, "Ranks beyond K"):

- ranks 1..K: the first stage's top K of the query (its head, under the tie rule) re-sorted by the
  second stage's float32 scores, ties by doc id descending (``table.py``);
- below K: the first stage's order. A relevant document there keeps its first-stage rank; its tie
  counts are those of its first-stage tie group less the documents of that group now in the head;
- documents the first stage did not rank (absent from the candidates file) stay unranked: rank inf,
  as trec_eval treats a document a run lacks.

So the rank-set measures (MaxR, MaxR_norm, SameLangFirst: ``Family.rank_set``) are exact when the
first stage ranked the whole pool (a retriever) and refused before any work for a candidates file;
measures read from the head (the language exposure) are refused when they read below K, and MLRS
(which re-scores passages with one retriever) is refused. The second stage scores the head's pairs
with ``score_pairs`` where it has it (``capabilities.ScoresPairs``: a cross-encoder), else with the
pool's own exact scores (``pair_scores.pool_pair_scores``: a dense model's embeddings, another
model's score rows), so that reranking the whole pool (``@all``) gives the second stage's own ranks.
"""
from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from ..collection import texts_of
from ..util.errors import ClirbenchError
from ..util.plural import plural
from .capabilities import ScoresPairs, name_of
from .head import Head, head_of_run, order_codes
from .pair_scores import pool_pair_scores, scoring_path
from .products import exact_scores, pair_scores
from .ranked import Ranked, RankingInfo
from .rows import rank_blocks, run_blocks
from .table import RankTable, as_trec_scores, finish_table, tie_keys

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["RerankRanker", "Candidates", "rerank_head", "candidates_ranked", "WHOLE_POOL"]

WHOLE_POOL = 1 << 62  # the first stage's head depth for ``@all`` (a head is cut at the pool's size)
_LAST = np.uint64(2 ** 64 - 1)  # the order code of an empty slot
_ROWS = 256  # queries whose head pairs are scored at a time


class Candidates:
    """A first stage read from a TREC run file (``--candidates``): ``run`` ``{qid: {docid: score}}``
    and the file's ``path`` as given. ``spec`` is ``candidates:<path>``, ``revision`` the SHA-256 of
    the run's (query, document, score) triples, so a changed file is another system
    (``candidates:<file name>-<hash>``)."""

    def __init__(self, run: Mapping[str, Mapping[str, float]], path: str) -> None:
        self.run = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items()}
        self.path = str(path)
        self.spec = f"candidates:{self.path}"
        digest = hashlib.sha256()
        for qid in sorted(self.run):
            for did in sorted(self.run[qid]):
                digest.update(f"{qid}\t{did}\t{self.run[qid][did]!r}\n".encode())
        self.revision = "sha256:" + digest.hexdigest()

    def describe(self) -> dict:
        return {"spec": self.spec, "model_id": None, "revision": self.revision, "path": self.path,
                "kind": "candidates", "prompts": {}, "queries": len(self.run),
                "depth": max((len(d) for d in self.run.values()), default=0)}

    def check_pools(self, pools: Sequence["Pool"]) -> None:
        """One line naming the first problem, before any work: a query of the file in none of the
        pools, a pool's query the file lacks, a candidate that is not among its query's pool's
        documents. (A candidate the pool excludes for its query, multi-1, is left out, as the pool's
        own ranking leaves it out; a query with fewer than K candidates has a shorter list.)"""
        where = f"--candidates {self.path}"
        known = {q.id for p in pools for q in p.queries}
        extra = [q for q in self.run if q not in known]
        if extra:
            raise ClirbenchError(f"{where}: {plural(len(extra), 'query')} in no pool of this run (e.g. {extra[0]!r}): "
                                 f"give the run of the pools' queries (--langs, --scenario, --query-lang select pools)")
        for pool in pools:
            missing = [q.id for q in pool.queries if q.id not in self.run]
            if missing:
                raise ClirbenchError(f"{where}: no candidates for {len(missing)} of the {len(pool.queries)} queries of "
                                     f"pool {pool.name} (e.g. {missing[0]!r}): a run of each pool's queries is needed "
                                     f"(--scenario and --query-lang select pools)")
            docs = {d.id for d in pool.docs}
            unknown = [(q.id, d) for q in pool.queries for d in self.run[q.id] if d not in docs]
            if unknown:
                q, d = unknown[0]
                raise ClirbenchError(f"{where}: {plural(len(unknown), 'candidate')} of pool {pool.name} not among its "
                                     f"documents (e.g. {d!r} for query {q!r}): the candidates must come from the pool")

    def of_pool(self, pool: "Pool") -> dict[str, dict[str, float]]:
        """The candidates of ``pool``'s queries, in its query order, without the documents it excludes."""
        out = {}
        for q in pool.queries:
            excluded = pool.exclusions.get(q.id) or ()
            out[q.id] = {d: s for d, s in self.run.get(q.id, {}).items() if d not in excluded}
        return out


def candidates_ranked(run: Mapping[str, Mapping[str, float]], pool: "Pool", depth: int) -> Ranked:
    """The first stage a candidates run gives on ``pool``: the ranks of its relevant documents in the
    run's order (tie rule), those the run lacks unranked (rank inf, no tie counts), and its head
    (each query's top ``depth``)."""
    table = rank_blocks(run_blocks(pool, run), pool)
    qids = np.asarray(table.query_ids, dtype=object)[table.qidx]
    absent = np.fromiter((d not in (run.get(q) or {}) for q, d in zip(qids.tolist(), table.doc_id)), bool,
                         len(table.qidx))
    rank = np.where(absent, np.inf, table.rank)
    tied = np.where(absent, 0, table.tied)
    before = np.where(absent, 0, table.tied_before)
    table = finish_table(table.query_ids, table.num_docs, table.qidx, rank, table.grade, table.same_lang,
                         table.doc_lang, table.doc_id, tied, before)
    head = head_of_run(run, [q.id for q in pool.queries], [d.id for d in pool.docs], [d.lang for d in pool.docs],
                       pool.exclusions, depth)
    return Ranked(table, None, head)


def rerank_head(table: RankTable, head: Head, scores: np.ndarray) -> tuple[RankTable, Head]:
    """The reranked ranking of a first stage (``table``: its relevant documents' ranks; ``head``: its
    top K, a prefix of that order) given the second stage's ``scores`` (n, K) of the head's entries:
    the head re-sorted by the tie rule (float32 score descending, doc id descending), the relevant
    documents' ranks and tie counts in it, and below it the first stage's (the rule of the module's
    docstring). The new head's ``tail`` is zero: nothing below K ties with the head (its order there
    is the first stage's, not a score)."""
    n, K = head.docs.shape
    valid = head.docs >= 0
    keys = tie_keys(head.doc_ids)
    s = np.where(valid, as_trec_scores(np.asarray(scores)), np.float32(-np.inf)).astype(np.float32)
    codes = order_codes(s, keys[np.maximum(head.docs, 0)])
    codes[~valid] = _LAST
    order = np.argsort(codes, axis=1, kind="stable")
    docs = np.take_along_axis(head.docs, order, axis=1)
    new_s = np.take_along_axis(s, order, axis=1)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.broadcast_to(np.arange(K), (n, K)), axis=1)
    start, end = _tie_groups(new_s, docs >= 0)

    hrow_of = {q: i for i, q in enumerate(head.query_ids)}
    hrow = np.fromiter((hrow_of[q] for q in table.query_ids), np.int64, len(table.query_ids))[table.qidx]
    n_head = valid.sum(axis=1)[hrow]
    rank = np.asarray(table.rank, dtype=np.float64).copy()
    inside = np.isfinite(rank) & (rank <= n_head)
    old = rank[inside].astype(np.int64) - 1
    r_in = hrow[inside]
    if table.doc_id is not None and inside.any():
        listed = np.asarray(head.doc_ids, dtype=object)[head.docs[r_in, old]]
        if not np.array_equal(listed, np.asarray(table.doc_id, dtype=object)[inside]):
            raise RuntimeError("the first stage's head and its ranks disagree: a relevant document's rank "
                               "does not point at it in the head")
    pos = position[r_in, old]
    rank[inside] = pos + 1
    tied = tied_before = None
    if table.tied is not None:
        tied = np.asarray(table.tied, dtype=np.int64).copy()
        tied_before = np.asarray(table.tied_before, dtype=np.int64).copy()
        tied[inside] = end[r_in, pos] - start[r_in, pos]
        tied_before[inside] = pos - start[r_in, pos]
        below = ~inside & np.isfinite(rank)
        group_start = rank[below] - tied_before[below]  # its first-stage tie group: start, in the head?
        in_head = np.maximum(n_head[below] - group_start + 1, 0).astype(np.int64)
        tied[below] -= in_head
        tied_before[below] -= in_head
    out = finish_table(table.query_ids, table.num_docs, table.qidx, rank, table.grade, table.same_lang,
                       table.doc_lang, table.doc_id, tied, tied_before)
    new_s[docs < 0] = -np.inf
    reranked = Head(head.query_ids, head.doc_ids, head.doc_langs, docs, new_s,
                    np.zeros((n, len(head.langs)), dtype=np.int64))
    return out, reranked


def _tie_groups(scores: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position of rows sorted by score: the first and last position of its group of equal
    float32 scores (valid entries only; the padding is never in a group)."""
    n, K = scores.shape
    cont = np.zeros((n, K), dtype=bool)  # position p continues the group of p - 1
    if K > 1:
        cont[:, 1:] = (scores[:, 1:] == scores[:, :-1]) & valid[:, 1:] & valid[:, :-1]
    at = np.broadcast_to(np.arange(K), (n, K))
    start = np.maximum.accumulate(np.where(cont, 0, at), axis=1)
    nxt = np.zeros((n, K), dtype=bool)
    nxt[:, :-1] = cont[:, 1:]
    end = np.minimum.accumulate(np.where(nxt, K, at)[:, ::-1], axis=1)[:, ::-1]
    return start, end


class RerankRanker:
    """``second`` rescores each query's top ``k`` (None: the whole pool) of the first stage and
    re-sorts it. The first stage is a retriever ranked by ``first`` (a ranker over the whole pool,
    its head kept ``k`` deep) or, with ``first`` None, a ``Candidates`` run. ``depth``: the head
    this ranking gives (at most ``k``; None: none). The answer carries the first stage's own
    ranking (``Ranked.first``) and, in ``RankingInfo.rerank``, the stages, K, the pairs scored,
    their seconds and the short lists: the queries whose first-stage list held fewer than K documents
    (fewer than the pool's, less the query's exclusions, when the pool holds fewer than K)."""

    def __init__(self, second, k: int | None, first=None, depth: int | None = None) -> None:
        self.second, self.k, self.first = second, k, first
        self.depth = None if depth is None else (depth if k is None else min(depth, k))

    @property
    def whole_pool(self) -> bool:
        """Whether the first stage ranks the whole pool (a retriever; not a candidates run)."""
        return self.first is not None

    def supports(self, measures) -> None:
        """One line, before any work, for measures this reranking cannot give (see the module)."""
        measures = list(measures)
        if self.first is not None:
            self.first.supports(measures)
        rank_set = [str(m) for m in measures if m.record.rank_set]
        if rank_set and not self.whole_pool:
            raise ClirbenchError(f"{', '.join(rank_set)} {'needs' if len(rank_set) == 1 else 'need'} every relevant "
                                 f"document's rank, which a first stage read from --candidates does not give "
                                 f"(documents outside the file are unranked): drop them from --measures")
        mlrs = [str(m) for m in measures if m.family == "MLRS"]
        if mlrs:
            raise ClirbenchError(f"{', '.join(mlrs)} re-scores passages with one retriever: not defined for a reranked "
                                 f"ranking (two retrievers decide its order); drop it from --measures")
        deep = [str(m) for m in measures if m.record.needs_head and self.k is not None and (m.cutoff or 1) > self.k]
        if deep:
            raise ClirbenchError(f"{', '.join(deep)} {'reads' if len(deep) == 1 else 'read'} below the reranked top "
                                 f"K={self.k} of each ranking: rerank deeper or drop "
                                 f"{'it' if len(deep) == 1 else 'them'} from --measures")

    def accepts(self, retriever) -> None:
        """One line unless the first stage can be ranked (or is a candidates run) and the second
        stage can score pairs (``score_pairs``, float32 embeddings or score rows)."""
        if self.first is not None:
            self.first.accepts(retriever)
        elif not isinstance(retriever, Candidates):
            raise ClirbenchError(f"a reranking without a first-stage ranker reads --candidates, not {name_of(retriever)}")
        if not isinstance(self.second, ScoresPairs):
            try:
                scoring_path(self.second)
            except ClirbenchError:
                raise ClirbenchError(f"{name_of(self.second)} cannot rerank: it scores no (query, document) pairs "
                                     f"(score_pairs, embeddings or score rows)") from None

    def rank(self, retriever, seen: "Pool", pool: "Pool") -> Ranked:
        self.accepts(retriever)
        t0 = time.perf_counter()
        depth = WHOLE_POOL if self.k is None else self.k
        first = self.first.rank(retriever, seen, pool) if self.first is not None else \
            candidates_ranked(retriever.of_pool(pool), pool, depth)
        if first.head is None:
            raise RuntimeError(f"the first stage's ranker gave no head: {type(self.first).__name__}")
        head = first.head
        t1 = time.perf_counter()
        computed = _model_pairs(self.second)
        r, c = np.nonzero(head.docs >= 0)  # the head's entries, and the same pairs in ``seen``
        rows, cols = _seen_index(seen, head, r, c)
        scores, path = self._pair_scores(seen, head, (r, c), (rows, cols))
        t2 = time.perf_counter()
        computed = None if computed is None else _model_pairs(self.second) - computed
        table, reranked = rerank_head(first.table, head, scores)
        pairs = len(r)
        listed = (head.docs >= 0).sum(axis=1)
        info = {"first_stage": {"spec": retriever.spec, "ranking": first.info.to_dict() if first.info else None,
                                "seconds": round(t1 - t0, 6)},
                "second_stage": _stage(self.second, path), "k": "all" if self.k is None else self.k,
                "depth": head.depth, "pairs": pairs, "seconds": round(t2 - t1, 6),
                "pairs_per_s": round(pairs / (t2 - t1), 1) if t2 > t1 else None,
                "short_lists": int((listed < np.minimum(_rankable(pool), WHOLE_POOL if self.k is None else self.k)).sum())}
        if computed is not None:
            info["pairs_computed"] = computed  # scored by the model; the others read from its pair-score cache
        info["first_stage"] = {k: v for k, v in info["first_stage"].items() if v is not None}
        out = reranked.top(self.depth) if self.depth else None
        return Ranked(table, RankingInfo("reranked", rerank=info), out, first=first,
                      encode=self._second_cost(seen, rows, cols))

    def _second_cost(self, seen: "Pool", rows: np.ndarray, cols: np.ndarray):
        """The second stage's encoding cost of the texts it scored (``seen``'s queries ``rows`` and
        documents ``cols``; its ``cost``: what its cache recorded when they were encoded), None when it
        reports none (a cross-encoder scores pairs)."""
        if not callable(getattr(self.second, "cost", None)):
            return None
        return self.second.cost([seen.queries[i] for i in np.unique(rows).tolist()],
                                [seen.docs[i] for i in np.unique(cols).tolist()])

    def _pair_scores(self, seen: "Pool", head: Head, entries: tuple, pairs: tuple) -> tuple[np.ndarray, str]:
        """(n, K) second-stage scores of the head's ``entries`` (its (row, slot) indices; -inf past the
        end), ``pairs`` the same as ``seen``'s (query, document) indices, and how they were got."""
        r, c = entries
        rows, cols = pairs
        scores = np.full(head.docs.shape, -np.inf, dtype=np.float32)
        if isinstance(self.second, ScoresPairs):
            got = np.asarray(self.second.score_pairs(seen.queries, seen.docs, np.stack([rows, cols], axis=1)))
            if got.shape != rows.shape:
                raise ValueError(f"{name_of(self.second)} gave {got.shape[0]} scores for {len(rows)} pairs")
            scores[r, c], path = as_trec_scores(got.astype(np.float64, copy=False)), "score_pairs"
        elif (path := scoring_path(self.second)) == "embeddings":
            scores[r, c] = _embedded_pairs(self.second, seen, rows, cols, head.depth)
        else:
            scores[r, c] = pool_pair_scores(self.second, seen, rows, cols, path)
        return scores, path


def _embedded_pairs(retriever, seen: "Pool", rows: np.ndarray, cols: np.ndarray, k: int) -> np.ndarray:
    """``pair_scores.pool_pair_scores``' embedding path (the canonical ``fl32(fl64(q . d))`` of each
    pair) for the pairs of a head (``rows`` ascending, at most ``k`` per row): each distinct text
    embedded once, then per block of queries either every product with the block's documents
    (``products.exact_scores``, BLAS) when they are few (at most 16 K), or the pairs one by one."""
    qs, qat = np.unique(rows, return_inverse=True)
    ds, dat = np.unique(cols, return_inverse=True)
    Q = np.asarray(retriever.embed(texts_of([seen.queries[i] for i in qs.tolist()]), "query"), dtype=np.float32)
    D = np.asarray(retriever.embed(texts_of([seen.docs[i] for i in ds.tolist()]), "document"), dtype=np.float32)
    order = np.argsort(qat.reshape(-1), kind="stable")  # by query (a head's pairs already are)
    qat, dat = qat.reshape(-1)[order], dat.reshape(-1)[order]
    got = np.empty(len(rows), dtype=np.float32)
    edges = np.searchsorted(qat, np.arange(0, len(qs) + _ROWS, _ROWS))
    for a, b in zip(edges[:-1], edges[1:]):
        if a == b:
            continue
        used = np.unique(dat[a:b])
        if len(used) <= 16 * max(k, 1):
            block_q = np.unique(qat[a:b])
            S = exact_scores(Q[block_q], D[used])
            got[a:b] = S[np.searchsorted(block_q, qat[a:b]), np.searchsorted(used, dat[a:b])]
        else:
            got[a:b] = pair_scores(Q[qat[a:b]], D[dat[a:b]])
    out = np.empty_like(got)
    out[order] = got
    return out


def _seen_index(seen: "Pool", head: Head, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of ``seen`` (the texts the retriever reads) of the head's entries (r, head.docs[r, c])."""
    docs = head.docs[r, c]
    if tuple(q.id for q in seen.queries) == tuple(head.query_ids) and tuple(d.id for d in seen.docs) == head.doc_ids:
        return r.astype(np.int64), docs.astype(np.int64)
    qindex = {q.id: i for i, q in enumerate(seen.queries)}
    dindex = {d.id: i for i, d in enumerate(seen.docs)}
    qmap = np.fromiter((qindex[q] for q in head.query_ids), np.int64, len(head.query_ids))
    dmap = np.fromiter((dindex[d] for d in head.doc_ids), np.int64, len(head.doc_ids))
    return qmap[r], dmap[docs]


def _rankable(pool: "Pool") -> np.ndarray:
    """Per query of ``pool``, the documents its ranking may hold (the pool less its exclusions)."""
    ids = {d.id for d in pool.docs}
    return np.array([len(ids) - len(ids.intersection(pool.exclusions.get(q.id) or ())) for q in pool.queries],
                    dtype=np.int64)


def _model_pairs(retriever) -> int | None:
    """Pairs the second stage's model has scored so far (a pair-score cache's ``encoded``); None: no such cache."""
    counter = getattr(getattr(retriever, "pair_cache", None), "encoded", None)
    return counter if isinstance(counter, int) else None


def _stage(retriever, path: str) -> dict:
    """The second stage as the record keeps it: spec, model id, revision, local path, how it scored."""
    desc = retriever.describe() if callable(getattr(retriever, "describe", None)) else {}
    out = {"spec": getattr(retriever, "spec", name_of(retriever)), "model_id": desc.get("model_id"),
           "revision": desc.get("revision"), "path": desc.get("path"), "scoring": path}
    return {k: v for k, v in out.items() if v is not None}
