"""`clirbench validate` (cards, then the data of each task found locally) and `clirbench tasks`."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import clirbench.tasks.card as cards_module
from clirbench.cli import main
from clirbench.tasks.validate import validate
from clirbench.tasks.card import cards_dir

from xquad_files import DATA as SHARED_DATA  # noqa: E402  (holds xquad/)
BELEBELE_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "belebele"


def test_the_repository_cards_are_valid_and_xquad_matches_its_hashes():
    problems, notes = validate(SHARED_DATA)
    assert problems == []
    assert "xquad: data loaded (12 file(s) hashed, 12 match the card)" in notes
    assert any(n.startswith("belebele: no local data") for n in notes)


def test_cli_validate_ok(capsys):
    assert main(["validate", "--data-dir", str(SHARED_DATA)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"ok: {len(list(cards_dir().glob('*.yaml')))} task cards valid"


def _card_folder(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A cards folder holding the real xquad card with ``old`` replaced by ``new``."""
    folder = tmp_path / name
    folder.mkdir()
    text = (cards_dir() / "xquad.yaml").read_text(encoding="utf-8")
    assert old in text
    (folder / "xquad.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    return folder


@pytest.mark.parametrize("old,new,problem", [
    ("scenarios: [multi,", "scenarios: [multi-2,", r"^xquad: .*xquad\.yaml: unknown scenario\(s\) multi-2$"),
    # the card takes the scenario's main measures from scenarios.py; an override is validated alike
    ("scenarios: [multi, multi-1, mono-same, mono-cross]\n", "scenarios: [multi, multi-1, mono-same, mono-cross]\nmain_measures:\n  multi-1: [nDCG@x, RR]\n", r"^xquad: main measure 'nDCG@x' of multi-1 is not a measure$"),
    ("id: xquad", "id: something_else", r"^xquad: id 'something_else' does not match the file name$"),
    ("  questions_per_language: 1190\n", "", r"^xquad: expected\.questions_per_language is missing$"),
    ("pivot: en\n", "", r"^xquad: a parallel task needs a pivot language$"),
    ("kind: parallel", "kind: [parallel", r"^xquad: .*xquad\.yaml:9: not valid YAML \(.*\)$"),
    ("license: CC-BY-SA-4.0", "license: ''", r"^xquad: empty license$"),
])
def test_a_broken_card_is_one_problem_line(tmp_path, old, new, problem):
    problems, _ = validate(load_data=False, folder=_card_folder(tmp_path, "cards", old, new))
    assert len(problems) == 1
    assert re.match(problem, problems[0]), problems[0]


def test_a_card_without_a_loader(tmp_path):
    folder = _card_folder(tmp_path, "cards", "id: xquad", "id: nosuchtask")
    (folder / "xquad.yaml").rename(folder / "nosuchtask.yaml")
    problems, _ = validate(load_data=False, folder=folder)
    assert problems == ["nosuchtask: task 'nosuchtask' has no loader (clirbench.tasks.nosuchtask)"]


def test_cli_validate_fails_with_exit_2(tmp_path, monkeypatch, capsys):
    folder = _card_folder(tmp_path, "cards", "scenarios: [multi, multi-1, mono-same, mono-cross]\n",
                          "scenarios: [multi, multi-1, mono-same, mono-cross]\nmain_measures:\n  multi-1: [nDCG@x, RRR]\n")
    monkeypatch.setattr(cards_module, "cards_dir", lambda: folder)
    assert main(["validate", "--no-data"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "clirbench: validate: xquad: main measure 'nDCG@x' of multi-1 is not a measure",
        "clirbench: validate: xquad: main measure 'RRR' of multi-1 is not a measure"]


def test_data_that_differs_from_the_card_fails(tmp_path, capsys):
    (tmp_path / "data" / "xquad").mkdir(parents=True)
    for lang in ("en", "de"):
        shutil.copy(SHARED_DATA / "xquad" / f"xquad.{lang}.json", tmp_path / "data" / "xquad")
    with open(tmp_path / "data" / "xquad" / "xquad.de.json", "a", encoding="utf-8") as f:
        f.write("\n")  # same content, another file
    shutil.copytree(BELEBELE_FIXTURE, tmp_path / "data" / "belebele")  # 6 passages, not 488
    problems, notes = validate(tmp_path / "data")
    assert "xquad: file(s) differ from the card's SHA-256: de" in problems
    assert "belebele: data does not load: Belebele eng_Latn: 6 passages, expected 488" in problems
    assert "xquad: 2 of 12 languages present in " + str(tmp_path / "data" / "xquad") in notes
    assert main(["validate", "--data-dir", str(tmp_path / "data")]) == 2
    assert "clirbench: validate: xquad: file(s) differ from the card's SHA-256: de" in capsys.readouterr().err


def test_tasks_lists_every_task_with_size_licence_and_data(tmp_path, monkeypatch, capsys):
    shutil.copytree(BELEBELE_FIXTURE, tmp_path / "belebele")
    monkeypatch.setenv("CLIRBENCH_DATA_DIR", str(tmp_path))
    assert main(["tasks", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {p.stem for p in cards_dir().glob("*.yaml")}
    bb = rows["belebele"]
    assert bb["data"] == str(tmp_path / "belebele") and bb["license"] == "CC-BY-SA-4.0"
    assert bb["size"] == {"passages_per_language": 488, "questions_per_language": 900}
    assert len(bb["languages"]) == 122 and bb["pool_modes"] == ["unique", "per-query"]
    assert rows["xquad"]["data"].startswith("embedded (CC-BY-SA-4.0): ")  # nothing under $CLIRBENCH_DATA_DIR/xquad: the package's copy
    assert main(["tasks"]) == 0
    text = capsys.readouterr().out
    assert "size: 488 passages, 900 questions per language" in text
    assert f"data: {tmp_path / 'belebele'}" in text


def test_tasks_says_why_data_is_missing(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    assert main(["tasks", "--json", "--data-dir", str(tmp_path)]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["belebele"]["data"] == (f"not found (no data/<lang>.jsonl or <lang>.jsonl files for task belebele "
                                        f"in {tmp_path})")
