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

Modules: ``table`` (table files, pruning, analyzer check), ``train`` (IBM Model 1 from a bitext:
``clirbench psq train``), ``retriever`` (scoring).
"""
from __future__ import annotations

from .retriever import MAX_BLOCK_BYTES, PSQRetriever, from_spec
from .table import (
                    ANALYZER,
                    DEFAULTS,
                    META_FORMAT,
                    PSQTable,
                    analyzer_record,
                    load_table,
                    meta_path,
                    prune_translations,
                    write_table,
)

__all__ = ["PSQTable", "PSQRetriever", "from_spec", "load_table", "write_table", "prune_translations", "meta_path",
           "analyzer_record", "ANALYZER", "DEFAULTS", "META_FORMAT", "MAX_BLOCK_BYTES"]
