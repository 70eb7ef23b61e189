"""Paired tests on per-query values (docs/measures.md, docs/results.md): two systems on one pool
(``compare``) and one system with queries in the two languages of a bilingual pool (the
query-language gap). Both align queries by id and go through ``paired_rows``.

Differences are **B − A** throughout (positive: B scores higher), as in ``clirbench.stats``; for
the gap, A is the pool's first language and B its second. A side is a result file (its per-query
table beside it) or an in-memory result: anything with ``record`` (a ``Result`` or its dict) and
``per_query`` (``(query_ids, {measure: values})``), such as ``clirbench.run(...)[i]``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

import numpy as np

from ..identity import labels, split_pool_stem
from ..measures import direction
from ..results import Result, read_per_query, read_result
from ..util.atomic import write_text_atomic
from ..util.checks import check_correction, check_float, check_resamples, check_seed
from ..util.errors import ClirbenchError
from ..util.plural import plural
from ..util.table import format_table
from .bootstrap import paired_bootstrap
from .correction import adjust, describe, family_size
from .significance_tests import DEFAULT_TEST, paired_test

__all__ = ["compare", "format_comparison", "query_language_gap", "gap_path", "write_gap", "paired_rows",
           "BILINGUAL_SCENARIOS", "Comparison", "Compared", "Gap", "PairedDifference", "corrected", "correct_gaps"]

BILINGUAL_SCENARIOS = ("multi", "multi-1")
_POOL_FIELDS = ("task", "subset", "scenario", "pool_mode", "pool_size", "doc_langs", "query_lang", "qrels_sha256")


class Side(NamedTuple):
    """One side of a paired test: its record, per-query values and how messages name it."""

    label: str
    path: str | None
    record: Result
    query_ids: tuple[str, ...]
    values: dict


def side(x) -> Side:
    """A result file path or an in-memory result (``record`` + ``per_query``) as a ``Side``."""
    if isinstance(x, (str, os.PathLike)):
        record = read_result(x)
        ids, values = read_per_query(x)
        return Side(str(x), str(x), record, tuple(ids), dict(values))
    record, per_query = getattr(x, "record", None), getattr(x, "per_query", None)
    if isinstance(record, dict):
        record = Result.from_dict(record)
    if not isinstance(record, Result) or per_query is None:
        raise TypeError(f"expected a result file path or an in-memory result (record + per_query), "
                        f"got {type(x).__name__}")
    ids, values = per_query
    label = getattr(x, "name", None) or f"{record.system_key.label} on {record.task.id}/{record.scenario}"
    return Side(str(label), None, record, tuple(ids), dict(values))


@dataclass(frozen=True)
class PairedDifference:
    """One measure of a paired test: B − A over the queries where both are defined, its
    paired-bootstrap interval, the randomisation p-value (raw, and adjusted within its family by
    ``correction``), n, the standardised effect ``d_z`` (mean / sample sd of the per-query
    differences; NaN when they do not vary), the queries where B is better than, equal to, worse
    than A by the measure's direction (``b_better``, ``ties``, ``b_worse``: for MaxR, lower is
    better; None for a measure best at a target, such as SameLangFirst, whose per-query values
    are not better or worse one by one), and (in a comparison) both means."""

    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    mean_a: float | None = None
    mean_b: float | None = None
    d_z: float | None = None
    b_better: int | None = None
    ties: int | None = None
    b_worse: int | None = None
    p_adjusted: float | None = None
    correction: str | None = None

    def to_dict(self) -> dict:
        head = {} if self.mean_a is None else {"mean_a": self.mean_a, "mean_b": self.mean_b}
        out = {**head, "diff": self.diff, "ci_low": self.ci_low, "ci_high": self.ci_high,
               "p_value": self.p_value, "n": self.n}
        for name in ("d_z", "b_better", "ties", "b_worse", "p_adjusted", "correction"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, d: Mapping, measure: str | None = None) -> "PairedDifference":
        """From ``to_dict``; a gap file written before ``b_better`` / ``b_worse`` holds ``wins`` /
        ``losses`` (B higher / lower), turned into better / worse by ``measure``'s direction."""
        better, worse = d.get("b_better"), d.get("b_worse")
        if "b_better" not in d and "wins" in d:
            way = direction(measure) if measure is not None else None
            better, worse = {"up": (d.get("wins"), d.get("losses")),
                             "down": (d.get("losses"), d.get("wins"))}.get(way, (None, None))
        return cls(d["diff"], d["ci_low"], d["ci_high"], d["p_value"], int(d["n"]), d.get("mean_a"), d.get("mean_b"),
                   d.get("d_z"), better, d.get("ties") if better is not None else None, worse, d.get("p_adjusted"),
                   d.get("correction"))


@dataclass(frozen=True)
class Compared:
    """One side of a comparison: its file (None: in memory), retriever spec and system label."""

    path: str | None
    retriever: str
    system: str


@dataclass(frozen=True)
class Comparison:
    """``compare``'s answer: B − A per measure on one pool (``pool``: the pool's fields)."""

    a: Compared
    b: Compared
    pool: Mapping
    num_queries: int
    resamples: int
    seed: int
    confidence: float
    permutations: int
    measures: Mapping[str, PairedDifference]
    undefined: tuple[str, ...] = ()
    correction: str = "none"
    test: str = DEFAULT_TEST

    @property
    def family(self) -> str:
        """What the correction ran over: this comparison's measures."""
        return describe(self.correction, family_size([r.p_value for r in self.measures.values()]),
                        "the measures of this comparison")

    def to_dict(self) -> dict:
        """The JSON form (``clirbench compare --json``)."""
        return {"a": dataclasses.asdict(self.a), "b": dataclasses.asdict(self.b), "pool": dict(self.pool),
                "num_queries": self.num_queries, "direction": "B - A",
                "bootstrap": {"resamples": self.resamples, "seed": self.seed, "confidence": self.confidence,
                              "method": "percentile"},
                "permutations": self.permutations, **({} if self.test == DEFAULT_TEST else {"test": self.test}),
                "correction": {"method": self.correction, "family": self.family},
                "measures": {name: {**row.to_dict(), "direction": direction(name)}
                             for name, row in self.measures.items()},
                "undefined": list(self.undefined)}


@dataclass(frozen=True)
class Gap:
    """The query-language gap of one bilingual pool: per measure, the mean with queries in L2 minus
    the mean with queries in L1 (``doc_langs`` = (L1, L2)), paired by question."""

    task: str
    subset: str
    scenario: str
    pool_mode: str
    doc_langs: tuple[str, str]
    retriever: str
    system: str
    resamples: int
    seed: int
    permutations: int
    measures: Mapping[str, PairedDifference]

    @property
    def definition(self) -> str:
        l1, l2 = self.doc_langs
        return f"mean with queries in {l2} minus mean with queries in {l1}, paired by question"

    def to_dict(self) -> dict:
        """The JSON form, as written to ``<L1>-<L2>.gap.json``."""
        return {"task": self.task, "subset": self.subset, "scenario": self.scenario, "pool_mode": self.pool_mode,
                "doc_langs": list(self.doc_langs), "retriever": self.retriever, "system": self.system,
                "definition": self.definition,
                "bootstrap": {"resamples": self.resamples, "seed": self.seed, "permutations": self.permutations},
                "measures": {name: row.to_dict() for name, row in self.measures.items()}}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Gap":
        b = d["bootstrap"]
        return cls(d["task"], d.get("subset", ""), d["scenario"], d["pool_mode"], tuple(d["doc_langs"]),
                   d["retriever"], d.get("system", d["retriever"]), b["resamples"], b["seed"], b["permutations"],
                   {name: PairedDifference.from_dict(row, name) for name, row in d["measures"].items()})


def _pool_of(result: Result) -> dict:
    return {"task": result.task.id, "subset": result.subset, "scenario": result.scenario, "pool_mode": result.pool_mode,
            "pool_size": result.pool_size, "doc_langs": list(result.doc_langs), "query_lang": result.query_lang,
            "qrels_sha256": result.qrels_sha256}


def _table(s: Side) -> str:
    """Where ``s``'s per-query values come from, for messages: its table's path, or its label."""
    if s.path is None:
        return s.label
    return str(Path(s.path).parent / s.record.per_query_file) if s.record.per_query_file else s.path


def check_defined(sa: Side, sb: Side, names: Sequence[str], a: np.ndarray, b: np.ndarray) -> None:
    """Refuse per-query values a paired test cannot use, in one line naming the table, line, query
    and measure: an infinite value; a NaN ("no value": a query the measure is undefined for, which
    the qrels decide, docs/measures.md) on one side only, since two results of one pool have the
    same undefined queries; and a column whose defined values are not the ``n`` its own record
    reports. ``a`` and ``b`` are the aligned (queries × measures) matrices of ``_aligned``."""
    line_b = {q: i for i, q in enumerate(sb.query_ids)}
    line = lambda side_, k: k if side_ is sa else line_b[sa.query_ids[k]]  # noqa: E731  (file row of aligned row k)
    for j, name in enumerate(names):
        for side_, col in ((sa, a[:, j]), (sb, b[:, j])):
            bad = np.flatnonzero(np.isinf(col))
            if bad.size:
                i = line(side_, bad[0])
                raise ClirbenchError(f"{_table(side_)}:{i + 2}: query {side_.query_ids[i]!r}: {name} is "
                                     f"{float(col[bad[0]])!r}; a per-query value must be a finite number or nan (no value)")
        one_sided = np.flatnonzero(np.isnan(a[:, j]) != np.isnan(b[:, j]))
        if one_sided.size:
            k = one_sided[0]
            side_, other = (sa, sb) if np.isnan(a[k, j]) else (sb, sa)
            i = line(side_, k)
            raise ClirbenchError(f"{_table(side_)}:{i + 2}: query {side_.query_ids[i]!r}: {name} is nan (no value) "
                                 f"where {_table(other)} has one; on one pool a query is undefined for both results "
                                 f"or for neither ({plural(int(one_sided.size), 'such query', 'such queries')})")
        for side_, col in ((sa, a[:, j]), (sb, b[:, j])):
            reported = side_.record.measures.get(name)
            undefined = np.flatnonzero(np.isnan(col))
            if reported is not None and reported.value is not None and reported.n != len(col) - undefined.size:
                first = f" (the first nan: line {line(side_, undefined[0]) + 2})" if undefined.size else ""
                raise ClirbenchError(f"{_table(side_)}: {name} has {len(col) - undefined.size} defined per-query "
                                     f"values{first} where {side_.label} says n={reported.n}")


def _aligned(sa: Side, sb: Side, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(queries × measures) matrices of A and B, B's rows reordered to A's query order."""
    order = {q: i for i, q in enumerate(sb.query_ids)}
    take = np.fromiter((order[q] for q in sa.query_ids), dtype=np.int64, count=len(sa.query_ids))
    a = np.stack([np.asarray(sa.values[m], dtype=np.float64) for m in names], axis=1)
    b = np.stack([np.asarray(sb.values[m], dtype=np.float64)[take] for m in names], axis=1)
    return a, b


def better_tie_worse(a: np.ndarray, b: np.ndarray, name: str) -> tuple[int | None, int | None, int | None]:
    """The queries where B is better than, equal to and worse than A by ``name``'s direction (lower
    is better for MaxR); (None, None, None) for a measure best at a target (SameLangFirst) or unknown."""
    way = direction(name)
    if way not in ("up", "down"):
        return None, None, None
    d = (b - a) if way == "up" else (a - b)
    return int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())


def paired_rows(a: np.ndarray, b: np.ndarray, names: Sequence[str], resamples: int = 1000, seed: int = 42,
                permutations: int = 10000, confidence: float = 0.95,
                test: str = DEFAULT_TEST) -> dict[str, PairedDifference]:
    """Per measure (column): means of A and B where both are defined, B − A, its paired-bootstrap
    interval, the p-value of the paired ``test`` (``significance_tests``: the randomisation test by
    default), n, ``d_z`` and the queries where B is better / equal / worse (``better_tie_worse``).
    One set of bootstrap indices and one set of test draws (sign flips) serve every column."""
    both = ~(np.isnan(a) | np.isnan(b))
    boot = paired_bootstrap(a, b, resamples=resamples, seed=seed, confidence=confidence)
    p = paired_test(test).p_values(a, b, resamples=permutations, seed=seed, name="permutations")
    rows = {}
    for j, name in enumerate(names):
        n = int(both[:, j].sum())
        d = b[both[:, j], j] - a[both[:, j], j]
        sd = float(d.std(ddof=1)) if n > 1 else math.nan
        d_z = float(d.mean()) / sd if n > 1 and sd > 0 else math.nan
        rows[name] = PairedDifference(float(boot["diff"][j]), float(boot["ci_low"][j]), float(boot["ci_high"][j]),
                                      float(p[j]), n, float(a[both[:, j], j].mean()) if n else math.nan,
                                      float(b[both[:, j], j].mean()) if n else math.nan, d_z,
                                      *better_tie_worse(a[both[:, j], j], b[both[:, j], j], name))
    return rows


def corrected(rows: Mapping[str, PairedDifference], method: str) -> dict[str, PairedDifference]:
    """``rows`` (one family of tests) with ``p_adjusted`` by ``method`` (``stats.correction``)."""
    names = list(rows)
    adjusted = adjust([rows[n].p_value for n in names], method)
    return {n: dataclasses.replace(rows[n], p_adjusted=float(q), correction=method) for n, q in zip(names, adjusted)}


def correct_gaps(gaps: Sequence["Gap"], method: str) -> list["Gap"]:
    """The gaps of one run (or sweep) with their p-values adjusted as one family: every measure of
    every gap."""
    keys = [(i, name) for i, g in enumerate(gaps) for name in g.measures]
    adjusted = adjust([gaps[i].measures[name].p_value for i, name in keys], method)
    new = [dict(g.measures) for g in gaps]
    for (i, name), q in zip(keys, adjusted):
        new[i][name] = dataclasses.replace(new[i][name], p_adjusted=float(q), correction=method)
    return [dataclasses.replace(g, measures=m) for g, m in zip(gaps, new)]


def compare(a, b, measures: Sequence | None = None, resamples: int = 1000, seed: int = 42,
            permutations: int = 10000, confidence: float = 0.95, correction: str = "holm",
            test: str = DEFAULT_TEST) -> Comparison:
    """Compare result B with result A query by query (each a file path or an in-memory result).

    Refuses (ClirbenchError, a ValueError) results on different pools or query sets. For each
    measure (``measures``, default: every column both per-query tables share, in A's order):
    means of A and B over the queries where both are defined, their difference B − A, its
    paired-bootstrap interval, the p-value of the paired ``test`` (``stats.significance_tests``; default:
    the randomisation test, ``permutations`` sign flips) adjusted for the family of this call's
    measures by ``correction`` (``holm``, ``bh`` or ``none``), and the effect sizes (``d_z``, the
    queries where B is better / equal / worse by the measure's direction). Measures undefined for
    every query of both results (SameLangFirst on a one-language pool) are left out and listed
    under ``undefined``.
    """
    resamples, permutations = check_resamples(resamples), check_resamples(permutations, "permutations")
    seed, correction = check_seed(seed), check_correction(correction)
    paired_test(test)  # an unknown name fails before any file is read
    if not 0.0 < check_float(confidence, "confidence") < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    sa, sb = side(a), side(b)
    pa, pb = _pool_of(sa.record), _pool_of(sb.record)
    for key in _POOL_FIELDS:
        if pa[key] != pb[key]:
            raise ClirbenchError(f"cannot compare {sa.label} and {sb.label}: not the same pool "
                                 f"({key} {pa[key]!r} vs {pb[key]!r})")
    if set(sa.query_ids) != set(sb.query_ids):
        only_a, only_b = len(set(sa.query_ids) - set(sb.query_ids)), len(set(sb.query_ids) - set(sa.query_ids))
        raise ClirbenchError(f"cannot compare {sa.label} and {sb.label}: different query sets "
                             f"({plural(only_a, 'query')} only in A, {only_b} only in B)")
    common = [m for m in sa.values if m in sb.values]
    if measures is None:
        names = common
    else:
        names = [str(m) for m in measures]
        missing = [m for m in names if m not in common]
        if missing:
            raise ClirbenchError(f"no per-query values in both results for {', '.join(missing)}; "
                                 f"shared: {', '.join(common) or 'none'}")
    if not names:
        raise ClirbenchError(f"{sa.label} and {sb.label} share no per-query measure")
    a_values, b_values = _aligned(sa, sb, names)
    check_defined(sa, sb, names, a_values, b_values)
    # undefined for every query of both results (SameLangFirst on a one-language pool): nothing to compare
    undefined = np.isnan(a_values).all(axis=0) & np.isnan(b_values).all(axis=0)
    skipped = [m for m, u in zip(names, undefined) if u]
    if skipped:
        names = [m for m, u in zip(names, undefined) if not u]
        if not names:
            raise ClirbenchError(f"{', '.join(skipped)}: undefined on this pool for both results; nothing to compare")
        a_values, b_values = a_values[:, ~undefined], b_values[:, ~undefined]
    rows = corrected(paired_rows(a_values, b_values, names, resamples, seed, permutations, confidence, test),
                     correction)
    label_a, label_b = labels([sa.record.system_key, sb.record.system_key])
    return Comparison(Compared(sa.path, sa.record.retriever.spec, label_a),
                      Compared(sb.path, sb.record.retriever.spec, label_b), pa, len(sa.query_ids),
                      resamples, seed, confidence, permutations, rows, tuple(skipped), correction, test)


def _num(x: float, digits: int = 4) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "nan" if math.isnan(x) else (f"{x:.4f}" if x >= 1e-3 else f"{x:.1e}")


def format_comparison(report: Comparison) -> str:
    """A compact aligned text table of a ``compare`` report."""
    pool = report.pool
    conf = report.confidence
    where = {k: f"  ({side.path})" if side.path is not None else "" for k, side in (("a", report.a), ("b", report.b))}
    head = [f"A: {report.a.system}{where['a']}",
            f"B: {report.b.system}{where['b']}",
            f"pool: {pool['task']}/{pool['scenario']}/{pool['pool_mode']} docs {'-'.join(pool['doc_langs'])}"
            f" queries {pool['query_lang']}, {plural(report.num_queries, 'query')}; "
            f"diff = B - A, {conf:.0%} paired bootstrap CI ({report.resamples} resamples), " + _test_p(report)]
    table = [("measure", "A", "B", "B-A", f"{conf:.0%} CI", "p", "p adj", "d_z", "B better/tie/worse", "n")]
    for name, row in report.measures.items():
        table.append((name, _num(row.mean_a), _num(row.mean_b), _num(row.diff),
                      f"[{_num(row.ci_low)}, {_num(row.ci_high)}]", _p(row.p_value),
                      _p(row.p_adjusted if row.p_adjusted is not None else math.nan), _num(row.d_z if row.d_z is not None else math.nan, 2),
                      _better_tie_worse(row), str(row.n)))
    lines = format_table(list(table[0]), table[1:], right=tuple(range(1, len(table[0]))), rule=False)
    skipped = report.undefined
    note = [f"not compared (undefined on this pool for both results): {', '.join(skipped)}"] if skipped else []
    legend = [f"{report.family}; d_z: mean / sd of the per-query differences; B better/tie/worse: queries "
              f"where B is better than, equal to, worse than A by the measure's direction"
              + _directions(list(report.measures))]
    return "\n".join(head + [""] + lines + note + legend)


def _test_p(report: Comparison) -> str:
    """``randomisation p (10000 sign flips)``: which p-value the table shows."""
    test = paired_test(report.test)
    return f"{test.label} p ({report.permutations} {test.draws})"


def _better_tie_worse(row: PairedDifference) -> str:
    return "-" if row.b_better is None else f"{row.b_better}/{row.ties}/{row.b_worse}"


def _directions(names: Sequence[str]) -> str:
    """`` (lower is better: MaxR; -: ... SameLangFirst ...)`` for the legend, or ""."""
    down, target = [], []
    for name in names:
        way = direction(name)
        (down if way == "down" else target if way in ("target", None) else []).append(name)
    parts = [f"lower is better: {', '.join(down)}"] if down else []
    if target:
        parts.append(f"-: {', '.join(target)} has no direction per query (best at a target value)")
    return f" ({'; '.join(parts)})" if parts else ""


def query_language_gap(l1, l2, measures: Sequence[str] | None = None, resamples: int = 1000, seed: int = 42,
                       permutations: int = 10000) -> Gap:
    """Gap = measure with queries in L2 minus with queries in L1, for bilingual pool (L1, L2).

    ``l1``/``l2`` are the results (files or in-memory) of one bilingual pool for the two query
    languages, paired by question id, which parallel tasks share across languages.
    """
    s1, s2 = side(l1), side(l2)
    r1, r2 = s1.record, s2.record
    same = (r1.pool_key.documents, r1.system_key) == (r2.pool_key.documents, r2.system_key)
    if not same or r1.scenario not in BILINGUAL_SCENARIOS or len(r1.doc_langs) != 2:
        raise ClirbenchError(f"{s1.label} and {s2.label} are not one bilingual pool with two query languages")
    lang1, lang2 = r1.doc_langs
    if (r1.query_lang, r2.query_lang) != (lang1, lang2):
        raise ClirbenchError(f"expected queries in {lang1} then {lang2}, got {r1.query_lang} and {r2.query_lang}")
    if set(s1.query_ids) != set(s2.query_ids):
        raise ClirbenchError(f"{s1.label} and {s2.label} have different question ids: not parallel")
    names = [m for m in (measures or s1.values) if m in s1.values and m in s2.values]
    rows = paired_rows(*_aligned(s1, s2, names), names, resamples, seed, permutations)
    return Gap(r1.task.id, r1.subset, r1.scenario, r1.pool_mode, (lang1, lang2), r1.retriever.spec,
               r1.system_key.label, resamples, seed, permutations,
               {name: dataclasses.replace(row, mean_a=None, mean_b=None) for name, row in rows.items()})


def gap_path(result_l1: str | Path) -> Path:
    """``…/en-zh.q-en.json`` → ``…/en-zh.gap.json`` (the pool stem's languages: ``identity.split_pool_stem``)."""
    path = Path(result_l1)
    stem = split_pool_stem(path.name)
    return path.with_name((stem[0] if stem else path.name) + ".gap.json")


def write_gap(path_l1, gap: Gap) -> Path:
    """Write ``gap`` atomically beside the two results (``path_l1``: the result with queries in L1)."""
    target = gap_path(path_l1)
    write_text_atomic(target, json.dumps(gap.to_dict(), indent=2) + "\n")
    return target
