"""PSQ translation tables: files (gzipped JSON + ``.meta.json`` sidecar), pruning, the analyzer check.

See ``clirbench.retrievers.psq`` for the model and the file formats.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ...util.atomic import write_bytes_atomic
from ...util.errors import ClirbenchError, DataNotFoundError, MalformedDataError
from ...util.optional import require
from ...util.strict import expect_json, language_tag, loads_json
from ..analyzers import get_analyzer

__all__ = ["PSQTable", "load_table", "write_table", "prune_translations", "meta_path", "analyzer_record",
           "analyze_fn", "ANALYZER", "DEFAULTS", "META_FORMAT"]

ANALYZER = "clirbench.retrievers.analyzers"
META_FORMAT = "clirbench-psq-table/1"
# alpha and pruning as in fast_psq's README example; oov="keep" is ours (fast_psq: "drop")
DEFAULTS = {"alpha": 0.1, "min_prob": 1e-4, "max_cdf": 0.99, "max_alternatives": 64, "oov": "keep"}
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
def analyze_fn(name: str) -> Callable[[str, str], list[str]]:
    if name != ANALYZER:
        raise ClirbenchError(f"psq: unknown analyzer {name!r}; this version knows only {ANALYZER!r}")
    from ..analyzers import analyze  # lazy: a local name

    return analyze


def _fingerprint(analyze: Callable[[str, str], list[str]], lang: str) -> str:
    tokens = [analyze(text, lang) for text in _PROBE]
    return hashlib.sha256(json.dumps(tokens, ensure_ascii=False).encode()).hexdigest()[:16]


def analyzer_record(langs: Sequence[str], name: str = ANALYZER) -> dict:
    """What a table's sidecar records about its analyzer: name, settings and fingerprint per language."""
    analyze = analyze_fn(name)

    return {"name": name,
            "languages": {lang: {"fingerprint": _fingerprint(analyze, lang), **get_analyzer(lang).describe()}
                          for lang in langs}}


def _check_analyzer(record: Mapping, langs: Sequence[str], where: str) -> Callable[[str, str], list[str]]:
    name = record.get("name") if isinstance(record, Mapping) else None
    if not name:
        raise MalformedDataError(f"{where}: no analyzer recorded")
    analyze = analyze_fn(name)
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

    try:
        meta = loads_json(side.read_bytes(), str(side))
        raw = loads_json(gzip.decompress(path.read_bytes()), f"psq table {path}")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise MalformedDataError(f"psq table {path}: unreadable ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    expect_json(raw, dict, f"psq table {path}", "a PSQ table", "{document term: {query term: p}}")
    expect_json(meta, dict, str(side), "a PSQ table's sidecar")
    if not all(isinstance(v, dict) for v in raw.values()):
        raise MalformedDataError(f"psq table {path}: expected {{document term: {{query term: p}}}}")
    if not meta.get("doc_lang") or not meta.get("query_lang"):
        raise MalformedDataError(f"{side}: needs doc_lang and query_lang")
    doc_lang, query_lang = (language_tag(meta[k], f"{side}: {k}") for k in ("doc_lang", "query_lang"))
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
