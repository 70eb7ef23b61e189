"""ir_measures' names (``nDCG@10``, ``AP``, ``P(rel=2)@5``, ``nDCG(judged_only=True)@10``, ``Judged@10``,
``NumRet``) and trec_eval's own (``ndcg_cut_10``, ``ndcg_cut.10``, ``bpref``, ``gm_map``) as trec_eval
measures, for ``clirbench evaluate --measures``: ``lookup("P(rel=2)@5")`` -> a ``Spec`` (the ``-m``
argument, the relevance level, ``-J``, ``-M``, and the summary rule of the trec_eval measure: mean,
geometric mean, sum or count).

ir_measures' parameters are taken where trec_eval has the same switch: ``rel`` (``-l``),
``judged_only`` (``-J``), SetP's ``relative``, SetF's ``beta``, nDCG's ``dcg='log2'`` (its default);
any other parameter or value is refused in one line (``UnknownNameError``). ``RR@k`` is recip_rank on
the run cut at k (``-M k``). ``Judged@k`` (the fraction of the top min(k, retrieved) documents that
the qrels judge, any grade; ``Judged``: of all retrieved) is ir_measures' measure, computed here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..measures.families import TREC_EVAL, TREC_EVAL_ALIASES
from ..util.errors import UnknownNameError
import numpy as np

from .engine import Options, evaluate_rankings
from .rankings import NOT_POOLED, Rankings, from_dicts, judgements
from .registry import MEASURES, select

__all__ = ["Spec", "lookup", "per_query", "IR_MEASURES"]

# ir_measures family -> (trec_eval measure with a cutoff, without one, parameters it takes besides the cutoff)
IR_MEASURES: dict[str, tuple[str | None, str | None, tuple[str, ...]]] = {
    name: (t.cut, t.plain, t.params) for name, t in TREC_EVAL.items()}
_IR = re.compile(r"(?P<family>[A-Za-z]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>[1-9][0-9]{0,6}))?")
_PARAM = re.compile(r"\s*(?P<key>[a-z_]+)\s*=\s*(?P<value>[^,]+?)\s*(?:,|$)")
_TREC_CUT = re.compile(r"(?P<name>[A-Za-z_]+?)[._](?P<k>[1-9][0-9]{0,6})")


@dataclass(frozen=True)
class Spec:
    """How one name is computed: the ``-m`` argument (``"Judged"``: ir_measures' Judged, computed
    here), the options (``-l``, ``-J``, ``-M``), the cutoff of Judged, and the trec_eval measure's
    summary rule ("mean", "gm", "sum" or "count")."""

    arg: str
    rel_level: int = 1
    judged_only: bool = False
    max_ret: int | None = None
    cutoff: int | None = None
    summary: str = "mean"


def _refuse(name: str, why: str) -> UnknownNameError:
    return UnknownNameError(f"measure {name[:60]!r}: {why}")


def _params(name: str, text: str | None, allowed: tuple[str, ...]) -> dict:
    """``rel=2, judged_only=True`` -> ``{"rel": 2, "judged_only": True}``; a parameter the family (or
    clirbench) does not take, or a value it cannot read, raises ``UnknownNameError``."""
    out: dict = {}
    if text is None:
        return out
    rest = text.strip()
    while rest:
        m = _PARAM.match(rest)
        if not m:
            raise _refuse(name, "parameters are written as in ir_measures, e.g. P(rel=2,judged_only=True)@5")
        key, value = m.group("key"), m.group("value").strip()
        rest = rest[m.end():]
        if key not in allowed:
            takes = ", ".join(allowed) or "no parameter"
            raise _refuse(name, f"parameter {key!r} is not supported here (clirbench takes {takes} for this measure)")
        if key in out:
            raise _refuse(name, f"parameter {key!r} is given twice")
        if key == "rel":
            if not re.fullmatch(r"-?[0-9]{1,9}", value):
                raise _refuse(name, f"rel must be an integer grade, got {value!r}")
            out[key] = int(value)
        elif key in ("judged_only", "relative"):
            if value not in ("True", "False"):
                raise _refuse(name, f"{key} must be True or False, got {value!r}")
            out[key] = value == "True"
        elif key == "beta":
            try:
                beta = float(value)
            except ValueError:
                beta = float("nan")
            if not (beta >= 0 and beta < float("inf")):
                raise _refuse(name, f"beta must be a finite number >= 0, got {value!r}")
            out[key] = beta
        elif key == "dcg":
            if value.strip("'\"") != "log2":
                raise _refuse(name, f"dcg={value} is not supported (only dcg='log2', trec_eval's and the default)")
    return out


def _summary(measure: str) -> str:
    return {"gm": "gm", "sum": "sum", "count": "count"}.get(MEASURES[measure].summary, "mean")


def lookup(name: str) -> Spec | None:
    """The ``Spec`` of an ir_measures or trec_eval name; None if neither; ``UnknownNameError`` for an
    ir_measures family with a parameter or cutoff clirbench does not take."""

    m = _IR.fullmatch(name)
    family = m and TREC_EVAL_ALIASES.get(m.group("family"), m.group("family"))
    if m and family in IR_MEASURES:
        cut_name, plain, allowed = IR_MEASURES[family]
        params = _params(name, m.group("params"), allowed)
        if m.group("family") == "SetRelP":
            params["relative"] = True
        k = None if m.group("k") is None else int(m.group("k"))
        if k is None and plain is None:
            raise _refuse(name, f"{family} needs a cutoff, e.g. {family}@10")
        if k is not None and cut_name is None:
            raise _refuse(name, f"{family} takes no cutoff")
        level, judged_only = params.get("rel", 1), params.get("judged_only", False)
        if family == "Judged":
            return Spec("Judged", cutoff=k)
        if family == "RR" and k is not None:
            if judged_only:
                raise _refuse(name, "RR with a cutoff and judged_only is not supported (nor by ir_measures)")
            return Spec("recip_rank", level, max_ret=k)
        if family == "NumRet" and "rel" in params:  # ir_measures: NumRet(rel=N) is NumRelRet(rel=N)
            plain = "num_rel_ret"
        if family == "SetP" and params.get("relative"):
            plain = "set_relative_P"
        if family == "SetF" and "beta" in params:
            return Spec(f"set_F.{params['beta']!r}", level, judged_only)
        arg = f"{cut_name}.{k}" if k is not None else plain
        return Spec(arg, level, judged_only, summary=_summary(arg.partition(".")[0]))
    if name in MEASURES and MEASURES[name].kind in ("double", "long"):
        return Spec(name, summary=_summary(name))
    m = _TREC_CUT.fullmatch(name)
    if m and m.group("name") in MEASURES and MEASURES[m.group("name")].kind == "cut_long":
        return Spec(f"{m.group('name')}.{m.group('k')}", summary=_summary(m.group("name")))
    return None


def per_query(qrels, run, names) -> tuple[tuple[str, ...], dict[str, list[float]]]:
    """(query ids, ``{name: values}``) of ``lookup``-able names on the queries with judgements and
    results, computed by trec_eval's rules (the run ranked once; one pass per set of options).
    gm_map and gm_bpref give trec_eval's per-query value, log(max(value, 0.00001))."""

    specs = {n: lookup(n) for n in names}
    judg = judgements(qrels)
    rankings = from_dicts(judg, run)
    ids = rankings.query_ids  # trec_eval's queries, in its order
    out: dict[str, list[float]] = {}
    groups: dict[tuple, dict[str, Spec]] = {}
    for n, spec in specs.items():
        if spec.arg == "Judged":
            out[n] = _judged(rankings, spec.cutoff).tolist()
        else:
            groups.setdefault((spec.rel_level, spec.judged_only, spec.max_ret), {})[n] = spec
    for (level, judged_only, max_ret), group in groups.items():
        options = Options(rel_level=level, judged_only=judged_only, max_ret=max_ret)
        batches: list[dict] = []  # one measure at most once per pass (its parameters differ by name)
        for n, spec in group.items():
            s = select([spec.arg])[0]
            batch = next((b for b in batches if s.record.name not in {x.record.name for x in b.values()}), None)
            if batch is None:
                batches.append(batch := {})
            batch[n] = s
        for batch in batches:
            report = evaluate_rankings(rankings, judg, "", list(batch.values()), options)
            for n, s in batch.items():
                out[n] = report.per_query(s.names[0]).tolist()
    return ids, out


def _judged(rankings: Rankings, cutoff: int | None) -> np.ndarray:
    """ir_measures' Judged@k per query: judged documents (any grade) in the top min(k, retrieved),
    over min(k, retrieved); ranked by trec_eval's rule (score, then document id, descending)."""

    r = rankings.cut(cutoff)
    judged = np.bincount(r.qidx[r.value != NOT_POOLED], minlength=r.n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(r.num_ret > 0, judged / r.num_ret, 0.0)
