"""Consistency of the rankings one question gets when asked in two languages over the same documents
(docs/measures.md#consistency-across-query-languages-mrck-rbo): per question, ``MRC@k`` (Spearman's
rho on the union of the two top-k lists, tie-aware) and ``RBO@k`` (extrapolated rank-biased overlap,
p = 0.9, of the two top-k lists in the tie rule's order), read from two ``rank.head.Head`` objects."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Hashable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..rank.head import Head

__all__ = ["DEFAULT_K", "DEFAULT_P", "TwinValues", "twin_rows", "average_ranks", "mrc", "rbo_ext",
           "consistency_values"]

DEFAULT_K = 10  # the lists' depth of MRC@k and RBO@k
DEFAULT_P = 0.9  # RBO's persistence


def twin_rows(query_ids_a: Sequence[str], query_ids_b: Sequence[str],
              twins: Mapping[str, str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(ia, ib)``: query ``query_ids_a[ia[i]]`` is the same question as
    ``query_ids_b[ib[i]]``, in a's order. Without ``twins`` two queries pair when their ids are equal
    (a parallel task's query id is its question's, in every language: XQuAD's SQuAD ids); ``twins``
    maps ids of a to ids of b instead (pairs naming an absent id are left out). Queries without a
    twin are left out; a ValueError when none pairs, or when a query of b is the twin of two of a."""
    index_b = {q: j for j, q in enumerate(query_ids_b)}
    pairs = [(i, index_b.get(q if twins is None else twins.get(q, None))) for i, q in enumerate(query_ids_a)]
    pairs = [(i, j) for i, j in pairs if j is not None]
    if not pairs:
        how = "by a shared question id" if twins is None else "through the twins given"
        raise ValueError(f"no query pairs {how}: {_sample(query_ids_a)} against {_sample(query_ids_b)}")
    ia, ib = (np.asarray(x, dtype=np.int64) for x in zip(*pairs))
    if len(np.unique(ib)) != len(ib):
        raise ValueError("a query of b is the twin of more than one query of a")
    return ia, ib


def _sample(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(q) for q in list(ids)[:3])
    return f"{len(ids)} queries ({shown}{', ...' if len(ids) > 3 else ''})"


def average_ranks(values) -> np.ndarray:
    """1-based ranks of ``values`` ascending, equal values sharing their average rank
    (``scipy.stats.rankdata(method="average")``)."""
    x = np.asarray(values)
    if not x.size:
        return np.zeros(0, dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[inverse.reshape(-1)]


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    xc, yc = x - x.mean(), y - y.mean()
    denom = np.sqrt((xc @ xc) * (yc @ yc))
    if denom == 0:
        return float("nan")
    return float(np.clip((xc @ yc) / denom, -1.0, 1.0))


def _list_ranks(scores, n: int) -> np.ndarray:
    """Average ranks of a list of n in rank order (non-increasing float32 scores): one tie group per score."""
    s = np.asarray(scores, dtype=np.float32)[:n]
    if len(s) != n:
        raise ValueError(f"a list of {n} documents needs {n} scores, got {len(s)}")
    if np.any(s[1:] > s[:-1]) or np.isnan(s).any():
        raise ValueError("a list's scores must be non-increasing numbers (rank order)")
    return average_ranks(-s.astype(np.float64))


def mrc(docs_a: Sequence[Hashable], scores_a, docs_b: Sequence[Hashable], scores_b, k: int = DEFAULT_K) -> float:
    """MRC@k of one question: Spearman's rho between the rank vectors of the two top-k lists
    (``docs_*`` in rank order, ``scores_*`` their scores; the first k of each) over their union. A
    listed document's rank is its position, equal float32 scores sharing their average position; a
    document missing from a list takes rank k + 1 there (all its missing ones tied). Equal rank
    vectors give 1 (one document in both lists included); NaN when the union is empty or exactly one
    vector is constant (``scipy.stats.spearmanr``'s NaN)."""
    a, b = list(docs_a)[:k], list(docs_b)[:k]
    if len(set(a)) != len(a) or len(set(b)) != len(b):
        raise ValueError("a list names a document twice")
    union = a + [d for d in b if d not in set(a)]
    if not union:
        return float("nan")
    ra = np.full(len(union), k + 1.0)
    rb = np.full(len(union), k + 1.0)
    ra[:len(a)] = _list_ranks(scores_a, len(a))
    where_b = {d: i for i, d in enumerate(union)}
    rb[[where_b[d] for d in b]] = _list_ranks(scores_b, len(b))
    if np.array_equal(ra, rb):
        return 1.0
    return _pearson(average_ranks(ra), average_ranks(rb))  # Spearman: Pearson on the ranks of the vectors


def rbo_ext(S: Sequence[Hashable], T: Sequence[Hashable], p: float = DEFAULT_P) -> float:
    """Extrapolated rank-biased overlap (Webber, Moffat and Zobel 2010, eq. 32) of two lists in rank
    order, of equal or unequal lengths, as PyPI ``rbo``'s ``RankingSimilarity(S, T).rbo_ext(p)``: every
    position its own rank (no ties), both empty 1, one empty 0, bounded to [0, 1]."""
    if not 0.0 < float(p) < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    S, T = list(S), list(T)
    if len(set(S)) != len(S) or len(set(T)) != len(T):
        raise ValueError("a list names a document twice")
    if not S or not T:
        return float(not S and not T)
    short, long_ = (S, T) if len(S) <= len(T) else (T, S)
    s, l = len(short), len(long_)
    at_short = {d: i + 1 for i, d in enumerate(short)}
    both_by = [max(at_short[d], i + 1) for i, d in enumerate(long_) if d in at_short]  # depth in both prefixes
    X = np.cumsum(np.bincount(np.asarray(both_by, dtype=np.int64), minlength=l + 1)[1:]).astype(np.float64)
    d = np.arange(1, l + 1, dtype=np.float64)
    weight = (1.0 - p) * p ** (d - 1)
    xs = X[s - 1]
    past = d > s
    total = (weight * X / d).sum() + (weight[past] * xs * (d[past] - s) / (s * d[past])).sum()
    total += ((X[-1] - xs) / l + xs / s) * p ** l
    return float(min(max(total, 0.0), 1.0))


@dataclass(frozen=True, eq=False)
class TwinValues:
    """Per-question MRC@k and RBO@k of two heads: row i is query ``query_ids_a[i]`` of a and its twin
    ``query_ids_b[i]`` of b."""

    query_ids_a: tuple[str, ...]
    query_ids_b: tuple[str, ...]
    k: int
    p: float
    mrc: np.ndarray  # (n,) float64, NaN where undefined
    rbo: np.ndarray  # (n,) float64

    @property
    def names(self) -> tuple[str, str]:
        """The measures' names: ``MRC@k``, ``RBO@k``."""
        return f"MRC@{self.k}", f"RBO@{self.k}"

    def columns(self) -> dict[str, np.ndarray]:
        """``{"MRC@k": per-question values, "RBO@k": ...}``."""
        return dict(zip(self.names, (self.mrc, self.rbo)))


def consistency_values(head_a: "Head", head_b: "Head", k: int = DEFAULT_K, p: float = DEFAULT_P,
                       twins: Mapping[str, str] | None = None) -> TwinValues:
    """MRC@k and RBO@k (``rbo_ext`` with ``p``) of every question of ``head_a`` with a twin in
    ``head_b`` (``twin_rows``): two heads over the same documents, each holding at least k documents
    per query (or every document of the pool). All questions at once, with the arithmetic of ``mrc``
    and ``rbo_ext`` (the same values, bit for bit)."""
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    depth = min(_cutoff(head_a, k), _cutoff(head_b, k))
    b_to_a = _doc_map(head_a.doc_ids, head_b.doc_ids)
    ia, ib = twin_rows(head_a.query_ids, head_b.query_ids, twins)
    docs_a, scores_a, len_a = _rows(head_a, ia, depth)
    docs_b, scores_b, len_b = _rows(head_b, ib, depth)
    docs_b = np.where(docs_b >= 0, b_to_a[np.maximum(docs_b, 0)], -1)
    at_a = _positions_in(docs_a, docs_b)
    mrcs = _mrc_rows(_tie_ranks(scores_a, len_a), len_a, _tie_ranks(scores_b, len_b), len_b, at_a, k)
    if not 0.0 < float(p) < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    rbos = _rbo_rows(len_a, len_b, at_a, p)
    return TwinValues(tuple(head_a.query_ids[i] for i in ia.tolist()), tuple(head_b.query_ids[j] for j in ib.tolist()),
                      k, float(p), mrcs, rbos)


def _rows(head: "Head", rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lists of ``rows`` to ``depth``: documents (-1 past a list's end), float32 scores, lengths."""
    docs = head.docs[rows, :depth]
    lengths = (docs >= 0).sum(axis=1)
    listed = np.arange(docs.shape[1]) < lengths[:, None]
    return np.where(listed, docs, -1), np.asarray(head.scores[rows, :depth], dtype=np.float32), lengths


def _positions_in(docs_a: np.ndarray, docs_b: np.ndarray) -> np.ndarray:
    """Per row, the position in a's list of each of b's documents (-1: not in a's list, or past b's
    end), from one row-wise sort; a ValueError when a list names a document twice."""
    n, width = docs_b.shape
    both = np.concatenate([docs_a, docs_b], axis=1)
    both = np.where(both >= 0, both, -1 - np.arange(2 * width))  # empty slots: distinct, never matched
    order = np.argsort(both, axis=1, kind="stable")  # a's copy of a shared document first
    ordered = np.take_along_axis(both, order, axis=1)
    rows, cols = np.nonzero(ordered[:, 1:] == ordered[:, :-1])
    first, second = order[rows, cols], order[rows, cols + 1]
    if np.any(first >= width) or np.any(second < width):
        raise ValueError("a list names a document twice")
    at_a = np.full((n, width), -1, dtype=np.int64)
    at_a[rows, second - width] = first
    return at_a


def _tie_ranks(scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``_list_ranks`` of every row: positions 1..n, equal float32 scores sharing their average (NaN
    past a row's end); a ValueError for scores that are not non-increasing numbers."""
    n, width = scores.shape
    at = np.arange(width)
    listed = at < lengths[:, None]
    rises = (scores[:, 1:] > scores[:, :-1]) & listed[:, 1:]
    if rises.any() or (np.isnan(scores) & listed).any():
        raise ValueError("a list's scores must be non-increasing numbers (rank order)")
    changes = scores[:, 1:] != scores[:, :-1]
    starts = np.concatenate([np.ones((n, 1), dtype=bool), changes], axis=1)
    ends = np.concatenate([changes, np.ones((n, 1), dtype=bool)], axis=1) | (at == lengths[:, None] - 1)
    first = np.maximum.accumulate(np.where(starts, at, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, at, width)[:, ::-1], axis=1)[:, ::-1]
    return np.where(listed, (last + 1) - (last - first) / 2.0, np.nan)


def _mrc_rows(ranks_a: np.ndarray, len_a: np.ndarray, ranks_b: np.ndarray, len_b: np.ndarray,
              at_a: np.ndarray, k: int) -> np.ndarray:
    """``mrc`` of every row: the rank vectors on the union (a's list, then b's documents not in it in
    b's order), 1 where equal, else Pearson on their average ranks."""
    n, width = at_a.shape
    listed_b = np.arange(width) < len_b[:, None]
    new_b = listed_b & (at_a < 0)
    sizes = len_a + new_b.sum(axis=1)  # the union's
    slot = np.where(at_a >= 0, at_a, len_a[:, None] + np.cumsum(new_b, axis=1) - 1)
    ra = np.full((n, 2 * width), k + 1.0)
    rb = np.full((n, 2 * width), k + 1.0)
    ra[:, :width] = np.where(np.isnan(ranks_a), k + 1.0, ranks_a)
    rows, cols = np.nonzero(listed_b)
    rb[rows, slot[rows, cols]] = ranks_b[rows, cols]
    out = np.full(n, np.nan)
    out[(sizes > 0) & (ra == rb).all(axis=1)] = 1.0  # slots past the union hold k + 1 in both
    todo = (sizes > 0) & np.isnan(out)
    inside = np.arange(2 * width) < sizes[:, None]
    x, y = (_row_average_ranks(r[todo], inside[todo], k) for r in (ra, rb))
    out[todo] = _pearson_rows(x, y, inside[todo], sizes[todo])
    return out


def _row_average_ranks(values: np.ndarray, inside: np.ndarray, k: int) -> np.ndarray:
    """``average_ranks`` of each row's values inside its union (0 outside); the values are multiples of
    1/2 in [1, k + 1], so per-row counts of each value give the ranks (count below, count up to)."""
    n = len(values)
    span = 2 * k + 4  # a bin per half in [0, k + 1], and one past them for the slots outside the union
    halves = np.where(inside, (2 * values).astype(np.int64), span - 1)
    counts = np.bincount((halves + span * np.arange(n)[:, None]).ravel(), minlength=n * span)
    upto = np.cumsum(counts.reshape(n, span), axis=1)
    hi = np.take_along_axis(upto, halves, axis=1)
    lo = np.take_along_axis(upto, halves - 1, axis=1)
    return np.where(inside, hi - (hi - lo - 1) / 2.0, 0.0)


def _pearson_rows(x: np.ndarray, y: np.ndarray, inside: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``_pearson`` of each row's values inside its union. Average ranks of a union of m sum to
    m(m + 1)/2, so the means are (m + 1)/2 and every centred value, product and sum is a multiple of
    1/4 held exactly: the sums equal ``xc @ yc``'s in any order, and so do the results."""
    xc, yc = (np.where(inside, r - (r.sum(axis=1) / sizes)[:, None], 0.0) for r in (x, y))
    denom = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom == 0, np.nan, np.clip((xc * yc).sum(axis=1) / denom, -1.0, 1.0))


def _rbo_rows(len_a: np.ndarray, len_b: np.ndarray, at_a: np.ndarray, p: float) -> np.ndarray:
    """``rbo_ext`` of every row. Its sums round, so rows of equal list lengths go together: numpy sums
    each row of a C-contiguous block as it sums a 1-D array of that length (the same order, the same
    values as ``rbo_ext``'s, bit for bit)."""
    out = np.where((len_a == 0) & (len_b == 0), 1.0, 0.0)  # one list empty: 0, both: 1
    pairs = np.stack([len_a, len_b], axis=1)
    for la, lb in np.unique(pairs[(len_a > 0) & (len_b > 0)], axis=0).tolist():
        rows = (len_a == la) & (len_b == lb)
        out[rows] = _rbo_equal_lengths(at_a[rows, :lb], min(la, lb), max(la, lb), p)
    return out


def _rbo_equal_lengths(at_a: np.ndarray, s: int, l: int, p: float) -> np.ndarray:
    """``rbo_ext``'s arithmetic on rows of lists of lengths s <= l: X[d - 1] the documents in both
    prefixes of depth d (a shared document enters at the deeper of its two positions)."""
    n, lb = at_a.shape
    enters = np.where(at_a >= 0, np.maximum(at_a, np.arange(lb)) + 1, 0) + (l + 1) * np.arange(n)[:, None]
    counts = np.bincount(enters.ravel(), minlength=n * (l + 1)).reshape(n, l + 1)[:, 1:]
    X = np.cumsum(counts, axis=1).astype(np.float64)
    d = np.arange(1, l + 1, dtype=np.float64)
    weight = (1.0 - p) * p ** (d - 1)
    xs = X[:, s - 1]
    past = d > s
    total = (weight * X / d).sum(axis=1) + (weight[past] * xs[:, None] * (d[past] - s) / (s * d[past])).sum(axis=1)
    total += ((X[:, -1] - xs) / l + xs / s) * p ** l
    return np.minimum(np.maximum(total, 0.0), 1.0)


def _cutoff(head: "Head", k: int) -> int:
    """The lists' depth read from ``head``: k, or all of a head holding every document."""
    if head.depth < k and head.depth < len(head.doc_ids):
        raise ValueError(f"@{k} needs each query's top {k}: the head holds {head.depth} (rank with depth >= {k})")
    return min(k, head.depth)


def _doc_map(ids_a: Sequence[str], ids_b: Sequence[str]) -> np.ndarray:
    """b's document indices -> a's; a ValueError when the two heads rank different documents."""
    if tuple(ids_a) == tuple(ids_b):
        return np.arange(len(ids_b), dtype=np.int64)
    index_a = {d: i for i, d in enumerate(ids_a)}
    if len(index_a) != len(ids_b) or any(d not in index_a for d in ids_b):
        raise ValueError("the two heads rank different documents: consistency needs one pool's documents")
    return np.fromiter((index_a[d] for d in ids_b), np.int64, len(ids_b))
