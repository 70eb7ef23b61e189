"""Measure objects: immutable values whose names round-trip (``parse("nDCG@10") == nDCG@10``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import numpy as np

from .compute import Prep, maxr_norm_of_mean
from .families import ALIASES, FAMILIES, Family

if TYPE_CHECKING:  # annotations only: the measures read a RankTable and need no rank code at run time
    from ..rank.table import RankTable

__all__ = ["Measure", "parse", "valid_names", "direction", "compute", "per_query", "head_depth"]

MAX_CUTOFF = 1_000_000  # deepest cutoff of a measure (nDCG@k, R@k, ...): far below any run's depth limit
_GRAMMAR = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_]*)(?:@(?P<k>[1-9][0-9]*))?")


def valid_names() -> str:
    """One line listing the accepted names."""
    forms = {"optional": "{}[@k]", "required": "{}@k", "none": "{}"}
    names = [forms[f.cutoff].format(name) for name, f in FAMILIES.items()]
    return ", ".join(names) + " (aliases: " + ", ".join(ALIASES) + ")"


@dataclass(frozen=True)
class Measure:
    """A measure family plus an optional cutoff; ``str`` gives its canonical name."""

    family: str
    cutoff: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown measure {self.family!r}; valid: {valid_names()}")
        if self.cutoff is not None:
            if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, (int, np.integer)) or self.cutoff < 1:
                raise ValueError(f"cutoff must be a positive int, got {self.cutoff!r}")
            if FAMILIES[self.family].cutoff == "none":
                raise ValueError(f"{self.family} takes no cutoff")
            object.__setattr__(self, "cutoff", int(self.cutoff))

    def __str__(self) -> str:
        return self.family if self.cutoff is None else f"{self.family}@{self.cutoff}"

    def __repr__(self) -> str:
        return str(self)

    def __matmul__(self, k: int) -> "Measure":
        if self.cutoff is not None:
            raise ValueError(f"{self} already has a cutoff")
        return Measure(self.family, k)

    @property
    def name(self) -> str:
        return str(self)

    @property
    def record(self) -> Family:
        """The family's record (direction, range, unit, names, per-query function)."""
        return FAMILIES[self.family]

    @property
    def higher_is_better(self) -> bool:
        """True only for direction "up" (SameLangFirst is best at 50, neither up nor down)."""
        return self.record.direction == "up"

    @property
    def direction(self) -> str:
        """"up", "down" or "target" (best at ``record.target``)."""
        return self.record.direction

    @property
    def of_mean(self) -> bool:
        """True when the reported value is a function of the mean of ``per_query`` (not a mean)."""
        return self.record.of_mean

    def value_range(self, pool_size: int) -> tuple[float, float]:
        """(lowest, highest) value of one query (and so of a mean) on a pool of ``pool_size`` documents."""
        f = self.record
        return f.low, float(max(pool_size, 1)) if f.high == "pool" else f.high

    @property
    def complete(self) -> bool:
        """False for a template such as ``R`` that still needs its cutoff (``R@100``)."""
        return not (self.cutoff is None and self.record.cutoff == "required")

    def per_query(self, table: RankTable) -> np.ndarray:
        """(n,) float64 value per evaluated query of ``table``."""
        return per_query(self, table)

    def from_mean(self, mean_value, table: RankTable):
        """For ``of_mean`` measures: the reported value from a mean (or array of bootstrap means)
        of ``per_query``. MaxR_norm_of_mean uses the mean |D| and |R| over queries with a relevant doc.
        """
        if not self.of_mean:
            raise ValueError(f"{self} is a plain mean")
        num_rel = table.num_rel
        has = num_rel > 0
        if not has.any():
            return np.full(np.shape(mean_value), np.nan)[()]
        return maxr_norm_of_mean(mean_value, np.mean(table.num_docs[has]), np.mean(num_rel[has]))


def parse(name: str | Measure) -> Measure:
    """``"nDCG@10"`` -> ``nDCG@10``; aliases MRR, MAP@k, Recall@k, NDCG@k, Max@R, Max@R_norm."""
    if isinstance(name, Measure):
        return name
    s = str(name).strip()
    shown = repr(s[:40]) + ("..." if len(s) > 40 else "")
    for alias in ("Max@R_norm_of_mean", "Max@R_norm", "Max@R"):
        if s.startswith(alias) and (len(s) == len(alias) or s[len(alias)] == "@"):
            s = ALIASES[alias] + s[len(alias):]
            break
    m = _GRAMMAR.fullmatch(s)
    family = ALIASES.get(m.group("name"), m.group("name")) if m else None
    if family not in FAMILIES:
        raise ValueError(f"unknown measure {shown}; valid: {valid_names()}")
    k = m.group("k")
    policy = FAMILIES[family].cutoff
    if k is None and policy == "required":
        raise ValueError(f"measure {shown} needs a cutoff, e.g. {family}@10; valid: {valid_names()}")
    if k is not None and policy == "none":
        raise ValueError(f"measure {family} takes no cutoff (got {shown}); valid: {valid_names()}")
    if k is not None and (len(k) > 7 or int(k) > MAX_CUTOFF):
        raise ValueError(f"measure {s[:40]!r}: the cutoff is over {MAX_CUTOFF:,}")
    return Measure(family, None if k is None else int(k))


def direction(name: str | Measure) -> str | None:
    """A measure name's direction: "up" (higher is better), "down" (lower is better) or "target"
    (best at a target value, SameLangFirst); None for a name clirbench does not know."""
    try:
        return parse(name).direction
    except ValueError:
        return None


def head_depth(measures: Iterable[Measure | str]) -> int | None:
    """The depth of the ranking's head that ``measures`` need: the deepest cutoff of those read from
    the head (``Family.needs_head``; 1 for the top-1 split); None when none is."""
    cutoffs = [m.cutoff or 1 for m in map(parse, measures) if m.record.needs_head]
    return max(cutoffs) if cutoffs else None


def _value(m: Measure, p: Prep) -> np.ndarray:
    if not m.complete:
        raise ValueError(f"{m} needs a cutoff, e.g. {m}@10")
    return m.record.func(p, m.cutoff)


def per_query(measure: Measure | str, table: RankTable) -> np.ndarray:
    """(n,) value per evaluated query."""
    return _value(parse(measure), Prep(table))


def compute(measures: Iterable[Measure | str], table: RankTable) -> dict[str, np.ndarray]:
    """``{str(measure): per-query values}``, sharing the sorts between measures."""
    p = Prep(table)
    return {str(m): _value(m, p) for m in map(parse, measures)}
