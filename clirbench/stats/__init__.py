"""Statistics over per-query values, in one package: ``bootstrap`` (percentile intervals, paired
bootstrap, randomisation test), ``summary`` (per-query vectors -> one value with its interval per
measure), ``paired`` (two systems on one pool: ``compare`` and the query-language gap).

``from clirbench.stats import bootstrap_ci`` etc. reach ``bootstrap``'s functions.
"""
from __future__ import annotations

from .bootstrap import (
                        MAX_BOOTSTRAP_BYTES,
                        MAX_RESAMPLES,
                        bootstrap_ci,
                        bootstrap_means,
                        paired_bootstrap,
                        percentile_interval,
                        quiet_float_warnings,
                        randomization_test,
                        resample_product,
)

__all__ = ["MAX_RESAMPLES", "MAX_BOOTSTRAP_BYTES", "bootstrap_means", "bootstrap_ci", "paired_bootstrap",
           "randomization_test", "resample_product", "percentile_interval", "quiet_float_warnings"]
