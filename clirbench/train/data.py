"""Training data: examples from parallel data or a triplet JSONL, hard negatives, the two datasets.

An :class:`Example` is a query and its positive passage, each a ``{lang: text}`` mapping, plus
optional hard negatives (passages, also by language). Sources:

- any parallel task (``xquad``, ``parallel:<file>``, with ``--task-option``): one example per
  question, its gold passage as the positive;
- a triplet JSONL, one example per line (blank lines ignored)::

    {"query": {"en": "Who ...?", "de": "Wer ...?"}, "positive": {"en": "...", "de": "..."},
     "negatives": [{"en": "...", "de": "..."}, ...]}

  ``negatives`` is optional; every text needs the languages the recipe uses.

Datasets (``datasets.Dataset``, columns in the order the losses read them):

- alignment: ``query`` (pivot), ``passage_pivot``, ``passage_target``;
- composition D(l1 l2 l3): ``anchor`` in l1, ``positive`` in l2, ``negative_1..k`` in l3 —
  for two languages, any of the eight; ``all`` stacks all eight.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

from ..collection import Text
from ..formats.jsonl import json_objects
from ..tasks import get_task
from ..tasks.hub import sha256_file
from ..util.errors import ClirbenchError, MalformedDataError, UnknownNameError


@dataclass(frozen=True)
class Example:
    query: Mapping[str, str]
    positive: Mapping[str, str]
    negatives: tuple[Mapping[str, str], ...] = ()
    item: str = ""  # the positive's item id (parallel data), so that mining can skip it
    qid: str = ""


@dataclass(frozen=True)
class Examples:
    """Examples plus the corpus mining draws from (``{item: {lang: text}}``) and where they came from."""

    examples: tuple[Example, ...]
    corpus: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    source: Mapping[str, object] = field(default_factory=dict)


def from_task(task: str, langs: Sequence[str], task_options: Mapping | None = None, data_dir=None) -> Examples:
    """One example per question of a parallel task in ``langs``, its gold passage the positive."""

    task_obj = get_task(task)
    if task_obj.card.kind != "parallel":
        raise UnknownNameError(f"task {task_obj.id} is not a parallel task; train needs parallel data")
    collection = task_obj.load(list(langs), data_dir=data_dir, **dict(task_options or {}))
    langs = collection.languages
    by_id = {lang: {q.id: q for q in collection.questions[lang]} for lang in langs}
    examples = []
    for q in collection.questions[langs[0]]:
        examples.append(Example(query={l: by_id[l][q.id].text for l in langs},
                                positive={l: collection.passages[l][q.item] for l in langs}, item=q.item, qid=q.id))
    corpus = {item: {l: collection.passages[l][item] for l in langs} for item in collection.passages[langs[0]]}
    source = {"task": task_obj.id, "languages": list(langs), "task_options": dict(task_options or {}),
              "subset": collection.source.get("subset", ""), "origin": collection.source.get("origin"),
              "files_sha256": dict(collection.source.get("files_sha256") or {})}
    if not examples:
        raise ClirbenchError(f"task {task_obj.id}: no questions to train on")
    return Examples(tuple(examples), corpus, source)


def read_triplets(path: str | Path, langs: Sequence[str]) -> Examples:
    """Examples from a triplet JSONL; each text must have every language in ``langs``."""

    path = Path(path)
    if not path.is_file():
        raise ClirbenchError(f"--triplets {path}: no such file")
    examples = []
    for n, record in json_objects(path):
        where = f"{path}:{n}"
        extra = set(record) - {"query", "positive", "negatives"}
        if extra or "query" not in record or "positive" not in record:
            raise MalformedDataError(f"{where}: expected {{\"query\": {{lang: text}}, \"positive\": {{lang: text}}, "
                                     f"\"negatives\": [...]}}" + (f"; unknown field(s) {', '.join(sorted(extra))}" if extra else ""))
        negatives = record.get("negatives", [])
        if not isinstance(negatives, list):
            raise MalformedDataError(f"{where}: negatives must be a list")
        examples.append(Example(query=_texts(record["query"], langs, where, "query"),
                                positive=_texts(record["positive"], langs, where, "positive"),
                                negatives=tuple(_texts(x, langs, where, f"negative {k}") for k, x in enumerate(negatives, 1)),
                                qid=f"line{n}"))
    if not examples:
        raise ClirbenchError(f"{path}: no training examples")
    return Examples(tuple(examples), {}, {"triplets": str(path), "languages": list(langs),
                                          "files_sha256": {path.name: sha256_file(path)}})


def _texts(value, langs: Sequence[str], where: str, what: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise MalformedDataError(f"{where}: {what} must be an object of texts by language")
    missing = [l for l in langs if not isinstance(value.get(l), str) or not value[l].strip()]
    if missing:
        raise MalformedDataError(f"{where}: {what} has no text in {', '.join(missing)}")
    return {l: value[l].strip() for l in langs}


def mine_hard_negatives(data: Examples, retriever: str, lang: str, k: int, cache_dir=None) -> Examples:
    """Each example gets the ``k`` best-scored other items of the corpus as hard negatives, ranked
    by the clirbench ``retriever`` (a spec such as ``bm25``) for the query in ``lang`` against the
    corpus in ``lang``. Needs parallel data (a corpus); triplet files bring their own negatives."""
    import numpy as np

    from ..retrievers import make_retriever  # lazy: numpy

    if not data.corpus:
        raise ClirbenchError("hard-negative mining needs parallel data (--task); a triplet file brings its own negatives")
    if k >= len(data.corpus):
        raise ClirbenchError(f"--hard-negatives {k}: the corpus has only {len(data.corpus)} passages")
    ret = make_retriever(retriever, cache_dir=cache_dir)
    if hasattr(ret, "progress"):
        ret.progress = False
    items = list(data.corpus)
    docs = [Text(id=item, text=data.corpus[item][lang], lang=lang, item=item) for item in items]
    queries = [Text(id=ex.qid or str(i), text=ex.query[lang], lang=lang, item=ex.item) for i, ex in enumerate(data.examples)]
    out = list(data.examples)
    for start, scores in ret.score(queries, docs):
        for row, values in enumerate(np.asarray(scores)):
            i = start + row
            order = np.argsort(-values, kind="stable")
            negs = [items[j] for j in order if items[j] != out[i].item][:k]
            out[i] = replace(out[i], negatives=tuple(data.corpus[item] for item in negs))
    source = dict(data.source, hard_negatives={"retriever": ret.spec, "mined_in": lang, "per_query": k})
    return Examples(tuple(out), data.corpus, source)


def alignment_dataset(data: Examples, pivot: str, target: str):
    """(query in ``pivot``, its passage in ``pivot``, the same passage in ``target``) rows."""
    from datasets import Dataset

    rows = {"query": [], "passage_pivot": [], "passage_target": []}
    for ex in data.examples:
        rows["query"].append(ex.query[pivot])
        rows["passage_pivot"].append(ex.positive[pivot])
        rows["passage_target"].append(ex.positive[target])
    return Dataset.from_dict(rows)


def parse_compositions(spec: str | Sequence[str], langs: Sequence[str]) -> list[tuple[str, str, str]]:
    """``all`` (every (l1, l2, l3) over ``langs``) or a comma list like ``en-de-de,de-de-de``."""
    every = list(itertools.product(langs, repeat=3))
    if isinstance(spec, str):
        if spec.strip() == "all":
            return every
        spec = [s.strip() for s in spec.split(",") if s.strip()]
    out = []
    for s in spec:
        parts = tuple(s.split("-")) if isinstance(s, str) else tuple(s)
        if parts not in every:
            raise UnknownNameError(f"composition {s!r}: expected l1-l2-l3 (query, positive, negatives) with "
                                   f"languages from {', '.join(langs)}, e.g. {'-'.join(every[1])}, or all")
        out.append(parts)
    if not out:
        raise UnknownNameError("--compositions is empty")
    return out


def build_composition(data: Examples, compositions: Sequence[tuple[str, str, str]], num_negatives: int | None = None):
    """D(l1 l2 l3) rows for each composition: anchor in l1, positive in l2, ``num_negatives`` hard
    negatives in l3 (default: as many as every example has; 0 gives in-batch negatives only)."""
    from datasets import Dataset

    have = min(len(ex.negatives) for ex in data.examples)
    k = have if num_negatives is None else num_negatives
    if k > have:
        raise ClirbenchError(f"{num_negatives} hard negatives asked for, but some examples have only {have}")
    rows: dict[str, list] = {"anchor": [], "positive": [], **{f"negative_{j + 1}": [] for j in range(k)}}
    for l1, l2, l3 in compositions:
        for ex in data.examples:
            rows["anchor"].append(ex.query[l1])
            rows["positive"].append(ex.positive[l2])
            for j in range(k):
                rows[f"negative_{j + 1}"].append(ex.negatives[j][l3])
    return Dataset.from_dict(rows)
