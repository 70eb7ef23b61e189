"""Probabilistic structured queries (PSQ), as HLTCOE's fast_psq computes them.

A translation table maps document-language terms f to query-language terms e with p(e|f). At
index time each document becomes query-language term weights

    p(e|d) = sum_f p(e|f) * c(f,d) / |d|          (|d|: all analysed tokens of d)
    w(e,d) = log(1 + (1 - alpha) * p(e|d) / (alpha * P_C(e)))

and a query scores sum_e c(e,q) * w(e,d), exactly, for every document of the pool.

P_C(e), as fast_psq's ``load_query_term_importance``: ``(1 + c_C(e)) / (1 + N)`` where c_C(e) counts e
in a query-language corpus of N tokens (add one to the count, one to the total, not |V|). Our
tables carry those counts (``clirbench psq train`` takes them from the target side of the bitext).
A table without counts falls back to the pool itself: c_C(e) = sum over distinct document texts
of |d| * p(e|d), N = sum of |d| (recorded in ``describe()``).

Table pruning, in fast_psq's order: drop p < ``min_prob``; keep the most probable translations
until their cumulative probability reaches ``max_cdf`` (the translation that crosses it is kept;
fast_psq drops it, and so drops a term whose best translation alone reaches the cut-off) and
renormalise them; keep at most ``max_alternatives`` (not renormalised).

Files: the table is gzipped JSON ``{document term: {query term: p}}`` (fast_psq's format); the
sidecar ``<table>.meta.json`` records the languages, the analyzer (``clirbench.retrievers.analyzers`` with a
fingerprint of its output per language: the table is refused when this installation analyses
text differently) and the query-language counts.

Document terms missing from the table pass through unchanged (``oov=keep``, the default: names and
numbers then still match; fast_psq drops them, ``oov=drop``). Documents in the query language are
mapped by identity (p(e|d) = c(e,d)/|d|), so bilingual pools
work with one table; ``psq:A+B`` gives one table per document language (and so, e.g. a de->en and an
en->de table, both query languages of an en-de sweep). Other combinations raise a one-line error.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import zlib
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from ..collection import Text
from ..errors import ClirbenchError, DataNotFoundError, MalformedDataError
from ..optional import require

__all__ = ["PSQTable", "PSQRetriever", "from_spec", "load_table", "write_table", "prune_translations",
           "analyzer_record", "meta_path", "ANALYZER", "DEFAULTS", "MAX_BLOCK_BYTES"]

ANALYZER = "clirbench.retrievers.analyzers"
META_FORMAT = "clirbench-psq-table/1"
# alpha and pruning as in fast_psq's README example; oov="keep" is ours (fast_psq: "drop")
DEFAULTS = {"alpha": 0.1, "min_prob": 1e-4, "max_cdf": 0.99, "max_alternatives": 64, "oov": "keep"}
MAX_BLOCK_BYTES = 256 << 20
# probe texts whose analysis fingerprints an analyzer for one language
_PROBE = (
    "The Quick brown FOXES aren't jumping over 3.14 lazy dogs' houses, naïve café façade ﬁnally.",
    "Der Hund bellt den Briefträger an; Häuser, Straße, GROSS, über 1.000 Bäume.",
    "Les élèves étudiaient à l'école; c'était l'été. ¿Qué pasó? Ça va très bien, señor.",
    "Москва — столица России. Αθήνα είναι η πρωτεύουσα. İstanbul'da yaşıyorlar.",
    "北京是中国的首都。東京は日本の首都です。서울은 한국의 수도입니다。",
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย ภาษาไทย",
    "दिल्ली भारत की राजधानी है। القاهرة هي عاصمة مصر. Hà Nội là thủ đô của Việt Nam.",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and e-mail: x_y@z.org (2020-01-02) #tag 50% $5",
)


# --------------------------------------------------------------------------------------------- analyzer
def _analyze_fn(name: str) -> Callable[[str, str], list[str]]:
    if name != ANALYZER:
        raise ClirbenchError(f"psq: unknown analyzer {name!r}; this version knows only {ANALYZER!r}")
    from .analyzers import analyze

    return analyze


def _fingerprint(analyze: Callable[[str, str], list[str]], lang: str) -> str:
    tokens = [analyze(text, lang) for text in _PROBE]
    return hashlib.sha256(json.dumps(tokens, ensure_ascii=False).encode()).hexdigest()[:16]


def analyzer_record(langs: Sequence[str], name: str = ANALYZER) -> dict:
    """What a table's sidecar records about its analyzer: name, settings and fingerprint per language."""
    analyze = _analyze_fn(name)
    from .analyzers import get_analyzer

    return {"name": name,
            "languages": {lang: {"fingerprint": _fingerprint(analyze, lang), **get_analyzer(lang).describe()}
                          for lang in langs}}


def _check_analyzer(record: Mapping, langs: Sequence[str], where: str) -> Callable[[str, str], list[str]]:
    name = record.get("name") if isinstance(record, Mapping) else None
    if not name:
        raise MalformedDataError(f"{where}: no analyzer recorded")
    analyze = _analyze_fn(name)
    for lang in langs:
        want = (record.get("languages") or {}).get(lang, {}).get("fingerprint")
        have = _fingerprint(analyze, lang)
        if want != have:
            raise ClirbenchError(f"{where}: the table was built with {name} analysing {lang} text differently "
                                 f"from this installation (fingerprint {want} != {have}); retrain the table "
                                 f"(clirbench psq train) with this version")
    return analyze


# --------------------------------------------------------------------------------------------- tables
def meta_path(table_path: str | os.PathLike) -> Path:
    """The sidecar of a table: ``<table>.meta.json``."""
    return Path(str(table_path) + ".meta.json")


def prune_translations(translations: Mapping[str, float], min_prob: float = 0.0, max_cdf: float = 1.0,
                       max_alternatives: int = 0) -> dict[str, float]:
    """One source term's translations after fast_psq's three prunings (module docstring)."""
    items = [(e, float(p)) for e, p in translations.items() if p > 0 and p >= min_prob]
    items.sort(key=lambda x: (-x[1], x[0]))
    if max_cdf < 1.0 and items:
        cum = np.cumsum([p for _, p in items])
        keep = int(np.searchsorted(cum, max_cdf * (1 - 1e-12), side="left")) + 1
        items = items[:keep]
        total = sum(p for _, p in items)
        items = [(e, p / total) for e, p in items]
    if max_alternatives > 0:
        items = items[:max_alternatives]
    return dict(items)


@dataclass(frozen=True)
class PSQTable:
    """A pruned translation table: ``matrix[f, e] = p(e|f)`` (scipy CSR), vocabularies, counts."""

    path: str
    doc_lang: str
    query_lang: str
    doc_vocab: Mapping[str, int]
    query_terms: tuple[str, ...]
    matrix: object  # scipy.sparse.csr_matrix, float64, (len(doc_vocab), len(query_terms))
    analyzer: str
    query_counts: Mapping[str, int] | None
    query_tokens: int | None
    sha256: str
    meta: Mapping[str, object] = field(default_factory=dict, repr=False)

    def describe(self) -> dict:
        return {"path": self.path, "doc_lang": self.doc_lang, "query_lang": self.query_lang,
                "doc_terms": len(self.doc_vocab), "query_terms": len(self.query_terms),
                "entries": int(self.matrix.nnz), "sha256": self.sha256,
                "query_counts": None if self.query_counts is None else
                {"tokens": self.query_tokens, "source": self.meta.get("query_counts_source")}}


def _sha256_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def write_table(path: str | os.PathLike, table: Mapping[str, Mapping[str, float]], *, doc_lang: str,
                query_lang: str, query_counts: Mapping[str, int] | None = None,
                query_counts_source: str | None = None, extra: Mapping | None = None) -> tuple[Path, Path]:
    """Write ``table`` (gzipped JSON) and its sidecar; returns both paths. Written atomically."""
    from ..atomic import write_bytes_atomic

    path = Path(path)
    body = json.dumps({f: dict(t) for f, t in table.items()}, ensure_ascii=False, sort_keys=True).encode()
    write_bytes_atomic(path, gzip.compress(body, compresslevel=6, mtime=0))
    meta = {"format": META_FORMAT, "doc_lang": doc_lang, "query_lang": query_lang,
            "analyzer": analyzer_record(sorted({doc_lang, query_lang}))}
    if query_counts is not None:
        meta["query_tokens"] = int(sum(query_counts.values()))
        meta["query_counts_source"] = query_counts_source
        meta["query_counts"] = {e: int(c) for e, c in sorted(query_counts.items())}
    if extra:
        meta.update(extra)
    write_bytes_atomic(meta_path(path), json.dumps(meta, ensure_ascii=False, indent=1).encode())
    return path, meta_path(path)


def load_table(path: str | os.PathLike, *, min_prob: float = DEFAULTS["min_prob"],
               max_cdf: float = DEFAULTS["max_cdf"],
               max_alternatives: int = DEFAULTS["max_alternatives"]) -> PSQTable:
    """Read, check and prune a table and its sidecar."""
    path = Path(path).expanduser()
    side = meta_path(path)
    if not path.is_file():
        raise DataNotFoundError(f"psq table {path} not found")
    if not side.is_file():
        raise DataNotFoundError(
            f"psq table {path} has no sidecar {side.name}: it must record the languages and the analyzer "
            f"the table was built with (tables from clirbench psq train have one; for another table, build "
            f"one with the same analysis, or write the sidecar yourself if you know they agree)")
    from ..strict import loads_json

    try:
        meta = loads_json(side.read_bytes(), str(side))
        raw = loads_json(gzip.decompress(path.read_bytes()), f"psq table {path}")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise MalformedDataError(f"psq table {path}: unreadable ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise MalformedDataError(f"psq table {path}: expected {{document term: {{query term: p}}}}")
    if not isinstance(meta, dict) or not meta.get("doc_lang") or not meta.get("query_lang"):
        raise MalformedDataError(f"{side}: needs doc_lang and query_lang")
    doc_lang, query_lang = str(meta["doc_lang"]), str(meta["query_lang"])
    record = meta.get("analyzer") or {}
    _check_analyzer(record, sorted({doc_lang, query_lang}), f"psq table {path}")

    doc_vocab: dict[str, int] = {}
    query_index: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for f in sorted(raw):
        try:
            kept = prune_translations(raw[f], min_prob, max_cdf, max_alternatives)
        except (TypeError, ValueError):
            raise MalformedDataError(f"psq table {path}: non-numeric probability under {f!r}") from None
        if not kept:
            continue
        if any(not (0.0 <= p <= 1.0 + 1e-6) or math.isnan(p) for p in kept.values()):
            raise MalformedDataError(f"psq table {path}: probability outside [0, 1] under {f!r}")
        i = doc_vocab.setdefault(f, len(doc_vocab))
        for e, p in kept.items():
            rows.append(i)
            cols.append(query_index.setdefault(e, len(query_index)))
            vals.append(p)
    sparse = require("scipy.sparse", purpose="retriever psq:")
    matrix = sparse.csr_matrix((np.asarray(vals, np.float64), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                               shape=(len(doc_vocab), len(query_index)))
    counts = meta.get("query_counts")
    tokens = meta.get("query_tokens")
    if counts is not None and tokens is None:
        tokens = int(sum(counts.values()))
    return PSQTable(path=str(path), doc_lang=doc_lang, query_lang=query_lang, doc_vocab=doc_vocab,
                    query_terms=tuple(query_index), matrix=matrix, analyzer=str(record.get("name")),
                    query_counts=counts, query_tokens=None if tokens is None else int(tokens),
                    sha256=_sha256_files([path, side]), meta={k: v for k, v in meta.items() if k != "query_counts"})


# --------------------------------------------------------------------------------------------- retriever
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
        self._analyze = _analyze_fn(self.tables[0].analyzer)
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
        from scipy import sparse

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
        by_lang: dict[str, list[int]] = {}
        for j, (lang, _) in enumerate(distinct):
            by_lang.setdefault(lang, []).append(j)

        tables = {lang: self._table_for(lang, query_lang) for lang in by_lang}
        count_table = next((t for t in tables.values() if t is not None and t.query_counts is not None),
                           next((t for t in self.tables if t.query_lang == query_lang and t.query_counts is not None),
                                None))
        for t in tables.values():  # table query terms first, in a fixed order
            if t is not None:
                for e in t.query_terms:
                    vocab.setdefault(e, len(vocab))
        lengths = np.zeros(len(distinct), dtype=np.float64)
        parts = []  # (distinct rows, CSR p(e|d) over vocab so far)
        for lang, js in by_lang.items():
            table = tables[lang]
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
            if table is None:
                parts.append((js, r, c, v, None))
            else:
                C = sparse.csr_matrix((v, (r, c)), shape=(len(js), len(table.doc_vocab)), dtype=np.float64)
                P = (C @ table.matrix).tocoo()
                remap = np.fromiter((vocab[e] for e in table.query_terms), dtype=np.int64, count=len(table.query_terms))
                parts.append((js, P.row, remap[P.col] if P.nnz else P.col, P.data, table))
                if oov_r:
                    parts.append((js, oov_r, oov_c, oov_v, None))
        width = len(vocab)
        r_all, c_all, v_all = [], [], []
        for js, r, c, v, _ in parts:
            js = np.asarray(js, dtype=np.int64)
            r_all.append(js[np.asarray(r, dtype=np.int64)] if len(r) else np.zeros(0, np.int64))
            c_all.append(np.asarray(c, dtype=np.int64))
            v_all.append(np.asarray(v, dtype=np.float64))
        P = sparse.csr_matrix((np.concatenate(v_all), (np.concatenate(r_all), np.concatenate(c_all))),
                              shape=(len(distinct), width))
        P.sum_duplicates()
        P.sort_indices()

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
        pc = (1.0 + cc) / (1.0 + total)
        W = P.copy()
        W.data = np.log1p((1.0 - self.alpha) * W.data / (self.alpha * pc[W.indices]))
        self.last_collection_source = source
        return W, drows

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
def _parse_options(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, text.split("&")):
        key, eq, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in DEFAULTS:
            raise ClirbenchError(f"psq: unknown option {part!r}; options: {', '.join(DEFAULTS)} (psq:<table>?alpha=0.1)")
        if key == "oov":
            if value not in ("keep", "drop"):
                raise ClirbenchError(f"psq: oov must be keep or drop, not {value!r}")
            out[key] = value
            continue
        try:
            out[key] = int(value) if key == "max_alternatives" else float(value)
        except ValueError:
            raise ClirbenchError(f"psq: option {key} needs a number, not {value!r}") from None
    return out


def from_spec(arg: str, options: dict) -> PSQRetriever:
    """``psq:<table>[+<table>...][?alpha=..&min_prob=..&max_cdf=..&max_alternatives=..&oov=keep|drop]``."""
    paths_part, _, opts_part = arg.partition("?")
    paths = [p.strip() for p in paths_part.split("+") if p.strip()]
    if not paths:
        raise ClirbenchError("retriever 'psq:' needs a translation table: psq:<table.json.gz>")
    given = _parse_options(opts_part)
    settings = {**DEFAULTS, **given}
    pruning = {k: settings[k] for k in ("min_prob", "max_cdf", "max_alternatives")}
    for p in paths:  # a wrong path is the likelier mistake: say so before any missing package
        if not Path(p).expanduser().is_file():
            raise DataNotFoundError(f"psq table {Path(p).expanduser()} not found")
    from .analyzers import require_backends

    require_backends("retriever psq:")
    tables = [load_table(p, **pruning) for p in paths]
    canon = "+".join(paths)
    changed = {k: v for k, v in given.items() if v != DEFAULTS[k]}
    if changed:
        canon += "?" + "&".join(f"{k}={changed[k]}" if k == "oov" else f"{k}={changed[k]:g}"
                                for k in DEFAULTS if k in changed)
    return PSQRetriever(tables, alpha=settings["alpha"], spec=f"psq:{canon}", pruning=pruning, oov=settings["oov"])
