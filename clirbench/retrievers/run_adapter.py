"""A run computed elsewhere (``{query_id: {doc_id: score}}``) as a Retriever, so that any system's
output can be measured on clirbench's pools with its tie rule, bootstrap and paired tests."""
from __future__ import annotations

import hashlib
import math
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..collection import Text

__all__ = ["RunRetriever"]


class RunRetriever:
    """Replays ``run`` (``{query_id: {doc_id: score}}``, higher is better) on any pool.

    Documents absent from a query's run score -inf: they sort after every document the run
    returned, among themselves by the tie rule (doc id descending), as trec_eval places
    unretrieved documents. So cut-off measures (nDCG@10, R@100, …) are exact down to the run's
    depth, but **rank-set measures (MaxR, MaxR_norm, Complete@K, SameLangFirst, PEER) are only as
    deep as the run**: a relevant document the run left out gets a rank from the tie rule, not from
    the system. Documents of the run that are not in the pool are ignored; queries absent from the
    run rank every document at -inf. ``spec`` names the system in results; ``revision`` is a hash
    of the run, so a changed run is never mistaken for a finished one. The run is copied.
    """

    def __init__(self, run: Mapping[str, Mapping[str, float]], spec: str = "run", block: int = 256):
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError("spec must be a non-empty string")
        if not isinstance(run, Mapping):
            raise TypeError(f"run must be a mapping {{query_id: {{doc_id: score}}}}, not {type(run).__name__}")
        copied: dict[str, dict[str, float]] = {}
        for qid, docs in run.items():
            if not isinstance(docs, Mapping):
                raise TypeError(f"run[{qid!r}] must be a mapping {{doc_id: score}}, not {type(docs).__name__}")
            row = {}
            for did, score in docs.items():
                value = float(score)
                if not math.isfinite(value):
                    raise ValueError(f"run[{qid!r}][{did!r}] is {value}: scores must be finite")
                row[str(did)] = value
            copied[str(qid)] = row
        self.spec, self.block, self._run = spec, int(block), copied
        digest = hashlib.sha256()
        for qid in sorted(copied):
            for did in sorted(copied[qid]):
                digest.update(f"{qid}\t{did}\t{copied[qid][did]!r}\n".encode())
        self.revision = "sha256:" + digest.hexdigest()[:16]

    def describe(self) -> dict:
        depth = max((len(d) for d in self._run.values()), default=0)
        return {"spec": self.spec, "model_id": None, "revision": self.revision, "prompts": {},
                "kind": "run", "queries": len(self._run), "depth": depth}

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        index = {d.id: j for j, d in enumerate(docs)}
        for start in range(0, len(queries), self.block):
            chunk = queries[start:start + self.block]
            rows = np.full((len(chunk), len(docs)), -np.inf, dtype=np.float64)
            for i, query in enumerate(chunk):
                for did, value in self._run.get(query.id, {}).items():
                    j = index.get(did)
                    if j is not None:
                        rows[i, j] = value
            yield start, rows
