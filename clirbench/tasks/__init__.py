"""Task registry: cards from ``tasks/*.yaml`` and the loader each task kind uses."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from ..collection import ParallelCollection, Pool
from ..errors import UnknownNameError
from ..scenarios import POOL_MODES, SCENARIOS
from .cards import TaskCard, load_cards

__all__ = ["Task", "TaskCard", "get_task", "list_tasks", "SCENARIOS", "POOL_MODES"]


@dataclass(frozen=True)
class Task:
    """A task card plus its loader."""

    card: TaskCard

    @property
    def id(self) -> str:
        return self.card.id

    def load(self, languages: Sequence[str] | None = None, data_dir=None) -> ParallelCollection:
        languages = tuple(languages or self.card.languages)
        self.check_languages(languages)
        if self.card.id == "xquad":
            from .xquad import load_xquad
            return load_xquad(self.card, languages, data_dir)
        raise UnknownNameError(f"task {self.card.id!r} has no loader yet")  # pragma: no cover

    def pools(self, langs: str | Sequence[str] | None = None, scenarios: str | Sequence[str] = "all",
              query_langs: Sequence[str] | None = None, pool_mode: str = "unique", data_dir=None) -> list[Pool]:
        """Every distinct pool of a sweep over language pairs, scenarios and query languages."""
        from ..scenarios import build_pools, parse_langs, parse_scenarios

        if pool_mode not in self.card.pool_modes:
            raise UnknownNameError(f"task {self.id} has no pool mode {pool_mode!r}; available: "
                                   f"{', '.join(self.card.pool_modes)}")
        pairs = parse_langs(langs or f"{self.card.pivot}+all", self.card.languages)
        scenario_names = parse_scenarios(scenarios)
        if query_langs:
            self.check_languages(query_langs)
        collection = self.load(sorted({l for pair in pairs for l in pair}), data_dir=data_dir)
        return build_pools(collection, pairs, scenario_names, query_langs, pool_mode)

    def check_languages(self, languages: Sequence[str]) -> None:
        unknown = [l for l in languages if l not in self.card.languages]
        if unknown:
            raise UnknownNameError(
                f"unknown language(s) {', '.join(unknown)} for task {self.id}; "
                f"available: {', '.join(self.card.languages)}")

    def locate(self, data_dir=None) -> str:
        """Where the data would be read from, for `clirbench tasks`."""
        from .xquad import find_local_dir
        try:
            folder = find_local_dir(self.card, data_dir)
        except Exception as exc:  # noqa: BLE001 - shown as text
            return f"not found ({exc})"
        return str(folder) if folder is not None else f"hub:{self.card.source.get('hub')} (no local files)"


@lru_cache(maxsize=1)
def _cards() -> dict[str, TaskCard]:
    return load_cards()


def list_tasks() -> list[Task]:
    """Every registered task, sorted by id."""
    return [Task(card) for _, card in sorted(_cards().items())]


def get_task(task_id: str) -> Task:
    """The task named ``task_id``; one-line error listing the known ones otherwise."""
    cards = _cards()
    if task_id not in cards:
        raise UnknownNameError(f"unknown task {task_id!r}; available: {', '.join(sorted(cards))}")
    return Task(cards[task_id])
