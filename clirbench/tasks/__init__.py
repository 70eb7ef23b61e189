"""Task registry: the cards in ``cards/*.yaml`` with their built-in loaders, tasks added with
``register_task``, and tasks other packages declare in the ``clirbench.tasks`` entry-point group.

Ids are hierarchical, as pool names are (``Pool.name``): ``<task>[/<scenario>[+<pool mode>]
[/<L1>-<L2>[-<L3>…][/q-<Lq>]]]``, e.g. ``xquad/multi/en-zh``, ``xquad/multi/en-zh-ar/q-zh``,
``belebele/multi-1/eng_Latn-kor_Hang/q-kor_Hang`` or ``xquad/mono-cross+per-query``; ``get_task`` returns the task restricted to those pools
(parallel tasks only). ``<kind>:<argument>`` (``parallel:items.jsonl``, ``beir:dir``) builds a
task from the user's own files.
"""
from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping, Sequence

from ..collection import ParallelCollection, Pool
from ..identity import join_langs, join_scenario, query_id, query_of, split_langs, split_scenario
from ..scenarios import POOL_MODES, SCENARIOS, build_pools, check_group, parse_langs, parse_scenarios
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.strict import shown
from .card import TaskCard, load_cards, parse_card
from .loader import BaseLoader, ParallelLoader, RetrievalLoader, TaskLoader, missing_hook

__all__ = ["Task", "TaskCard", "TaskLoader", "ParallelLoader", "RetrievalLoader", "BaseLoader",
           "get_task", "list_tasks", "register_task", "ENTRY_POINT_GROUP", "SCENARIOS", "POOL_MODES"]

ENTRY_POINT_GROUP = "clirbench.tasks"


@dataclass(frozen=True)
class Task:
    """A task card plus its loader (a ``TaskLoader``, or ``"module:attribute"`` imported on first use).

    ``scenario``/``pool_mode``/``pair``/``query_lang`` restrict the pools when the task was
    addressed by a hierarchical id (``xquad/multi/en-zh``; ``pair`` holds k >= 2 languages:
    ``xquad/multi/en-zh-ar``).
    """

    card: TaskCard
    loader_spec: Any = None  # a TaskLoader, or "module:attribute"; default clirbench.tasks.<id>:LOADER
    scenario: str | None = None
    pool_mode: str | None = None
    pair: tuple[str, ...] | None = None
    query_lang: str | None = None

    @property
    def id(self) -> str:
        return self.card.id

    address_: str = ""  # the canonical hierarchical id it was addressed by

    @property
    def address(self) -> str:
        """The id this task was addressed by (``xquad/multi/en-zh``), or the plain task id."""
        return self.address_ or self.id

    def loader(self) -> TaskLoader:
        """The loader object, its required hook checked against the task kind."""

        spec = self.loader_spec or f"{__name__}.{self.card.id.replace('-', '_')}:LOADER"
        loader = _resolve(spec, f"task {self.card.id!r} has no loader ({spec.removesuffix(':LOADER')})") if isinstance(spec, str) else spec
        missing = missing_hook(loader, self.card.kind)
        if missing:
            raise UnknownNameError(f"task {self.card.id!r}: loader {type(loader).__name__} lacks {missing}")
        return loader

    def load(self, languages: Sequence[str] | None = None, data_dir=None, **options) -> ParallelCollection:
        """The parallel collection in ``languages`` (default: all of the task's languages).

        ``options`` (``--task-option``) go to the loader's ``select(card, collection, **options)``,
        which returns a part of the collection with ``source["subset"]`` naming it (XQuAD:
        ``articles=train|test``); a loader that does not override ``select`` takes no options.
        """
        if self.card.kind != "parallel":
            raise UnknownNameError(f"task {self.id} is not a parallel task; use Task.pools")
        languages = tuple(self.canonical_languages(list(languages or ())) or self.card.languages)
        self.check_languages(languages)
        loader = self.loader()
        if options:
            _check_takes_options(loader, self.card, options)
        collection = loader.load(self.card, languages, data_dir)
        return loader.select(self.card, collection, **options) if options else collection

    def pools(self, langs: str | Sequence[str] | None = None, scenarios: str | Sequence[str] = "all",
              query_langs: Sequence[str] | None = None, pool_mode: str = "unique", data_dir=None,
              **options) -> list[Pool]:
        """Every distinct pool of a sweep over language groups (pairs, or k >= 3 languages: ``en,zh,ar``,
        ``all``), scenarios and query languages."""

        langs, scenarios, query_langs, pool_mode = self._restricted(langs, scenarios, query_langs, pool_mode)
        langs, query_langs = self.canonical_languages(langs), self.canonical_languages(query_langs)
        if query_langs:
            self.check_languages(query_langs)
        loader = self.loader()
        if self.card.kind != "parallel":
            return loader.pools(self.card, langs=langs, scenarios=scenarios,
                                query_langs=query_langs, data_dir=data_dir, **options)
        if options:
            _check_takes_options(loader, self.card, options)
        if pool_mode not in self.card.pool_modes:
            raise UnknownNameError(f"task {self.id} has no pool mode {pool_mode!r}; available: "
                                   f"{', '.join(self.card.pool_modes)}")
        groups = parse_langs(langs or f"{self.card.pivot}+all", self.card.languages)
        scenarios = parse_scenarios(scenarios)  # before the data is read
        for group in groups:
            check_group(group, scenarios)
        run_langs = list(dict.fromkeys(l for group in groups for l in group))
        outside = [l for l in query_langs or () if l not in run_langs]
        if outside:
            raise UnknownNameError(f"query language(s) {', '.join(outside)} not among the languages run; "
                                   f"valid query languages: {', '.join(run_langs)}")
        collection = self.load(sorted(run_langs), data_dir=data_dir, **options)
        pools = build_pools(collection, groups, scenarios, query_langs, pool_mode)
        subset = str(collection.source.get("subset") or "")
        return [dataclasses.replace(p, subset=subset) for p in pools] if subset else pools

    def _restricted(self, langs, scenarios, query_langs, pool_mode):
        """The sweep arguments narrowed by this task's address; a conflicting argument is an error."""
        def narrow(given, default, fixed, what):
            if fixed is None:
                return given
            if given not in (default, fixed, [fixed], (fixed,)):
                raise UnknownNameError(f"task {self.address} fixes {what} {fixed}; got {given!r}")
            return fixed

        scenarios = narrow(scenarios, "all", self.scenario, "the scenario")
        pool_mode = narrow(pool_mode, "unique", self.pool_mode, "the pool mode")
        langs = narrow(langs, None, ",".join(self.pair) if self.pair else None, "the languages")
        query_langs = narrow(query_langs, None, [self.query_lang] if self.query_lang else None, "the query language")
        return langs, scenarios, query_langs, pool_mode

    def breakdown_groups(self, pool: Pool) -> dict:
        """``{field: {query id: groups}}`` for the per-group breakdown of a result; ``{}`` when none."""
        return dict(self.loader().breakdown_groups(pool))

    def check_languages(self, languages: Sequence[str]) -> None:
        unknown = [l for l in languages if l not in self.card.languages]
        if unknown:
            raise UnknownNameError(
                f"unknown language(s) {', '.join(unknown)} for task {self.id}; "
                f"available: {', '.join(self.card.languages)}")

    def locate(self, data_dir=None) -> str:
        """Where the data would be read from, or why not (for `clirbench tasks`)."""
        try:
            return self.loader().locate(self.card, data_dir)
        except (ClirbenchError, OSError) as exc:
            return f"not found ({exc})"

    def describe(self, data_dir=None) -> dict[str, Any]:
        """The row ``clirbench tasks`` shows (``--json``): id, name, kind, languages, …, where the data is."""
        card = self.card
        return {"id": card.id, "name": card.name, "kind": card.kind, "languages": list(card.languages),
                "scenarios": list(card.scenarios), "pool_modes": list(card.pool_modes),
                "size": dict(card.expected), "license": card.license, "data": self.locate(data_dir)}

    def canonical_languages(self, spec):
        """``spec`` (``en,zh``, ``en+all`` or a list) with each code mapped by the loader's
        ``canonical_language(card, code)`` (Belebele: ``ko`` → ``kor_Hang``)."""

        if not spec:
            return spec
        loader_code = self.loader().canonical_language
        by_case = {lang.lower(): lang for lang in self.card.languages}  # EN is en, ALL is all

        def fn(code: str) -> str:
            return "all" if code.lower() == "all" else by_case.get(code.lower()) or loader_code(self.card, code)

        if isinstance(spec, str):
            return re.sub(r"[^,+\s]+", lambda m: fn(m.group()), spec)
        return [fn(code) for code in spec]


def _check_takes_options(loader, card: TaskCard, options: Mapping) -> None:
    if isinstance(loader, BaseLoader) and not loader.takes_options:
        raise UnknownNameError(f"task {card.id} takes no option(s) {', '.join(options)}")


def _resolve(spec: str, error: str):
    """The object ``"module:attribute"`` names."""

    module, _, attribute = spec.partition(":")
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise UnknownNameError(error) from None
        raise
    for part in filter(None, attribute.split(".")):
        if not hasattr(obj, part):
            raise UnknownNameError(error)
        obj = getattr(obj, part)
    return obj


_REGISTERED: dict[str, Task] = {}
_PLUGINS_LOADED = False


@lru_cache(maxsize=1)
def _cards() -> dict[str, TaskCard]:
    """The built-in cards, read once."""
    return load_cards()


def register_task(card: TaskCard | Mapping[str, Any], loader: TaskLoader | str | None = None,
                  replace: bool = False) -> Task:
    """Add a task: ``card`` (a TaskCard or the mapping a card file holds) and its ``loader`` (an
    object with the ``TaskLoader`` hooks, or ``"module:attribute"``). An id already taken is an
    error unless ``replace``."""
    if not isinstance(card, TaskCard):
        card = parse_card(card, f"register_task({dict(card).get('id', '?')!r})")
    if loader is None:
        raise ClirbenchError(f"register_task({card.id!r}): a loader is required")
    if not replace and card.id in _registry():
        raise ClirbenchError(f"task {card.id!r} is already registered")
    task = Task(card, loader)
    if not isinstance(loader, str):
        task.loader()  # check the required hook now, not at first use
    _REGISTERED[card.id] = task
    return task


def _load_entry_points() -> None:
    """Register what each ``clirbench.tasks`` entry point names: a Task, a TaskCard-and-loader pair,
    or a callable returning one Task or a list of them. A broken plugin is one line on stderr."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            obj = obj() if callable(obj) and not isinstance(obj, Task) else obj
            for task in obj if isinstance(obj, (list, tuple)) else [obj]:
                if not isinstance(task, Task):
                    raise ClirbenchError(f"gives a {type(task).__name__}, not a clirbench Task")
                if task.id in _registry():
                    raise ClirbenchError(f"task id {task.id!r} is already taken")
                task.loader()
                _REGISTERED[task.id] = task
        except Exception as exc:  # a third party's package must not break `clirbench tasks`
            print(f"clirbench: warning: task plugin {ep.name} ({ep.value}) skipped: {exc}", file=sys.stderr)


def _registry() -> dict[str, Task]:
    return {**{card_id: Task(card) for card_id, card in _cards().items()}, **_REGISTERED}


def _all_tasks() -> dict[str, Task]:
    _load_entry_points()
    return _registry()


def list_tasks() -> list[Task]:
    """Every registered task (built-in, registered, from entry points), sorted by id."""
    return [task for _, task in sorted(_all_tasks().items())]


def get_task(task_id: str) -> Task:
    """The task named ``task_id`` (hierarchical ids restrict it to some pools, see the module
    docstring); one-line error listing the known names otherwise."""
    if ":" in task_id:
        kind, argument = task_id.split(":", 1)
        make_task: Callable[[str], Task] = _resolve(f"{__name__}.{kind}_data:make_task",
                                                    f"unknown task kind {kind!r} in {task_id!r}")
        return make_task(argument)
    _not_a_path(task_id)
    name, *parts = task_id.split("/")
    tasks = _registry()
    if name not in tasks:  # entry points are read only when needed: the built-ins start faster
        tasks = _all_tasks()
    if name not in tasks:
        raise UnknownNameError(f"unknown task {name!r}; available: {', '.join(sorted(tasks))}")
    return _address(tasks[name], parts, task_id) if parts else tasks[name]


def _not_a_path(task_id: str) -> None:
    """Refuse a task id that reads as a path (``../../pwn``, ``/data/x``, ``a//b``), naming all of it."""

    parts = task_id.replace("\\", "/").split("/")
    if task_id.startswith(("/", "~")) or "\\" in task_id or any(p in ("", ".", "..") for p in parts):
        raise UnknownNameError(f"task {shown(task_id)} is refused: a task id is a name (xquad, or a pool id like "
                               f"xquad/multi/en-de/q-de), not a path ('..', '.', '\\', an empty part or a leading "
                               f"'/' or '~'); data of your own: beir:<folder> or parallel:<file>")


def _address(task: Task, parts: list[str], task_id: str) -> Task:
    """``task`` restricted by the parts after its id: scenario[+mode], L1-L2, q-Lq."""
    card = task.card
    if card.kind != "parallel":
        raise UnknownNameError(f"{task_id!r}: only parallel tasks take pool ids (task/scenario/L1-L2/q-Lq); "
                               f"{card.id} is a {card.kind} task")
    if len(parts) > 3:
        raise UnknownNameError(f"{task_id!r}: expected {card.id}/<scenario>[+<pool mode>]/<L1>-<L2>/q-<Lq>")
    scenario, mode = split_scenario(parts[0])
    if scenario not in card.scenarios:
        raise UnknownNameError(f"{task_id!r}: unknown scenario {scenario!r}; available: {', '.join(card.scenarios)}")
    if mode and mode not in card.pool_modes:
        raise UnknownNameError(f"{task_id!r}: unknown pool mode {mode!r}; available: {', '.join(card.pool_modes)}")
    pair = query = None
    canonical = [join_scenario(scenario, mode)]
    if len(parts) > 1:
        if scenario.startswith("mono-") and _is_language(task, parts[1]):  # a mono pool's name holds its document language only: .../mono-cross/en/q-de
            if len(parts) < 3:
                raise UnknownNameError(f"{task_id!r}: a {scenario} pool id names its query language too "
                                       f"({card.id}/{scenario}/<doc language>/q-<query language>)")
            doc = _language(task, parts[1], task_id)
        else:
            pair = _pair(task, parts[1], task_id)
            canonical.append(join_langs(pair))
    if len(parts) > 2:
        code = query_of(parts[2])
        if code is None:
            choices = f", one of {', '.join(query_id(l) for l in pair)}" if pair else ""
            raise UnknownNameError(f"{task_id!r}: the last part must be q-<query language>{choices}")
        query = _language(task, code, task_id)
        if pair is None:
            if (scenario == "mono-same") != (doc == query):
                raise UnknownNameError(f"{task_id!r}: in {scenario} the query language must "
                                       f"{'be' if scenario == 'mono-same' else 'differ from'} the document language")
            partner = next(l for l in (card.pivot, *card.languages) if l is not None and l != doc)
            pair = (doc, query) if scenario == "mono-cross" else (doc, partner)
            canonical.append(doc)
        elif query not in pair:
            raise UnknownNameError(f"{task_id!r}: unknown query language {code!r}; available: {', '.join(pair)}")
        canonical.append(query_id(query))
    return dataclasses.replace(task, scenario=scenario, pool_mode=mode or None, pair=pair, query_lang=query,
                               address_="/".join([card.id, *canonical]))


def _is_language(task: Task, code: str) -> bool:
    try:
        return task.canonical_languages([code])[0] in task.card.languages
    except ClirbenchError:
        return False


def _language(task: Task, code: str, task_id: str) -> str:
    """One language of the task (ISO codes mapped as ``--langs`` maps them)."""
    try:
        lang = task.canonical_languages([code])[0]
    except ClirbenchError:
        lang = code
    if lang not in task.card.languages:
        raise UnknownNameError(f"{task_id!r}: unknown language {code!r}; available: {', '.join(task.card.languages)}")
    return lang


def _split_languages(task: Task, pieces: list[str]) -> tuple[str, ...] | None:
    """``pieces`` (``text.split("-")``) joined back into two or more different languages of the
    task, the shortest first language first (codes may hold ``-``); None when no split works."""
    for cut in range(1, len(pieces) + 1):
        head = "-".join(pieces[:cut])
        try:
            lang = task.canonical_languages([head])[0]
        except ClirbenchError:
            continue
        if lang not in task.card.languages:
            continue
        if cut == len(pieces):
            return (lang,)
        rest = _split_languages(task, pieces[cut:])
        if rest is not None and lang not in rest:
            return (lang, *rest)
    return None


def _pair(task: Task, text: str, task_id: str) -> tuple[str, ...]:
    """``L1-L2`` (or ``L1-L2-L3…``) split where every part is a language of the task (codes may
    hold ``-`` or ``_``)."""
    card = task.card
    group = _split_languages(task, split_langs(text))
    if group is not None and len(group) >= 2:
        return group
    raise UnknownNameError(f"{task_id!r}: {text!r} is not a pair <L1>-<L2> of two languages of {card.id}; "
                           f"available: {', '.join(card.languages)}")
