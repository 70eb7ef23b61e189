"""The Python API as a researcher uses it: docs/python-api.md runs as written;
run/evaluate/compare work in memory, agree with the file-based paths and return typed results with
DataFrames; RunRetriever; importing clirbench stays light."""
from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from clirbench.results.files import is_record_file
import clirbench
from clirbench.stats.paired import Gap
from clirbench.collection import Pool, Text

from xquad_files import XQUAD

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def _python_blocks(text: str) -> list[str]:
    """The bodies of the page's ```python fences, in order."""
    blocks, current, tag = [], None, ""
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current, tag = [], line[3:].strip()
            else:
                if tag == "python":
                    blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_notebook_page_runs_with_the_public_api_only(tmp_path, monkeypatch, capsys):
    """A user-written retriever on a user-built pool, a DataFrame and a paired comparison."""
    blocks = _python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 4
    source = "\n".join(blocks)
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"numpy", "clirbench"}  # public names only: no clirbench.<module> reached into
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(source, str(DOC), "exec"), ns)
    assert list(tmp_path.iterdir()) == []  # nothing written: output_dir defaults to None
    table, per_query, report, ev = ns["table"], ns["per_query"], ns["report"], ns["ev"]
    assert isinstance(table, pd.DataFrame) and isinstance(per_query, pd.DataFrame)
    assert set(table.pool) == {"toy/multi/en-fr/q-en"} and table.measure.is_unique
    assert list(table.columns[-5:]) == ["measure", "value", "ci_low", "ci_high", "n"]
    maxr = per_query[per_query.measure == "MaxR"].set_index("query_id").value
    # word overlap puts each English twin first and its French twin in the tail: MaxR of q-cat
    assert maxr["q-cat"] == 6.0 and len(maxr) == 3
    assert table.set_index("measure").value["MaxR"] == pytest.approx(maxr.mean())
    assert report.measures["MaxR"].diff == pytest.approx(report.measures["MaxR"].mean_b - report.measures["MaxR"].mean_a)
    assert report.a.retriever == "word-overlap" and report.b.retriever == "my-run"
    assert set(ev.aggregate) == {"nDCG@10", "RR"}
    out = capsys.readouterr().out
    assert "B: my-run" in out and "MaxR" in out


def test_import_is_light_and_dir_lists_the_api():
    code = ("import sys, clirbench; names = dir(clirbench); "
            "print(sorted(m for m in ('numpy', 'pandas', 'torch', 'sentence_transformers', 'mteb') if m in sys.modules)); "
            "print(names)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    heavy, names = proc.stdout.splitlines()
    assert heavy == "[]"
    for name in ("run", "evaluate", "compare", "get_task", "list_tasks", "register_task", "Retriever", "Text", "Pool",
                 "RunRetriever", "nDCG", "MaxR", "parse", "load_results", "RunConfig"):
        assert repr(name) in names
    assert clirbench.Pool is Pool and clirbench.Text is Text and str(clirbench.nDCG @ 10) == "nDCG@10"
    assert clirbench.RunConfig.of(resamples=200).statistics.resamples == 200


def test_the_verbs_survive_importing_their_modules():
    """Importing the modules behind the verbs leaves the verbs in place: no submodule is named like a
    verb (Python would bind it to the package's attribute of that name)."""
    package = Path(clirbench.__file__).parent
    verbs = [name for name, (_, attr) in clirbench._LAZY.items() if attr is not None]
    assert [v for v in verbs if (package / f"{v}.py").exists() or (package / v / "__init__.py").exists()] == []
    code = ("import clirbench, clirbench.trec_files, clirbench.api; "
            "e = clirbench.evaluate({'q': {'d': 1}}, {'q': {'d': 1.0}}, ['RR'], resamples=10); "
            "e2 = clirbench.evaluate({'q': {'d': 1}}, {'q': {'d': 1.0}}, ['RR'], resamples=10); "
            "print(e.aggregate['RR'], e2.aggregate['RR'], callable(clirbench.run))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1.0", "1.0", "True"]


# -- run -------------------------------------------------------------------------------------------


def test_run_in_memory_writes_nothing_and_matches_the_written_run(tmp_path, bag_retriever, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    retriever, _ = bag_retriever()
    task = clirbench.get_task("xquad")
    mem = clirbench.run(retriever, task=task, langs="en,de", scenarios="multi", data_dir=XQUAD,
                        resamples=50, progress=False)
    assert list(work.iterdir()) == []
    assert [p.name for p in mem] == ["xquad/multi/en-de/q-en", "xquad/multi/en-de/q-de"]
    assert all(p.path is None and not p.reused for p in mem)
    again, _ = bag_retriever()
    disk = clirbench.run(again, task="xquad", langs="en,de", scenarios="multi", data_dir=XQUAD,
                         output_dir=tmp_path / "out", resamples=50, progress=False)
    for m, d in zip(mem, disk):
        assert m.name == d.name and d.path.exists()
        assert {k: v.to_dict() for k, v in m.measures.items()} == {k: v.to_dict() for k, v in d.measures.items()}
        ids, values = clirbench.load_results(d.path)[0].per_query
        assert ids == m.per_query.query_ids
        for name, column in values.items():
            np.testing.assert_array_equal(column, m.per_query.values[name])
    # the query-language gap: in memory without a file, equal to the one written
    (gap,) = mem.gaps
    (written,) = disk.gaps
    assert gap == written
    assert gap.to_dict() == json.loads((tmp_path / "out").rglob("*.gap.json").__next__().read_text())
    assert Gap.from_dict(gap.to_dict()) == gap
    # DataFrames: one row per pool x measure, one per pool x query x measure
    frame = mem.to_pandas()
    assert len(frame) == sum(len(p.measures) for p in mem)
    row = frame[(frame.pool == "xquad/multi/en-de/q-de") & (frame.measure == "MaxR")].iloc[0]
    assert row.value == mem["xquad/multi/en-de/q-de"].value("MaxR")
    assert (row.doc_langs, row.query_lang, row.retriever) == ("en-de", "de", "test:bag-of-chars")
    pq = mem.to_pandas(per_query=True)
    assert list(pq.columns) == ["pool", "query_id", "measure", "value"]
    assert len(pq) == sum(len(p.per_query.query_ids) * len(p.per_query.values) for p in mem)
    loaded = clirbench.load_results(tmp_path / "out").to_pandas()
    assert sorted(map(tuple, loaded[["pool", "measure", "value"]].values.tolist())) == \
        sorted(map(tuple, frame[["pool", "measure", "value"]].values.tolist()))


def test_compare_in_memory_equals_compare_of_files(tmp_path, bag_retriever):
    first, _ = bag_retriever()
    a = clirbench.run(first, task="xquad", langs="en,de", scenarios="mono-cross", query_langs=["de"],
                      data_dir=XQUAD, output_dir=tmp_path / "a", resamples=50, progress=False)[0]
    bm25 = clirbench.run("bm25", task="xquad", langs="en,de", scenarios="mono-cross", query_langs=["de"],
                         data_dir=XQUAD, output_dir=tmp_path / "b", resamples=50, progress=False)[0]
    mem = clirbench.compare(a, bm25, resamples=100, permutations=100)
    files = clirbench.compare(a.path, bm25.path, resamples=100, permutations=100)
    assert mem.a.path is None and files.a.path == str(a.path)
    assert dataclasses.replace(mem, a=files.a, b=files.b) == files
    assert mem.measures["MaxR"].mean_b == pytest.approx(bm25.value("MaxR"))
    with pytest.raises(TypeError, match="result file path or an in-memory result"):
        clirbench.compare({"MaxR": 1.0}, bm25)


def test_run_refuses_a_task_of_the_wrong_type():
    with pytest.raises(TypeError, match="sequence of Pool"):
        clirbench.run("bm25", task=[{"docs": []}], progress=False)
    with pytest.raises(TypeError, match="sequence of Pool"):
        clirbench.run("bm25", task=42, progress=False)


# -- RunRetriever and evaluate -----------------------------------------------------------------------


def _toy(rng):
    docs = tuple(Text(f"d{i:02d}", f"text {i}", "en" if i % 2 else "fr") for i in range(30))
    queries = tuple(Text(f"q{i}", f"query {i}", "en") for i in range(12))
    qrels = {q.id: {f"d{j:02d}": int(g) for j, g in zip(rng.choice(30, 3, replace=False), rng.integers(1, 3, 3))}
             for q in queries}
    pool = Pool(task="toy", scenario="multi", pool_mode="unique", doc_langs=("en", "fr"), query_lang="en",
                docs=docs, queries=queries, qrels=qrels)
    # a top-15 run with ties; q11 is missing from the run
    run = {q.id: {f"d{j:02d}": float(rng.integers(0, 4)) for j in rng.choice(30, 15, replace=False)}
           for q in queries[:-1]}
    return pool, run


def test_run_retriever_agrees_with_evaluate_and_pytrec_eval():
    pool, run = _toy(np.random.default_rng(7))
    snapshot = json.dumps(run, sort_keys=True)
    adapter = clirbench.RunRetriever(run, spec="my-run")
    assert isinstance(adapter, clirbench.Retriever)
    result = clirbench.run(adapter, task=[pool], measures=["nDCG@10", "RR", "R@100"], resamples=50,
                           progress=False)
    ids, values = result[0].per_query
    ev = clirbench.evaluate(pool.qrels, run, ["nDCG@10", "RR", "R@100"], resamples=50)
    # evaluate scores the queries in the run; the pool also ranks q11 (everything at -inf)
    assert ev.per_query.query_ids == tuple(q for q in ids if q in run)
    ref = pytrec_eval.RelevanceEvaluator(pool.qrels, {"ndcg_cut.10", "recip_rank"}).evaluate(run)
    by_query = {m.query_id: m.value for m in ev.iter_calc() if m.measure == "nDCG@10"}
    for i, q in enumerate(ids):
        if q in run:
            assert values["nDCG@10"][i] == pytest.approx(by_query[q]) == pytest.approx(ref[q]["ndcg_cut_10"])
    assert json.dumps(run, sort_keys=True) == snapshot  # the caller's run is not touched
    assert adapter.describe()["depth"] == 15 and adapter.revision.startswith("sha256:")
    assert clirbench.RunRetriever(run, spec="x").revision == adapter.revision
    assert clirbench.RunRetriever({**run, "q0": {"d00": 9.0}}).revision != adapter.revision


def test_run_retriever_places_missing_documents_after_the_run():
    docs = tuple(Text(d, d, "en") for d in ("a", "b", "c", "d"))
    pool = Pool(task="toy", scenario="mono-same", pool_mode="unique", doc_langs=("en",), query_lang="en",
                docs=docs, queries=(Text("q", "q", "en"),), qrels={"q": {"a": 1}})
    (start, rows), = clirbench.RunRetriever({"q": {"c": 1.0, "zz": 5.0}}).score(pool.queries, pool.docs)
    assert start == 0 and rows.tolist() == [[-math.inf, -math.inf, 1.0, -math.inf]]
    result = clirbench.run(clirbench.RunRetriever({"q": {"c": 1.0}}), task=[pool], measures=["MaxR"],
                           resamples=10, progress=False)
    # c first, then the unretrieved by doc id descending: d, b, a -> a at rank 4
    assert result[0].value("MaxR") == 4.0
    with pytest.raises(ValueError, match="finite"):
        clirbench.RunRetriever({"q": {"c": float("nan")}})


def test_evaluate_keeps_the_old_report_and_adds_per_query_values(tmp_path):
    from clirbench.trec_files import evaluate_files
    from clirbench.formats.trec import write_qrels, write_run

    rng = np.random.default_rng(3)
    pool, run = _toy(rng)
    measures = ["nDCG@10", "AP@1000", "MaxR"]
    ev = clirbench.evaluate(pool.qrels, run, measures, resamples=100)
    write_qrels(tmp_path / "qrels", pool.qrels)
    write_run(tmp_path / "run", run)
    assert ev.to_dict() == evaluate_files(tmp_path / "qrels", tmp_path / "run", measures, resamples=100).to_dict()
    assert ev.to_dict() is not ev.to_dict()
    frame = ev.to_pandas()
    assert list(frame.measure) == measures and list(frame.columns) == ["measure", "value", "ci_low", "ci_high", "n"]
    # MaxR needs the full ranking: no aggregate, per-query inf where a relevant document is missing
    assert ev.aggregate["MaxR"] is None and ev.measures["MaxR"] is None
    assert np.isinf(ev.per_query.values["MaxR"]).any()
    assert ev["nDCG@10"] == pytest.approx(np.mean(ev.per_query.values["nDCG@10"]))
    pq = ev.to_pandas(per_query=True)
    assert list(pq.columns) == ["query_id", "measure", "value"] and len(pq) == len(measures) * len(ev.per_query.query_ids)


def test_run_config_is_the_keyword_options_as_one_checked_value():
    from clirbench.util.errors import ClirbenchError

    config = clirbench.RunConfig.of(langs="en,de", scenarios="mono-cross", query_langs=["de"], data_dir=XQUAD,
                                    resamples=50, correction="bh", output_dir=None, progress=False)
    assert (config.data.langs, config.statistics.resamples, config.statistics.correction) == ("en,de", 50, "bh")
    assert clirbench.RunConfig.of(**config.options()) == config
    with pytest.raises(TypeError, match=r"unknown run option 'resample'; options: langs, scenarios"):
        clirbench.RunConfig.of(resample=2)
    for bad, error in [({"resamples": 0}, ValueError), ({"address": "h:1"}, ClirbenchError),
                       ({"shards": 0}, ValueError), ({"correction": "sidak"}, ClirbenchError),
                       ({"executor": "spark"}, ClirbenchError)]:
        with pytest.raises(error):
            config.with_options(**bad)
    by_config = clirbench.run("bm25", "xquad", config)
    by_keywords = clirbench.run("bm25", task="xquad", langs="en,de", scenarios="mono-cross", query_langs=["de"],
                                data_dir=XQUAD, resamples=50, correction="bh", progress=False)
    assert [repr(p.record.measures) for p in by_config] == [repr(p.record.measures) for p in by_keywords]  # NaN too


# -- output: one rule for the API and the CLI ------------------------------------------------------


def _records(folder: Path) -> dict[str, dict]:
    """The measures of every record under ``folder``, by path relative to it."""
    return {str(p.relative_to(folder)): clirbench.load_results(p)[0].record.to_dict()["measures"]
            for p in sorted(folder.rglob("*.json")) if is_record_file(p)}


def test_run_writes_only_into_an_output_folder_by_the_rule_of_the_cli(tmp_path, monkeypatch):
    """``clirbench.run`` writes nothing by default, a ``RunConfig()`` included; ``output_dir=`` (or the
    config's) writes there; ``clirbench run`` passes its ``--output`` (default ``results``) by that rule."""
    from clirbench.cli import main

    monkeypatch.chdir(tmp_path)
    kw = dict(langs="en,zh", scenarios="mono-cross", query_langs=["zh"], data_dir=XQUAD, resamples=20,
              progress=False)
    assert clirbench.RunConfig().output.output_dir is None
    by_config = clirbench.run("bm25", "xquad", clirbench.RunConfig.of(**kw))
    by_default = clirbench.run("bm25", "xquad", **kw)
    assert list(tmp_path.iterdir()) == [] and all(p.path is None for p in [*by_config, *by_default])
    written = clirbench.run("bm25", "xquad", output_dir="api", **kw)
    assert [p.path for p in written] == [Path("api/bm25/xquad/mono-cross/unique/en.q-zh.json")]
    clirbench.run("bm25", "xquad", clirbench.RunConfig.of(output_dir="config", **kw))
    argv = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross",
            "--query-lang", "zh", "--data-dir", str(XQUAD), "--resamples", "20", "--no-progress"]
    assert main(argv + ["--output", "cli"]) == 0
    assert main(argv) == 0  # the command's default folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api", "cli", "config", "results"]
    expected = {"bm25/xquad/mono-cross/unique/en.q-zh.json": by_default[0].record.to_dict()["measures"]}
    for folder in ("api", "config", "cli", "results"):
        assert _records(tmp_path / folder) == expected, folder
    again = clirbench.run("bm25", "xquad", output_dir="cli", **kw)  # the API reuses what the CLI wrote
    assert [p.reused for p in again] == [True]


# -- a ranker of one's own ---------------------------------------------------------------------------


class _CountingRanker:
    """Exact ranks (``rank.ExactRanker``), counting the calls."""

    def __init__(self, refuse: bool = False):
        from clirbench.rank import ExactRanker

        self.inner, self.refuse = ExactRanker(), refuse
        self.supported: list[tuple[str, ...]] = []
        self.ranked: list[str] = []

    def supports(self, measures) -> None:
        from clirbench.util.errors import ClirbenchError

        self.supported.append(tuple(str(m) for m in measures))
        if self.refuse:
            raise ClirbenchError("this ranker gives no MaxR")
        self.inner.supports(measures)

    def rank(self, retriever, seen, pool):
        self.ranked.append(pool.name)
        return self.inner.rank(retriever, seen, pool)


def test_a_ranker_of_ones_own_ranks_every_pool_instead_of_the_chosen_one(tmp_path):
    from clirbench.util.errors import ClirbenchError

    kw = dict(langs="en,zh", scenarios="multi,mono-cross", data_dir=XQUAD, resamples=20, progress=False,
              measures=["nDCG@10", "MaxR"])
    ranker = _CountingRanker()
    mine = clirbench.run("bm25", "xquad", ranker=ranker, **kw)
    chosen = clirbench.run("bm25", "xquad", **kw)
    assert ranker.supported == [("nDCG@10", "MaxR")]  # checked once, before any work
    assert ranker.ranked == [p.name for p in chosen] and len(ranker.ranked) == 4
    assert [repr(p.record.measures) for p in mine] == [repr(p.record.measures) for p in chosen]
    assert [g.to_dict() for g in mine.gaps] == [g.to_dict() for g in chosen.gaps]
    # a ranker refusing the measures stops the run before any pool is ranked
    refusing = _CountingRanker(refuse=True)
    with pytest.raises(ClirbenchError, match="this ranker gives no MaxR"):
        clirbench.run("bm25", "xquad", ranker=refusing, output_dir=tmp_path / "out", **kw)
    assert refusing.ranked == [] and not (tmp_path / "out").exists()
    # through a RunConfig, too
    again = _CountingRanker()
    clirbench.run("bm25", "xquad", clirbench.RunConfig.of(**kw), ranker=again)
    assert again.ranked == ranker.ranked
