"""The PSQ retriever (spec ``psq:<table>[+<table>...]``): exact structured-query scores over the pool.

See ``clirbench.retrievers.psq`` for the model.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ...collection import Text
from ...util.errors import ClirbenchError, DataNotFoundError
from ...util.strict import ascii_int
from ..analyzers import require_backends
from ..spec import spec_params
from .table import DEFAULTS, PSQTable, analyze_fn, load_table

__all__ = ["PSQRetriever", "from_spec", "MAX_BLOCK_BYTES"]

MAX_BLOCK_BYTES = 256 << 20


class PSQRetriever:
    """PSQ over one or more tables (one per document language); full, exact score rows."""

    family = "psq"

    def __init__(self, tables: Sequence[PSQTable], *, alpha: float = DEFAULTS["alpha"], spec: str | None = None,
                 pruning: Mapping[str, float] | None = None, oov: str = DEFAULTS["oov"],
                 max_block_bytes: int = MAX_BLOCK_BYTES) -> None:
        if oov not in ("drop", "keep"):
            raise ClirbenchError(f"psq: oov must be 'drop' or 'keep', not {oov!r}")
        self.oov = oov
        if not tables:
            raise ClirbenchError("psq needs at least one table")
        if not 0.0 < alpha < 1.0:
            raise ClirbenchError(f"psq: alpha must lie in (0, 1), not {alpha}")
        seen = set()
        for t in tables:
            if t.doc_lang in seen:
                raise ClirbenchError(f"psq: two tables map {t.doc_lang} documents; give one per document language")
            seen.add(t.doc_lang)
        if len({t.analyzer for t in tables}) != 1:
            raise ClirbenchError("psq: the tables were built with different analyzers")
        self.tables = tuple(tables)
        self.alpha = float(alpha)
        self.pruning = dict(pruning or {})
        self.spec = spec or "psq:" + "+".join(t.path for t in tables)
        self.max_block_bytes = int(max_block_bytes)
        self._analyze = analyze_fn(self.tables[0].analyzer)
        self._tokens: dict[tuple[str, str], Counter] = {}

    # -- description --------------------------------------------------------------------------------
    def describe(self) -> dict:
        h = hashlib.sha256("".join(t.sha256 for t in self.tables).encode()).hexdigest()
        return {
            "spec": self.spec,
            "family": "psq",
            "model_id": "+".join(t.path for t in self.tables),
            "revision": h[:16],
            "prompts": {},
            "alpha": self.alpha,
            "pruning": self.pruning,
            "analyzer": self.tables[0].analyzer,
            "tables": [t.describe() for t in self.tables],
            "weight": "w(e,d) = log(1 + (1-alpha) p(e|d) / (alpha P_C(e))), p(e|d) = sum_f p(e|f) c(f,d)/|d|",
            "collection_probability": "P_C(e) = (1 + c_C(e)) / (1 + N): query-language counts of the table "
                                      "(the pool's expected counts where a table has none)",
            "query_language_documents": "identity mapping p(e|d) = c(e,d)/|d|",
            "oov": self.oov + (": document terms missing from the table pass through unchanged (p(f|f) = 1)"
                               if self.oov == "keep" else ": document terms missing from the table are dropped"),
            "score": "sum_e c(e,q) w(e,d), exact over the whole pool",
        }

    # -- analysis -------------------------------------------------------------------------------------
    def _counts(self, text: str, lang: str) -> Counter:
        key = (lang, text)
        got = self._tokens.get(key)
        if got is None:
            got = self._tokens[key] = Counter(self._analyze(text, lang))
        return got

    def _table_for(self, doc_lang: str, query_lang: str) -> PSQTable | None:
        for t in self.tables:
            if t.doc_lang == doc_lang and t.query_lang == query_lang:
                return t
        if doc_lang == query_lang:
            return None  # identity
        have = ", ".join(f"{t.doc_lang}->{t.query_lang}" for t in self.tables)
        raise ClirbenchError(f"psq: no table maps {doc_lang} documents to {query_lang} queries (tables: {have}); "
                             f"add one with psq:<table>+<table>")

    # -- index ----------------------------------------------------------------------------------------
    def _doc_weights(self, docs: Sequence[Text], query_lang: str, vocab: dict[str, int]):
        """W (distinct docs x vocab, CSR) and, for every doc, its row in W. ``vocab`` grows."""
        distinct, drows = _distinct_texts(docs)
        by_lang: dict[str, list[int]] = {}
        for j, (lang, _) in enumerate(distinct):
            by_lang.setdefault(lang, []).append(j)

        tables = {lang: self._table_for(lang, query_lang) for lang in by_lang}
        count_table = self._count_table(tables, query_lang)
        for t in tables.values():  # table query terms first, in a fixed order
            if t is not None:
                for e in t.query_terms:
                    vocab.setdefault(e, len(vocab))
        lengths = np.zeros(len(distinct), dtype=np.float64)
        parts = []  # (distinct rows, CSR p(e|d) over vocab so far)
        for lang, js in by_lang.items():
            parts += self._language_parts(lang, js, tables[lang], distinct, vocab, lengths)
        P = _stack_parts(parts, len(distinct), len(vocab))
        pc, source = _collection_probability(count_table, P, lengths, vocab)
        W = P.copy()
        W.data = np.log1p((1.0 - self.alpha) * W.data / (self.alpha * pc[W.indices]))
        self.last_collection_source = source
        return W, drows

    def _count_table(self, tables: Mapping[str, PSQTable | None], query_lang: str) -> PSQTable | None:
        """The table whose query-language counts give P_C: the first of ``tables`` with counts, else
        any table into ``query_lang`` with counts; None: the pool's expected counts."""
        return next((t for t in tables.values() if t is not None and t.query_counts is not None),
                    next((t for t in self.tables if t.query_lang == query_lang and t.query_counts is not None),
                         None))

    def _language_parts(self, lang: str, js: list[int], table: PSQTable | None, distinct, vocab: dict[str, int],
                        lengths: np.ndarray) -> list:
        """The parts ``(distinct rows, rows, columns, values, table)`` of p(e|d) for the distinct
        documents ``js`` in ``lang``: through ``table`` (identity without one), plus the
        out-of-vocabulary terms that ``oov="keep"`` passes through. ``lengths`` gets their token counts."""
        from scipy import sparse

        (r, c, v), (oov_r, oov_c, oov_v) = self._term_frequencies(lang, js, table, distinct, vocab, lengths)
        if table is None:
            return [(js, r, c, v, None)]
        C = sparse.csr_matrix((v, (r, c)), shape=(len(js), len(table.doc_vocab)), dtype=np.float64)
        P = (C @ table.matrix).tocoo()
        remap = np.fromiter((vocab[e] for e in table.query_terms), dtype=np.int64, count=len(table.query_terms))
        parts = [(js, P.row, remap[P.col] if P.nnz else P.col, P.data, table)]
        if oov_r:
            parts.append((js, oov_r, oov_c, oov_v, None))
        return parts

    def _term_frequencies(self, lang: str, js: list[int], table: PSQTable | None, distinct,
                          vocab: dict[str, int], lengths: np.ndarray) -> tuple[tuple, tuple]:
        """``(rows, columns, c(f,d)/|d|)`` over the table's document vocabulary (over ``vocab``
        without a table), and the same for the terms missing from the table that ``oov="keep"`` keeps."""
        r, c, v = [], [], []
        oov_r, oov_c, oov_v = [], [], []
        for k, j in enumerate(js):
            counts = self._counts(distinct[j][1], lang)
            n = sum(counts.values())
            lengths[j] = n
            if not n:
                continue
            if table is None:
                for e, cnt in counts.items():
                    r.append(k); c.append(vocab.setdefault(e, len(vocab))); v.append(cnt / n)
            else:
                for f, cnt in counts.items():
                    i = table.doc_vocab.get(f)
                    if i is not None:
                        r.append(k); c.append(i); v.append(cnt / n)
                    elif self.oov == "keep":
                        oov_r.append(k); oov_c.append(vocab.setdefault(f, len(vocab))); oov_v.append(cnt / n)
        return (r, c, v), (oov_r, oov_c, oov_v)

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """Analyse every document and query now (the per-text memo serves later pools)."""
        for d in docs:
            self._counts(d.text, d.lang)
        for q in queries:
            self._counts(q.text, q.lang)

    # -- score ----------------------------------------------------------------------------------------
    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])``, float32, rows in order."""
        from scipy import sparse

        n_q, n_d = len(queries), len(docs)
        step = max(1, self.max_block_bytes // max(1, 4 * n_d))
        weights = {}
        for lang in dict.fromkeys(q.lang for q in queries):
            vocab: dict[str, int] = {}
            W, drows = self._doc_weights(docs, lang, vocab)
            weights[lang] = (vocab, W.T.tocsr(), drows)
        for start in range(0, n_q, step):
            stop = min(start + step, n_q)
            out = np.zeros((stop - start, n_d), dtype=np.float32)
            for lang, (vocab, WT, drows) in weights.items():
                idx = [i for i in range(start, stop) if queries[i].lang == lang]
                if not idx or not n_d:
                    continue
                r, c, v = [], [], []
                for k, i in enumerate(idx):
                    for e, cnt in self._counts(queries[i].text, lang).items():
                        j = vocab.get(e)
                        if j is not None:
                            r.append(k); c.append(j); v.append(float(cnt))
                Q = sparse.csr_matrix((v, (r, c)), shape=(len(idx), WT.shape[0]), dtype=np.float64)
                S = (Q @ WT).toarray()  # (b, distinct docs)
                out[np.asarray(idx) - start] = S[:, drows]
            yield start, out


# --------------------------------------------------------------------------------------------- spec
#: option -> (low, high, low_open, high_open) of its value
_RANGES = {"alpha": (0.0, 1.0, True, True), "min_prob": (0.0, 1.0, False, False), "max_cdf": (0.0, 1.0, True, False),
           "max_alternatives": (0, 100_000, False, False)}


def _parse_options(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in spec_params(text, "&", "psq").items():
        name = key.replace("-", "_")
        if name in out:
            raise ClirbenchError(f"psq: option {name} given twice (as {key!r} too)")
        if name not in DEFAULTS:
            raise ClirbenchError(f"psq: unknown option {key!r}; options: {', '.join(DEFAULTS)} (psq:<table>?alpha=0.1)")
        if name == "oov":
            if value not in ("keep", "drop"):
                raise ClirbenchError(f"psq: oov must be keep or drop, not {value!r}")
            out[name] = value
            continue
        low, high, low_open, high_open = _RANGES[name]
        try:
            number = ascii_int(value) if name == "max_alternatives" else float(value)
        except ValueError:
            number = math.nan
        if not (low < number if low_open else low <= number) or not (number < high if high_open else number <= high):
            raise ClirbenchError(f"psq: option {name} must be {'an integer' if name == 'max_alternatives' else 'a number'} "
                                 f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}, "
                                 f"not {value[:40]!r}")
        out[name] = number
    return out


def parse_spec(arg: str) -> tuple[list[str], dict[str, float]]:
    """The table paths and the options of ``psq:<arg>``; a ClirbenchError for an empty path (a
    doubled or trailing ``+``) or a bad option (see :func:`from_spec`)."""
    paths_part, question, opts_part = arg.partition("?")
    paths = [p.strip() for p in paths_part.split("+")]
    if paths == [""]:
        raise ClirbenchError("retriever 'psq:' needs a translation table: psq:<table.json.gz>")
    if "" in paths:
        raise ClirbenchError(f"psq: empty table path in {paths_part!r} (a doubled or trailing '+'?)")
    return paths, (_parse_options(opts_part) if question else {})



def _distinct_texts(docs: Sequence[Text]) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The distinct (language, text) pairs of ``docs`` in first-seen order, and each doc's index among them."""
    rows_of: dict[tuple[str, str], int] = {}
    drows = np.empty(len(docs), dtype=np.int64)
    distinct: list[tuple[str, str]] = []
    for i, d in enumerate(docs):
        key = (d.lang, d.text)
        j = rows_of.get(key)
        if j is None:
            j = rows_of[key] = len(distinct)
            distinct.append(key)
        drows[i] = j
    return distinct, drows


def _stack_parts(parts: list, n_rows: int, width: int):
    """One CSR matrix p(e|d) (``n_rows`` distinct docs x ``width`` terms) from the parts, duplicates summed."""
    from scipy import sparse

    r_all, c_all, v_all = [], [], []
    for js, r, c, v, _ in parts:
        js = np.asarray(js, dtype=np.int64)
        r_all.append(js[np.asarray(r, dtype=np.int64)] if len(r) else np.zeros(0, np.int64))
        c_all.append(np.asarray(c, dtype=np.int64))
        v_all.append(np.asarray(v, dtype=np.float64))
    P = sparse.csr_matrix((np.concatenate(v_all), (np.concatenate(r_all), np.concatenate(c_all))),
                          shape=(n_rows, width))
    P.sum_duplicates()
    P.sort_indices()
    return P


def _collection_probability(count_table: PSQTable | None, P, lengths: np.ndarray,
                            vocab: Mapping[str, int]) -> tuple[np.ndarray, str]:
    """(P_C(e) = (1 + c_C(e)) / (1 + N) over the columns of ``P``, where the counts come from): the
    table's query-language counts, else the expected counts of the pool (each distinct text once)."""
    width = P.shape[1]
    if count_table is not None:
        cc = np.zeros(width, dtype=np.float64)
        for e, n in count_table.query_counts.items():
            j = vocab.get(e)
            if j is not None:
                cc[j] = n
        total = float(count_table.query_tokens)
        source = f"table {count_table.path}"
    else:  # expected counts of the (translated) pool, each distinct text once
        cc = np.asarray(P.multiply(lengths[:, None]).sum(axis=0)).ravel()
        total = float(lengths.sum())
        source = "pool"
    return (1.0 + cc) / (1.0 + total), source

def from_spec(arg: str, options: dict) -> PSQRetriever:
    """``psq:<table>[+<table>...][?alpha=..&min_prob=..&max_cdf=..&max_alternatives=..&oov=keep|drop]``."""
    paths, given = parse_spec(arg)
    settings = {**DEFAULTS, **given}
    pruning = {k: settings[k] for k in ("min_prob", "max_cdf", "max_alternatives")}
    for p in paths:  # a wrong path is the likelier mistake: say so before any missing package
        if not Path(p).expanduser().is_file():
            raise DataNotFoundError(f"psq table {Path(p).expanduser()} not found")

    require_backends("retriever psq:")
    tables = [load_table(p, **pruning) for p in paths]
    canon = "+".join(paths)
    changed = {k: v for k, v in given.items() if v != DEFAULTS[k]}
    if changed:
        canon += "?" + "&".join(f"{k}={changed[k]}" if k == "oov" else f"{k}={changed[k]:g}"
                                for k in DEFAULTS if k in changed)
    return PSQRetriever(tables, alpha=settings["alpha"], spec=f"psq:{canon}", pruning=pruning, oov=settings["oov"])
