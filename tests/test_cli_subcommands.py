"""Every subcommand through ``clirbench.cli.main(argv)`` (the real parser and dispatch), on small
fixtures: exit code, output and the files it writes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirbench.cli import main
from cli_helpers import one_line_error

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
POOL = ["--task", "xquad", "--langs", "en,de", "--query-lang", "de", "--data-dir", str(XQUAD),
        "--resamples", "20", "--no-progress"]




@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """bm25 on XQuAD en-de, query language de: the multi and mono-same pools, through the CLI."""
    out = tmp_path_factory.mktemp("results")
    assert main(["run", "--model", "bm25", *POOL, "--scenario", "multi,mono-same", "--output", str(out)]) == 0
    return out


@pytest.mark.parametrize("argv", [
    [], ["tasks"], ["validate"], ["run"], ["evaluate"], ["export"], ["compare"], ["psq"], ["psq", "train"], ["sweep"],
    ["leaderboard"], ["leaderboard", "build"], ["leaderboard", "submit"], ["leaderboard", "show"],
    ["leaderboard", "html"],
])
def test_help_of_every_subcommand(capsys, argv):
    assert main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: clirbench") and (" ".join(argv) in out.splitlines()[0])


def test_run_help_lists_task_ids_and_every_retriever_family(capsys):
    from clirbench.retrievers.spec import FAMILIES
    from clirbench.tasks import list_tasks

    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for task in list_tasks():
        assert task.card.id in out
    for family in FAMILIES.values():
        assert family.usage in out
    assert "mteb:<model>" in out and "<org>/<model>" in out


def test_leaderboard_build_submit_show_html(results, tmp_path, capsys):
    board = tmp_path / "lb"
    assert main(["leaderboard", "build", str(results), "--data-dir", str(XQUAD), "--dir", str(board),
                 "--command", "clirbench run --model bm25 --task xquad --langs en,de"]) == 0
    assert f"{board / 'xquad.json'}: 2 results merged" in capsys.readouterr().out
    data = json.loads((board / "xquad.json").read_text())
    assert data["systems"]["bm25"]["commands"] == ["clirbench run --model bm25 --task xquad --langs en,de"]

    one = next(results.rglob("*.q-de.json"))
    other = tmp_path / "lb2"
    assert main(["leaderboard", "submit", str(one), "--command", "run", "--dir", str(other),
                 "--data-dir", str(XQUAD)]) == 0
    assert "bm25 on" in capsys.readouterr().out
    assert json.loads((other / "xquad.json").read_text())["systems"]["bm25"]["commands"] == ["run"]

    assert main(["leaderboard", "show", "xquad", "--dir", str(board), "--scenario", "mono-same"]) == 0
    out = capsys.readouterr().out
    assert "mono-same · RR" in out and "multi ·" not in out and "bm25" in out

    site = tmp_path / "site"
    assert main(["leaderboard", "html", "--out", str(site), "--dir", str(board)]) == 0
    assert (site / "index.html").is_file() and (site / "xquad.html").is_file()
    assert str(site / "xquad.html") in capsys.readouterr().out

    assert "expected a subcommand" in one_line_error(capsys, ["leaderboard"])


def test_psq_train_then_run_with_the_table(tmp_path, capsys):
    bitext = tmp_path / "de-en.tsv"
    bitext.write_text("der hund bellt\tthe dog barks\nder hund schläft\tthe dog sleeps\n"
                      "die katze schläft\tthe cat sleeps\n", encoding="utf-8")
    table = tmp_path / "de-en.json.gz"
    assert main(["psq", "train", "--bitext", str(bitext), "--src", "de", "--tgt", "en", "--out", str(table),
                 "--iterations", "3"]) == 0
    out = capsys.readouterr().out
    assert "3 segment pairs" in out and f"use it as --model psq:{table}" in out
    from clirbench.retrievers.psq import meta_path

    assert table.is_file() and json.loads(meta_path(table).read_text())["doc_lang"] == "de"
    assert "expected a subcommand: train" in one_line_error(capsys, ["psq"])


def test_sweep_runs_its_cells_and_builds_the_leaderboard(tmp_path, capsys):
    config = tmp_path / "sweep.yaml"
    config.write_text(f"models: [bm25]\ntasks: [{{task: xquad, langs: 'en,de', scenarios: mono-same, "
                      f"query_langs: de, data_dir: {XQUAD}}}]\nresamples: 20\n", encoding="utf-8")
    argv = ["sweep", str(config), "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
            "--leaderboard-dir", str(tmp_path / "lb"), "--no-progress"]
    assert main(argv + ["--dry-run"]) == 0
    assert "to run" in capsys.readouterr().out
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 cell: 1 run, 0 finished before, 0 failed" in out
    assert list((tmp_path / "out").rglob("de.q-de.json")) and (tmp_path / "lb" / "xquad.json").is_file()
    assert main(argv) == 0
    assert "1 cell: 0 run, 1 finished before" in capsys.readouterr().out


def test_evaluate_writes_json(tmp_path, capsys):
    from clirbench.formats.trec import write_qrels, write_run

    write_qrels(tmp_path / "qrels.txt", {"q1": {"a": 1}, "q2": {"b": 1}})
    write_run(tmp_path / "run.txt", {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}})
    assert main(["evaluate", "--json", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt"),
                 "--resamples", "20", "--output", str(tmp_path / "e.json")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads((tmp_path / "e.json").read_text())
    assert report["measures"]["RR"]["value"] == pytest.approx(0.75)


def test_validate_and_tasks(capsys):
    assert main(["validate", "--no-data"]) == 0
    assert "task cards valid" in capsys.readouterr().out
    assert main(["tasks", "--json"]) == 0
    assert {r["id"] for r in json.loads(capsys.readouterr().out)} >= {"xquad", "lazretrieval", "clirudit"}


def test_bare_model_folder_is_dense_and_compare_leaves_out_undefined_measures(results, tmp_path, capsys,
                                                                               tiny_bert_dir):
    """`run --model <folder>` (no prefix) is dense:<folder>, sharing results with the prefixed form;
    comparing it with bm25 on a one-language pool leaves SameLangFirst out, in one line."""
    out = tmp_path / "dense"
    common = [*POOL, "--scenario", "mono-same", "--output", str(out), "--cache-dir", str(tmp_path / "c")]
    assert main(["run", "--model", tiny_bert_dir, *common]) == 0
    capsys.readouterr()
    (path,) = out.rglob("de.q-de.json")
    record = json.loads(path.read_text())
    assert record["retriever"]["spec"] == f"dense:{tiny_bert_dir}"
    assert main(["run", "--model", f"dense:{tiny_bert_dir}", *common]) == 0
    assert "1 pool (1 reused)" in capsys.readouterr().out  # the same result, not a second one

    bm25 = next(results.rglob("mono-same/unique/de.q-de.json"))
    assert main(["compare", str(bm25), str(path), "--resamples", "20", "--permutations", "50"]) == 0
    text = capsys.readouterr().out
    language = ["SameLangFirst", "Share@10", "AWRF@10"]  # one document language: nothing to compare languages by
    assert f"not compared (undefined on this pool for both results): {', '.join(language)}" in text
    assert not [line for line in text.splitlines() if line.startswith(tuple(language))]
    assert main(["compare", str(bm25), str(path), "--json", "--resamples", "20", "--permutations", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not set(language) & set(report["measures"]) and report["undefined"] == language


def test_bare_hub_id_is_dense_and_unknown_words_list_the_families(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = [*POOL, "--output", str(tmp_path)]
    line = one_line_error(capsys, ["run", "--model", "intfloat/multilingual-e5-large", *argv])
    assert "model 'intfloat/multilingual-e5-large' is not in the local Hugging Face cache" in line
    line = one_line_error(capsys, ["run", "--model", "xyz", *argv])
    assert "unknown retriever 'xyz'" in line and "mteb:<model>" in line and "<org>/<model>" in line


def test_one_module_and_one_handler_per_subcommand(capsys):
    """Each subcommand's parser is built in its own clirbench.cli module and names its handler there."""
    import argparse
    import importlib

    modules = {"tasks": "tasks", "validate": "validate", "run": "run", "evaluate": "evaluate", "export": "export",
               "trec_eval": "trec_eval", "compare": "compare",
               "leaderboard": "leaderboard", "psq": "psq", "sweep": "sweep", "cache": "cache", "train": "train",
               "merge": "train", "plot": "plot", "reproduce": "reproduce", "export-results": "export_results"}
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out.split("{", 1)[1].split("}", 1)[0].split(",")
    assert sorted(listed) == sorted(modules)
    for name, module_name in modules.items():
        module = importlib.import_module(f"clirbench.cli.{module_name}")
        sub = argparse.ArgumentParser().add_subparsers()
        parser = getattr(module, f"add_{name.replace('-', '_')}_parser")(sub)
        assert parser.get_default("handler") is getattr(module, f"cmd_{name.replace('-', '_')}")


def test_one_table_formatter():
    """report.format_table builds the plain-text tables of run, compare, leaderboard show and sweep grids."""
    from clirbench.display.report import format_table

    assert format_table(["a", "bb"], [["xyz", "1"]]) == ["a    bb", "---  --", "xyz  1"]
    assert format_table(["n", "v"], [["a", "10"], ["bcd", "2"]], right=(1,), rule=False) == \
        ["n     v", "a    10", "bcd   2"]
