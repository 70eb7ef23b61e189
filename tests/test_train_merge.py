"""``clirbench merge``: weight averaging of sentence-transformers folders, through the real CLI."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import sentence_transformers  # noqa: E402,F401

from clirbench.cli import main  # noqa: E402
from conftest import TINY_SENTENCES  # noqa: E402


def embed(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(TINY_SENTENCES, convert_to_numpy=True)


@pytest.fixture(scope="module")
def other_bert(tiny_bert_dir, tmp_path_factory):
    """The same architecture and tokenizer as ``tiny_bert_dir``, other random weights."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    folder = tmp_path_factory.mktemp("tiny-bert-b") / "model"
    shutil.copytree(tiny_bert_dir, folder)
    torch.manual_seed(1)
    BertForMaskedLM(BertConfig.from_pretrained(tiny_bert_dir)).save_pretrained(folder)
    return str(folder)


def test_a_model_merged_with_itself_gives_identical_embeddings(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "self"
    assert main(["merge", tiny_bert_dir, tiny_bert_dir, "--out", str(out)]) == 0
    assert np.array_equal(embed(out), embed(tiny_bert_dir))
    record = json.loads((out / "clirbench_merge.json").read_text())
    assert record["weights"] == [0.5, 0.5] and [p["model"] for p in record["parents"]] == [tiny_bert_dir] * 2
    assert record["parents"][0]["revision"].startswith("sha256:")
    assert "clirbench run --model" in capsys.readouterr().out


def test_weights_one_zero_give_the_first_parent_and_uniform_is_the_mean(tiny_bert_dir, other_bert, tmp_path):
    import torch
    from sentence_transformers import SentenceTransformer

    first = tmp_path / "first"
    assert main(["merge", tiny_bert_dir, other_bert, "--out", str(first), "--weights", "1,0"]) == 0
    assert np.array_equal(embed(first), embed(tiny_bert_dir))
    assert not np.allclose(embed(other_bert), embed(tiny_bert_dir))
    mean = tmp_path / "mean"
    assert main(["merge", tiny_bert_dir, other_bert, "--out", str(mean), "--weights", "2,2"]) == 0
    assert json.loads((mean / "clirbench_merge.json").read_text())["weights"] == [0.5, 0.5]
    states = [SentenceTransformer(str(f), device="cpu").state_dict() for f in (tiny_bert_dir, other_bert, mean)]
    key = next(k for k, v in states[0].items() if torch.is_floating_point(v) and not torch.equal(v, states[1][k]))
    assert torch.allclose(states[2][key], (states[0][key] + states[1][key]) / 2, atol=1e-7)


def test_python_api_three_models(tiny_bert_dir, other_bert, tmp_path):
    from clirbench.train import merge_models

    out = merge_models([tiny_bert_dir, other_bert, tiny_bert_dir], tmp_path / "three", weights=[1, 0, 1])
    assert np.allclose(embed(out), embed(tiny_bert_dir), atol=1e-6)


def test_mismatched_architecture_is_refused_on_one_line(tiny_bert_dir, tmp_path, capsys):
    from transformers import BertConfig, BertForMaskedLM

    other = tmp_path / "one-layer"
    shutil.copytree(tiny_bert_dir, other)
    config = BertConfig.from_pretrained(tiny_bert_dir)
    config.num_hidden_layers = 1
    BertForMaskedLM(config).save_pretrained(other)
    capsys.readouterr()
    assert main(["merge", tiny_bert_dir, str(other), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("clirbench: error: cannot merge") and "different architectures" in err
    assert err.count("\n") == 1 and not (tmp_path / "x").exists()


def test_mismatched_tokenizer_is_refused_on_one_line(tiny_bert_dir, tmp_path, capsys):
    from transformers import BertTokenizerFast

    other = tmp_path / "swapped-vocab"
    shutil.copytree(tiny_bert_dir, other)
    vocab = BertTokenizerFast.from_pretrained(tiny_bert_dir).get_vocab()
    a, b = sorted(vocab, key=vocab.get)[10:12]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    for f in other.glob("tokenizer*"):
        f.unlink()
    (other / "vocab.txt").unlink()
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(other)
    capsys.readouterr()
    assert main(["merge", tiny_bert_dir, str(other), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "different tokenizers" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["--weights", "1"], "--weights has 1 value(s) for 2 models"),
    (["--weights", "1,-1"], "argument --weights"),
    (["--weights", "0,0"], "positive sum"),
    (["--weights", "a,b"], "argument --weights"),
])
def test_bad_weights_are_refused(tiny_bert_dir, tmp_path, capsys, argv, message):
    assert main(["merge", tiny_bert_dir, tiny_bert_dir, "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("clirbench: error:") and message in err and err.count("\n") == 1


def test_missing_model_and_existing_out_are_refused(tiny_bert_dir, tmp_path, capsys):
    assert main(["merge", tiny_bert_dir, str(tmp_path / "nope" / "model"), "--out", str(tmp_path / "x")]) == 2
    assert "no such directory" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert main(["merge", tiny_bert_dir, tiny_bert_dir, "--out", str(tmp_path / "full")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    assert main(["merge", tiny_bert_dir, "--out", str(tmp_path / "y")]) == 2
    assert "at least two models" in capsys.readouterr().err
