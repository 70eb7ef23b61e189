"""Embedded BM25 (spec ``bm25``): bm25s index and scoring over per-language analyzed texts, no Java.

Each document is analysed with its own language's analyzer (``clirbench.retrievers.analyzers``), each query
with the query language's, so a bilingual pool mixes two analyzers in one index (one vocabulary,
idf over the whole pool). Scoring is bm25s's ``lucene`` variant with Pyserini's defaults k1=0.9,
b=0.4: score(q, d) = sum over query terms t (repeats count) of
idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl)), idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)).
Lucene >= 8 scores the same up to its byte-quantised document lengths (bm25s uses exact lengths).

``score`` yields full rows over the pool (0 for documents that match no query term), so ranks are
exact. With ``top_k`` it keeps, like a Lucene top-k search, at most k matching documents per
query (chosen by trec_eval's order: score, then doc id descending) and gives the rest -inf.
Exclusions (multi-1) are applied by the ranking, after scoring: pool statistics include them.

The revision is ``fingerprint:<16 hex>`` (:func:`fingerprint`): what the retriever does on a fixed
probe (the analyzers' terms of ``analyzers.PROBE`` and its stop word lists, then the BM25 scores of
one query per language over the probe's sentences), not the library versions, which are kept as
provenance (``library_versions``). A patch release that scores the probe alike is the same system.
"""
from __future__ import annotations

import functools
import hashlib
import json
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Iterator, Sequence

import numpy as np

from ..cache.cost import EncodeCost, EncodeReport, cpu_name
from ..collection import Text
from ..rank.table import tie_keys
from ..util.errors import UnknownNameError
from .analyzers import PROBE, analyzer_table, get_analyzer, require_backends
from .analyzers import fingerprint as analysis
from .pyserini_bm25 import from_spec as pyserini_from_spec

__all__ = ["BM25Retriever", "from_spec", "fingerprint", "K1", "B", "METHOD", "FINGERPRINT_PREFIX"]

K1, B, METHOD = 0.9, 0.4, "lucene"
MAX_BLOCK_BYTES = 64 << 20
FINGERPRINT_PREFIX = "fingerprint:"


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


class BM25Retriever:
    """BM25 over a pool with per-document-language analysis (see the module docstring)."""

    def __init__(self, k1: float = K1, b: float = B, method: str = METHOD, top_k: int | None = None,
                 spec: str = "bm25") -> None:

        require_backends("retriever bm25")  # fail at construction, not at the first pool

        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be positive, not {top_k}")
        self.k1, self.b, self.method, self.top_k = float(k1), float(b), method, top_k
        self.spec = spec
        self._terms: dict[tuple[str, str], tuple[str, ...]] = {}  # (lang, text) -> terms
        self._seconds: dict[tuple[str, str], float] = {}  # (lang, text) -> seconds its analysis took
        self._index_key: tuple | None = None
        self._index = None
        self._index_seconds = 0.0  # building the kept index (its documents' analysis apart)

    def describe(self) -> dict:
        versions = {d: _version(d) for d in ("bm25s", "PyStemmer", "pythainlp", "regex")}
        return {
            "spec": self.spec,
            "family": "bm25",
            "revision": fingerprint(self.k1, self.b, self.method, self.top_k),
            "k1": self.k1, "b": self.b, "variant": self.method,
            "top_k": self.top_k,
            "library_versions": versions,
            "analysis": ("each document with its own language's analyzer, queries with the query "
                         "language's; NFKC + lowercase first"),
            "analyzers": analyzer_table(),
        }

    def terms(self, texts: Sequence[Text]) -> list[tuple[str, ...]]:
        """Index terms of each text, analysed with the analyzer of its ``lang`` (memoised)."""

        out = []
        for t in texts:
            key = (t.lang, t.text)
            terms = self._terms.get(key)
            if terms is None:
                t0 = time.perf_counter()
                terms = self._terms[key] = tuple(get_analyzer(t.lang)(t.text))
                self._seconds[key] = time.perf_counter() - t0
            out.append(terms)
        return out

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """Analyse every text now (the runner times this as encoding)."""
        self.terms(docs)
        self.terms(queries)

    def index(self, docs: Sequence[Text]):
        """The bm25s index of ``docs`` (the last one is kept: pools often share their documents)."""
        import bm25s

        key = tuple((d.lang, d.text) for d in docs)
        if key != self._index_key:
            corpus = [list(t) for t in self.terms(docs)]
            t0 = time.perf_counter()
            model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
            if any(corpus):
                model.index(corpus, create_empty_token=False, show_progress=False)
            else:
                model = None  # no term anywhere: every score is 0
            self._index_key, self._index = key, model
            self._index_seconds = time.perf_counter() - t0
        return self._index

    def cost(self, queries: Sequence[Text], docs: Sequence[Text]):
        """``results.cost.EncodeReport`` of the last scored pool: documents per second of analysis and
        indexing, queries per second of analysis (each distinct text's analysis timed once, when first
        analysed), and the bytes of the bm25s index's arrays (its sparse score matrix)."""

        def encoding(keys, extra: float = 0.0) -> EncodeCost:
            keys = list(dict.fromkeys(keys))
            return EncodeCost(len(keys), sum(self._seconds.get(k, 0.0) for k in keys) + extra, True, cpu_name())

        dkeys = [(d.lang, d.text) for d in docs]
        self.terms(docs), self.terms(queries)
        model = self.index(docs) if docs else None
        return EncodeReport(docs=encoding(dkeys, self._index_seconds if docs else 0.0),
                            queries=encoding((q.lang, q.text) for q in queries),
                            index_bytes=index_nbytes(model))

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])`` float32 blocks, rows in query order."""
        n_q, n_d = len(queries), len(docs)
        model = self.index(docs) if n_d else None
        qterms = self.terms(queries)
        step = max(1, MAX_BLOCK_BYTES // max(1, 4 * n_d))
        keys = None
        if self.top_k is not None and n_d:
            keys = tie_keys([d.id for d in docs])
        for start in range(0, n_q, step):
            stop = min(start + step, n_q)
            block = np.zeros((stop - start, n_d), dtype=np.float32)
            if model is not None:
                for i in range(start, stop):
                    ids = model.get_tokens_ids(list(qterms[i]))
                    if ids:
                        block[i - start] = model.get_scores_from_ids(ids)
            if keys is not None:
                block = _keep_top_k(block, keys, self.top_k)
            yield start, block


@functools.lru_cache(maxsize=8)
def fingerprint(k1: float = K1, b: float = B, method: str = METHOD, top_k: int | None = None) -> str:
    """``fingerprint:<16 hex>``: SHA-256 of the analyzers' fingerprint (``analyzers.fingerprint``)
    and of the scores (4 significant digits) of one query per probe language (its second sentence's
    first words) over every probe sentence, indexed as a pool. Library versions are not in it."""

    docs = [Text(f"{lang}-{i}", text, lang) for lang, texts in sorted(PROBE.items()) for i, text in enumerate(texts)]
    queries = [Text(f"q-{lang}", " ".join(texts[1].split()[:4]), lang) for lang, texts in sorted(PROBE.items())]
    retriever = BM25Retriever(k1, b, method, top_k, spec="bm25")
    scores = np.concatenate([block for _, block in retriever.score(queries, docs)])
    shown = [[f"{x:.4g}" for x in row] for row in scores.tolist()]
    text = json.dumps({"analysis": analysis(), "scores": shown})
    return FINGERPRINT_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def index_nbytes(model) -> int:
    """The bytes of a bm25s index's arrays (its score matrix's data, indices and pointers; 0 for none)."""
    if model is None:
        return 0
    arrays = [v for v in (getattr(model, "scores", None) or {}).values() if isinstance(v, np.ndarray)]
    extra = getattr(model, "nonoccurrence_array", None)
    return int(sum(a.nbytes for a in arrays) + (extra.nbytes if isinstance(extra, np.ndarray) else 0))


def _keep_top_k(block: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """Keep each row's k best positive scores (trec_eval's order); -inf elsewhere."""
    out = np.full_like(block, -np.inf)
    for r, row in enumerate(block):
        order = np.lexsort((-keys, -row))[:k]  # score descending, then doc id descending
        order = order[row[order] > 0]
        out[r, order] = row[order]
    return out


def from_spec(arg: str, options: dict):
    """``bm25`` (embedded) or ``bm25:pyserini`` (Lucene through Pyserini)."""

    if arg == "pyserini":
        return pyserini_from_spec("", options)
    if arg:
        raise UnknownNameError(f"unknown BM25 backend {arg!r}: expected bm25 (embedded) or bm25:pyserini")
    return BM25Retriever()
