"""``clirbench export`` (``clirbench.tasks.export``): a task's pools as BEIR folders and TREC qrels
that read back through ``--task beir:<folder>`` with the pool's values."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import clirbench
from clirbench.cli import main
from clirbench.formats.trec import read_qrels
from clirbench.tasks import get_task
from clirbench.tasks.export import export_pools
from cli_helpers import one_line_error

RUN = dict(resamples=10, progress=False)


def _same_value(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a.value == b.value or (math.isnan(a.value) and math.isnan(b.value))


@pytest.mark.parametrize("pool_mode", ["unique", "per-query"])
@pytest.mark.parametrize("langs", ["en,zh", "en,zh,ar"])
def test_every_pool_reads_back_through_beir_with_the_same_values(tmp_path, langs, pool_mode):
    """bm25 on each exported pool (every scenario) gives the values, per-query ones included, of the pool itself."""
    exported = {e.pool: e for e in export_pools("xquad", tmp_path, langs=langs, pool_modes=pool_mode)}
    original = clirbench.run("bm25", "xquad", langs=langs, pool_mode=pool_mode, **RUN)
    assert sorted(exported) == sorted(p.name for p in original.pools)
    assert len(original.pools) == (8 if langs == "en,zh" else 15)
    for pool in original.pools:
        back = clirbench.run("bm25", f"beir:{exported[pool.name].beir}", **RUN).pools
        assert len(back) == 1
        a, b = pool.record, back[0].record
        assert (b.num_queries, b.pool_size, b.query_lang) == (a.num_queries, a.pool_size, a.query_lang)
        assert sorted(b.doc_langs) == sorted(a.doc_langs)
        assert set(a.measures) <= set(b.measures)
        different = [m for m in a.measures if not _same_value(a.measures[m], b.measures[m])]
        assert different == [], pool.name
        assert pool.per_query.query_ids == back[0].per_query.query_ids
        for m, values in pool.per_query.values.items():
            np.testing.assert_array_equal(values, back[0].per_query.values[m])


def test_the_files_hold_languages_qrels_and_exclusions(tmp_path):
    (pool,) = get_task("xquad/multi-1/en-zh-ar/q-zh").pools()
    (e,) = export_pools([pool], tmp_path)
    assert e.beir == tmp_path / "xquad" / "multi-1" / "unique" / "en-zh-ar.q-zh"
    assert e.qrels == tmp_path / "xquad" / "multi-1" / "unique" / "en-zh-ar.q-zh.qrels"
    corpus = [json.loads(line) for line in (e.beir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(d["_id"], d["text"], d["lang"]) for d in corpus] == [(d.id, d.text, d.lang) for d in pool.docs]
    queries = [json.loads(line) for line in (e.beir / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(q["_id"], q["lang"]) for q in queries] == [(q.id, "zh") for q in pool.queries]
    assert read_qrels(e.qrels) == {q: dict(d) for q, d in pool.qrels.items()}
    lines = (e.beir / "qrels" / "test.tsv").read_text().splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore" and len(lines) == 1 + 2 * len(pool.queries)
    excluded = (e.beir / "excluded" / "test.tsv").read_text().splitlines()
    assert excluded[0] == "query-id\tcorpus-id"
    assert {tuple(line.split("\t")) for line in excluded[1:]} == {(q, d) for q, ds in pool.exclusions.items() for d in ds}
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # atomic writes leave no temp file


def test_cli_export_formats_and_pool_modes(tmp_path, capsys):
    assert main(["export", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross", "--query-lang", "zh",
                 "--pool-mode", "all", "--out", str(tmp_path / "both")]) == 0
    out = capsys.readouterr().out
    assert "xquad/mono-cross/en/q-zh: " in out and "xquad/mono-cross+per-query/en/q-zh: " in out
    assert out.splitlines()[-1] == f"exported 2 pools to {tmp_path / 'both'}"
    assert (tmp_path / "both/xquad/mono-cross/per-query/en.q-zh/corpus.jsonl").is_file()
    assert (tmp_path / "both/xquad/mono-cross/unique/en.q-zh.qrels").is_file()
    assert not (tmp_path / "both/xquad/mono-cross/unique/en.q-zh/excluded").exists()  # mono-cross excludes nothing
    assert main(["export", "--task", "xquad/mono-cross/en-zh/q-zh", "--format", "trec", "--out", str(tmp_path / "t")]) == 0
    assert [p.name for p in (tmp_path / "t").rglob("*") if p.is_file()] == ["en.q-zh.qrels"]
    assert main(["export", "--task", "xquad/mono-cross/en-zh/q-zh", "--format", "beir", "--out", str(tmp_path / "b")]) == 0
    assert sorted(p.name for p in (tmp_path / "b").rglob("*") if p.is_file()) == ["corpus.jsonl", "queries.jsonl",
                                                                                    "test.tsv"]


def test_python_api_export_and_beir_and_parallel_tasks(tmp_path):
    """``clirbench.export_pools``; a beir: folder exports as it reads (a re-export of an export is the same files)."""
    (first,) = clirbench.export_pools("xquad/mono-same/zh/q-zh", tmp_path / "a")
    (again,) = clirbench.export_pools(f"beir:{first.beir}", tmp_path / "b", formats=["beir"])
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (again.beir / name).read_bytes() == (first.beir / name).read_bytes()
    assert again.qrels is None


@pytest.mark.parametrize("argv, expected", [
    (["--task", "nope"], "unknown task 'nope'"),
    (["--task", "xquad", "--langs", "en,xx"], "unknown language(s) xx"),
    (["--task", "xquad", "--langs", "en,zh", "--scenario", "multi,foo"], "unknown scenario(s) foo"),
    (["--task", "xquad", "--langs", "en,zh", "--query-lang", "ar"], "query language(s) ar not among the languages run"),
    (["--task", "xquad", "--pool-mode", "each"], "argument --pool-mode/--pool: invalid choice: 'each'"),
    (["--task", "xquad", "--format", "csv"], "argument --format: invalid choice: 'csv'"),
    (["--task", "xquad", "--langs", ""], "--langs '': an empty item"),
])
def test_one_line_errors(tmp_path, capsys, argv, expected):
    line = one_line_error(capsys, ["export", *argv, "--out", str(tmp_path / "out")])
    assert expected in line
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "out").write_text("x")
    line = one_line_error(capsys, ["export", "--task", "xquad/mono-same/en/q-en", "--out", str(tmp_path / "out")])
    assert line.endswith("a file, not a folder")


def test_help(capsys):
    assert main(["export", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: clirbench export") and "--format" in out


def test_beir_reads_exclusions(tmp_path):
    """``excluded/<split>.tsv`` removes a document from one query's ranking (|D| one smaller for it)."""
    folder = tmp_path / "b"
    (folder / "qrels").mkdir(parents=True)
    (folder / "excluded").mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in
                                                 enumerate(["cat mat", "cat hat", "rain spring"])))
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "cat"}\n{"_id": "q2", "text": "rain"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    before = clirbench.run("bm25", f"beir:{folder}", measures=["MaxR_norm", "RR"], **RUN).pools[0]
    (folder / "excluded" / "test.tsv").write_text("query-id\tcorpus-id\nq1\td0\n")
    (pool,) = get_task(f"beir:{folder}").pools()
    assert pool.exclusions == {"q1": frozenset({"d0"})}
    after = clirbench.run("bm25", f"beir:{folder}", measures=["MaxR_norm", "RR"], **RUN).pools[0]
    assert "excluded/test.tsv" in after.record.task.files_sha256
    assert after.per_query.values["RR"].tolist()[0] >= before.per_query.values["RR"].tolist()[0]
    assert after.per_query.values["RR"].tolist()[0] == 1.0
