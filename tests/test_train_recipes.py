"""``clirbench train``: the composition builder, the triplet reader, one-line errors, and the
CI-sized experiment (train on XQuAD's training half, merge, evaluate on the test half, compare)."""
from __future__ import annotations

import json

import pytest

import sentence_transformers  # noqa: E402,F401
import accelerate  # noqa: E402,F401

from clirbench.cli import main  # noqa: E402
from clirbench.train import data as D  # noqa: E402


def _examples():
    ex = [D.Example(query={"en": f"q{i} en", "de": f"q{i} de"}, positive={"en": f"p{i} en", "de": f"p{i} de"},
                    negatives=({"en": f"n{i} en", "de": f"n{i} de"}, {"en": f"m{i} en", "de": f"m{i} de"}))
          for i in range(3)]
    return D.Examples(tuple(ex))


def test_composition_builder_gives_all_eight_with_the_right_languages():
    comps = D.parse_compositions("all", ["en", "de"])
    assert len(comps) == 8 and len(set(comps)) == 8
    ds = D.build_composition(_examples(), comps)
    assert ds.column_names == ["anchor", "positive", "negative_1", "negative_2"] and len(ds) == 24
    rows = ds.to_list()
    for (l1, l2, l3), block in zip(comps, [rows[i:i + 3] for i in range(0, 24, 3)]):
        assert block[1] == {"anchor": f"q1 {l1}", "positive": f"p1 {l2}", "negative_1": f"n1 {l3}",
                            "negative_2": f"m1 {l3}"}
    one = D.build_composition(_examples(), D.parse_compositions("de-en-de", ["en", "de"]), num_negatives=1)
    assert one.to_list()[0] == {"anchor": "q0 de", "positive": "p0 en", "negative_1": "n0 de"}
    with pytest.raises(ValueError, match="composition 'en-fr-de'"):
        D.parse_compositions("en-fr-de", ["en", "de"])


def test_alignment_rows_and_mining_skip_the_gold_item():
    data = D.from_task("xquad", ["en", "de"], {"articles": "train"})
    assert len(data.examples) == 632 and data.source["subset"] == "articles=train"
    ds = D.alignment_dataset(data, "en", "de")
    assert ds.column_names == ["query", "passage_pivot", "passage_target"]
    first = data.examples[0]
    assert ds[0] == {"query": first.query["en"], "passage_pivot": first.positive["en"], "passage_target": first.positive["de"]}
    small = D.Examples(data.examples[:20], data.corpus, data.source)
    mined = D.mine_hard_negatives(small, "bm25", "en", 3)
    assert mined.source["hard_negatives"] == {"retriever": "bm25", "mined_in": "en", "per_query": 3}
    for ex in mined.examples:
        assert len(ex.negatives) == 3 and ex.positive not in ex.negatives
        assert all(set(n) == {"en", "de"} for n in ex.negatives)


def test_triplet_file_is_read_and_checked(tmp_path):
    good = tmp_path / "t.jsonl"
    good.write_text(json.dumps({"query": {"en": "a?", "de": "b?"}, "positive": {"en": "A", "de": "B"},
                                "negatives": [{"en": "C", "de": "D"}]}) + "\n\n")
    data = D.read_triplets(good, ["en", "de"])
    assert data.examples[0].negatives == ({"en": "C", "de": "D"},)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query": {"en": "a?"}, "positive": {"en": "A", "de": "B"}}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: query has no text in de"):
        D.read_triplets(bad, ["en", "de"])


@pytest.mark.parametrize("argv, message", [
    (["--loss", "kl"], "argument --loss: invalid choice: 'kl'"),
    (["--lr", "-1"], "argument --lr"),
    (["--batch-size", "0"], "argument --batch-size"),
    (["--langs", "en"], "expected two different languages"),
    (["--task", "clirudit"], "not a parallel task"),
    (["--triplets", "EMPTY"], "no training examples"),
    (["--triplets", "EMPTY", "--task", "xquad"], "exactly one of --task"),
    (["--task", "xquad", "--task-option", "articles=dev"], "articles=train or articles=test"),
    (["--task", "xquad", "--recipe", "compose", "--compositions", "en-en"], "composition 'en-en'"),
    (["--task", "xquad", "--recipe", "compose", "--loss", "nce"], "--loss applies to --recipe align"),
    (["--triplets", "MISSING"], "no such file"),
])
def test_bad_inputs_are_one_line_errors(tiny_bert_dir, tmp_path, capsys, argv, message):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    argv = [str(empty) if a == "EMPTY" else str(tmp_path / "missing.jsonl") if a == "MISSING" else a for a in argv]
    code = main(["train", "--model", tiny_bert_dir, "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("clirbench: error:") and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_ci_sized_experiment_train_merge_evaluate_compare(tiny_bert_dir, tmp_path, capsys):
    """The README experiment in miniature: a few steps of jsd+nce on XQuAD's training half, the
    merge with the base, both evaluated by the harness on the test half and compared with the base."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    trained, merged, results = tmp_path / "jsd+nce", tmp_path / "merged", tmp_path / "results"
    assert main(["train", "--model", tiny_bert_dir, "--out", str(trained), "--task", "xquad", "--langs", "en,de",
                 "--task-option", "articles=train", "--max-examples", "64", "--batch-size", "16",
                 "--max-steps", "3", "--lr", "1e-3", "--no-progress"]) == 0
    assert "evaluate it with clirbench run --model" in capsys.readouterr().out
    record = json.loads((trained / "clirbench_train.json").read_text())
    assert record["steps"] == 3 and record["loss"] == {"loss": "jsd+nce", "scale": 20.0, "eps": 1e-8,
                                                      "similarity_fct": "cos_sim"}
    assert record["data"]["subset"] == "articles=train" and record["optimizer"]["warmup_ratio"] == 0.15
    assert record["optimizer"]["betas"] == [0.9, 0.99] and record["seed"] == 42 and record["bf16"] is False
    texts = ["Wer bellt?", "The cat sat on the mat."]
    base_vec = SentenceTransformer(tiny_bert_dir, device="cpu").encode(texts)
    new_vec = SentenceTransformer(str(trained), device="cpu").encode(texts)
    assert not np.allclose(base_vec, new_vec)  # the weights moved
    assert main(["merge", tiny_bert_dir, str(trained), "--out", str(merged)]) == 0
    for model in (tiny_bert_dir, str(trained), str(merged)):
        assert main(["run", "--model", model, "--task", "xquad", "--langs", "en,de", "--task-option",
                     "articles=test", "--scenario", "multi", "--query-lang", "de", "--output", str(results),
                     "--resamples", "50", "--no-progress", "--cache-dir", str(tmp_path / "cache")]) == 0
    capsys.readouterr()
    files = {}
    for path in results.rglob("*.json"):
        rec = json.loads(path.read_text())
        if rec.get("scenario") == "multi" and rec.get("query_lang") == "de":
            files[rec["retriever"]["spec"]] = (path, rec)
    assert len(files) == 3
    for path, rec in files.values():
        assert rec["subset"] == "articles=test" and rec["num_queries"] == 558 and rec["pool_size"] == 240
    base_path = next(p for spec, (p, _) in files.items() if "tiny-bert" in spec and "merged" not in spec)
    trained_path = next(p for spec, (p, _) in files.items() if spec.endswith("jsd+nce"))
    assert main(["compare", str(base_path), str(trained_path), "--json", "--resamples", "50",
                 "--permutations", "100", "--measures", "MaxR,Complete@10"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "MaxR" in json.dumps(report)


def test_compose_recipe_mines_hard_negatives_and_records_them(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "compose"
    assert main(["train", "--model", tiny_bert_dir, "--out", str(out), "--recipe", "compose", "--task", "xquad",
                 "--langs", "en,de", "--task-option", "articles=train", "--compositions", "en-de-de,de-de-en",
                 "--hard-negatives", "2", "--max-examples", "16", "--batch-size", "8", "--max-steps", "2",
                 "--no-progress"]) == 0
    record = json.loads((out / "clirbench_train.json").read_text())
    assert record["recipe"] == "compose" and record["compositions"] == ["en-de-de", "de-de-en"]
    assert record["columns"] == ["anchor", "positive", "negative_1", "negative_2"] and record["rows"] == 32
    assert record["data"]["hard_negatives"] == {"retriever": "bm25", "mined_in": "en", "per_query": 2}
    assert record["loss"]["loss"] == "MultipleNegativesRankingLoss" and record["optimizer"]["warmup_ratio"] == 0.1
    assert record["steps"] == 2


def test_triplet_file_trains_both_recipes(tiny_bert_dir, tmp_path, capsys):
    lines = [json.dumps({"query": {"en": f"who barked {i}?", "de": f"wer bellt {i}?"},
                         "positive": {"en": f"A dog barked {i}.", "de": f"Der Hund bellt {i}."},
                         "negatives": [{"en": f"The cat sat {i}.", "de": f"Die Katze sitzt {i}."}]}) for i in range(8)]
    triplets = tmp_path / "t.jsonl"
    triplets.write_text("\n".join(lines) + "\n")
    for recipe, loss in (("align", ["--loss", "nce-psg"]), ("compose", [])):
        out = tmp_path / recipe
        assert main(["train", "--model", tiny_bert_dir, "--out", str(out), "--recipe", recipe, *loss,
                     "--triplets", str(triplets), "--batch-size", "4", "--compositions", "de-en-en",
                     "--no-progress"]) == 0
        record = json.loads((out / "clirbench_train.json").read_text())
        assert record["steps"] == 2 and record["data"]["triplets"] == str(triplets)
    assert json.loads((tmp_path / "align" / "clirbench_train.json").read_text())["loss"]["loss"] == "nce-psg"
    assert json.loads((tmp_path / "compose" / "clirbench_train.json").read_text())["columns"] == [
        "anchor", "positive", "negative_1"]


def test_eval_every_measures_test_pools_during_training(tiny_bert_dir, tmp_path, capsys):
    """sentence-transformers' evaluator hook: clirbench's multi pools measured every 2 steps."""
    out = tmp_path / "evaluated"
    assert main(["train", "--model", tiny_bert_dir, "--out", str(out), "--task", "xquad", "--langs", "en,de",
                 "--task-option", "articles=train", "--eval-every", "2", "--eval-task-option", "articles=test",
                 "--max-examples", "16", "--batch-size", "8", "--max-steps", "2", "--no-progress"]) == 0
    record = json.loads((out / "clirbench_train.json").read_text())
    evals = [h for h in record["loss_history"] if "eval_clirbench_multi_en-de_q-de_MaxR" in h]
    assert [h["step"] for h in evals] == [2] and record["eval_task_options"] == {"articles": "test"}
    for h in evals:
        assert 1 <= h["eval_clirbench_multi_en-de_q-de_MaxR"] <= 240
        assert 0 <= h["eval_clirbench_multi_en-de_q-en_MaxR_norm"] <= 100


def test_pool_evaluator_agrees_with_clirbench_run(tiny_bert_dir, tmp_path, capsys):
    """The evaluator's MaxR equals the harness's on the same pool (same encoder, same tie rule)."""
    from sentence_transformers import SentenceTransformer

    from clirbench.train.evaluator import PoolEvaluator

    ev = PoolEvaluator.from_task("parallel:" + str(_tiny_parallel(tmp_path)), ["en", "de"], measures=["MaxR"])
    got = ev(SentenceTransformer(tiny_bert_dir, device="cpu"))
    assert main(["run", "--model", tiny_bert_dir, "--task", "parallel:" + str(tmp_path / "tiny.jsonl"),
                 "--langs", "en,de", "--scenario", "multi", "--output", str(tmp_path / "r"), "--resamples", "10",
                 "--no-progress", "--cache-dir", str(tmp_path / "c")]) == 0
    for path in (tmp_path / "r").rglob("*.q-*.json"):
        rec = json.loads(path.read_text())
        key = f"clirbench_multi_en-de_q-{rec['query_lang']}_MaxR"
        assert got[key] == pytest.approx(rec["measures"]["MaxR"]["value"], abs=1e-9)
    assert ev.primary_metric == "clirbench_multi_en-de_q-en_MaxR" and ev.greater_is_better is False


def _tiny_parallel(tmp_path):
    from conftest import TINY_SENTENCES

    path = tmp_path / "tiny.jsonl"
    rows = [{"item": f"p{i}", "passages": {"en": s, "de": s[::-1]},
             "questions": [{"id": f"q{i}", "text": {"en": s.split()[1], "de": s.split()[1][::-1]}}]}
            for i, s in enumerate(TINY_SENTENCES)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_train_config_checks_every_option_and_the_python_api_takes_them(tiny_bert_dir, tmp_path):
    """``train(model, out, **options)``: the options are TrainConfig's fields, checked before any work."""
    from clirbench.util.errors import ClirbenchError, UnknownNameError
    from clirbench.train import TrainConfig, train

    config = TrainConfig(task="xquad", task_options={"articles": "train"}, max_examples=16, batch_size=8,
                         max_steps=1, progress=False)
    assert config.loss == "jsd+nce" and config.warmup == 0.15 and config.langs == ("en", "de")
    assert config.with_options(recipe="compose", loss=None).warmup == 0.1
    with pytest.raises(TypeError, match=r"unknown training option\(s\) lerning_rate; options: task, "):
        train(tiny_bert_dir, tmp_path / "x", task="xquad", lerning_rate=1e-3)
    for bad, error in [({"recipe": "nope"}, UnknownNameError), ({"loss": "nope"}, UnknownNameError),
                       ({"langs": ("en", "en")}, ClirbenchError), ({"triplets": "t.jsonl"}, ClirbenchError),
                       ({"lr": 0.0}, ValueError), ({"batch_size": 1}, ValueError), ({"max_steps": 0}, ValueError)]:
        with pytest.raises(error):
            config.with_options(**bad)
    out = train(tiny_bert_dir, tmp_path / "api", config, seed=7)
    record = json.loads((out / "clirbench_train.json").read_text())
    assert record["steps"] == 1 and record["seed"] == 7 and record["data"]["task"] == "xquad"
