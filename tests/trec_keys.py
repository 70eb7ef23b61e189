"""The key trec_eval / pytrec_eval reports for a clirbench measure, from ``clirbench.trec_eval.names.lookup``."""
from __future__ import annotations

from clirbench.trec_eval.names import lookup


def pytrec_key(measure) -> str | None:
    """``ndcg_cut_10`` for nDCG@10 (the ``-m`` argument, ``.`` written ``_``); None when no key reports
    the value (RR@k is recip_rank on the run cut at k; MaxR is no trec_eval measure)."""
    spec = lookup(str(measure))
    return None if spec is None or spec.max_ret is not None else spec.arg.replace(".", "_")
