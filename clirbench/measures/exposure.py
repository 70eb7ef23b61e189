"""Language exposure of a ranking's head, per query (docs/measures.md#language-exposure): Share@k,
AWRF@k (four variants), α-nDCG@k with the document language as the aspect, and the top-1 split.

They read a ``JudgedHead`` (``rank/judged_head.py``, the table's ``head``). Ties: Share@k, AWRF's
exposure and the top-1 split are exact expectations over uniformly random orders within each tie
group (equal float32 score; the group reaching the head's end continues by ``tail``); α-nDCG@k
reads the head in its own order (the tie rule of the standard measures, trec_eval's: score
descending, then document id descending), so it depends on the top k alone, whatever the head's
depth; it equals ndeval (pyndeval) on that order (ndeval itself orders a tie by id ascending).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:  # annotations only: the measures read a JudgedHead and need no rank code at run time
    from ..rank.judged_head import JudgedHead
    from ..rank.table import RankTable
    from .compute import Prep

__all__ = ["ALPHA", "GAMMA", "TOP1", "tie_groups", "position_langs", "lang_shares", "share_at", "pool_mix",
           "share_matrix", "exposure", "jsd2", "awrf", "alpha_ndcg", "top1_split",
           "share_measure", "awrf_measure", "awrf_uniform_measure", "awrf_geo_measure",
           "awrf_geo_uniform_measure", "alpha_ndcg_measure", "top1_measure"]

ALPHA = 0.5  # α-nDCG's redundancy penalty (ndeval's default, NeuCLIR's)
GAMMA = 0.5  # the geometric attention's patience
TOP1 = ("rel_qlang", "rel_other", "nonrel_qlang", "nonrel_other")


def tie_groups(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end), both (n, K): the positions [start, end) of each position's tie group in its row
    (a row is sorted by score, so equal float32 scores are neighbours; the padding is one group)."""
    n, K = scores.shape
    pos = np.arange(K)
    new = np.ones((n, K), dtype=bool)
    new[:, 1:] = scores[:, 1:] != scores[:, :-1]
    last = np.ones((n, K), dtype=bool)
    last[:, :-1] = new[:, 1:]
    start = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, pos + 1, K)[:, ::-1], axis=1)[:, ::-1]
    return start, end


def position_langs(jh: JudgedHead, k: int) -> np.ndarray:
    """(n, min(k, K), L): the probability, over uniformly random orders of each tie group, that the
    document at rank r + 1 is in language ``langs[l]`` (0 past the end of a list)."""
    jh.check_depth(k)
    n, K, L = len(jh.query_ids), jh.depth, len(jh.langs)
    P = min(k, K)
    start, end = tie_groups(jh.scores)
    s, e = start[:, :P], end[:, :P]
    at_end = (e == K) & jh.full[:, None]  # the group that may continue past the head
    size = (e - s) + np.where(at_end, jh.tail.sum(axis=1)[:, None], 0)
    rows = np.arange(n)[:, None]
    out = np.zeros((n, P, L))
    for lang in range(L):
        cum = np.zeros((n, K + 1), dtype=np.int64)
        np.cumsum(jh.lang == lang, axis=1, out=cum[:, 1:])
        out[:, :, lang] = (cum[rows, e] - cum[rows, s] + np.where(at_end, jh.tail[:, lang][:, None], 0)) / size
    out[jh.docs[:, :P] < 0] = 0.0
    return out


def _listed(jh: JudgedHead, k: int) -> np.ndarray:
    """(n,) the documents of each row's top k: min(k, listed)."""
    return np.minimum(jh.ranked, k)


def lang_shares(jh: JudgedHead, k: int, probs: np.ndarray | None = None) -> np.ndarray:
    """(n, L) Share@k(L): 100 × the expected number of documents in language L among the top k /
    the documents there (NaN where a row is empty)."""
    probs = position_langs(jh, k) if probs is None else probs
    listed = _listed(jh, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(listed[:, None] > 0, 100.0 * probs.sum(axis=1) / listed[:, None], np.nan)


def _own(jh: JudgedHead, values: np.ndarray) -> np.ndarray:
    """(n,) each row's value of (n, L) ``values`` in its query's language; NaN where the pool has
    fewer than two languages or none in the query's."""
    q = jh.query_lang_index
    out = values[np.arange(len(q)), np.maximum(q, 0)] if values.shape[1] else np.full(len(q), np.nan)
    return np.where((q >= 0) & (len(jh.langs) >= 2), out, np.nan)


def share_at(jh: JudgedHead, k: int, probs: np.ndarray | None = None) -> np.ndarray:
    """(n,) Share@k: the query language's share (percent) of the top k; neutral at ``pool_mix``."""
    return _own(jh, lang_shares(jh, k, probs))


def pool_mix(jh: JudgedHead) -> np.ndarray:
    """(n,) the query language's share (percent) of the pool: Share@k's neutral value."""
    total = max(jh.pool_size, 1)
    mix = np.asarray([100.0 * jh.lang_counts[lang] / total for lang in jh.langs], dtype=np.float64)
    return _own(jh, np.broadcast_to(mix, (len(jh.query_ids), len(jh.langs))))


def share_matrix(jh: JudgedHead, k: int) -> dict[str, dict[str, float]]:
    """``{query language: {document language: mean Share@k(L)}}`` over the queries of each query
    language (their rows sum to 100): which languages fill the top k."""
    shares = lang_shares(jh, k)
    qlangs = np.asarray(jh.query_langs)
    out = {}
    for q in sorted(set(jh.query_langs)):
        rows = shares[(qlangs == q) & ~np.isnan(shares).any(axis=1)]
        out[q] = {lang: float(rows[:, i].mean()) if len(rows) else float("nan") for i, lang in enumerate(jh.langs)}
    return out


def _weights(P: int, weights: str, gamma: float) -> np.ndarray:
    r = np.arange(1, P + 1, dtype=np.float64)
    if weights == "log":
        return 1.0 / np.log2(r + 1.0)
    if weights == "geo":
        return gamma ** (r - 1.0)
    raise ValueError(f"weights must be 'log' or 'geo', not {weights!r}")


def exposure(jh: JudgedHead, k: int, weights: str = "log", gamma: float = GAMMA,
             probs: np.ndarray | None = None) -> np.ndarray:
    """(n, L) the expected attention each language gets in the top k, normalised to sum to 1: rank r
    weighs 1/log2(r + 1) (``log``) or γ^(r-1) (``geo``); NaN where a row is empty."""
    probs = position_langs(jh, k) if probs is None else probs
    w = _weights(probs.shape[1], weights, gamma)
    listed = _listed(jh, k)
    total = np.where(np.arange(len(w))[None, :] < listed[:, None], w[None, :], 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total[:, None] > 0, np.einsum("npl,p->nl", probs, w) / total[:, None], np.nan)


def jsd2(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise Jensen-Shannon divergence, base 2 (0 to 1) of distributions ``p`` and ``q`` (n, L)."""
    m = (p + q) / 2.0

    def kl(a):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(a > 0, a * np.log2(a / m), 0.0).sum(axis=1)

    return np.clip(0.5 * kl(p) + 0.5 * kl(q), 0.0, 1.0)


def awrf(jh: JudgedHead, k: int, target: str = "relevant", weights: str = "log", gamma: float = GAMMA,
         probs: np.ndarray | None = None) -> np.ndarray:
    """(n,) AWRF@k = 1 − JSD₂(ε, ε*): ε the expected exposure (``exposure``), ε* the languages of the
    query's relevant documents (``relevant``) or uniform over the pool's (``uniform``). NaN on a
    pool of one language, a query without relevant documents (``relevant``), an empty row."""
    eps = exposure(jh, k, weights, gamma, probs)
    n, L = eps.shape
    if target == "relevant":
        total = jh.rel_counts.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            star = np.where(total > 0, jh.rel_counts / total, np.nan)
    elif target == "uniform":
        star = np.full((n, L), 1.0 / max(L, 1))
    else:
        raise ValueError(f"target must be 'relevant' or 'uniform', not {target!r}")
    bad = np.isnan(eps).any(axis=1) | np.isnan(star).any(axis=1) | (L < 2)
    return np.where(bad, np.nan, 1.0 - jsd2(np.nan_to_num(eps), np.nan_to_num(star)))


# -- α-nDCG, as ndeval computes it ---------------------------------------------------------------


def _powers(base: float, n: int) -> np.ndarray:
    """base^0 .. base^(n-1), each by one more multiplication (ndeval's running gain)."""
    out, g = [], 1.0
    for _ in range(n):
        out.append(g)
        g *= base
    return np.asarray(out)


def _discounts(n: int) -> np.ndarray:
    """ndeval's discount of position i (0-based): log(2) / log(i + 2)."""
    return np.asarray([math.log(2.0) / math.log(i + 2.0) for i in range(n)])


def _ideal_ideal(subtopics: int, k: int, alpha: float) -> float:
    """ndeval's "ideal ideal" cumulative gain at position k - 1 (its normaliser of α-DCG)."""
    total, gain = 0.0, float(subtopics)
    for d in _discounts(k):
        total += gain * d
        gain *= 1.0 - alpha
    return total


def _novelty_gains(jh: JudgedHead, P: int, g: np.ndarray) -> np.ndarray:
    """(n, P) the novelty gain of each of the top P documents of the head, in its order: g[m] for a
    relevant document with m relevant documents of its language above it, 0 otherwise."""
    lang, rel = jh.lang[:, :P], jh.grades[:, :P] > 0
    gain = np.zeros(lang.shape)
    for lang_i in range(len(jh.langs)):
        mine = rel & (lang == lang_i)
        before = np.cumsum(mine, axis=1) - mine
        gain = np.where(mine, g[np.minimum(before, len(g) - 1)], gain)
    return gain


def _ideal_gains(rel_counts: np.ndarray, P: int, g: np.ndarray) -> np.ndarray:
    """(n, P) the gains of ndeval's greedy ideal list: every language's g^0, g^1, ... over its
    relevant documents, merged in descending order (greedy is exact with one aspect per document)."""
    n, L = rel_counts.shape
    j = np.arange(P)
    cand = np.where(j[None, None, :] < rel_counts[:, :, None], g[None, None, :P], 0.0).reshape(n, L * P)
    return -np.sort(-cand, axis=1)[:, :P] if L * P else np.zeros((n, P))


def alpha_ndcg(jh: JudgedHead, k: int, alpha: float = ALPHA) -> np.ndarray:
    """(n,) α-nDCG@k with the document language as the aspect, on the head's top k in its order,
    with ndeval's arithmetic (pyndeval on that order, the qrels with language as subtopic): gain
    (1−α)^(relevant documents of the language ranked above), discount 1/log2(r+1), over the greedy
    ideal's; 0 without relevant documents or a ranked one."""
    jh.check_depth(k)
    n = len(jh.query_ids)
    P = min(k, jh.depth)
    Pi = int(min(k, jh.rel_counts.sum(axis=1).max(initial=0)))
    g = _powers(1.0 - alpha, max(P, Pi, 1))
    dcg = np.cumsum(_novelty_gains(jh, P, g) * _discounts(P), axis=1)[:, -1] if P else np.zeros(n)
    ideal = np.cumsum(_ideal_gains(jh.rel_counts, Pi, g) * _discounts(Pi), axis=1)[:, -1] if Pi else np.zeros(n)
    subtopics = np.count_nonzero(jh.rel_counts, axis=1)
    if k > 1:  # ndeval divides both by the "ideal ideal" from position 2 on
        norm = {a: _ideal_ideal(a, k, alpha) for a in np.unique(subtopics[subtopics > 0]).tolist()}
        ii = np.array([norm.get(a, 1.0) for a in subtopics.tolist()])
        dcg, ideal = dcg / ii, ideal / ii
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((dcg != 0) & (subtopics > 0), dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


# -- the top-1 split -------------------------------------------------------------------------------


def _top_group_relevant(table: RankTable, jh: JudgedHead) -> tuple[np.ndarray, np.ndarray]:
    """(n,) the relevant documents in the query's language, and in others, whose tie group starts
    at rank 1 (the table's tie counts: the top group, past the head included)."""
    if table.tied is None:
        raise ValueError("the top-1 split of a top tie group longer than the head needs the table's tie counts")
    if table.doc_lang is not None:
        same = np.asarray(table.doc_lang) == np.asarray(jh.query_langs, dtype=object)[table.qidx]
    elif table.same_lang is not None:
        same = np.asarray(table.same_lang, dtype=bool)
    else:
        raise ValueError("the top-1 split needs the relevant documents' languages")
    top = table.tie_start == 1
    n = len(jh.query_ids)
    return (np.bincount(table.qidx[top & same], minlength=n), np.bincount(table.qidx[top & ~same], minlength=n))


def top1_split(jh: JudgedHead, table: RankTable) -> dict[str, np.ndarray]:
    """``{part: (n,)}`` for the parts of ``TOP1``: 100 × the probability, over random orders of the
    top tie group, that the first document is relevant or not, in the query's language or not (the
    four sum to 100; NaN for an empty row). Relevant documents of a top group longer than the head
    come from ``table`` (its judgements whose tie group starts at rank 1)."""
    n, K = len(jh.query_ids), jh.depth
    end = tie_groups(jh.scores)[1][:, 0] if K else np.zeros(n, np.int64)
    inside = (np.arange(K)[None, :] < end[:, None]) & (jh.docs >= 0)
    q = jh.query_lang_index
    same = (jh.lang == q[:, None]) & (q[:, None] >= 0)
    rel = jh.grades > 0
    count = {"rel_qlang": inside & rel & same, "rel_other": inside & rel & ~same,
             "nonrel_qlang": inside & ~rel & same, "nonrel_other": inside & ~rel & ~same}
    count = {part: c.sum(axis=1).astype(np.float64) for part, c in count.items()}
    size = inside.sum(axis=1).astype(np.float64)
    longer = jh.full & (end == K) & (jh.tail.sum(axis=1) > 0)
    if longer.any():
        tail_q = np.where(q >= 0, jh.tail[np.arange(n), np.maximum(q, 0)], 0)
        rel_q, rel_o = _top_group_relevant(table, jh)
        lang_q = count["rel_qlang"] + count["nonrel_qlang"] + tail_q
        lang_o = count["rel_other"] + count["nonrel_other"] + jh.tail.sum(axis=1) - tail_q
        if np.any(longer & ((rel_q > lang_q) | (rel_o > lang_o))):
            raise ValueError("the table's top tie group holds more relevant documents than the head's")
        ext = {"rel_qlang": rel_q, "rel_other": rel_o, "nonrel_qlang": lang_q - rel_q, "nonrel_other": lang_o - rel_o}
        count = {part: np.where(longer, ext[part], c) for part, c in count.items()}
        size = np.where(longer, lang_q + lang_o, size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {part: np.where(size > 0, 100.0 * count[part] / size, np.nan) for part in TOP1}


# -- the families' functions: (Prep, cutoff) -> (n,) ---------------------------------------------


def _probs(p: Prep, k: int) -> np.ndarray:
    return p.memo(("position_langs", k), lambda: position_langs(p.head, k))


def share_measure(p: Prep, k: int) -> np.ndarray:
    return share_at(p.head, k, _probs(p, k))


def _awrf(target: str, weights: str) -> Callable[[Prep, int], np.ndarray]:
    def measure(p: Prep, k: int) -> np.ndarray:
        return awrf(p.head, k, target, weights, GAMMA, _probs(p, k))
    return measure


awrf_measure = _awrf("relevant", "log")
awrf_uniform_measure = _awrf("uniform", "log")
awrf_geo_measure = _awrf("relevant", "geo")
awrf_geo_uniform_measure = _awrf("uniform", "geo")


def alpha_ndcg_measure(p: Prep, k: int) -> np.ndarray:
    return alpha_ndcg(p.head, k, ALPHA)


def top1_measure(part: str) -> Callable[[Prep, None], np.ndarray]:
    """The family function of one part of the top-1 split (the four share one computation)."""
    if part not in TOP1:
        raise ValueError(f"the top-1 split has parts {TOP1}, not {part!r}")

    def measure(p: Prep, k: None) -> np.ndarray:
        return p.memo("top1_split", lambda: top1_split(p.head, p.t))[part]
    return measure
