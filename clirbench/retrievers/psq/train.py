"""Build a PSQ translation table from a parallel corpus: IBM Model 1 EM on sparse matrices.

Both sides are analysed with ``clirbench.retrievers.analyzers`` (the analyzer PSQ applies to documents and
queries, recorded in the table's sidecar). Source = document language f, target = query language
e; a NULL source word is added to every pair. EM (Brown et al. 1993, model 1), from uniform
t(e|f):

    E:  post(s, f, e) = B[s,e] * A[s,f] * t(e|f) / sum_f' A[s,f'] t(e|f')
    M:  t(e|f) = sum_s post(s, f, e) / sum_s,e' post(s, f, e')

with A, B the bag-of-words count matrices (scipy CSR) of the source and target sides; the
(pair, f, e) triples are enumerated once, so each iteration is a few ``np.bincount`` calls. Memory
is about 24 bytes per triple (sum over pairs of distinct source x distinct target terms).
The table keeps p >= ``min_prob`` and, in its sidecar, the target-side token counts (P_C of PSQ).
"""
from __future__ import annotations

import gzip
import os
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from ...formats.jsonl import decode_lines
from ...util.checks import MAX_ITERATIONS, check_float, check_int
from ...util.errors import ClirbenchError, DataNotFoundError, MalformedDataError
from ...util.strict import language_tag
from ..analyzers import analyze
from .table import ANALYZER, write_table

__all__ = ["IBM1Result", "train_ibm1", "train_table", "read_bitext"]

NULL = "\x00NULL"
#: longest side of a segment pair, in whitespace-separated words (IBM Model 1 holds every source x
#: target word pair of a segment: 30,000 words a side would take 6.7 GiB; GIZA++ stops at 101)
MAX_SEGMENT_WORDS = 1_000


@dataclass(frozen=True)
class IBM1Result:
    """``t[f][e] = p(e|f)`` for every source term (NULL excluded), and training statistics."""

    table: dict[str, dict[str, float]]
    target_counts: Counter
    pairs: int
    iterations: int
    log_likelihood: tuple[float, ...]  # log p(target | source) per iteration, before its M step


def _bow(sentences: Sequence[Sequence[str]], vocab: dict[str, int], null: bool):
    from scipy import sparse

    rows, cols = [], []
    for s, tokens in enumerate(sentences):
        if null:
            rows.append(s); cols.append(vocab.setdefault(NULL, len(vocab)))
        for t in tokens:
            rows.append(s); cols.append(vocab.setdefault(t, len(vocab)))
    data = np.ones(len(rows), dtype=np.float64)
    M = sparse.csr_matrix((data, (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                          shape=(len(sentences), len(vocab)))
    M.sum_duplicates()
    M.sort_indices()
    return M


def _triples(A, B):
    """For every pair s and every distinct (f in s, e in s): f, e, A[s,f], B-nonzero index."""
    nf = np.diff(A.indptr)
    ne = np.diff(B.indptr)
    n = nf * ne
    total = int(n.sum())
    s = np.repeat(np.arange(A.shape[0]), n)
    local = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    ne_s = ne[s]
    fpos = A.indptr[s] + local // ne_s
    epos = B.indptr[s] + local % ne_s
    return A.indices[fpos].astype(np.int64), B.indices[epos].astype(np.int64), A.data[fpos], epos


def train_ibm1(source: Sequence[Sequence[str]], target: Sequence[Sequence[str]], iterations: int = 10,
               min_prob: float = 1e-4) -> IBM1Result:
    """IBM Model 1 t(e|f) from token lists (source = document language, target = query language)."""

    iterations = check_int(iterations, "iterations", 1, MAX_ITERATIONS)
    min_prob = check_float(min_prob, "min_prob", 0.0, 1.0)
    if len(source) != len(target):
        raise ClirbenchError(f"bitext sides differ in length: {len(source)} vs {len(target)} segments")
    keep = [i for i in range(len(source)) if source[i] and target[i]]
    source = [source[i] for i in keep]
    target = [target[i] for i in keep]
    if not source:
        raise ClirbenchError("bitext has no segment pair with tokens on both sides")
    fv: dict[str, int] = {}
    ev: dict[str, int] = {}
    A = _bow(source, fv, null=True)
    B = _bow(target, ev, null=False)
    f, e, a, group = _triples(A, B)
    b = B.data[group]
    key = f * len(ev) + e
    support, pair = np.unique(key, return_inverse=True)
    pair = pair.ravel()
    pair_f = support // len(ev)
    t = np.full(len(support), 1.0 / len(ev))
    log_len = np.log(np.asarray(A.sum(axis=1)).ravel())  # log(l_s + 1): source length with NULL
    lls = []
    for _ in range(iterations):
        wt = a * t[pair]
        z = np.bincount(group, weights=wt, minlength=B.nnz)
        lls.append(float(np.dot(B.data, np.log(z) - np.repeat(log_len, np.diff(B.indptr)))))
        post = b * wt / z[group]
        counts = np.bincount(pair, weights=post, minlength=len(support))
        norm = np.bincount(pair_f, weights=counts, minlength=len(fv))
        t = counts / norm[pair_f]
    f_terms = np.array(list(fv), dtype=object)
    e_terms = np.array(list(ev), dtype=object)
    table: dict[str, dict[str, float]] = {}
    kept = np.flatnonzero(t >= min_prob)
    for k in kept:
        fi = int(pair_f[k])
        if f_terms[fi] == NULL:
            continue
        table.setdefault(f_terms[fi], {})[e_terms[int(support[k] % len(ev))]] = float(t[k])
    target_counts = Counter()
    for tokens in target:
        target_counts.update(tokens)
    return IBM1Result(table=table, target_counts=target_counts, pairs=len(source), iterations=iterations,
                      log_likelihood=tuple(lls))


def _bitext_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a bitext file, gzip when it ends in ``.gz``; a BOM at the start is dropped;
    a corrupt or truncated gzip stream or text that is not UTF-8 is one line naming the file."""

    try:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
            yield from decode_lines(fh, path)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise MalformedDataError(f"{path}: not a readable gzip file ({type(exc).__name__}: "
                                 f"{' '.join(str(exc).split())})") from None


def read_bitext(paths: Sequence[str | os.PathLike]) -> tuple[list[str], list[str]]:
    """Source and target segments from files of ``source<TAB>target`` lines (or ``source ||| target``)."""
    src, tgt = [], []
    for p in paths:
        path = Path(p).expanduser()
        if not path.is_file():
            raise DataNotFoundError(f"bitext file {path} not found")
        for n, line in _bitext_lines(path):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split("\t") if "\t" in line else line.split(" ||| ")
            if len(parts) != 2:
                raise MalformedDataError(f"{path}:{n}: expected 'source<TAB>target' (or 'source ||| target')")
            for side, text in zip(("source", "target"), parts):
                words = len(text.split())
                if not words:
                    raise MalformedDataError(f"{path}:{n}: the {side} side is empty (a segment pair needs both)")
                if words > MAX_SEGMENT_WORDS or len(text) > 32 * MAX_SEGMENT_WORDS:
                    raise MalformedDataError(f"{path}:{n}: the {side} side has {words:,} words, {len(text):,} "
                                             f"characters (at most {MAX_SEGMENT_WORDS:,} words a side: "
                                             f"split documents into sentences)")
            src.append(parts[0])
            tgt.append(parts[1])
    if not src:
        raise MalformedDataError(f"bitext {', '.join(map(str, paths))}: no segment pairs")
    return src, tgt


def train_table(source_texts: Iterable[str], target_texts: Iterable[str], src_lang: str, tgt_lang: str,
                out: str | os.PathLike, *, iterations: int = 10, min_prob: float = 1e-4,
                corpus_name: str = "bitext") -> IBM1Result:
    """Analyse both sides, train IBM Model 1 and write ``out`` + its sidecar (see ``psq.write_table``)."""

    src_lang, tgt_lang = language_tag(src_lang, "psq train --src"), language_tag(tgt_lang, "psq train --tgt")
    if src_lang == tgt_lang:
        raise ClirbenchError("psq train: source and target languages are the same")
    src = [analyze(t, src_lang) for t in source_texts]
    tgt = [analyze(t, tgt_lang) for t in target_texts]
    result = train_ibm1(src, tgt, iterations=iterations, min_prob=min_prob)
    write_table(out, result.table, doc_lang=src_lang, query_lang=tgt_lang, query_counts=result.target_counts,
                query_counts_source=f"{tgt_lang} side of {corpus_name} ({result.pairs} segment pairs)",
                extra={"training": {"aligner": "IBM Model 1 (clirbench.retrievers.psq.train, EM from uniform, NULL source word)",
                                    "iterations": iterations, "min_prob": min_prob, "pairs": result.pairs,
                                    "analyzer": ANALYZER, "corpus": corpus_name}})
    return result
