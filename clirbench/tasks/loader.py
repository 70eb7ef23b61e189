"""The ``TaskLoader`` protocol: the hooks a task's loader declares, and their defaults.

A ``parallel`` task's loader must define ``load`` (the bilingual-pool scenarios are built from
its collection); a ``retrieval`` task's loader must define ``pools``. Every other hook is
optional: subclass ``BaseLoader`` to get its default.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from ..collection import ParallelCollection, Pool
from ..util.errors import UnknownNameError
from .card import TaskCard
from .hub import locate

__all__ = ["TaskLoader", "ParallelLoader", "RetrievalLoader", "BaseLoader", "REQUIRED_HOOK"]

REQUIRED_HOOK = {"parallel": "load", "retrieval": "pools"}  # the hook a loader of each task kind must have


@runtime_checkable
class TaskLoader(Protocol):
    """Optional hooks, all given defaults by ``BaseLoader``."""

    def locate(self, card: TaskCard, data_dir=None) -> str:
        """Where the data would be read from (``clirbench tasks``); raise ``ClirbenchError`` when not found."""

    def canonical_language(self, card: TaskCard, code: str) -> str:
        """The card's code for a user's language code (Belebele: ``ko`` → ``kor_Hang``)."""

    def select(self, card: TaskCard, collection: ParallelCollection, **options) -> ParallelCollection:
        """A part of a parallel collection named by ``--task-option``s (XQuAD: ``articles=test``)."""

    def breakdown_groups(self, pool: Pool) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
        """``{field: {query id: groups}}`` for a per-group breakdown of a result; ``{}`` when none."""

    def gold_translations(self, card: TaskCard, role: str, lang: str, data_dir=None, **options) -> Mapping[str, str]:
        """``{text id: gold translation into lang}`` of the queries or documents (``role``)."""

    def summary_table(self, records: Iterable[Mapping]) -> str:
        """An extra table over a run's result records (ko-en's averages); ``""`` when none."""


@runtime_checkable
class ParallelLoader(TaskLoader, Protocol):
    def load(self, card: TaskCard, languages: Sequence[str], data_dir=None) -> ParallelCollection:
        """The aligned passages and questions in ``languages``."""


@runtime_checkable
class RetrievalLoader(TaskLoader, Protocol):
    def pools(self, card: TaskCard, langs=None, scenarios="all", query_langs=None, data_dir=None,
              **options) -> list[Pool]:
        """The task's pools; ``langs`` names what varies in the task (CLIRudit: the document side)."""


class BaseLoader:
    """Defaults of the optional hooks; ``takes_options`` is true when ``select`` is overridden."""

    def locate(self, card: TaskCard, data_dir=None) -> str:
        return locate(card, data_dir)

    def canonical_language(self, card: TaskCard, code: str) -> str:
        return code

    def select(self, card: TaskCard, collection: ParallelCollection, **options) -> ParallelCollection:
        if options:
            raise UnknownNameError(f"task {card.id} takes no option(s) {', '.join(options)}")
        return collection

    @property
    def takes_options(self) -> bool:
        return type(self).select is not BaseLoader.select

    def breakdown_groups(self, pool: Pool) -> dict[str, Any]:
        return {}

    def gold_translations(self, card: TaskCard, role: str, lang: str, data_dir=None, **options) -> Mapping[str, str]:
        raise UnknownNameError(f"task {card.id} provides no gold translations")

    def summary_table(self, records: Iterable[Mapping]) -> str:
        return ""


def missing_hook(loader: object, kind: str) -> str | None:
    """The name of the required hook ``loader`` lacks for a task of ``kind``, else None."""
    hook = REQUIRED_HOOK.get(kind)
    if hook is None:
        return f"kind {kind!r}"
    if not callable(getattr(loader, hook, None)):
        return f"{hook}()"
    if not isinstance(loader, TaskLoader):
        return "the TaskLoader hooks (subclass clirbench.tasks.BaseLoader)"
    return None
