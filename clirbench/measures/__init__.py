"""Exact rank-based measures (docs/measures.md): ``parse("nDCG@10") == nDCG@10``."""
from __future__ import annotations

from ..scenarios import MAIN_MEASURES as _MAIN_NAMES
from ..scenarios import SCENARIOS
from .base import Measure, compute, direction, head_depth, parse, per_query, valid_names
from .compute import maxr_norm_of_mean
from .exposure import share_matrix
from .families import FAMILIES, Family
from .peer import peer

nDCG = NDCG = Measure("nDCG")
AP = MAP = Measure("AP")
RR = MRR = Measure("RR")
R = Recall = Measure("R")
P = Measure("P")
Success = Measure("Success")
Complete = Measure("Complete")
MaxR = Measure("MaxR")
MaxR_norm = Measure("MaxR_norm")
MaxR_norm_of_mean = Measure("MaxR_norm_of_mean")
SameLangFirst = Measure("SameLangFirst")
PEER = Measure("PEER")
# language exposure, from the ranking's head (RankTable.head; docs/measures.md#language-exposure)
Share = Measure("Share")
AWRF = Measure("AWRF")
AWRF_uniform = Measure("AWRF_uniform")
AWRF_geo = Measure("AWRF_geo")
AWRF_geo_uniform = Measure("AWRF_geo_uniform")
alpha_nDCG = Measure("alpha_nDCG")
Top1_rel_qlang = Measure("Top1_rel_qlang")
Top1_rel_other = Measure("Top1_rel_other")
Top1_nonrel_qlang = Measure("Top1_nonrel_qlang")
Top1_nonrel_other = Measure("Top1_nonrel_other")
TOP1_SPLIT: tuple[Measure, ...] = (Top1_rel_qlang, Top1_rel_other, Top1_nonrel_qlang, Top1_nonrel_other)
MLRS = Measure("MLRS")  # re-scores passages with the retriever: `clirbench run` only, on parallel pools
# which languages fill the top of each ranking, printed by `run` for pools of two or more document languages
EXPOSURE_MEASURES: tuple[Measure, ...] = (Share @ 10, AWRF @ 10, alpha_nDCG @ 20, *TOP1_SPLIT)

# the default set's measures read from the ranks of the relevant documents (a RankTable without a head)
RANK_MEASURES: tuple[Measure, ...] = (
    MaxR, MaxR_norm, MaxR_norm_of_mean, Complete @ 10, nDCG @ 1, nDCG @ 10, RR, AP @ 1000, R @ 100, SameLangFirst,
)
# what `clirbench run` and the MTEB plugin measure unless told otherwise
DEFAULT_MEASURES: tuple[Measure, ...] = (*RANK_MEASURES, *EXPOSURE_MEASURES)
# the parallel scenarios' main measures, declared in scenarios.py
MAIN_MEASURES: dict[str, tuple[Measure, ...]] = {s: tuple(map(parse, _MAIN_NAMES[s])) for s in SCENARIOS}

__all__ = [
    "Measure", "Family", "FAMILIES", "parse", "valid_names", "direction", "compute", "per_query", "maxr_norm_of_mean",
    "nDCG", "NDCG", "AP", "MAP", "RR", "MRR", "R", "Recall", "P", "Success", "Complete",
    "MaxR", "MaxR_norm", "MaxR_norm_of_mean", "SameLangFirst", "PEER", "peer", "DEFAULT_MEASURES", "MAIN_MEASURES",
    "Share", "AWRF", "AWRF_uniform", "AWRF_geo", "AWRF_geo_uniform", "alpha_nDCG", "Top1_rel_qlang",
    "Top1_rel_other", "Top1_nonrel_qlang", "Top1_nonrel_other", "TOP1_SPLIT", "share_matrix",
    "MLRS", "EXPOSURE_MEASURES", "RANK_MEASURES", "head_depth",
]
