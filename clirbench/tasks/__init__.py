"""Task registry: cards from ``cards/*.yaml`` and the loader each task kind uses."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from ..collection import ParallelCollection, Pool
from ..errors import UnknownNameError
from ..scenarios import POOL_MODES, SCENARIOS
from .card import TaskCard, load_cards

__all__ = ["Task", "TaskCard", "get_task", "list_tasks", "SCENARIOS", "POOL_MODES"]


@dataclass(frozen=True)
class Task:
    """A task card plus its loader module ``clirbench.tasks.<id>`` (``-`` becomes ``_``).

    A ``parallel`` task's module defines ``load(card, languages, data_dir) -> ParallelCollection``
    and gets the bilingual-pool scenarios; a ``retrieval`` task's module defines
    ``pools(card, langs, scenarios, query_langs, data_dir, **options) -> list[Pool]``.
    """

    card: TaskCard
    module: str = ""  # loader module; default from the task id

    @property
    def id(self) -> str:
        return self.card.id

    def loader(self):
        """The loader module (``load``/``pools`` and optional hooks such as ``write_breakdown``)."""
        import importlib

        name = self.module or f"{__name__}.{self.card.id.replace('-', '_')}"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            raise UnknownNameError(f"task {self.card.id!r} has no loader ({name})") from None

    def load(self, languages: Sequence[str] | None = None, data_dir=None, **options) -> ParallelCollection:
        """The parallel collection in ``languages`` (default: all of the task's languages).

        ``options`` (``--task-option``) go to the loader's ``select(card, collection, **options)``,
        which returns a part of the collection with ``source["subset"]`` naming it (XQuAD:
        ``articles=train|test``); a task whose loader has no ``select`` takes no options.
        """
        if self.card.kind != "parallel":
            raise UnknownNameError(f"task {self.id} is not a parallel task; use Task.pools")
        languages = tuple(self.canonical_languages(list(languages or ())) or self.card.languages)
        self.check_languages(languages)
        select = getattr(self.loader(), "select", None)
        if options and select is None:
            raise UnknownNameError(f"task {self.id} takes no option(s) {', '.join(options)}")
        collection = self.loader().load(self.card, languages, data_dir)
        return select(self.card, collection, **options) if options else collection

    def pools(self, langs: str | Sequence[str] | None = None, scenarios: str | Sequence[str] = "all",
              query_langs: Sequence[str] | None = None, pool_mode: str = "unique", data_dir=None,
              **options) -> list[Pool]:
        """Every distinct pool of a sweep over language pairs, scenarios and query languages."""
        from ..scenarios import build_pools, parse_langs, parse_scenarios

        langs, query_langs = self.canonical_languages(langs), self.canonical_languages(query_langs)
        if query_langs:
            self.check_languages(query_langs)
        if self.card.kind != "parallel":
            return self.loader().pools(self.card, langs=langs, scenarios=scenarios,
                                        query_langs=query_langs, data_dir=data_dir, **options)
        if options and getattr(self.loader(), "select", None) is None:
            raise UnknownNameError(f"task {self.id} takes no option(s) {', '.join(options)}")
        if pool_mode not in self.card.pool_modes:
            raise UnknownNameError(f"task {self.id} has no pool mode {pool_mode!r}; available: "
                                   f"{', '.join(self.card.pool_modes)}")
        pairs = parse_langs(langs or f"{self.card.pivot}+all", self.card.languages)
        collection = self.load(sorted({l for pair in pairs for l in pair}), data_dir=data_dir, **options)
        pools = build_pools(collection, pairs, parse_scenarios(scenarios), query_langs, pool_mode)
        subset = str(collection.source.get("subset") or "")
        return [dataclasses.replace(p, subset=subset) for p in pools] if subset else pools

    def breakdown_groups(self, pool: Pool) -> dict:
        """``{field: {query id: groups}}`` for the per-group breakdown of a result; ``{}`` when none."""
        hook = getattr(self.loader(), "breakdown_groups", None)
        return dict(hook(pool)) if hook is not None else {}

    def check_languages(self, languages: Sequence[str]) -> None:
        unknown = [l for l in languages if l not in self.card.languages]
        if unknown:
            raise UnknownNameError(
                f"unknown language(s) {', '.join(unknown)} for task {self.id}; "
                f"available: {', '.join(self.card.languages)}")

    def locate(self, data_dir=None) -> str:
        """Where the data would be read from, or why not (for `clirbench tasks`).

        The loader module's ``locate(card, data_dir)`` if it has one, else the card's local files.
        """
        from . import hub

        from ..errors import ClirbenchError

        try:
            return getattr(self.loader(), "locate", hub.locate)(self.card, data_dir)
        except (ClirbenchError, OSError) as exc:
            return f"not found ({exc})"

    def canonical_languages(self, spec):
        """``spec`` (``en,zh``, ``en+all`` or a list) with each code mapped by the loader's
        ``canonical_language(card, code)`` when it has one (Belebele: ``ko`` → ``kor_Hang``)."""
        import re

        fn = getattr(self.loader(), "canonical_language", None) if spec else None
        if fn is None:
            return spec
        if isinstance(spec, str):
            return re.sub(r"[^,+\s]+", lambda m: m.group() if m.group() == "all" else fn(self.card, m.group()), spec)
        return [fn(self.card, code) for code in spec]


@lru_cache(maxsize=1)
def _cards() -> dict[str, TaskCard]:
    return load_cards()


def list_tasks() -> list[Task]:
    """Every registered task, sorted by id."""
    return [Task(card) for _, card in sorted(_cards().items())]


def get_task(task_id: str) -> Task:
    """The task named ``task_id``; one-line error listing the known ones otherwise.

    ``<kind>:<argument>`` (e.g. ``parallel:items.jsonl``, ``beir:dir``) builds a task from the
    user's own data through ``clirbench.tasks.<kind>_data.make_task(argument)``.
    """
    if ":" in task_id:
        import importlib

        kind, argument = task_id.split(":", 1)
        try:
            module = importlib.import_module(f"{__name__}.{kind}_data")
        except ModuleNotFoundError:
            raise UnknownNameError(f"unknown task kind {kind!r} in {task_id!r}") from None
        return module.make_task(argument)
    cards = _cards()
    if task_id not in cards:
        raise UnknownNameError(f"unknown task {task_id!r}; available: {', '.join(sorted(cards))}")
    return Task(cards[task_id])
