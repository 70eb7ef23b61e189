"""The paired significance tests, one table (docs/measures.md#confidence-intervals-and-comparisons).

A test is a function ``p_values(a, b, *, resamples, seed, name)`` over paired per-query values (A
and B, NaN where a query has no value): the two-sided p-value of mean(B − A) = 0, a float for 1-D
inputs and one per column (the same draws for every column) for 2-D; ``name`` is how its errors
call ``resamples`` (``compare`` passes ``permutations``). ``compare``, the query-language gap and
the leaderboard's ``--baseline`` tests read ``PAIRED_TESTS`` through ``paired_test``.

Adding a test: its function, one line in ``PAIRED_TESTS``, its docs, a test (docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..util.errors import UnknownNameError
from .bootstrap import randomization_test

__all__ = ["PairedTest", "PAIRED_TESTS", "DEFAULT_TEST", "paired_test"]


@dataclass(frozen=True)
class PairedTest:
    """One paired test: its name, its function and how outputs name it (``label``: "randomisation",
    as in "randomisation p"; ``draws``: what ``resamples`` counts, "sign flips")."""

    name: str
    p_values: Callable
    label: str
    draws: str

    def describe(self, resamples: int) -> str:
        """``randomisation test (10000 sign flips)``."""
        return f"{self.label} test ({resamples} {self.draws})"


PAIRED_TESTS: dict[str, PairedTest] = {t.name: t for t in (
    PairedTest("randomization", randomization_test, "randomisation", "sign flips"),
)}
DEFAULT_TEST = "randomization"


def paired_test(name: str = DEFAULT_TEST) -> PairedTest:
    """The test registered as ``name``; a one-line error naming the registered ones otherwise."""
    try:
        return PAIRED_TESTS[name]
    except (KeyError, TypeError):
        raise UnknownNameError(f"unknown paired test {str(name)[:60]!r}; known: {', '.join(PAIRED_TESTS)}") from None
