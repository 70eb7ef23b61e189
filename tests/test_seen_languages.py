"""``run``'s table shows the languages the retriever saw (docs/results.md, docs/translation.md):
translated documents as ``zh→en``, translated queries as ``en→zh``; the record keeps the pool's own
languages."""
from __future__ import annotations

import json

from clirbench.cli import main


def _rows(text: str, scenario: str) -> dict[str, list[str]]:
    """``{q column: row cells}`` of the table under ``== scenario``."""
    block = text.split(f"== {scenario}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return {line.split()[2]: line.split() for line in block[2:]}


def test_run_table_shows_translated_languages(tmp_path, capsys):
    plain = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--resamples", "20", "--no-progress",
             "--output", str(tmp_path)]
    base = plain + ["--translator", "gold"]
    assert main(base + ["--scenario", "mono-cross,multi", "--translate", "docs"]) == 0
    text = capsys.readouterr().out
    cross, multi = _rows(text, "mono-cross"), _rows(text, "multi")
    assert cross["en"][1] == "zh→en" and cross["zh"][1] == "en→zh"
    assert multi["en"][1] == "en+zh→en" and multi["zh"][1] == "en→zh+zh"
    assert "the retriever saw en+zh→en for queries in en; en→zh+zh for queries in zh" in text
    record = json.loads(next(tmp_path.rglob("mono-cross/unique/zh.q-en.json")).read_text())
    assert record["doc_langs"] == ["zh"] and record["translation"]["source_langs"] == ["zh"]
    assert record["translation"]["target_lang"] == "en"

    assert main(base + ["--scenario", "mono-cross", "--translate", "query"]) == 0
    rows = {line.split()[1]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith("xquad/mono-cross")}
    assert rows["zh"][2] == "en→zh" and rows["en"][2] == "zh→en"  # documents zh, queries en translated into zh

    assert main(plain + ["--scenario", "mono-cross"]) == 0  # untranslated: the languages themselves
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("xquad/mono-cross")]
    assert sorted((r[1], r[2]) for r in rows) == [("en", "zh"), ("zh", "en")]
