"""Numeric options outside their domain are refused by name, in one line, before any work;
resample counts and bootstrap memory are bounded."""
import json
import time
import tracemalloc

import numpy as np
import pytest

from clirbench import stats
from clirbench.util import checks
import clirbench.stats.bootstrap  # noqa: F401  (stats.bootstrap below)
from clirbench.cli import main
from clirbench.stats.paired import compare
from clirbench.api import evaluate
from clirbench.retrievers.psq.train import train_ibm1
from clirbench.runner import run
from clirbench.formats.trec import write_qrels, write_run

RUN = ["run", "--model", "bm25", "--task", "xquad"]
EVALUATE = ["evaluate", "--qrels", "q.txt", "--run", "r.txt"]
COMPARE = ["compare", "a.json", "b.json"]
PSQ = ["psq", "train", "--bitext", "b.tsv", "--src", "fr", "--tgt", "en", "--out", "t.json.gz"]
SWEEP = ["sweep", "config.yaml"]

INT_POSITIVE = ["0", "-1", "1.5", "nan", "abc", ""]
RESAMPLES = ["0", "-5", "1000001", "1000000000000", "nan", "1e3"]
SEED = ["-1", "nan", "1.0", str(2**63)]
PROBABILITY = ["nan", "inf", "-inf", "-0.1", "1.5"]
POSITIVE_FLOAT = ["0", "-1", "nan", "inf", "x"]
NONNEGATIVE_FLOAT = ["-1", "-0.5", "nan", "inf", "-inf"]

# every numeric option of every subcommand, with its bad values
OPTIONS = [
    (RUN, "--batch-size", INT_POSITIVE),
    (RUN, "--resamples", RESAMPLES),
    (RUN, "--seed", SEED),
    (RUN + ["--translate", "docs", "--translator", "gold"], "--translation-batch-size", INT_POSITIVE),
    (EVALUATE, "--resamples", RESAMPLES),
    (EVALUATE, "--seed", SEED),
    (COMPARE, "--resamples", RESAMPLES),
    (COMPARE, "--permutations", RESAMPLES),
    (COMPARE, "--seed", SEED),
    (PSQ, "--iterations", INT_POSITIVE),
    (PSQ, "--min-prob", PROBABILITY),
    (SWEEP, "--cpus-per-cell", POSITIVE_FLOAT),
    (SWEEP, "--gpus-per-cell", NONNEGATIVE_FLOAT),
]
CASES = [pytest.param(argv, opt, bad, id=f"{argv[0]}{opt}={bad}") for argv, opt, values in OPTIONS for bad in values]


@pytest.mark.parametrize("argv, option, bad", CASES)
def test_every_numeric_option_refuses_bad_values_by_name(argv, option, bad, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written; if it were, it lands here
    t0 = time.perf_counter()
    code = main(argv + [f"{option}={bad}"])
    err = capsys.readouterr().err
    assert time.perf_counter() - t0 < 1.0
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clirbench: error:"), err
    assert f"argument {option}:" in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []


def test_permutations_error_names_permutations_not_resamples(capsys):
    main(COMPARE + ["--permutations", "0"])
    err = capsys.readouterr().err
    assert "--permutations" in err and "resamples" not in err


def test_psq_min_prob_nan_used_to_exit_0_with_an_empty_table(tmp_path, capsys):
    bitext = tmp_path / "b.tsv"
    bitext.write_text("le chat\tthe cat\nle chien\tthe dog\n", encoding="utf-8")
    out = tmp_path / "t.json.gz"
    code = main(["psq", "train", "--bitext", str(bitext), "--src", "fr", "--tgt", "en", "--out", str(out),
                 "--min-prob", "nan"])
    assert code == 2 and "argument --min-prob" in capsys.readouterr().err and not out.exists()
    assert main(["psq", "train", "--bitext", str(bitext), "--src", "fr", "--tgt", "en", "--out", str(out),
                 "--min-prob", "0.01"]) == 0 and out.exists()


def test_grid_resamples_is_checked_too(capsys):
    assert main(["sweep", "--task", "xquad", "--models", "bm25", "--resamples", "0"]) == 2
    assert "--resamples" in capsys.readouterr().err
    for argv in (["sweep"], ["sweep", "--task", "xquad"], ["sweep", "x.yaml", "--models", "bm25"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("clirbench: error: sweep: give a config file") and err.count("\n") == 1
    assert main(["sweep", "--task", "xquad", "--models", "bm25", "--translations", "none,gold"]) == 2
    assert "expected none, query:<translator> or docs:<translator>" in capsys.readouterr().err


# -- the Python API validates too: ValueError naming the parameter -------------------------------


@pytest.mark.parametrize("call, name", [
    (lambda: evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, resamples=0), "resamples"),
    (lambda: evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, seed=-1), "seed"),
    (lambda: evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, resamples=True), "resamples"),
    (lambda: compare("a.json", "b.json", permutations=0), "permutations"),
    (lambda: compare("a.json", "b.json", resamples=10**12), "resamples"),
    (lambda: compare("a.json", "b.json", confidence=float("nan")), "confidence"),
    (lambda: run("bm25", resamples=0), "resamples"),
    (lambda: run("bm25", seed=-3), "seed"),
    (lambda: run("bm25", batch_size=0), "batch_size"),
    (lambda: stats.bootstrap_means([1.0, 2.0], resamples=-1), "resamples"),
    (lambda: stats.bootstrap_ci([1.0, 2.0], confidence=1.5), "confidence"),
    (lambda: stats.randomization_test([1.0], [2.0], resamples=0), "resamples"),
    (lambda: stats.paired_bootstrap([1.0], [2.0], seed=-1), "seed"),
    (lambda: train_ibm1([["a"]], [["b"]], min_prob=float("nan")), "min_prob"),
    (lambda: train_ibm1([["a"]], [["b"]], iterations=0), "iterations"),
])
def test_api_functions_name_the_bad_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call()


def test_invalid_resamples_is_reported_before_a_clash_with_an_earlier_result(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in [
        {"item": "i1", "passages": {"en": "the cat sat on the mat", "fr": "le chat"},
         "questions": [{"id": "q1", "en": "cat", "fr": "chat"}]},
        {"item": "i2", "passages": {"en": "a dog barked", "fr": "un chien"},
         "questions": [{"id": "q2", "en": "dog", "fr": "chien"}]},
    ]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    base = ["run", "--model", "bm25", "--task", f"parallel:{data}", "--scenario", "mono-cross",
            "--output", str(out), "--no-progress"]
    assert main(base + ["--resamples", "50"]) == 0
    capsys.readouterr()
    assert main(base + ["--resamples", "0"]) == 2
    err = capsys.readouterr().err
    assert "argument --resamples" in err and "exists" not in err
    with pytest.raises(ValueError, match="^resamples must"):
        run("bm25", task=f"parallel:{data}", scenarios="mono-cross", output_dir=out, resamples=0, progress=False)


# -- item 8: bounded resamples and bootstrap memory ---------------------------------------------


def _trec(tmp_path, queries: int = 3):
    write_qrels(tmp_path / "q.txt", {f"q{i}": {"a": 1, "b": 1} for i in range(queries)})
    write_run(tmp_path / "r.txt", {f"q{i}": {"a": 1.0, "x": 2.0 + i, "b": 0.5} for i in range(queries)})
    return str(tmp_path / "q.txt"), str(tmp_path / "r.txt")


@pytest.mark.parametrize("argv", [
    ["evaluate", "--resamples", "100000000"],
    ["evaluate", "--resamples", "1000000000000"],
    ["compare", "a.json", "b.json", "--permutations", "1000000000000"],
])
def test_huge_counts_give_one_line_fast(argv, tmp_path, capsys):
    if argv[0] == "evaluate":
        q, r = _trec(tmp_path)
        argv = argv + ["--qrels", q, "--run", r]
    t0 = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - t0 < 0.5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "between 1 and 1,000,000" in err[0]


def test_bootstrap_memory_is_checked_up_front_and_names_what_it_needs():
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"needs about 29\.8 GiB"):
        stats.bootstrap_means(np.zeros((3, 2000)), resamples=checks.MAX_RESAMPLES)
    assert time.perf_counter() - t0 < 0.5


def test_moderate_large_counts_still_compute_in_bounded_memory(tmp_path, capsys):
    values = np.random.default_rng(0).random((3, 4))
    resamples = 200_000
    tracemalloc.start()
    means = stats.bootstrap_means(values, resamples)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert means.shape == (resamples, 4)
    # the means themselves (6.4 MB) plus chunk buffers of at most 2**21 numbers each
    assert peak < means.nbytes + 4 * 8 * (1 << 21)
    # and through the CLI, at the documented maximum, on 3 queries
    q, r = _trec(tmp_path)
    assert main(["evaluate", "--json", "--qrels", q, "--run", r, "--measures", "nDCG@10,RR",
                 "--resamples", str(checks.MAX_RESAMPLES)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bootstrap"]["resamples"] == checks.MAX_RESAMPLES
    assert report["measures"]["RR"]["ci_low"] <= report["measures"]["RR"]["value"] <= report["measures"]["RR"]["ci_high"]


def test_flat_bincount_for_few_queries_draws_the_same_resamples_as_the_row_loop(monkeypatch):
    values = np.random.default_rng(1).random((40, 2))
    flat = stats.bootstrap_means(values, 500, seed=7)
    monkeypatch.setattr(stats.bootstrap, "_FLAT_BINCOUNT", 0)
    loop = stats.bootstrap_means(values, 500, seed=7)
    np.testing.assert_array_equal(flat, loop)
