"""CLIRudit: English author keywords -> French scholarly abstracts (Érudit), MAP@1000 and R@100.

Local layout (the hub repo's parquet files; a ``huggingface-cli download ftvalentini/clirudit``
mirror works as is): ``<dir>/<config>/<split>.parquet`` or shards ``<dir>/<config>/<split>-*.parquet``::

    docs/fr.test.parquet      docid, title, subtitle, abstract     (16,389 rows, French)
    docs/en.test.parquet      the same docids, English gold translation (only for langs=en / all)
    queries/en.test.parquet   qid (int64), query                   (357,710 rows)
    qrels/en_fr.test.parquet  qid, docid, rel                      (360,596 rows)
    qrels/en_en.test.parquet  the same for the English documents   (only for langs=en / all)

A document is title, subtitle and abstract joined by one space (empty parts skipped). ``langs``
picks the document side: ``fr`` (default, the CLIR task), ``en`` (gold translations: a
monolingual reference) or ``all``. Options: ``max_doc_tokens=N`` keeps the first N whitespace
tokens of each document (the paper checked a 512-token limit; whitespace tokens approximate model
tokens, and a truncated run is stored as subset ``max_doc_tokens=N``), ``disciplines=FILE``
(TSV ``docid<TAB>discipline`` or parquet with those columns) for the per-discipline breakdown,
which a ``discipline``/``disciplines`` column in the docs files also provides.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ..collection import Pool, Text
from ..formats.beir import (
    check_scenarios,
    local_dir,
    no_options,
    parse_int_option,
    parse_lang_list,
    pools_by_query_lang,
    truncate_tokens,
)
from ..formats.jsonl import numbered_lines
from ..util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from ..util.optional import require
from ..util.strict import check_id, first_duplicate
from .card import TaskCard
from .hub import is_file, load_hub_split, sha256_file
from .loader import BaseLoader

__all__ = ["pools", "locate", "query_groups", "breakdown_groups", "gold_translations", "LAYOUT"]

DOC_LANGS = ("fr", "en")
LAYOUT = {  # (config, split) per part; the qrels of each document language
    "docs:fr": ("docs", "fr.test"), "docs:en": ("docs", "en.test"),
    "queries": ("queries", "en.test"),
    "qrels:fr": ("qrels", "en_fr.test"), "qrels:en": ("qrels", "en_en.test"),
}
_COLUMNS = {"docs": ("docid", "title", "subtitle", "abstract"), "queries": ("qid", "query"),
            "qrels": ("qid", "docid", "rel")}
_HELP = ("put docs/fr.test.parquet, queries/en.test.parquet and qrels/en_fr.test.parquet "
         "(from ftvalentini/clirudit) under --data-dir or $CLIRBENCH_DATA_DIR/clirudit")


def _files(folder: Path, config: str, split: str) -> list[Path]:
    exact = folder / config / f"{split}.parquet"
    if is_file(exact):
        return [exact]
    return sorted((folder / config).glob(f"{split}-*.parquet"))


def _present(folder: Path) -> bool:
    return bool(_files(folder, *LAYOUT["docs:fr"]) or _files(folder, *LAYOUT["docs:en"]))


def locate(card: TaskCard, data_dir=None) -> str:
    """Where the data would be read from, or why not (for ``clirbench tasks``)."""
    try:
        folder = local_dir(card.id, data_dir, _present, _HELP)
    except DataNotFoundError as exc:
        return f"not found ({exc})"
    return str(folder) if folder is not None else f"hub:{card.source['hub']} (no local files; {_HELP})"


def _read(folder: Path | None, card: TaskCard, part: str, hashes: dict):
    pa = require("pyarrow", purpose="task clirudit (its parquet files)")
    pq = require("pyarrow.parquet", purpose="task clirudit (its parquet files)")

    config, split = LAYOUT[part]
    want = _COLUMNS[config]
    if folder is None:
        table = load_hub_split(card.source["hub"], config, split, card.source.get("hub_revision"), card.id,
                         _HELP).with_format("arrow")[:]
        where = f"hub:{card.source['hub']}/{config}/{split}"
    else:
        paths = _files(folder, config, split)
        if not paths:
            raise DataNotFoundError(f"clirudit: missing {folder / config / (split + '.parquet')}; {_HELP}")
        tables = []
        for path in paths:
            try:
                names = pq.read_schema(path).names
            except (OSError, pa.ArrowException) as exc:
                raise MalformedDataError(f"{path}: not a parquet file ({' '.join(str(exc).split())[:120]})") from None
            lacking = [c for c in want if c not in names]
            if lacking:
                raise MalformedDataError(f"{path}: missing column(s) {', '.join(lacking)}")
            extra = [c for c in ("discipline", "disciplines") if c in names and config == "docs"]
            tables.append(pq.read_table(path, columns=list(want) + extra))
            hashes[f"{config}/{path.name}"] = sha256_file(path)
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        where = str(paths[0]) if len(paths) == 1 else f"{folder / config}/{split}-*.parquet"
    lacking = [c for c in want if c not in table.column_names]
    if lacking:
        raise MalformedDataError(f"{where}: missing column(s) {', '.join(lacking)}")
    return table


def _strings(table, column: str, where: str) -> list[str]:
    values = table.column(column).to_pylist()
    if any(v is None for v in values):
        raise MalformedDataError(f"{where}: null {column}")
    return [check_id(str(v), where, column) for v in values]


def _disciplines(path: str) -> dict[str, tuple[str, ...]]:
    """docid -> disciplines from a TSV (header docid, discipline) or a parquet file."""
    p = Path(path)
    if not is_file(p):
        raise DataNotFoundError(f"clirudit: disciplines file {p} not found")
    out: dict[str, list[str]] = {}
    if p.suffix == ".parquet":
        pq = require("pyarrow.parquet", purpose="a parquet disciplines file")

        t = pq.read_table(p)
        if not {"docid", "discipline"} <= set(t.column_names):
            raise MalformedDataError(f"{p}: needs columns docid and discipline")
        pairs = zip(t.column("docid").to_pylist(), t.column("discipline").to_pylist())
    else:
        lines = [line.rstrip("\r\n") for _, line in numbered_lines(p)]
        if not lines or lines[0].split("\t")[:2] != ["docid", "discipline"]:
            raise MalformedDataError(f"{p}:1: expected the header docid<TAB>discipline")
        pairs = []
        for n, line in enumerate(lines[1:], start=2):
            parts = line.split("\t")
            if len(parts) < 2:
                raise MalformedDataError(f"{p}:{n}: expected docid<TAB>discipline")
            pairs.append((check_id(parts[0], f"{p}:{n}", "docid"), parts[1]))
    for docid, disc in pairs:
        if disc:
            out.setdefault(str(docid), []).extend(disc if isinstance(disc, list) else [disc])
    return {d: tuple(sorted(set(v))) for d, v in out.items()}


def _docs(table, lang: str, max_tokens: int | None, disciplines: Mapping[str, tuple[str, ...]] | None,
          where: str) -> tuple[Text, ...]:
    ids = _strings(table, "docid", where)
    if len(set(ids)) != len(ids):
        dup, first, second = first_duplicate(ids)
        raise MalformedDataError(f"{where}: docid {dup!r} appears twice (rows {first + 1} and {second + 1})")
    parts = [table.column(c).to_pylist() for c in ("title", "subtitle", "abstract")]
    column = next((c for c in ("disciplines", "discipline") if c in table.column_names), None)
    from_file = table.column(column).to_pylist() if column else None
    docs = []
    for i, docid in enumerate(ids):
        text = " ".join(p[i].strip() for p in parts if p[i] and p[i].strip())
        disc = disciplines.get(docid) if disciplines is not None else None
        if disc is None and from_file is not None and from_file[i]:
            value = from_file[i]
            disc = tuple(sorted(set(value if isinstance(value, list) else [value])))
        meta = MappingProxyType({"discipline": disc}) if disc else MappingProxyType({})
        docs.append(Text(id=docid, text=truncate_tokens(text, max_tokens), lang=lang, meta=meta))
    return tuple(docs)


def _qrels(table, where: str) -> dict[str, dict[str, int]]:
    qids, dids = _strings(table, "qid", where), _strings(table, "docid", where)
    rels = table.column("rel").to_pylist()
    qrels: dict[str, dict[str, int]] = {}
    for q, d, r in zip(qids, dids, rels):
        if r is None or int(r) != r:
            raise MalformedDataError(f"{where}: rel must be an integer, got {r!r} for ({q}, {d})")
        qrels.setdefault(q, {})[d] = int(r)
    return qrels


def pools(card: TaskCard, langs=None, scenarios="all", query_langs=None, data_dir=None, **options) -> list[Pool]:
    """One pool per document side (``fr`` by default; ``en`` = gold translations), English queries."""
    check_scenarios(scenarios, card.id)
    options = dict(options)
    max_tokens = parse_int_option(options, "max_doc_tokens", card.id)
    disc_file = options.pop("disciplines", None)
    no_options(options, card.id, ("max_doc_tokens", "disciplines"))
    sides = ["fr"] if langs is None else (parse_lang_list(langs) or list(DOC_LANGS))
    unknown = [l for l in sides if l not in DOC_LANGS]
    if unknown:
        raise UnknownNameError(f"task clirudit: unknown document language(s) {', '.join(unknown)}; "
                               f"available: fr (the task), en (gold translations), all")
    if query_langs and "en" not in query_langs:
        return []
    folder = local_dir(card.id, data_dir, _present, _HELP)
    hashes: dict[str, str] = {}
    disciplines = _disciplines(disc_file) if disc_file else None
    qtable = _read(folder, card, "queries", hashes)
    qids, texts = _strings(qtable, "qid", "queries/en.test"), qtable.column("query").to_pylist()
    if len(set(qids)) != len(qids):
        dup, first, second = first_duplicate(qids)
        raise MalformedDataError(f"clirudit queries/en.test: qid {dup!r} appears twice (rows {first + 1} and {second + 1})")
    del qtable
    counts = {"queries": len(qids)}
    out = []
    for side in sides:
        dtable = _read(folder, card, f"docs:{side}", hashes)
        docs = _docs(dtable, side, max_tokens, disciplines, f"docs/{LAYOUT['docs:' + side][1]}")
        del dtable
        qrels = _qrels(_read(folder, card, f"qrels:{side}", hashes), f"qrels/{LAYOUT['qrels:' + side][1]}")
        counts[f"docs_{side}"] = len(docs)
        counts[f"qrels_{side}"] = sum(len(v) for v in qrels.values())
        doc_ids = {d.id for d in docs}
        known_q = set(qids)
        for q, judged in qrels.items():
            if q not in known_q:
                raise MalformedDataError(f"clirudit qrels {side}: judged query {q!r} is not in queries/en.test")
            missing = next((d for d in judged if d not in doc_ids), None)
            if missing is not None:
                raise MalformedDataError(f"clirudit qrels {side}: judged document {missing!r} is not in docs/{side}")
        queries = (Text(id=q, text=(t or "").strip(), lang="en") for q, t in zip(qids, texts) if q in qrels)
        source = {"origin": str(folder) if folder is not None else f"hub:{card.source['hub']}",
                  "revision": card.source.get("hub_revision") if folder is None else None,
                  "files_sha256": dict(hashes), "max_doc_tokens": max_tokens, "counts": counts}
        subset = f"max_doc_tokens={max_tokens}" if max_tokens else ""
        out += pools_by_query_lang(card.id, docs, queries, qrels, source, None, subset)
    _check_counts(card, counts)
    return out


def gold_translations(card: TaskCard, role: str, lang: str, data_dir=None, **options) -> dict[str, str]:
    """The data set's own translation (``--translator gold``): ``{docid: English text}`` from docs/en.test.

    Built exactly as the ``en`` document side (same joining and ``max_doc_tokens``); CLIRudit has no
    gold translation of its queries, nor into another language.
    """
    if role != "docs" or lang != "en":
        raise DataNotFoundError(f"clirudit has gold translations only for documents into en, not {role} into {lang}")
    options = dict(options)
    max_tokens = parse_int_option(options, "max_doc_tokens", card.id)
    options.pop("disciplines", None)
    no_options(options, card.id, ("max_doc_tokens", "disciplines"))
    folder = local_dir(card.id, data_dir, _present, _HELP)
    docs = _docs(_read(folder, card, "docs:en", {}), "en", max_tokens, None, "docs/en.test")
    return {d.id: d.text for d in docs}


def _check_counts(card: TaskCard, counts: Mapping[str, int]) -> None:
    expected = {k: v for k, v in card.expected.items() if k in counts}
    wrong = {k: (counts[k], v) for k, v in expected.items() if counts[k] != v}
    if wrong:
        warnings.warn("clirudit: counts differ from the task card (" + ", ".join(
            f"{k} {have} vs {want}" for k, (have, want) in sorted(wrong.items())) + "): not the published files",
            stacklevel=3)


def query_groups(pool: Pool, field: str = "discipline") -> dict[str, tuple[str, ...]]:
    """Each query's groups: the union of ``field`` over its relevant documents' metadata."""
    by_doc = {d.id: d.meta.get(field) for d in pool.docs if d.meta.get(field)}
    out = {}
    for qid, judged in pool.qrels.items():
        groups = sorted({g for did, grade in judged.items() if grade > 0 for g in by_doc.get(did, ())})
        if groups:
            out[qid] = tuple(groups)
    return out


def breakdown_groups(pool: Pool) -> dict[str, dict[str, tuple[str, ...]]]:
    """``{"discipline": {qid: disciplines}}`` when the metadata has disciplines, else ``{}``."""
    groups = query_groups(pool, "discipline")
    return {"discipline": groups} if groups else {}


class CLIRuditLoader(BaseLoader):
    """CLIRudit: English queries, French documents, gold translations, disciplines."""

    pools = staticmethod(pools)
    locate = staticmethod(locate)
    gold_translations = staticmethod(gold_translations)
    breakdown_groups = staticmethod(breakdown_groups)


LOADER = CLIRuditLoader()
