"""Per-group breakdowns of per-query values (e.g. CLIRudit by discipline), stored in a Result."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = ["breakdown"]


def breakdown(query_ids: Sequence[str], values: Mapping[str, np.ndarray],
              groups: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float | int | None]]:
    """Per group: ``n`` (queries in it) and each measure's mean over them (NaN values left out).

    ``groups[qid]`` lists a query's groups (a query may be in several); queries without one are
    left out of every group.
    """
    members: dict[str, list[int]] = {}
    for i, qid in enumerate(query_ids):
        for g in groups.get(qid, ()):
            members.setdefault(str(g), []).append(i)
    out: dict[str, dict[str, float | int | None]] = {}
    for g in sorted(members):
        idx = np.asarray(members[g])
        cell: dict[str, float | int | None] = {"n": int(len(idx))}
        for name, vec in values.items():
            col = np.asarray(vec, dtype=np.float64)[idx]
            col = col[~np.isnan(col)]
            cell[name] = float(col.mean()) if len(col) else None
        out[g] = cell
    return out

