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


def _body_rows(tex: str) -> list[list[str]]:
    body = tex.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
    return [[c.strip() for c in line.removesuffix("\\\\").split(" & ")] for line in body.strip().splitlines()]


def _check_booktabs(tex: str) -> None:
    assert _balanced(tex)
    lines = tex.splitlines()
    assert lines[0].startswith("\\begin{tabular}{l") and "\\end{tabular}" in lines
    assert [l for l in lines if l in ("\\toprule", "\\midrule", "\\bottomrule")] == ["\\toprule", "\\midrule", "\\bottomrule"]


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
        assert [r[0] for r in rows] == measures
        for j, row in enumerate(rows):
            assert ("\\dagger" in row[3]) == (p_adj[j] < 0.05)
            better_b = (x[:, j].mean() > y[:, j].mean()) if measures[j] == "MaxR" else (y[:, j].mean() > x[:, j].mean())
            tie = x[:, j].mean() == y[:, j].mean()
            assert ("\\textbf" in row[2]) == (better_b and not tie) and ("\\textbf" in row[1]) == (not better_b and not tie)
            assert re.fullmatch(r"-?[\d.]+(\$\^\{\\dagger\}\$)? \[-?[\d.]+, -?[\d.]+\]", row[3])


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
    header = tex.splitlines()[2].removesuffix(" \\\\").split(" & ")
    body = _body_rows(tex)
    by_system = {row[0]: row for row in body}
    assert set(by_system) == {"bm25", "bm25+qt:gold", "bm25+dt:gold"}
    for j, m in enumerate(header[1:], start=1):
        values = {s: float(r["value"]) for r in rows if r["measure"] == m for s in [r["system"]]}
        best = max(values.values())
        for s, row in by_system.items():
            assert ("\\textbf{" in row[j]) == (values[s] == best)
            assert ("\\dagger" in row[j]) == ((m, s) in p_adj and p_adj[(m, s)] < 0.05)
            assert re.search(r"\$\\pm\$ [\d.]+$", row[j])

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
