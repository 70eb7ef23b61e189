"""Nothing silently wrong on display, through the real CLI: a system with results on some
of a board's pools is marked incomplete (never ranked, bold or tested) in every table format, the
page and the figures; names are drawn as text in figures (no mathtext); ``compare`` refuses per-query
values a paired test cannot use, naming the file, line, query and measure."""
from __future__ import annotations

import csv
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from clirbench.cli import main
from cli_helpers import one_line_error
from test_leaderboard import _synthetic

from clirbench.leaderboard import store

SVG = "{http://www.w3.org/2000/svg}"


def _board(tmp_path: Path, names: dict[str, float], partial: str | None) -> Path:
    """A leaderboard of two pools: each system's RR is its factor × one random vector; ``partial``
    (all 1.0: better than every complete system) has results on the first pool only."""
    rng = np.random.default_rng(7)
    base = [rng.random(200).round(3) for _ in range(2)]
    values = {name: [np.clip(v * f, 0, 1) for v in base] for name, f in names.items()}
    if partial is not None:
        values[partial] = [np.ones(200), np.ones(200)]
    data = _synthetic(values)
    if partial is not None:
        del data["systems"][partial]["results"][sorted(data["pools"])[1]]
    folder = tmp_path / "lb"
    folder.mkdir()
    (folder / "xquad.json").write_text(store.dumps(data), encoding="utf-8")
    return folder


def _show(capsys, folder: Path, *extra: str) -> str:
    assert main(["leaderboard", "show", "xquad", "--dir", str(folder), *extra]) == 0
    return capsys.readouterr().out


def test_every_table_format_marks_an_incomplete_system_and_never_ranks_it(tmp_path, capsys):
    folder = _board(tmp_path, {"strong": 1.0, "weak": 0.5}, partial="partial")
    best = float(np.mean([v.mean() for v in _synthetic_values(1.0)]))

    tex = _show(capsys, folder, "--format", "latex", "--baseline", "weak")
    rows = {line.split(" & ")[0]: line for line in tex.splitlines() if " & " in line and "System" not in line}
    assert rows["partial"] == r"partial & 1.000 & (incomplete, 1/2 pools) \\"  # no bold, no dagger, no interval
    assert rows["strong"].startswith(rf"strong & \textbf{{{best:.3f}}} & $\pm$") and r"$^{\dagger}$" in rows["strong"]
    assert "textbf" not in rows["weak"] and "dagger" not in rows["weak"]
    assert "(incomplete, k/n pools): a system without results on all n pools" in tex
    assert "1 system compared with weak" in tex  # the incomplete one is not in the family

    md = _show(capsys, folder, "--format", "markdown", "--ci", "bracket")
    assert "| partial | 1.000 (incomplete, 1/2 pools) |" in md.splitlines()
    assert sum("**" in line for line in md.splitlines()[2:5]) == 1 and "| strong | **" in md

    rows = {r["system"]: r for r in csv.DictReader(_show(capsys, folder, "--format", "csv", "--baseline", "weak")
                                                    .splitlines())}
    assert (rows["partial"]["pools"], rows["partial"]["board_pools"], rows["partial"]["rank"]) == ("1", "2", "")
    assert rows["partial"]["p_value"] == "" and rows["partial"]["ci_low"] == ""
    assert (rows["strong"]["pools"], rows["strong"]["board_pools"], rows["strong"]["rank"]) == ("2", "2", "1")
    assert rows["strong"]["p_value"] != ""

    text = _show(capsys, folder)
    line = next(x for x in text.splitlines() if " partial " in f" {x} " and "1/2" in x)
    assert "(incomplete)" in line and line.split()[0] == "-"

    assert main(["leaderboard", "html", "--dir", str(folder), "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "xquad.html").read_text(encoding="utf-8")
    cell = re.search(r'<td data-v="partial">partial</td><td ([^>]*)>([^<]*)<span class="ci">([^<]*)</span></td>', page)
    assert cell and 'data-v=""' in cell.group(1) and cell.group(3) == "(incomplete, 1/2 pools)"  # sorts last
    assert "not drawn (incomplete, not comparable): partial (1/2 pools)" in page
    bars = re.search(r'<svg class="bars".*?</svg>', page, re.S).group(0)
    assert "partial" not in bars and "strong" in bars


def _synthetic_values(factor: float) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [np.clip(v * factor, 0, 1).astype(np.float32).astype(np.float64)
            for v in [rng.random(200).round(3) for _ in range(2)]]


def test_an_incomplete_baseline_is_not_tested(tmp_path, capsys):
    folder = _board(tmp_path, {"strong": 1.0, "weak": 0.5}, partial="partial")
    tex = _show(capsys, folder, "--format", "latex", "--baseline", "partial")
    assert "dagger" not in tex.split(r"\bottomrule")[0]
    assert "no system was compared with partial" in tex


def _svg_texts(path: Path) -> list[str]:
    """The strings matplotlib drew: with svg.fonttype none, each text is a <text> element."""
    root = ET.parse(path).getroot()
    return ["".join(el.itertext()).replace("\xa0", " ") for el in root.iter(f"{SVG}text")]


@pytest.fixture
def text_svg(monkeypatch):
    from clirbench.plots import figure

    monkeypatch.setitem(figure.STYLE, "svg.fonttype", "none")


MATH = ["bm25 $x^2$", "$x_{$", "a $ b", "$$"]


def test_rank_plot_draws_names_as_text_and_names_incomplete_systems(tmp_path, capsys, text_svg):
    folder = _board(tmp_path, {name: 1.0 - 0.1 * i for i, name in enumerate(MATH)}, partial="partial $y$")
    out = tmp_path / "r.svg"
    assert main(["plot", "ranks", "xquad", "--dir", str(folder), "--out", str(out)]) == 0
    texts = _svg_texts(out)
    for name in MATH:
        assert name in texts
    assert "not ranked (incomplete): partial $y$ (1/2 pools)" in "\n".join(texts)
    # the unbalanced one failed before ("clirbench: error: x_{"); a plain text renders it
    assert main(["plot", "ranks", "xquad", "--dir", str(folder), "--out", str(tmp_path / "r.png")]) == 0
    capsys.readouterr()


def _result_copy(src: Path, folder: Path, spec: str, edit=None) -> Path:
    """A copy of result ``src`` (and its tables) in ``folder`` whose retriever spec is ``spec``."""
    folder.mkdir(parents=True)
    data = json.loads(src.read_text(encoding="utf-8"))
    data["retriever"]["spec"] = spec
    if edit:
        edit(data)
    for table in src.parent.glob(src.name.removesuffix(".json") + ".*.tsv"):
        shutil.copy(table, folder / table.name)
    (folder / src.name).write_text(json.dumps(data), encoding="utf-8")
    return folder / src.name


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi",
                 "--output", str(root), "--resamples", "20", "--no-progress"]) == 0
    return root / "bm25" / "xquad" / "multi" / "unique"


SPECS = ["bm25 $x^2$", r"$\frac{$", r"a\$b"]


def test_result_figures_draw_names_as_text(tmp_path, runs, capsys, text_svg):
    files = [_result_copy(runs / "en-zh.q-zh.json", tmp_path / f"s{i}", spec) for i, spec in enumerate(SPECS)]
    for figure in ("ecdf", "preference", "pareto"):
        out = tmp_path / f"{figure}.svg"
        argv = ["plot", figure, *map(str, files), "--out", str(out)]
        assert main(argv + (["--measure", "RR"] if figure != "preference" else [])) == 0, figure
        drawn = "\n".join(_svg_texts(out))
        for spec in SPECS:
            assert spec in drawn, (figure, spec, drawn)
        assert "\\$" not in drawn.replace(r"a\$b", "")  # the escape itself is never drawn
    capsys.readouterr()


def test_pareto_keeps_an_incomplete_system_off_the_front(tmp_path, runs, capsys, text_svg):
    from clirbench.plots.pareto import pareto_front, system_points

    full = [_result_copy(runs / f"en-zh.q-{q}.json", tmp_path / f"full-{q}", "full") for q in ("en", "zh")]

    def better(d):  # on one pool only, and better and cheaper than the complete system there
        d["measures"]["RR"].update(value=1.0, ci_low=1.0, ci_high=1.0)
        d["cost"]["search_ms_per_query"] = 1e-6

    part = _result_copy(runs / "en-zh.q-zh.json", tmp_path / "part", "one $pool$", better)
    points = {p.system: p for p in system_points([*full, part], "RR")}
    assert (points["one $pool$"].complete, points["one $pool$"].pools, points["one $pool$"].of_pools) == (False, 1, 2)
    assert points["full"].complete
    out = tmp_path / "p.svg"
    assert main(["plot", "pareto", *map(str, [*full, part]), "--measure", "RR", "--out", str(out)]) == 0
    assert "one $pool$ (incomplete, 1/2 pools)" in _svg_texts(out)
    assert [p.system for p in pareto_front([p for p in points.values() if p.complete])] == ["full"]
    capsys.readouterr()


# ------------------------------------------------------------------ compare: nan and inf


def _pair(tmp_path: Path, runs: Path) -> tuple[Path, Path]:
    a = _result_copy(runs / "en-zh.q-zh.json", tmp_path / "A", "bm25")
    b = _result_copy(runs / "en-zh.q-zh.json", tmp_path / "B", "bm25")
    return a, b


def _set(result: Path, line: int, measure: str, value: str) -> str:
    """Write ``value`` for ``measure`` on ``line`` (1-based) of the result's per-query table; returns its query id."""
    table = result.with_name(result.name.removesuffix(".json") + ".perquery.tsv")
    lines = table.read_text(encoding="utf-8").split("\n")
    col = lines[0].split("\t").index(measure)
    fields = lines[line - 1].split("\t")
    fields[col] = value
    lines[line - 1] = "\t".join(fields)
    table.write_text("\n".join(lines), encoding="utf-8")
    return fields[0]


@pytest.mark.parametrize("side", ["A", "B"])
def test_compare_refuses_a_nan_on_one_side(tmp_path, runs, capsys, side):
    a, b = _pair(tmp_path, runs)
    qid = _set(a if side == "A" else b, 9, "RR", "nan")
    msg = one_line_error(capsys, ["compare", str(a), str(b), "--permutations", "100", "--resamples", "50"])
    assert f"{side}/en-zh.q-zh.perquery.tsv:9: query {qid!r}: RR is nan (no value) where " in msg
    assert "undefined for both results or for neither (1 such query)" in msg
    # --flips reads the same tables: refused before any flip is listed
    msg = one_line_error(capsys, ["compare", str(a), str(b), "--permutations", "100", "--flips", "3"])
    assert f"query {qid!r}: RR is nan" in msg


def test_compare_refuses_a_nan_its_own_record_does_not_count_and_infinite_values(tmp_path, runs, capsys):
    a, b = _pair(tmp_path, runs)
    for t in (a, b):
        _set(t, 4, "nDCG@10", "nan")  # on both sides: the aligned means would silently drop it
    msg = one_line_error(capsys, ["compare", str(a), str(b), "--permutations", "100"])
    assert "A/en-zh.q-zh.perquery.tsv: nDCG@10 has 1189 defined per-query values (the first nan: line 4)" in msg
    assert "says n=1190" in msg
    a, b = _pair(tmp_path / "inf", runs)
    qid = _set(b, 6, "MaxR", "-inf")
    msg = one_line_error(capsys, ["compare", str(a), str(b), "--permutations", "100"])
    assert f"B/en-zh.q-zh.perquery.tsv:6: query {qid!r}: MaxR is -inf" in msg


def test_compare_agrees_with_each_file_when_nan_is_the_same_on_both_sides(tmp_path, runs, capsys):
    """A measure undefined for some queries (SameLangFirst: no relevant passage in one language) is
    left out on both sides alike: each mean is its own record's value."""
    a, b = _pair(tmp_path, runs)
    assert main(["compare", str(a), str(b), "--permutations", "100", "--resamples", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["measures"]
    record = json.loads(a.read_text(encoding="utf-8"))["measures"]
    for name, row in out.items():
        assert row["mean_a"] == pytest.approx(record[name]["value"], rel=1e-9) and row["n"] == record[name]["n"]


def test_submit_refuses_undefined_queries_other_than_the_pools(tmp_path, runs, capsys):
    """A second system whose per-query MaxR has no value where the first one's has one (its record's
    n and mean made to agree) is refused: the qrels decide which queries are undefined."""
    import math

    a = _result_copy(runs / "en-zh.q-zh.json", tmp_path / "A", "bm25")
    assert main(["leaderboard", "submit", str(a), "--dir", str(tmp_path / "lb")]) == 0

    def edit(d):
        d["retriever"]["spec"] = "other"
    b = _result_copy(runs / "en-zh.q-zh.json", tmp_path / "B", "other", edit)
    qid = _set(b, 3, "MaxR", "nan")
    table = b.with_name("en-zh.q-zh.perquery.tsv").read_text(encoding="utf-8").splitlines()
    col = table[0].split("\t").index("MaxR")
    vals = [float(line.split("\t")[col]) for line in table[1:]]
    data = json.loads(b.read_text(encoding="utf-8"))
    mean = float(np.nanmean(vals))
    data["measures"]["MaxR"].update(value=mean, n=sum(not math.isnan(v) for v in vals),
                                  ci_low=min(mean, data["measures"]["MaxR"]["ci_low"]),
                                  ci_high=max(mean, data["measures"]["MaxR"]["ci_high"]))
    b.write_text(json.dumps(data), encoding="utf-8")
    msg = one_line_error(capsys, ["leaderboard", "submit", str(b), "--dir", str(tmp_path / "lb")])
    assert "per-query MaxR has no value (nan) for other queries than 'bm25' on pool" in msg, (msg, qid)
