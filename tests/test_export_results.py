"""``clirbench export-results`` (docs/results.md#exports): each export read back by its own
ecosystem's reader. ir_metadata: YAML checked against the published schema's sections and fields
(v0.1, ir-metadata.org's checklists), its command run again, its annotated run scored by
``clirbench trec_eval`` against the pool's exported qrels; MTEB: ``mteb.ResultCache`` /
``TaskResult.from_disk`` / ``ModelMeta`` and clirbench's own MTEB reader; Hugging Face
``.eval_results``: parsed with a YAML parser against the Hub's documented fields."""
from __future__ import annotations

import datetime as dt
import gzip
import json
import shlex
from pathlib import Path

import numpy as np
import pytest
import yaml

from clirbench.cli import main
from clirbench.cli.export_results import FORMATS
from clirbench.measures import parse
from clirbench.mteb.names import score_key
from clirbench.provenance.export import EXPORT_FORMATS
from clirbench.provenance.ir_metadata import read_header
from clirbench.results import read_per_query, read_result
from cli_helpers import one_line_error
from xquad_files import XQUAD

POOL = "bm25/xquad/mono-cross/unique/zh.q-en"

# ir_metadata schema v0.1: the fields of each PRIMAD section's checklist (https://www.ir-metadata.org)
PRIMAD = {"platform", "research goal", "implementation", "method", "actor", "data"}
SCHEMA = {
    "platform": {"hardware": {"cpu": {"model", "architecture", "operation mode", "number of cores"},
                              "gpu": {"architecture", "number of cores", "ram"}, "ram": None},
                 "operating system": {"kernel", "distribution"}, "software": {"libraries", "retrieval toolkit"}},
    "implementation": {"executable": {"cmd"}, "source": {"lang", "repository", "commit"}},
    "method": {"automatic", "score ties", "indexing", "retrieval"},
    "research goal": {"venue", "publication", "evaluation"},
    "data": {"test collection", "training data", "other"},
}
# what clirbench adds, documented in docs/results.md#exports
EXTENSIONS = {"resources", "confidence intervals", "files sha256", "revision"}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(results, board): bm25 on XQuAD en+zh with saved runs 50 deep, and the board built from it."""
    root = tmp_path_factory.mktemp("export")
    results, boards = root / "results", root / "lb"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--data-dir", str(XQUAD),
                 "--resamples", "200", "--no-progress", "--save-run", "--depth", "50", "--output", str(results)]) == 0
    assert main(["leaderboard", "build", str(results), "--dir", str(boards), "--data-dir", str(XQUAD),
                 "--command", "clirbench run --model bm25 --task xquad --langs en,zh --save-run"]) == 0
    return results, boards / "xquad.json"


def _export(capsys, source, fmt, out) -> Path:
    assert main(["export-results", str(source), "--format", fmt, "--output", str(out), "--data-dir", str(XQUAD)]) == 0
    assert f"in {fmt} format under {out}" in capsys.readouterr().out
    return Path(out)


def _fields_in_schema(meta: dict) -> list[str]:
    """Keys of ``meta`` that neither the schema's checklists nor clirbench's documented additions name."""
    unknown = [k for k in meta if k not in PRIMAD | EXTENSIONS | {"schema-version", "run-version", "tag"}]

    def walk(value, allowed, where):
        if allowed is None or not isinstance(value, dict):
            return
        names = allowed if isinstance(allowed, (set, frozenset)) else set(allowed)
        for key, item in value.items():
            if key not in names and key not in EXTENSIONS:
                unknown.append(f"{where}.{key}")
            elif isinstance(allowed, dict):
                walk(item, allowed.get(key), f"{where}.{key}")

    for section, allowed in SCHEMA.items():
        walk(meta.get(section, {}), allowed, section)
    for key in meta["data"]["test collection"]:
        if key not in {"name", "source", "qrels", "topics", "ir_datasets"} | EXTENSIONS:
            unknown.append(f"data.test collection.{key}")
    for key in meta["research goal"]["evaluation"]:
        if key not in {"reported measures", "reported_measures", "baseline", "significance test"} | EXTENSIONS:
            unknown.append(f"research goal.evaluation.{key}")
    return unknown


def test_the_cli_offers_the_exports_formats():
    assert FORMATS == EXPORT_FORMATS


def test_ir_metadata_reads_back_against_the_schema_and_its_run_scores_as_recorded(made, tmp_path, capsys):
    results, _ = made
    out = _export(capsys, results, "ir_metadata", tmp_path / "irm")
    record = read_result(results / f"{POOL}.json")
    stem = out / POOL
    meta = yaml.safe_load(stem.with_name(stem.name + ".ir_metadata.yaml").read_text(encoding="utf-8"))
    assert meta["schema-version"] == 0.1 and meta["tag"] == "bm25"
    assert _fields_in_schema(meta) == []
    cpu = meta["platform"]["hardware"]["cpu"]
    assert (cpu["model"], cpu["number of cores"]) == (record.hardware.cpu, record.hardware.cores)
    assert meta["platform"]["operating system"]["kernel"] == record.hardware.platform
    assert f"clirbench=={record.clirbench_version}" in meta["platform"]["software"]["retrieval toolkit"]
    assert meta["method"]["automatic"] is True and meta["method"]["retrieval"][-1]["name"] == "bm25"
    assert meta["method"]["retrieval"][-1]["params"]["k1"] == record.retriever.settings["k1"]
    assert "en: snowball porter" in meta["method"]["indexing"]["stemmer"]
    assert {"ndcg_cut_10", "recip_rank", "MaxR"} <= set(meta["research goal"]["evaluation"]["reported measures"])
    assert meta["data"]["test collection"]["files sha256"] == dict(record.task.files_sha256)
    cost = record.cost.to_dict()
    assert meta["resources"]["time"]["cold seconds"] == cost["cold_seconds"]
    assert meta["resources"]["memory"]["index bytes"] == cost["index_bytes"]

    # the run file: the same YAML in its header, then the saved run's lines as they were
    run_text = stem.with_name(stem.name + ".run").read_text(encoding="utf-8")
    assert read_header(run_text) == meta
    with gzip.open(results / f"{POOL}.run.gz", "rt", encoding="utf-8") as handle:
        saved = handle.read()
    assert run_text.endswith(saved) and run_text[: -len(saved)].count("\n") == sum(
        1 for line in run_text.splitlines() if line.startswith("#"))
    # ... and trec_eval reads it (the header is comments): the record's nDCG@10, to trec_eval's 4 decimals
    assert main(["export", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross", "--format", "trec",
                 "--data-dir", str(XQUAD), "--out", str(tmp_path / "qrels")]) == 0
    capsys.readouterr()
    qrels = tmp_path / "qrels" / "xquad" / "mono-cross" / "unique" / "zh.q-en.qrels"
    assert main(["trec_eval", "-m", "ndcg_cut.10", str(qrels), str(stem.with_name(stem.name + ".run"))]) == 0
    printed = float(capsys.readouterr().out.split()[-1])
    assert printed == pytest.approx(record.measures["nDCG@10"].value, abs=5e-5)

    # the per-query table travels with it
    ids, values = read_per_query(results / f"{POOL}.json")
    ids2, values2 = read_per_query(stem.with_name(stem.name + ".perquery.tsv"))
    assert ids2 == ids and all(np.array_equal(values[m], values2[m], equal_nan=True) for m in values)


def test_the_ir_metadata_command_remakes_the_record(made, tmp_path, capsys):
    """``implementation.executable.cmd`` of a result file is a clirbench command that gives its values again."""
    results, _ = made
    out = _export(capsys, results / f"{POOL}.json", "ir_metadata", tmp_path / "irm")
    stem = out / POOL
    meta = yaml.safe_load(stem.with_name(stem.name + ".ir_metadata.yaml").read_text(encoding="utf-8"))
    argv = shlex.split(meta["implementation"]["executable"]["cmd"])
    assert argv[:2] == ["clirbench", "run"] and "--save-run" in argv
    assert main([*argv[1:], "--data-dir", str(XQUAD), "--output", str(tmp_path / "again"), "--no-progress"]) == 0
    again = read_result(tmp_path / "again" / f"{POOL}.json")
    first = read_result(results / f"{POOL}.json")
    assert {k: v.value for k, v in again.measures.items()} == pytest.approx(
        {k: v.value for k, v in first.measures.items()}, nan_ok=True)


def test_ir_metadata_of_a_board_keeps_its_command_and_per_query_values(made, tmp_path, capsys):
    results, board = made
    out = _export(capsys, board, "ir_metadata", tmp_path / "irm-board")
    stem = out / POOL
    meta = yaml.safe_load(stem.with_name(stem.name + ".ir_metadata.yaml").read_text(encoding="utf-8"))
    assert meta["implementation"]["executable"]["cmd"] == "clirbench run --model bm25 --task xquad --langs en,zh --save-run"
    assert _fields_in_schema(meta) == []
    ids, values = read_per_query(results / f"{POOL}.json")
    ids2, values2 = read_per_query(stem.with_name(stem.name + ".perquery.tsv"))
    order = np.argsort(np.array(ids, dtype=object), kind="stable")
    assert list(ids2) == sorted(ids)
    for m in values2:  # the board keeps the main measures, as float32
        assert np.array_equal(values[m][order].astype("<f4"), values2[m].astype("<f4"), equal_nan=True)
    assert set(values2) == {"nDCG@1", "RR"}


def test_mteb_reads_the_results_layout_back(made, tmp_path, capsys):
    mteb = pytest.importorskip("mteb")
    from mteb.models import ModelMeta
    from mteb.results import TaskResult

    results, board = made
    for source in (results, board):
        out = _export(capsys, source, "mteb", tmp_path / f"mteb-{Path(source).name}")
        cache = mteb.ResultCache(out)
        loaded = cache.load_results(include_remote=False)
        (model,) = loaded.model_results
        record = read_result(results / f"{POOL}.json")
        assert (model.model_name, model.model_revision) == ("clirbench/bm25", record.retriever.revision)
        names = {t.task_name for t in model.task_results}
        assert names == {f"clirbench.xquad.{s}.unique" for s in ("multi", "multi-1", "mono-same", "mono-cross")}
        for path in cache.get_cache_paths(include_remote=False):
            assert TaskResult.from_disk(path).task_name in names
        meta_file = next(out.rglob("model_meta.json"))
        meta = ModelMeta.model_validate_json_resolved(meta_file.read_text(encoding="utf-8"))
        assert (meta.name, meta.revision, meta.model_type) == ("clirbench/bm25", record.retriever.revision, ["sparse"])
        task = next(t for t in model.task_results if t.task_name == "clirbench.xquad.mono-cross.unique")
        scores = next(s for s in task.scores["test"] if s["hf_subset"] == "zh.q-en")
        assert scores["languages"] == ["eng-Latn", "zho-Hans"]
        for name, mv in record.measures.items():
            if np.isfinite(mv.value):
                assert scores[score_key(name)] == mv.value
                assert scores["clirbench_ci"][score_key(name)] == [mv.ci_low, mv.ci_high]
        assert scores["main_score"] == record.measures["nDCG@1"].value  # the scenario's first main measure
        assert scores["clirbench_num_queries"] == record.num_queries


def test_mteb_predictions_are_the_saved_runs_and_clirbench_reads_the_layout_back(made, tmp_path, capsys):
    mteb = pytest.importorskip("mteb")
    import clirbench.mteb

    results, _ = made
    out = _export(capsys, results, "mteb", tmp_path / "mteb")
    record = read_result(results / f"{POOL}.json")
    pred = json.loads(next(out.rglob("clirbench.xquad.mono-cross.unique_predictions.json")).read_text(encoding="utf-8"))
    assert pred["mteb_model_meta"] == {"model_name": "clirbench/bm25", "revision": record.retriever.revision}
    run: dict = {}
    with gzip.open(results / f"{POOL}.run.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            qid, _, doc, _, score, _ = line.split()
            run.setdefault(qid, {})[doc] = float(score)
    assert pred["zh.q-en"]["test"] == run and len(next(iter(run.values()))) == 50
    # clirbench's MTEB reader turns the layout back into records with the same values
    model = mteb.ResultCache(out).load_results(include_remote=False).model_results[0]
    paths = clirbench.mteb.to_results(model, tmp_path / "back")
    back = read_result(next(p for p in paths if p.as_posix().endswith("mono-cross/unique/zh.q-en.json")))
    for name, mv in record.measures.items():
        if np.isfinite(mv.value):
            assert back.measures[name].value == mv.value


HF_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes"}
HF_DATASET = {"id", "task_id", "revision"}


def test_hugging_face_eval_results_parse_with_the_documented_fields(made, tmp_path, capsys):
    results, board = made
    for source in (results, board):
        out = _export(capsys, source, "hf-eval-results", tmp_path / f"hf-{Path(source).name}")
        files = sorted((out / "bm25" / ".eval_results").glob("*.yaml"))
        assert [f.name for f in files] == [f"clirbench-xquad-{s}.yaml" for s in ("mono-cross", "mono-same", "multi-1",
                                                                                 "multi")]
        seen = 0
        for file in files:
            items = yaml.safe_load(file.read_text(encoding="utf-8"))
            assert isinstance(items, list) and items
            for item in items:
                assert set(item) <= HF_KEYS and {"dataset", "value"} <= set(item)
                assert set(item["dataset"]) <= HF_DATASET and {"id", "task_id"} <= set(item["dataset"])
                assert item["dataset"]["id"] == "google/xquad"
                pool_id, _, measure = item["dataset"]["task_id"].rpartition("/")
                scenario, langs, query = pool_id.split("/")
                stem = f"{langs}.{query}"
                record = read_result(results / "bm25" / "xquad" / scenario / "unique" / f"{stem}.json")
                assert item["value"] == record.measures[measure].value
                assert dt.datetime.fromisoformat(item["date"]) == dt.datetime.fromisoformat(record.created_at)
                assert parse(measure) and f"n={record.num_queries} queries" in item["notes"]
                seen += 1
        assert seen == 2 * 5 + 6 * 2  # multi: 5 main measures on 2 pools; the others: 2 on 6 pools


def test_an_output_inside_the_results_folder_is_refused(made, capsys):
    results, _ = made
    line = one_line_error(capsys, ["export-results", str(results), "--format", "mteb", "--output", str(results / "x")])
    assert "inside the results folder" in line
    assert main(["export-results", str(results), "--format", "csv", "--output", "x"]) == 2
