"""A finished result is reused only when the data, the retriever and the measure settings all match
; otherwise it is refused in one line naming what differs, unless --overwrite."""
import json
from pathlib import Path

import pytest

from clirbench.results.files import is_record_file
from clirbench.cli import main
from clirbench.results import read_result

ITEMS = [("i1", "the cat sat on the mat", "le chat est sur le tapis", "where is the cat", "où est le chat"),
         ("i2", "a dog barked at the mailman", "un chien aboie", "what did the dog do", "que fait le chien"),
         ("i3", "paris is the capital of france", "paris est la capitale", "capital of france", "capitale de la france")]


def write_parallel(path: Path, items=ITEMS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"item": i, "passages": {"en": en, "fr": fr}, "questions": [{"id": f"{i}q", "en": qe, "fr": qf}]})
             for i, en, fr, qe, qf in items]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


OTHER = [("i1", "a dog barked at the mailman", "un chien aboie", "where is the cat", "où est le chat"),
         ("i2", "the cat sat on the mat", "le chat est sur le tapis", "what did the dog do", "que fait le chien"),
         ("i3", "berlin is in germany", "berlin est en allemagne", "capital of france", "capitale de la france")]


def argv(data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--model", "bm25", "--task", f"parallel:{data}", "--scenario", "mono-same,mono-cross",
            "--query-lang", "en", "--resamples", "50", "--output", str(out), "--no-progress", *extra]


def results(out: Path) -> dict[str, dict]:
    return {str(p.relative_to(out)): read_result(p).to_dict() for p in sorted(out.rglob("*.json"))
            if is_record_file(p)}


def refused(capsys, args, needle: str) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clirbench: error:"), err
    assert needle in err[0] and "--overwrite" in err[0] and "--output" in err[0], err[0]
    return err[0]


def test_unchanged_settings_are_reused(tmp_path, capsys):
    data, out = write_parallel(tmp_path / "a" / "data.jsonl"), tmp_path / "out"
    assert main(argv(data, out)) == 0
    first = results(out)
    assert "2 pools (0 reused)" in capsys.readouterr().out
    assert main(argv(data, out)) == 0
    assert "2 pools (2 reused)" in capsys.readouterr().out
    assert results(out) == first  # not rewritten: created_at unchanged
    # the same bytes in another folder are the same data
    copy = write_parallel(tmp_path / "c" / "data.jsonl")
    assert main(argv(copy, out)) == 0
    assert "2 pools (2 reused)" in capsys.readouterr().out


def test_same_file_name_other_content_is_not_reused(tmp_path, capsys):
    a = write_parallel(tmp_path / "a" / "data.jsonl")
    b = write_parallel(tmp_path / "b" / "data.jsonl", OTHER)
    out = tmp_path / "out"
    assert main(argv(a, out)) == 0
    from_a = results(out)
    capsys.readouterr()
    refused(capsys, argv(b, out), "different data (SHA-256 of data.jsonl)")
    assert results(out) == from_a  # nothing overwritten
    assert main(argv(b, out, "--overwrite")) == 0
    assert "2 pools (0 reused)" in capsys.readouterr().out
    assert main(argv(b, tmp_path / "fresh")) == 0
    fresh = results(tmp_path / "fresh")
    for key, record in results(out).items():
        assert record["measures"] == fresh[key]["measures"]  # b's numbers, not a's
        assert record["task"]["files_sha256"] == fresh[key]["task"]["files_sha256"]
    assert any(results(out)[k]["measures"] != from_a[k]["measures"] for k in from_a)


def test_a_file_edited_in_place_is_not_reused(tmp_path, capsys):
    data, out = write_parallel(tmp_path / "data.jsonl"), tmp_path / "out"
    assert main(argv(data, out)) == 0
    capsys.readouterr()
    write_parallel(data, OTHER)
    refused(capsys, argv(data, out), "different data (SHA-256 of data.jsonl)")


@pytest.mark.parametrize("option, value, needle", [
    ("--resamples", "60", "different bootstrap resamples"),
    ("--seed", "7", "different bootstrap seed"),
    ("--measures", "nDCG@10,P@5", "different measures (P@5)"),
])
def test_changed_measure_settings_are_refused(tmp_path, capsys, option, value, needle):
    data, out = write_parallel(tmp_path / "data.jsonl"), tmp_path / "out"
    settings = {"--resamples": "50", "--seed": "42", "--measures": "nDCG@10,RR"}
    flat = lambda d: [x for kv in d.items() for x in kv]
    assert main(argv(data, out, *flat(settings))) == 0
    capsys.readouterr()
    refused(capsys, argv(data, out, *flat({**settings, option: value})), needle)


def test_changed_retriever_settings_are_refused(tmp_path, capsys, tiny_bert_dir):
    data, out = write_parallel(tmp_path / "data.jsonl"), tmp_path / "out"
    base = ["run", "--model", tiny_bert_dir, "--task", f"parallel:{data}", "--scenario", "mono-same",
            "--query-lang", "en", "--resamples", "20", "--output", str(out), "--cache-dir", str(tmp_path / "cache"),
            "--device", "cpu", "--no-progress"]
    assert main(base + ["--query-prompt", "query: "]) == 0
    assert main(base + ["--query-prompt", "query: "]) == 0
    assert "1 pool (1 reused)" in capsys.readouterr().out
    refused(capsys, base + ["--query-prompt", "question: "], "different prompts")
