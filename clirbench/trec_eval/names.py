"""ir_measures' names (``nDCG@10``, ``AP``, ``P(rel=2)@5``, ``Bpref``, ``Judged@10``) as trec_eval
measures, for ``clirbench evaluate --measures``: ``lookup("P(rel=2)@5")`` -> ``("P.5", "P_5", 2)``
(the ``-m`` argument, the printed name, the relevance level). trec_eval's own names (``ndcg_cut_10``,
``ndcg_cut.10``, ``bpref``) are accepted too. ``Judged@k`` (the fraction of the top k that the qrels
judge, any grade) is ir_measures' measure, computed here as 1 - trec_eval's ``unj_k`` on judgements
read with negative grades kept as judged.
"""
from __future__ import annotations

import re

__all__ = ["lookup", "IR_MEASURES"]

# ir_measures family -> (trec_eval measure, takes a cutoff, takes rel)
IR_MEASURES = {
    "nDCG": ("ndcg_cut", "ndcg", False), "AP": ("map_cut", "map", True), "P": ("P", None, True),
    "R": ("recall", None, True), "RR": (None, "recip_rank", True), "Rprec": (None, "Rprec", True),
    "Bpref": (None, "bpref", True), "Judged": ("unj", None, False), "infAP": (None, "infAP", True),
    "Success": ("success", None, True), "SetP": (None, "set_P", True), "SetR": (None, "set_recall", True),
    "SetF": (None, "set_F", True), "SetAP": (None, "set_map", True), "NumRet": (None, "num_ret", False),
    "NumRel": (None, "num_rel", True), "NumRelRet": (None, "num_rel_ret", True),
}
_IR = re.compile(r"(?P<family>[A-Za-z]+)(?:\(rel=(?P<rel>-?[0-9]+)\))?(?:@(?P<k>[1-9][0-9]{0,6}))?")
_TREC_CUT = re.compile(r"(?P<name>[A-Za-z_]+?)[._](?P<k>[1-9][0-9]{0,6})")


def lookup(name: str) -> tuple[str, str, int] | None:
    """(``-m`` argument, printed name, relevance level) of an ir_measures or trec_eval name; None if neither."""
    from .registry import MEASURES

    m = _IR.fullmatch(name)
    if m and m.group("family") in IR_MEASURES:
        cut_name, plain, takes_rel = IR_MEASURES[m.group("family")]
        k, rel = m.group("k"), m.group("rel")
        if (rel is not None and not takes_rel) or (k is None and plain is None) or (k is not None and cut_name is None):
            return None
        level = 1 if rel is None else int(rel)
        return (f"{cut_name}.{k}", f"{cut_name}_{k}", level) if k else (plain, plain, level)
    if name in MEASURES and MEASURES[name].kind in ("double", "long") and name != "num_q":
        return name, name, 1
    m = _TREC_CUT.fullmatch(name)
    if m and m.group("name") in MEASURES and MEASURES[m.group("name")].kind == "cut_long":
        return f"{m.group('name')}.{m.group('k')}", f"{m.group('name')}_{m.group('k')}", 1
    return None


def per_query(qrels, run, names) -> tuple[tuple[str, ...], dict[str, list[float]]]:
    """(query ids, ``{name: values}``) of ``lookup``-able names on the queries with judgements and
    results, computed by trec_eval's rules (one pass per relevance level)."""
    from .engine import Options, evaluate
    from .registry import select

    wanted = {n: lookup(n) for n in names}
    out: dict[str, list[float]] = {}
    ids: tuple[str, ...] = ()
    for judged_any in (False, True):
        group = {n: spec for n, spec in wanted.items() if spec and (n.startswith("Judged@") == judged_any)}
        q = {k: {d: max(g, 0) for d, g in docs.items()} for k, docs in qrels.items()} if judged_any else qrels
        for level in sorted({spec[2] for spec in group.values()}):
            at_level = {n: spec for n, spec in group.items() if spec[2] == level}
            report = evaluate(q, run, "", select(sorted({s[0] for s in at_level.values()})), Options(rel_level=level))
            ids = report.query_ids
            for n, (_, printed, _) in at_level.items():
                values = report.per_query(printed)
                out[n] = (1.0 - values if judged_any else values).tolist()
    return ids, out
