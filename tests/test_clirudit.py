"""CLIRudit: parquet fixtures in the upstream schema, loaded through the real-file code path."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task

DOCS = [("d1", "Le travail", "Une étude", "Les ouvriers du Québec."),
        ("d2", "La santé", None, "Soins et hôpitaux au Canada."),
        ("d3", "Histoire", "", "Un deux trois quatre cinq six sept huit.")]
DOCS_EN = [("d1", "Work", "A study", "Workers of Quebec."), ("d2", "Health", None, "Care and hospitals."),
           ("d3", "History", "", "One two three four five six seven eight.")]
QUERIES = [(101, "workers"), (102, "hospitals"), (103, "history"), (104, "unjudged")]
QRELS = [(101, "d1", 1), (102, "d2", 1), (103, "d3", 1), (103, "d1", 1)]


def write_clirudit(folder, shards: bool = False, disciplines: bool = False):
    def docs(rows):
        cols = {"docid": [r[0] for r in rows], "title": [r[1] for r in rows],
                "subtitle": [r[2] for r in rows], "abstract": [r[3] for r in rows]}
        if disciplines:
            cols["discipline"] = ["Sociologie", "Santé", "Histoire"]
        return pa.table(cols)

    qrels = pa.table({"qid": pa.array([r[0] for r in QRELS], pa.int64()), "docid": [r[1] for r in QRELS],
                      "rel": pa.array([r[2] for r in QRELS], pa.int64())})
    parts = {("docs", "fr.test"): docs(DOCS), ("docs", "en.test"): docs(DOCS_EN),
             ("queries", "en.test"): pa.table({"qid": pa.array([q for q, _ in QUERIES], pa.int64()),
                                               "query": [t for _, t in QUERIES]}),
             ("qrels", "en_fr.test"): qrels, ("qrels", "en_en.test"): qrels}
    for (config, split), table in parts.items():
        (folder / config).mkdir(parents=True, exist_ok=True)
        if shards:  # the hub's push_to_hub naming, two shards
            half = table.num_rows // 2
            pq.write_table(table.slice(0, half), folder / config / f"{split}-00000-of-00002.parquet")
            pq.write_table(table.slice(half), folder / config / f"{split}-00001-of-00002.parquet")
        else:
            pq.write_table(table, folder / config / f"{split}.parquet")
    return folder


def test_loads_fixture_with_exact_records(tmp_path):
    folder = write_clirudit(tmp_path / "c")
    with pytest.warns(UserWarning, match="counts differ from the task card"):
        (pool,) = get_task("clirudit").pools(None, data_dir=folder)
    assert (pool.task, pool.scenario, pool.doc_langs, pool.query_lang, pool.subset) == \
        ("clirudit", "retrieval", ("fr",), "en", "")
    assert [d.id for d in pool.docs] == ["d1", "d2", "d3"]
    assert pool.docs[0].text == "Le travail Une étude Les ouvriers du Québec."
    assert pool.docs[1].text == "La santé Soins et hôpitaux au Canada."  # missing subtitle skipped
    assert [q.id for q in pool.queries] == ["101", "102", "103"]  # int64 qid -> str; unjudged dropped
    assert pool.qrels["103"] == {"d3": 1, "d1": 1}
    assert pool.source["counts"] == {"queries": 4, "docs_fr": 3, "qrels_fr": 4}
    assert set(pool.source["files_sha256"]) == {"queries/en.test.parquet", "docs/fr.test.parquet",
                                                "qrels/en_fr.test.parquet"}


def test_card_agrees_with_fixture_counts_and_schema(tmp_path):
    task = get_task("clirudit")
    card = task.card
    assert card.license == "CC-BY-NC-4.0" and card.languages == ("en", "fr")
    assert card.main_measures == {"retrieval": ("AP@1000", "R@100")}
    assert card.expected == {"docs_fr": 16389, "docs_en": 16389, "queries": 357710,
                             "qrels_fr": 360596, "qrels_en": 360596}
    folder = write_clirudit(tmp_path / "c")
    fixture_card = dataclasses.replace(card, expected={"docs_fr": 3, "docs_en": 3, "queries": 4,
                                                       "qrels_fr": 4, "qrels_en": 4})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # counts equal to the card: no warning
        pools = type(task)(fixture_card).pools("all", data_dir=folder)
    assert {p.doc_langs for p in pools} == {("fr",), ("en",)}
    assert {k for p in pools for k in p.source["counts"]} == set(card.expected)


def test_hub_shards_and_gold_translation_side(tmp_path):
    folder = write_clirudit(tmp_path / "c", shards=True)
    with pytest.warns(UserWarning):
        fr, en = get_task("clirudit").pools("all", data_dir=folder)
    assert en.doc_langs == ("en",) and en.docs[0].text == "Work A study Workers of Quebec."
    assert fr.qrels == en.qrels
    assert len(fr.source["files_sha256"]) == 6  # 3 parts x 2 shards


def test_max_doc_tokens_truncates_and_changes_subset(tmp_path):
    folder = write_clirudit(tmp_path / "c")
    with pytest.warns(UserWarning):
        (pool,) = get_task("clirudit").pools(None, data_dir=folder, max_doc_tokens="4")
    assert pool.docs[2].text == "Histoire Un deux trois"
    assert pool.docs[1].text == "La santé Soins et"
    assert pool.subset == "max_doc_tokens=4" and pool.source["max_doc_tokens"] == 4
    with pytest.raises(UnknownNameError, match="positive integer"):
        get_task("clirudit").pools(None, data_dir=folder, max_doc_tokens="0")


def test_missing_and_malformed_files_fail_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError) as err:
        get_task("clirudit").pools(None, data_dir=tmp_path / "empty")
    assert "docs/fr.test.parquet" in str(err.value) and "\n" not in str(err.value)
    folder = write_clirudit(tmp_path / "c")
    (folder / "qrels" / "en_fr.test.parquet").unlink()
    with pytest.raises(DataNotFoundError, match="qrels/en_fr.test.parquet"):
        get_task("clirudit").pools(None, data_dir=folder)
    pq.write_table(pa.table({"qid": [101], "docid": ["zzz"], "rel": [1]}), folder / "qrels" / "en_fr.test.parquet")
    with pytest.raises(MalformedDataError, match="'zzz' is not in docs/fr"):
        get_task("clirudit").pools(None, data_dir=folder)
    pq.write_table(pa.table({"docid": ["d1"], "title": ["t"]}), folder / "docs" / "fr.test.parquet")
    with pytest.raises(MalformedDataError, match="missing column"):
        get_task("clirudit").pools(None, data_dir=folder)
    with pytest.raises(UnknownNameError, match="unknown document language"):
        get_task("clirudit").pools("de", data_dir=folder)


def test_run_end_to_end_with_discipline_breakdown(tmp_path, bag_retriever, monkeypatch):
    import clirbench.results.files as files
    from clirbench.results import breakdown, read_per_query, read_result
    from clirbench.runner import run
    from clirbench.tasks.clirudit import query_groups

    writes = []
    real_write = files.write_text_atomic
    monkeypatch.setattr(files, "write_text_atomic", lambda path, text: (writes.append(str(path)), real_write(path, text)))
    folder = write_clirudit(tmp_path / "c", disciplines=True)
    retriever, _ = bag_retriever()
    with pytest.warns(UserWarning):
        report = run(retriever, task="clirudit", langs=None, data_dir=folder, output_dir=tmp_path / "out",
                     measures=["AP@1000", "R@100"], resamples=50, progress=False)
        (pool,) = get_task("clirudit").pools(None, data_dir=folder)
    (outcome,) = report.pools
    assert outcome.record.to_dict()["num_queries"] == 3 and outcome.record.to_dict()["pool_size"] == 3
    assert set(outcome.record.to_dict()["breakdown"]["discipline"]) == {"Sociologie", "Santé", "Histoire"}  # the runner's
    assert query_groups(pool) == {"101": ("Sociologie",), "102": ("Santé",), "103": ("Histoire", "Sociologie")}
    assert writes.count(str(outcome.path)) == 1  # the breakdown is in the single write, not a rewrite
    ids, values = read_per_query(outcome.path)
    table = breakdown(ids, values, query_groups(pool))  # recomputed from the written per-query table
    result = read_result(outcome.path)
    per_query = json.loads(outcome.path.read_text())["breakdown"]["discipline"]
    assert per_query == table and dict(result.breakdown["discipline"]["Sociologie"])["n"] == 2
    assert outcome.record.to_dict()["breakdown"]["discipline"] == table  # the record returned is the one written
    ap = dict(zip(ids, values["AP@1000"]))
    assert table["Sociologie"]["AP@1000"] == pytest.approx(np.mean([ap["101"], ap["103"]]))
    assert table["Santé"] == {"n": 1, "AP@1000": ap["102"], "R@100": 1.0}


def test_result_breakdown_field_is_optional_and_validated():
    from clirbench.results import Result, breakdown

    table = breakdown(["a", "b", "c"], {"R@100": np.array([1.0, 0.0, np.nan])}, {"a": ["x"], "b": ["x", "y"], "c": ["y"]})
    assert table == {"x": {"n": 2, "R@100": 0.5}, "y": {"n": 2, "R@100": 0.0}}
    base = dict(task={"id": "t", "source": "s"}, qrels_sha256="h", scenario="retrieval", pool_mode="unique",
                pool_size=1, doc_langs=("fr",), query_lang="en", num_queries=1, retriever={"spec": "x"}, measures={})
    assert "breakdown" not in Result(**base).to_dict()  # old records keep their exact shape
    assert Result(**base, breakdown={"discipline": table}).to_dict()["breakdown"]["discipline"] == table
    with pytest.raises(ValueError, match="integer n"):
        Result(**base, breakdown={"discipline": {"x": {"R@100": 0.5}}})
