"""ko-en: the Korean-English evaluation of Jang et al. (T(en-ko), T(ko-en), T(ko-ko), T(en-en); nDCG@10).

T(q-d) ranks documents in language d for queries in language q. Two subsets:

- ``belebele``: Belebele ``eng_Latn``/``kor_Hang`` through the ``belebele`` task (its mono-same and
  mono-cross pools, unique passages: 488 documents, 900 queries).
- ``strategyqa``: Ko-StrategyQA (BEIR layout; qrels ``dev``) and an English side with the same ids.

Local layout (``--data-dir`` or ``$CLIRBENCH_DATA_DIR/ko-en``)::

    belebele/data/eng_Latn.jsonl, belebele/data/kor_Hang.jsonl   (else the belebele task's own lookup)
    strategyqa/ko/corpus.jsonl, queries.jsonl, qrels/dev.tsv      (else the hub, taeminlee/Ko-StrategyQA)
    strategyqa/en/corpus.jsonl, queries.jsonl [, qrels/dev.tsv]   (English side, same ids; local only)

Option ``subsets=belebele,strategyqa`` (default both). ``summary_table`` prints the study's
Table 1 layout: the four T(q-d) values, CROSS-AVG = mean(T(en-ko), T(ko-en)) and
MONO-AVG = mean(T(ko-ko), T(en-en)), per subset.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

from ..collection import Pool, Text
from ..formats.beir import (
    check_qrels,
    check_scenarios,
    no_options,
    parse_lang_list,
    qrels_path,
    read_corpus,
    read_qrels,
    read_queries,
)
from ..util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from ..util.table import format_table
from . import get_task
from .card import TaskCard
from .hub import is_dir, is_file, load_hub_split, plain_rows, sha256_file
from .loader import BaseLoader

__all__ = ["pools", "locate", "summary_table", "table_rows", "SUBSETS", "DIRECTIONS"]

SUBSETS = ("belebele", "strategyqa")
DIRECTIONS = (("en", "ko"), ("ko", "en"), ("ko", "ko"), ("en", "en"))  # (query language, document language)
_FLORES = {"eng_Latn": "en", "kor_Hang": "ko", "en": "en", "ko": "ko"}
_BEIR = ("corpus.jsonl", "queries.jsonl")
_HELP = ("put strategyqa/ko/{corpus.jsonl,queries.jsonl,qrels/dev.tsv} and strategyqa/en/{corpus.jsonl,"
         "queries.jsonl} (English side, same ids) under --data-dir or $CLIRBENCH_DATA_DIR/ko-en")


def _root(data_dir) -> Path | None:
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get("CLIRBENCH_DATA_DIR")
    return Path(env) / "ko-en" if env else None


def _beir_present(folder: Path | None) -> bool:
    return folder is not None and all(is_file(folder / name) for name in _BEIR)


def locate(card: TaskCard, data_dir=None) -> str:
    """Where each subset would be read from (for ``clirbench tasks``)."""
    root = _root(data_dir)
    sqa = root / "strategyqa" if root is not None else None
    ko = str(sqa / "ko") if _beir_present(sqa and sqa / "ko") else f"hub:{card.source['strategyqa_hub']}"
    en = str(sqa / "en") if _beir_present(sqa and sqa / "en") else f"not found ({_HELP})"
    bb = root / "belebele" if root is not None else None
    belebele = str(bb) if bb is not None and is_dir(bb) else "via the belebele task"
    return f"belebele: {belebele}; strategyqa ko: {ko}; strategyqa en: {en}"


def _relabel(pool: Pool, subset: str, source: Mapping[str, object]) -> Pool:
    q, d = _FLORES[pool.query_lang], _FLORES[pool.doc_langs[0]]
    docs = tuple(dataclasses.replace(t, lang=d) for t in pool.docs)
    queries = tuple(dataclasses.replace(t, lang=q) for t in pool.queries)
    return dataclasses.replace(pool, task="ko-en", scenario="retrieval", doc_langs=(d,), query_lang=q,
                               docs=docs, queries=queries, subset=subset, source=source)


def _belebele_pools(root: Path | None) -> list[Pool]:
    folder = root / "belebele" if root is not None and is_dir(root / "belebele") else None
    found = get_task("belebele").pools("eng_Latn,kor_Hang", scenarios="mono-same,mono-cross", data_dir=folder)
    out = []
    for pool in found:
        if len(pool.doc_langs) != 1 or pool.doc_langs[0] not in _FLORES or pool.query_lang not in _FLORES:
            raise MalformedDataError(f"ko-en: unexpected Belebele pool {pool.name}")
        out.append(_relabel(pool, "belebele", dict(pool.source)))
    return out


def _hub_side(card: TaskCard) -> tuple[tuple[Text, ...], tuple[Text, ...], dict[str, dict[str, int]]]:
    repo, rev = card.source["strategyqa_hub"], card.source.get("strategyqa_hub_revision")
    rows = lambda config, split: plain_rows(load_hub_split(repo, config, split, rev, "ko-en strategyqa (Korean)",
                                                           _HELP))
    docs = tuple(Text(str(r["_id"]), f"{r.get('title') or ''} {r['text']}".strip(), "ko")
                 for r in rows("corpus", "corpus"))
    queries = tuple(Text(str(r["_id"]), r["text"].strip(), "ko") for r in rows("queries", "queries"))
    qrels: dict[str, dict[str, int]] = {}
    for r in rows("default", "dev"):  # score is float64 upstream
        score = r["score"]
        if isinstance(score, bool) or not isinstance(score, (int, float)) or int(score) != score:
            raise MalformedDataError(f"hub {repo} qrels dev: score must be an integer, got {score!r}")
        qrels.setdefault(str(r["query-id"]), {})[str(r["corpus-id"])] = int(score)
    return docs, queries, qrels


def _strategyqa(card: TaskCard, root: Path | None):
    sqa = root / "strategyqa" if root is not None else None
    ko_dir, en_dir = (sqa / "ko", sqa / "en") if sqa is not None else (None, None)
    if not _beir_present(en_dir):
        raise DataNotFoundError(f"ko-en strategyqa: no English side; {_HELP}")
    hashes: dict[str, str] = {}
    if _beir_present(ko_dir):
        qpath = qrels_path(ko_dir, "dev")
        if not is_file(qpath):
            raise DataNotFoundError(f"ko-en strategyqa: missing {qpath}")
        ko_docs = tuple(read_corpus(ko_dir / "corpus.jsonl", "ko"))
        ko_queries = tuple(read_queries(ko_dir / "queries.jsonl", "ko"))
        qrels = read_qrels(qpath)
        for name in (*_BEIR, "qrels/dev.tsv"):
            hashes[f"ko/{name}"] = sha256_file(ko_dir / name)
        origin = str(sqa)
    else:
        ko_docs, ko_queries, qrels = _hub_side(card)
        origin = f"hub:{card.source['strategyqa_hub']} + {en_dir}"
    check_qrels(qrels, (q.id for q in ko_queries), (d.id for d in ko_docs), "ko-en strategyqa ko qrels/dev.tsv")
    en_docs = tuple(read_corpus(en_dir / "corpus.jsonl", "en"))
    en_queries = tuple(read_queries(en_dir / "queries.jsonl", "en"))
    for name in _BEIR:
        hashes[f"en/{name}"] = sha256_file(en_dir / name)
    if {d.id for d in en_docs} != {d.id for d in ko_docs}:
        diff = sorted({d.id for d in en_docs} ^ {d.id for d in ko_docs})
        raise MalformedDataError(f"ko-en strategyqa: English and Korean corpora differ in ids (e.g. {diff[0]!r})")
    check_qrels(qrels, (q.id for q in en_queries), (d.id for d in en_docs), "ko-en strategyqa en queries")
    if is_file(qrels_path(en_dir, "dev")) and read_qrels(qrels_path(en_dir, "dev")) != qrels:
        raise MalformedDataError(f"ko-en strategyqa: {qrels_path(en_dir, 'dev')} differs from the Korean qrels")
    counts = {"strategyqa_corpus": len(ko_docs), "strategyqa_queries": len(qrels),
              "strategyqa_judgements": sum(len(v) for v in qrels.values())}
    wrong = [f"{k} {v} vs {card.expected[k]}" for k, v in counts.items() if card.expected.get(k, v) != v]
    source = {"origin": origin, "revision": card.source.get("strategyqa_hub_revision") if origin.startswith("hub:")
              else None, "files_sha256": hashes, "counts": counts, "counts_match_card": not wrong}
    return {"ko": (ko_docs, ko_queries), "en": (en_docs, en_queries)}, qrels, source


def pools(card: TaskCard, langs=None, scenarios="all", query_langs=None, data_dir=None, **options) -> list[Pool]:
    """T(en-ko), T(ko-en), T(ko-ko), T(en-en) for each requested subset."""
    check_scenarios(scenarios, card.id)
    options = dict(options)
    subsets = parse_lang_list(options.pop("subsets", None)) or list(SUBSETS)
    no_options(options, card.id, ("subsets",))
    bad = [s for s in subsets if s not in SUBSETS]
    if bad:
        raise UnknownNameError(f"task ko-en: unknown subset(s) {', '.join(bad)}; available: {', '.join(SUBSETS)}")
    wanted = parse_lang_list(langs)
    unknown = [l for l in wanted or () if l not in ("en", "ko")]
    if unknown:
        raise UnknownNameError(f"task ko-en: unknown language(s) {', '.join(unknown)}; available: en, ko")
    root = _root(data_dir)
    keep = lambda q: not query_langs or q in query_langs
    out: list[Pool] = []
    if "belebele" in subsets:
        try:
            out += [p for p in _belebele_pools(root) if keep(p.query_lang)]
        except DataNotFoundError as e:
            if "strategyqa" not in subsets:
                raise
            sqa = root / "strategyqa" if root is not None else None
            also = "" if _beir_present(sqa and sqa / "en") else f"; StrategyQA too: {_HELP}"
            raise DataNotFoundError(f"task ko-en: {e}{also} (--task-option subsets=belebele or "
                                    f"subsets=strategyqa runs one of them)") from None
    if "strategyqa" in subsets:
        sides, qrels, source = _strategyqa(card, root)
        for q, d in DIRECTIONS:
            if not keep(q):
                continue
            queries = tuple(t for t in sides[q][1] if qrels.get(t.id))
            out.append(Pool(task=card.id, scenario="retrieval", pool_mode="unique", doc_langs=(d,), query_lang=q,
                            docs=sides[d][0], queries=queries,
                            qrels=MappingProxyType({t.id: qrels[t.id] for t in queries}),
                            source=source, subset="strategyqa"))
    order = {(q, d): i for i, (q, d) in enumerate(DIRECTIONS)}
    out.sort(key=lambda p: (SUBSETS.index(p.subset), order[(p.query_lang, p.doc_langs[0])]))
    return out


def table_rows(records: Iterable[Mapping], measure: str = "nDCG@10") -> list[dict]:
    """Per subset: the four T(q-d) values, CROSS-AVG and MONO-AVG (None where a direction is missing)."""
    cells: dict[str, dict[str, float]] = {}
    for r in records:
        if r.get("task", {}).get("id") != "ko-en" or len(r.get("doc_langs", ())) != 1:
            continue
        value = (r.get("measures", {}).get(measure) or {}).get("value")
        if value is not None:
            cells.setdefault(r.get("subset", ""), {})[f"T({r['query_lang']}-{r['doc_langs'][0]})"] = value
    rows = []
    for subset in [s for s in SUBSETS if s in cells] + sorted(set(cells) - set(SUBSETS)):
        row = {"subset": subset, **{f"T({q}-{d})": cells[subset].get(f"T({q}-{d})") for q, d in DIRECTIONS}}
        mean = lambda a, b: (row[a] + row[b]) / 2 if row[a] is not None and row[b] is not None else None
        row["CROSS-AVG"] = mean("T(en-ko)", "T(ko-en)")
        row["MONO-AVG"] = mean("T(ko-ko)", "T(en-en)")
        rows.append(row)
    return rows


def summary_table(records: Iterable[Mapping], measure: str = "nDCG@10", scale: float = 100.0) -> str:
    """The study's Table 1 layout as text (values × ``scale``); empty when no ko-en result is given."""
    rows = table_rows(records, measure)
    if not rows:
        return ""
    cols = ["T(en-ko)", "T(ko-en)", "CROSS-AVG", "T(ko-ko)", "T(en-en)", "MONO-AVG"]
    fmt = lambda v: "-" if v is None else f"{v * scale:.2f}"
    body = [[r["subset"]] + [fmt(r[c]) for c in cols] for r in rows]
    header = [f"ko-en {measure} x{scale:g}"] + cols

    return "\n".join(format_table(header, body))


class KoEnLoader(BaseLoader):
    """ko-en: Belebele and StrategyQA Korean/English, four directions."""

    pools = staticmethod(pools)
    locate = staticmethod(locate)
    summary_table = staticmethod(summary_table)


LOADER = KoEnLoader()
