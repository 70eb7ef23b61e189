"""Exact rank-based measures (DESIGN.md section 4): ``parse("nDCG@10") == nDCG@10``."""
from __future__ import annotations

from .base import Measure, parse, valid_names
from .compute import compute, maxr_norm_of_mean, per_query
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

DEFAULT_MEASURES: tuple[Measure, ...] = (
    MaxR, MaxR_norm, MaxR_norm_of_mean, Complete @ 10, nDCG @ 1, nDCG @ 10, RR, AP @ 1000, R @ 100, SameLangFirst,
)
MAIN_MEASURES: dict[str, tuple[Measure, ...]] = {
    "multi": (MaxR, MaxR_norm, MaxR_norm_of_mean, Complete @ 10, SameLangFirst),
    "multi-1": (nDCG @ 1, RR),
    "mono-same": (nDCG @ 1, RR),
    "mono-cross": (nDCG @ 1, RR),
}

__all__ = [
    "Measure", "parse", "valid_names", "compute", "per_query", "maxr_norm_of_mean",
    "nDCG", "NDCG", "AP", "MAP", "RR", "MRR", "R", "Recall", "P", "Success", "Complete",
    "MaxR", "MaxR_norm", "MaxR_norm_of_mean", "SameLangFirst", "PEER", "peer", "DEFAULT_MEASURES", "MAIN_MEASURES",
]
