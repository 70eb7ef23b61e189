"""PEER@k (Yang, Jänich, Mayfield, Lawrie, SIGIR 2024): language fairness of a ranking (docs/measures.md).

Per query and relevance level r, a Kruskal–Wallis test of whether the ranks of the level's relevant
documents differ by document language; PEER_q = Σ_r w_r p_r / Σ_r w_r over the levels the query has
(default: equal weights), higher is fairer. The ranks are expected ranks under random tie-breaking
(``RankTable.expected_rank``: documents with equal scores share the mean of their positions, so the
test sees them tied, never ordered by document id). Relevant documents outside the top k are tied at
(2k+U+1)/2 (any tied value above k gives the same test); the test ranks the values (mid-ranks) and
corrects H for ties as ``scipy.stats.kruskal`` does. A level with one language (hence one document),
or whose values are all tied (e.g. none in the top k), gets p = 1, as in the reference
``peer_measure``. A query with no relevant document, a table without ``doc_lang``, or one whose judged
documents are all in one language (a mono-same or mono-cross pool: nothing to be fair between), gets
NaN, where ``peer_measure`` would say 1.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping

import numpy as np

if TYPE_CHECKING:  # annotations only: the measures read a RankTable and need no rank code at run time
    from ..rank.table import RankTable


__all__ = ["peer", "chi2_sf"]


def chi2_sf(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Survival function of the chi-squared distribution for integer df >= 1 (closed form, numpy only)."""
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    df = np.asarray(df, dtype=np.int64)
    x, df = np.broadcast_arrays(x, df)
    half = x / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_half, log_x = np.log(half), np.log(x)
    even = df % 2 == 0
    m = df // 2  # even df = 2m: m terms i = 0..m-1; odd df = 2m+1: m terms i = 1..m
    out = np.where(even, 0.0, np.array([math.erfc(math.sqrt(h)) for h in half.ravel()]).reshape(x.shape))
    log_fact = 0.0  # log i!
    log_dfact = 0.0  # log (2i-1)!!
    for i in range(int(m.max(initial=0)) + 1):
        if i:
            log_fact += math.log(i)
            log_dfact += math.log(2 * i - 1)
        with np.errstate(invalid="ignore", over="ignore"):
            t_even = np.exp(-half + (i * log_half if i else 0.0) - log_fact)
            t_odd = np.exp(-half + (i - 0.5) * log_x - log_dfact + 0.5 * math.log(2 / math.pi)) if i else 0.0
        out = out + np.where(even & (i < m), t_even, 0.0) + np.where(~even & (i >= 1) & (i <= m), t_odd, 0.0)
    return np.clip(out, 0.0, 1.0)


def peer(table: RankTable, k: int, weights: Mapping[float, float] | None = None) -> np.ndarray:
    """(n,) PEER@k per query; ``weights`` maps grade -> weight (absent grades weigh 0), renormalised
    over the levels each query has; None = equal weights. NaN where the weights of its levels sum to 0."""
    n = len(table.query_ids)
    out = np.full(n, np.nan)
    if table.doc_lang is None or not len(table.qidx):
        return out
    _, lang = np.unique(table.doc_lang, return_inverse=True)
    lang = lang.reshape(-1)
    n_lang = int(lang.max()) + 1
    if n_lang == 1:  # every judged document in one language: no languages to be fair between
        return out
    rank = table.expected_rank  # tied documents share the mean of their positions (random tie-breaking)
    value = np.where(rank <= k, rank, np.inf)  # inf: the tie at (2k+U+1)/2 (rank-equivalent)
    order = np.lexsort((value, table.grade, table.qidx))
    q, g, v, lg = table.qidx[order], table.grade[order], value[order], lang[order]

    m = len(q)
    new_group = np.r_[True, (q[1:] != q[:-1]) | (g[1:] != g[:-1])]
    gid = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_group)
    size = np.diff(np.r_[starts, m]).astype(np.float64)  # N per (query, level)
    new_run = new_group | np.r_[True, v[1:] != v[:-1]]
    run = np.cumsum(new_run) - 1
    run_start = np.flatnonzero(new_run)
    run_len = np.diff(np.r_[run_start, m])
    pos = np.arange(m) - starts[gid]  # 0-based position within the group
    first = pos[run_start]
    midrank = (first + (first + run_len - 1)) / 2.0 + 1.0  # per run, 1-based within the group
    r = midrank[run]
    ties = np.bincount(gid[run_start], weights=run_len.astype(np.float64) ** 3 - run_len, minlength=len(starts))

    key = gid * n_lang + lg
    rsum = np.bincount(key, weights=r, minlength=len(starts) * n_lang).reshape(-1, n_lang)
    cnt = np.bincount(key, minlength=len(starts) * n_lang).reshape(-1, n_lang)
    n_groups_lang = np.count_nonzero(cnt, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(cnt > 0, rsum ** 2 / np.maximum(cnt, 1), 0.0).sum(axis=1)
        h = 12.0 / (size * (size + 1.0)) * s - 3.0 * (size + 1.0)
        corr = 1.0 - ties / (size ** 3 - size)
        h = h / corr
    testable = (n_groups_lang >= 2) & (corr > 0)
    p = np.ones(len(starts))
    p[testable] = chi2_sf(h[testable], n_groups_lang[testable] - 1)

    gq, gg = q[starts], g[starts]
    w = np.ones(len(starts)) if weights is None else np.array([float(weights.get(x, 0.0)) for x in gg.tolist()])
    if np.any(w < 0):
        raise ValueError("PEER weights must be >= 0")
    num = np.bincount(gq, weights=w * p, minlength=n)
    den = np.bincount(gq, weights=w, minlength=n)
    has = den > 0
    out[has] = num[has] / den[has]
    return out
