"""Measure objects: immutable values whose names round-trip (``parse("nDCG@10") == nDCG@10``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..ranking import RankTable

__all__ = ["Measure", "parse", "FAMILIES", "RANGES", "ALIASES", "valid_names"]

# family -> (cutoff: "optional" | "required" | "none", higher_is_better, of_mean)
FAMILIES: dict[str, tuple[str, bool, bool]] = {
    "nDCG": ("optional", True, False),
    "AP": ("optional", True, False),
    "RR": ("optional", True, False),
    "R": ("required", True, False),
    "P": ("required", True, False),
    "Success": ("required", True, False),
    "Complete": ("required", True, False),
    "MaxR": ("none", False, False),
    "MaxR_norm": ("none", True, False),
    "MaxR_norm_of_mean": ("none", True, True),
    "SameLangFirst": ("none", True, False),
    "PEER": ("required", True, False),
}
# family -> (lowest, highest) value of one query; "pool" is the pool size |D| (MaxR is a rank).
# The leaderboard checks submitted values against these; every family must have one.
RANGES: dict[str, tuple[float, float | str]] = {
    "nDCG": (0.0, 1.0), "AP": (0.0, 1.0), "RR": (0.0, 1.0), "R": (0.0, 1.0), "P": (0.0, 1.0),
    "Success": (0.0, 1.0), "PEER": (0.0, 1.0),
    "Complete": (0.0, 100.0), "MaxR_norm": (0.0, 100.0), "MaxR_norm_of_mean": (0.0, 100.0),
    "SameLangFirst": (0.0, 100.0),
    "MaxR": (1.0, "pool"),
}
ALIASES = {"MRR": "RR", "MAP": "AP", "Recall": "R", "NDCG": "nDCG",
           "Max@R": "MaxR", "Max@R_norm": "MaxR_norm", "Max@R_norm_of_mean": "MaxR_norm_of_mean"}
_TREC = {"nDCG": ("ndcg", "ndcg_cut_{k}"), "AP": ("map", "map_cut_{k}"), "RR": ("recip_rank", None),
         "R": (None, "recall_{k}"), "P": (None, "P_{k}"), "Success": (None, "success_{k}")}
_GRAMMAR = re.compile(r"(?P<name>[A-Za-z][A-Za-z_]*)(?:@(?P<k>[1-9][0-9]*))?")


def valid_names() -> str:
    """One line listing the accepted names."""
    forms = {"optional": "{}[@k]", "required": "{}@k", "none": "{}"}
    names = [forms[c].format(f) for f, (c, _, _) in FAMILIES.items()]
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
            if FAMILIES[self.family][0] == "none":
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
    def higher_is_better(self) -> bool:
        return FAMILIES[self.family][1]

    @property
    def of_mean(self) -> bool:
        """True when the reported value is a function of the mean of ``per_query`` (not a mean)."""
        return FAMILIES[self.family][2]

    def value_range(self, pool_size: int) -> tuple[float, float]:
        """(lowest, highest) value of one query (and so of a mean) on a pool of ``pool_size`` documents."""
        low, high = RANGES[self.family]
        return low, float(max(pool_size, 1)) if high == "pool" else high

    @property
    def complete(self) -> bool:
        """False for a template such as ``R`` that still needs its cutoff (``R@100``)."""
        return not (self.cutoff is None and FAMILIES[self.family][0] == "required")

    @property
    def trec_name(self) -> str | None:
        """The key trec_eval / pytrec_eval reports for the same value, if there is one."""
        plain, cut = _TREC.get(self.family, (None, None))
        return plain if self.cutoff is None else (cut.format(k=self.cutoff) if cut else None)

    def per_query(self, table: "RankTable") -> np.ndarray:
        """(n,) float64 value per evaluated query of ``table``."""
        from .compute import per_query

        return per_query(self, table)

    def from_mean(self, mean_value, table: "RankTable"):
        """For ``of_mean`` measures: the reported value from a mean (or array of bootstrap means)
        of ``per_query``. MaxR_norm_of_mean uses the mean |D| and |R| over queries with a relevant doc.
        """
        from .compute import maxr_norm_of_mean

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
    for alias in ("Max@R_norm_of_mean", "Max@R_norm", "Max@R"):
        if s.startswith(alias) and (len(s) == len(alias) or s[len(alias)] == "@"):
            s = ALIASES[alias] + s[len(alias):]
            break
    m = _GRAMMAR.fullmatch(s)
    family = ALIASES.get(m.group("name"), m.group("name")) if m else None
    if family not in FAMILIES:
        raise ValueError(f"unknown measure {name!r}; valid: {valid_names()}")
    k = m.group("k")
    policy = FAMILIES[family][0]
    if k is None and policy == "required":
        raise ValueError(f"measure {name!r} needs a cutoff, e.g. {family}@10; valid: {valid_names()}")
    if k is not None and policy == "none":
        raise ValueError(f"measure {family} takes no cutoff (got {name!r}); valid: {valid_names()}")
    return Measure(family, None if k is None else int(k))
