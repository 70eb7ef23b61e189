"""trec_eval's measures by name, in its order, with their parameters and nicknames (``measures.c``).

``select(["all_trec", "relstring.20"])`` -> the ``Selected`` measures, in trec_eval's print order
(not the order asked), each with its parameters and printed names. Parameters follow trec_eval's
``meas_init.c``: cutoffs (``P.5,10``) are read with C's ``atol`` (``23.4`` is 23), sorted, and must
be positive and distinct; recall points (``iprec_at_recall..10,.20``) with ``atof``, sorted,
named ``%3.2f``; other numbers (``utility.2,-1,0,0``) keep their order and the measure's printed name
gets the parameter text (``utility_2,-1,0,0``); gains are ``grade=gain`` pairs. When a measure is
given parameters twice, the first wins (as trec_eval). dcg, ideal_dcg and ndcg share one set of
parameters in trec_eval's C (``SHARED``: m_ndcg.c's one static struct): each is named with the
parameters set when its turn comes in print order, and all three are computed with the last set
given (``-m dcg -m ndcg -m ideal_dcg.1=3`` computes dcg and ndcg with 1=3 too, printed ``dcg``,
``ideal_dcg_1=3`` and ``ndcg_1=3``).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ..util.checks import MAX_LONG
from ..util.errors import UnknownNameError
from . import cutoffs, gains, whole

__all__ = ["Record", "Selected", "MEASURES", "NICKNAMES", "SHARED", "UNSUPPORTED", "select", "atol", "atof"]


@dataclass(frozen=True)
class Record:
    """One trec_eval measure.

    kind: "runid", "long" (a count, printed as an integer), "double", "cut_long" (one value per
    rank cutoff), "cut_double" (one per recall point or multiple), "param_double" (numbers),
    "param_pair" (``name=value`` pairs), "string" (relstring). summary: "mean", "sum", "gm"
    (geometric mean: the per-query value is a log), "count" (num_q), "none" (relstring).
    per_query: printed per query with ``-q``.
    """

    name: str
    kind: str
    func: Callable | None
    defaults: tuple = ()
    summary: str = "mean"
    per_query: bool = True


def _r(name, kind, func, defaults=(), summary="mean", per_query=True) -> Record:
    return Record(name, kind, func, tuple(defaults), summary, per_query)


_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

MEASURES: dict[str, Record] = {m.name: m for m in (
    _r("runid", "runid", None, summary="none", per_query=False),
    _r("num_q", "long", whole.num_q, summary="count", per_query=False),
    _r("num_ret", "long", whole.num_ret, summary="sum"),
    _r("num_rel", "long", whole.num_rel, summary="sum"),
    _r("num_rel_ret", "long", whole.num_rel_ret, summary="sum"),
    _r("map", "double", whole.ap),
    _r("gm_map", "double", whole.gm_ap, summary="gm", per_query=False),
    _r("Rprec", "double", whole.rprec),
    _r("bpref", "double", whole.bpref),
    _r("recip_rank", "double", whole.recip_rank),
    _r("iprec_at_recall", "cut_double", cutoffs.iprec_at_recall, _POINTS),
    _r("P", "cut_long", cutoffs.precision, _CUTS),
    _r("relstring", "string", whole.relstring, (10.0,), summary="none"),
    _r("recall", "cut_long", cutoffs.recall, _CUTS),
    _r("infAP", "double", whole.infap),
    _r("gm_bpref", "double", whole.gm_bpref, summary="gm", per_query=False),
    _r("Rprec_mult", "cut_double", cutoffs.rprec_mult, _MULTS),
    _r("utility", "param_double", whole.utility, (1.0, -1.0, 0.0, 0.0)),
    _r("11pt_avg", "param_double", cutoffs.eleven_pt_avg, _POINTS),
    _r("binG", "double", whole.bin_g),
    _r("G", "param_pair", gains.g),
    _r("dcg", "param_pair", gains.dcg),
    _r("ideal_dcg", "param_pair", gains.ideal_dcg),
    _r("ndcg", "param_pair", gains.ndcg),
    _r("ndcg_rel", "param_pair", gains.ndcg_rel),
    _r("Rndcg", "param_pair", gains.rndcg),
    _r("ndcg_cut", "cut_long", cutoffs.ndcg_cut, _CUTS),
    _r("map_cut", "cut_long", cutoffs.map_cut, _CUTS),
    _r("relative_P", "cut_long", cutoffs.relative_p, _CUTS),
    _r("success", "cut_long", cutoffs.success, (1, 5, 10)),
    _r("set_P", "double", whole.set_p),
    _r("set_relative_P", "double", whole.set_relative_p),
    _r("set_recall", "double", whole.set_recall),
    _r("set_map", "double", whole.set_map),
    _r("set_F", "param_double", whole.set_f, (1.0,)),
    _r("num_nonrel_judged_ret", "long", whole.num_nonrel_judged_ret, summary="sum"),
    _r("yaap", "double", whole.yaap),
    _r("rbp", "param_pair", gains.rbp),
    _r("rbp_resid", "param_pair", gains.rbp_resid),
    _r("unj", "cut_long", cutoffs.unjudged, (5, 10, 20)),
)}

_OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
             "recip_rank", "iprec_at_recall", "P")
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_trec": _OFFICIAL + ("relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
                             "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut",
                             "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P",
                             "set_map", "set_F", "num_nonrel_judged_ret"),
}
# measures whose parameters are one C struct (m_ndcg.c's static default_ndcg_gains)
SHARED: dict[str, str] = dict.fromkeys(("dcg", "ideal_dcg", "ndcg"), "m_ndcg.c")
# trec_eval measures that need preference or jg judgement files (-R prefs, qrels_jg)
UNSUPPORTED = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp",
               "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
               "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp",
               "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "all_prefs", "prefs", "qrels_jg")


@dataclass(frozen=True)
class Selected:
    """A measure to compute: its record, parameters and printed names (one per value)."""

    record: Record
    params: tuple
    names: tuple[str, ...]


_ATOL = re.compile(r"\s*([+-]?[0-9]+)")
_ATOF = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?i:inf|nan))")


def atol(text: str) -> int:
    """C's ``atol``: the leading integer, 0 if none; beyond a C long: ``MAX_LONG + 1`` (or its negative),
    without converting thousands of digits."""
    m = _ATOL.match(text)
    if not m:
        return 0
    digits = m.group(1)
    if len(digits.lstrip("+-")) > 19:
        return -(MAX_LONG + 1) if digits.startswith("-") else MAX_LONG + 1
    return int(digits)


def atof(text: str) -> float:
    """C's ``atof`` on decimal text: the leading number (``inf``/``nan`` as C reads them), 0.0 if none."""
    m = _ATOF.match(text)
    return float(m.group(1)) if m else 0.0


def _shown(name: str, text: str | None = None) -> str:
    """``name.text`` (or the whole ``-m`` argument ``name``) for an error, shortened: a 5,000-digit
    cutoff is not echoed whole."""
    arg = name if text is None else f"{name}.{text}"
    return arg if len(arg) <= 60 else arg[:60] + f"… ({len(arg):,} characters)"


def _finite(name: str, text: str, values) -> None:
    """Refuse a parameter that is not a finite number (``1e400``, ``inf``, ``nan``): trec_eval's C reads
    them as infinite or NaN and prints garbage or crashes."""
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"-m {_shown(name, text)}: parameters must be finite numbers")


def _params(record: Record, text: str | None) -> tuple[tuple, tuple[str, ...]]:
    name, kind = record.name, record.kind
    if kind in ("cut_long", "cut_double"):
        values = record.defaults if text is None else sorted(
            (atol if kind == "cut_long" else atof)(t) for t in text.split(","))
        if kind == "cut_long" and values[0] <= 0:
            raise ValueError(f"-m {_shown(name, text)}: cutoffs must be positive")
        if kind == "cut_long" and values[-1] > MAX_LONG:
            raise ValueError(f"-m {_shown(name, text)}: cutoffs must be at most {MAX_LONG} (a C long)")
        if kind == "cut_double":
            _finite(name, text, values)
        if len(set(values)) != len(values):
            raise ValueError(f"-m {_shown(name, text)}: duplicate cutoffs")
        fmt = "{}_{}" if kind == "cut_long" else "{}_{:3.2f}"
        return tuple(values), tuple(fmt.format(name, v) for v in values)
    printed = (name if text is None else f"{name}_{text}",)
    if kind == "param_pair":
        if text is None:
            return (), printed
        items = [t.split("=") for t in text.split(",")]
        if any(len(i) != 2 for i in items):
            raise ValueError(f"-m {_shown(name, text)}: parameters must be name=value pairs separated by commas")
        pairs = tuple((k, atof(v)) for k, v in items)
        _finite(name, text, [v for _, v in pairs])
        return pairs, printed
    if kind in ("param_double", "string"):
        values = record.defaults if text is None else tuple(atof(t) for t in text.split(","))
        _finite(name, text, values)
        return values, printed
    return (), (name,)


def select(args: Sequence[str]) -> list[Selected]:
    """The measures ``-m`` arguments ask for (nicknames expanded), in trec_eval's order."""
    marked: set[str] = set()
    params: dict[str, str] = {}
    for arg in args:
        name, dot, text = arg.partition(".")
        if dot:
            if not text:
                raise ValueError(f"-m {_shown(arg)}: empty measure parameters")
            params.setdefault(name, text)
        if name in UNSUPPORTED:
            raise UnknownNameError(f"-m {_shown(arg)}: preference and jg measures need -R prefs/qrels_jg files, "
                                   f"which clirbench trec_eval does not read")
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
        elif name in MEASURES:
            marked.add(name)
        else:
            raise UnknownNameError(f"illegal measure {_shown(arg)!r}; valid: {', '.join(MEASURES)} "
                                   f"(nicknames: {', '.join(NICKNAMES)})")
    final = {SHARED[n]: params[n] for n in MEASURES if n in marked and n in SHARED and n in params}
    current: dict[str, str] = {}
    out = []
    for name, record in MEASURES.items():
        if name not in marked:
            continue
        group = SHARED.get(name)
        if group is None:
            values, names = _params(record, params.get(name))
        else:
            if name in params:
                current[group] = params[name]
            _, names = _params(record, current.get(group))
            values, _ = _params(record, final.get(group))
        out.append(Selected(record, values, names))
    return out
