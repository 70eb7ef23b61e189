"""One record per measure family (docs/measures.md): every property a consumer needs, registered once.

``Measure`` (base.py), the leaderboard's range checks, its ranking direction, MTEB's score keys and
``clirbench evaluate``'s ir_measures names (``TREC_EVAL``, read by trec_eval/names.py) all read
``FAMILIES``. The per-query functions live in compute.py / peer.py, which import nothing
from here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .compute import (
    Prep,
    ap,
    complete,
    max_rank,
    maxr_norm,
    ndcg,
    peer_at,
    precision,
    recall,
    rr,
    same_lang_first,
    success,
)
from .exposure import (
    alpha_ndcg_measure,
    awrf_geo_measure,
    awrf_geo_uniform_measure,
    awrf_measure,
    awrf_uniform_measure,
    share_measure,
    top1_measure,
)
from .mlrs import mlrs_measure

__all__ = ["Family", "FAMILIES", "ALIASES", "family", "TrecEval", "TREC_EVAL", "TREC_EVAL_ALIASES"]


@dataclass(frozen=True)
class TrecEval:
    """How trec_eval computes an ir_measures family: its measure with a cutoff (``-m <cut>.k``;
    RR@k: recip_rank on the run cut at k), its measure without one, and the ir_measures parameters
    it takes besides the cutoff."""

    cut: str | None
    plain: str | None
    params: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    """What a measure family is.

    cutoff: "optional" (``nDCG`` or ``nDCG@10``), "required" (``R@100``) or "none" (``MaxR``).
    direction: "up" (higher is better), "down" (lower is better) or "target" (best at ``target``:
    SameLangFirst's 50 = no language preference between two languages). ``neutral`` (target families
    only) gives the best value on a pool of k document languages when it depends on k: SameLangFirst
    is neutral at 100/k (50 with two languages, 33.3 with three, 8.3 with twelve);
    ``target_for(k)`` reads it. high: the largest value of one query, or "pool"
    for |D| (MaxR is a rank). unit: "fraction" (0..1), "percent" (0..100) or "rank".
    rank_set: exact only from the ranks of the relevant documents at any depth (no run cut at a fixed
    depth gives it): MaxR, MaxR_norm, MaxR_norm_of_mean, SameLangFirst. Complete@K and PEER@k are
    not: a run cut at K (k) plus the qrels gives them.
    of_mean: the reported value is a function of the mean of the per-query values (not a mean).
    needs_head: computed from the ranking's head (``RankTable.head``, a ``JudgedHead``): the language
    exposure measures (Share, AWRF, alpha_nDCG, Top1_*); a ValueError without it.
    """

    name: str
    cutoff: str
    direction: str
    low: float
    high: float | str
    unit: str
    func: Callable[[Prep, int | None], np.ndarray]
    mteb_key: str
    trec: TrecEval | None = None  # how trec_eval computes the family (None: it does not)
    aliases: tuple[str, ...] = ()
    of_mean: bool = False
    rank_set: bool = False
    target: float | None = None
    neutral: Callable[[int], float] | None = None
    needs_head: bool = False

    def __post_init__(self) -> None:
        if self.cutoff not in ("optional", "required", "none"):
            raise ValueError(f"{self.name}: cutoff policy {self.cutoff!r}")
        if self.direction not in ("up", "down", "target") or (self.direction == "target") != (self.target is not None):
            raise ValueError(f"{self.name}: direction {self.direction!r} with target {self.target!r}")
        if self.unit not in ("fraction", "percent", "rank"):
            raise ValueError(f"{self.name}: unit {self.unit!r}")

    def target_for(self, num_langs: int | None = None) -> float | None:
        """The best value on a pool of ``num_langs`` document languages (None: the two-language
        ``target``); None for "up" and "down" families."""
        if self.target is None:
            return None
        if num_langs is None or self.neutral is None:
            return self.target
        return float(self.neutral(int(num_langs)))

    def label_for(self, num_langs: int | None = None) -> str:
        """``direction_label`` on a pool of ``num_langs`` languages: ``best at 33.3`` for three."""
        target = self.target_for(num_langs)
        if self.direction != "target" or target is None:
            return self.direction_label
        return f"best at {round(target, 1):g}"

    @property
    def direction_label(self) -> str:
        """``higher is better``, ``lower is better`` or ``best at 50`` (two languages; see ``label_for``)."""
        return {"up": "higher is better", "down": "lower is better"}.get(
            self.direction, f"best at {self.target:g}" if self.target is not None else "")

    @property
    def arrow(self) -> str:
        """Column marker: ↑, ↓ or ``best at 50``."""
        return {"up": "↑", "down": "↓"}.get(self.direction, self.direction_label)

    def goodness(self, value, target: float | None = None):
        """A number that grows as ``value`` gets better (ranking key): x, -x or -|x - target|
        (``target`` default: the two-language ``target``; ``target_for(k)`` for k languages)."""
        x = np.asarray(value, dtype=np.float64)
        target = self.target if target is None else target
        out = x if self.direction == "up" else -x if self.direction == "down" else -np.abs(x - target)
        return out[()] if out.ndim == 0 else out


def _one_in_k(num_langs: int) -> float:
    """100/k: the share of queries whose same-language passage comes first when no language is preferred."""
    if num_langs < 1:
        raise ValueError(f"a pool has at least one language, got {num_langs}")
    return 100.0 / num_langs


_SET = ("rel", "judged_only")  # ir_measures parameters with a trec_eval switch (-l, -J)
_FRACTION = dict(low=0.0, high=1.0, unit="fraction")
_PERCENT = dict(low=0.0, high=100.0, unit="percent")

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("nDCG", "optional", "up", func=ndcg, mteb_key="clirbench_ndcg",
           trec=TrecEval("ndcg_cut", "ndcg", ("judged_only", "dcg")),
           aliases=("NDCG",), **_FRACTION),
    Family("AP", "optional", "up", func=ap, mteb_key="clirbench_map", trec=TrecEval("map_cut", "map", _SET),
           aliases=("MAP",), **_FRACTION),
    Family("RR", "optional", "up", func=rr, mteb_key="clirbench_mrr", trec=TrecEval("recip_rank", "recip_rank", _SET),
           aliases=("MRR",), **_FRACTION),
    Family("R", "required", "up", func=recall, mteb_key="clirbench_recall", trec=TrecEval("recall", None, _SET),
           aliases=("Recall",), **_FRACTION),
    Family("P", "required", "up", func=precision, mteb_key="clirbench_precision", trec=TrecEval("P", None, _SET),
           **_FRACTION),
    Family("Success", "required", "up", func=success, mteb_key="clirbench_success",
           trec=TrecEval("success", None, _SET),
           **_FRACTION),
    Family("Complete", "required", "up", func=complete, mteb_key="complete", **_PERCENT),
    Family("MaxR", "none", "down", low=1.0, high="pool", unit="rank", func=max_rank, mteb_key="max_at_r",
           aliases=("Max@R",), rank_set=True),
    Family("MaxR_norm", "none", "up", func=maxr_norm, mteb_key="max_at_r_norm", aliases=("Max@R_norm",),
           rank_set=True, **_PERCENT),
    Family("MaxR_norm_of_mean", "none", "up", func=max_rank, mteb_key="max_at_r_norm_of_mean",
           aliases=("Max@R_norm_of_mean",), of_mean=True, rank_set=True, **_PERCENT),
    Family("SameLangFirst", "none", "target", target=50.0, neutral=_one_in_k, func=same_lang_first,
           mteb_key="same_lang_first", rank_set=True, **_PERCENT),
    Family("PEER", "required", "up", func=peer_at, mteb_key="clirbench_peer", **_FRACTION),
    # language exposure, from the ranking's head (measures/exposure.py)
    Family("Share", "required", "target", target=50.0, neutral=_one_in_k, func=share_measure,
           mteb_key="lang_share", needs_head=True, **_PERCENT),
    Family("AWRF", "required", "up", func=awrf_measure, mteb_key="awrf", needs_head=True, **_FRACTION),
    Family("AWRF_uniform", "required", "up", func=awrf_uniform_measure, mteb_key="awrf_uniform", needs_head=True,
           **_FRACTION),
    Family("AWRF_geo", "required", "up", func=awrf_geo_measure, mteb_key="awrf_geo", needs_head=True, **_FRACTION),
    Family("AWRF_geo_uniform", "required", "up", func=awrf_geo_uniform_measure, mteb_key="awrf_geo_uniform",
           needs_head=True, **_FRACTION),
    Family("alpha_nDCG", "required", "up", func=alpha_ndcg_measure, mteb_key="alpha_ndcg", needs_head=True,
           **_FRACTION),
    Family("Top1_rel_qlang", "none", "up", func=top1_measure("rel_qlang"), mteb_key="top1_rel_qlang",
           needs_head=True, **_PERCENT),
    Family("Top1_rel_other", "none", "up", func=top1_measure("rel_other"), mteb_key="top1_rel_other",
           needs_head=True, **_PERCENT),
    Family("Top1_nonrel_qlang", "none", "down", func=top1_measure("nonrel_qlang"), mteb_key="top1_nonrel_qlang",
           needs_head=True, **_PERCENT),
    Family("Top1_nonrel_other", "none", "down", func=top1_measure("nonrel_other"), mteb_key="top1_nonrel_other",
           needs_head=True, **_PERCENT),
    # a passage's climb when rewritten in the query's language (measures/mlrs.py; the runner re-scores)
    Family("MLRS", "required", "down", func=mlrs_measure, mteb_key="mlrs", needs_head=True, **_PERCENT),
)}
# alias -> family name ("Max@R…" spellings contain '@' and are matched before the grammar)
ALIASES: dict[str, str] = {a: f.name for f in FAMILIES.values() for a in f.aliases}

# ir_measures family -> how trec_eval computes it (``clirbench evaluate --measures``): the families above
# that trec_eval has, then ir_measures families clirbench computes only through trec_eval
TREC_EVAL: dict[str, TrecEval] = {**{f.name: f.trec for f in FAMILIES.values() if f.trec is not None},
    "Rprec": TrecEval(None, "Rprec", _SET), "Bpref": TrecEval(None, "bpref", ("rel",)),
    "infAP": TrecEval(None, "infAP", ("rel",)), "Judged": TrecEval("Judged", "Judged"),
    "SetP": TrecEval(None, "set_P", ("rel", "judged_only", "relative")),
    "SetR": TrecEval(None, "set_recall", ("rel",)),
    "SetF": TrecEval(None, "set_F", ("rel", "judged_only", "beta")), "SetAP": TrecEval(None, "set_map", _SET),
    "NumRet": TrecEval(None, "num_ret", ("rel",)), "NumRelRet": TrecEval(None, "num_rel_ret", ("rel",)),
    "NumRel": TrecEval(None, "num_rel", ("rel",)), "NumQ": TrecEval(None, "num_q"),
}
# ir_measures' other spellings of those families: the families' aliases, then ir_measures' own
TREC_EVAL_ALIASES: dict[str, str] = {**{a: f for a, f in ALIASES.items() if f in TREC_EVAL},
                                     "Precision": "P", "RPrec": "Rprec", "BPref": "Bpref", "SetRelP": "SetP"}


def family(name: str) -> Family:
    """The record of a family name (not an alias); KeyError when unknown."""
    return FAMILIES[name]
