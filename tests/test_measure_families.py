"""One record per measure family: names, ranges, directions (incl. SameLangFirst's best at 50)."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from clirbench.cli import main
from clirbench.leaderboard import boards, store
from clirbench.leaderboard.validate import value_range
from clirbench.measures import FAMILIES, MAIN_MEASURES, Measure, SameLangFirst, parse
from clirbench.mteb.names import score_key
from clirbench.scenarios import MAIN_MEASURES as MAIN_NAMES, SCENARIOS
from trec_keys import pytrec_key


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_round_trips_and_has_a_complete_record(name):
    f = FAMILIES[name]
    m = Measure(name, 10 if f.cutoff == "required" else None)
    assert parse(str(m)) == m and m.record is f
    suffix = "@10" if f.cutoff == "required" else ""
    assert all(parse(a + suffix) == m for a in f.aliases)
    low, high = value_range(m, 480)
    assert low < high <= 480
    assert high == {"fraction": 1.0, "percent": 100.0, "rank": 480.0}[f.unit]
    assert score_key(m).startswith(f.mteb_key)
    assert m.higher_is_better == (f.direction == "up")


def test_families_feed_every_consumer():
    assert value_range(parse("PEER@10"), 480) == (0.0, 1.0)
    assert value_range(parse("MaxR"), 480) == (1.0, 480.0)
    assert pytrec_key(parse("MAP@100")) == "map_cut_100" and pytrec_key(parse("RR")) == "recip_rank"
    assert score_key("PEER@10") == "clirbench_peer_at_10" and score_key("MaxR") == "max_at_r"
    assert [n for n, f in FAMILIES.items() if f.rank_set] == ["MaxR", "MaxR_norm", "MaxR_norm_of_mean",
                                                               "SameLangFirst"]
    # main measures of the parallel scenarios: declared in scenarios.py, parsed by measures
    assert {s: tuple(map(str, MAIN_MEASURES[s])) for s in SCENARIOS} == {s: MAIN_NAMES[s] for s in SCENARIOS}


def test_same_lang_first_is_best_at_50():
    f = SameLangFirst.record
    assert f.direction == "target" and f.target == 50 and f.direction_label == "best at 50"
    assert not SameLangFirst.higher_is_better
    good = f.goodness(np.array([99.9, 50.4, 0.1, 99.3]))
    assert np.argmax(good) == 1 and good[3] > good[0]  # 99.3 is less biased than 99.9
    assert parse("MaxR").record.goodness(3.0) > parse("MaxR").record.goodness(4.0)


def _board_file(tmp_path, means: dict[str, float], n: int = 1000):
    """A leaderboard with one multi pool whose per-query SameLangFirst values (0 or 100) have ``means``."""
    data = store.empty("xquad")
    pid = store.pool_id("", "multi", "unique", ["en", "zh"], "en")
    data["pools"][pid] = {"subset": "", "scenario": "multi", "pool_mode": "unique", "doc_langs": ["en", "zh"],
                          "query_lang": "en", "pool_size": 2 * n, "num_queries": n, "qrels_sha256": "0" * 64,
                          "query_ids_sha256": hashlib.sha256(b"ids").hexdigest()}
    rng = np.random.default_rng(0)
    for system, mean in means.items():
        vec = np.zeros(n)
        vec[rng.permutation(n)[:round(mean * n / 100)]] = 100.0
        assert vec.mean() == pytest.approx(mean)
        data["systems"][system] = {"retriever": {"spec": system}, "commands": [], "results": {pid: {
            "measures": {"SameLangFirst": {"value": mean, "ci_low": 0.0, "ci_high": 100.0, "n": n}},
            "per_query": {"encoding": store.VECTOR_ENCODING,
                          "measures": {"SameLangFirst": store.encode_vector(vec)}}}}}
    data = store.validate(json.loads(store.dumps(data)))
    (tmp_path / "xquad.json").write_text(store.dumps(data))
    return data


def test_leaderboard_ranks_same_lang_first_by_distance_from_50(tmp_path, capsys):
    data = _board_file(tmp_path, {"prefers-query-lang": 99.9, "neutral": 50.4, "prefers-other": 0.1})
    (board,) = boards(data)
    assert [r.system for r in board.rows][0] == "neutral"
    assert board.rows[0].group == "a" and {r.group for r in board.rows[1:]} == {"b"}
    assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "multi · SameLangFirst (best at 50," in out
    lines = [line for line in out.splitlines() if line.lstrip().startswith(("1 ", "2 ", "3 "))]
    assert lines[0].split()[:5] == ["1", "rank", "1", "a", "neutral"]  # rank, its 95% interval, group, system
    assert main(["leaderboard", "html", "--dir", str(tmp_path), "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "xquad.html").read_text()
    assert 'SameLangFirst <span class="dir">best at 50</span></th>' in page and "SameLangFirst ↑" not in page
    assert 'class="target"' in page  # the bar plot marks 50
    # the sortable column's keys rank by distance from 50: neutral's key is the largest
    keys = {s: float(page.split(f'<td data-v="{s}">{s}</td><td data-v="')[1].split('"')[0])
            for s in ("neutral", "prefers-query-lang", "prefers-other")}
    assert max(keys, key=keys.get) == "neutral"


def test_cards_take_main_measures_from_the_scenarios_unless_they_override():
    from clirbench.util.errors import MalformedDataError
    from clirbench.util.strict import load_yaml
    from clirbench.tasks.card import cards_dir, parse_card

    xquad = parse_card(load_yaml((cards_dir() / "xquad.yaml").read_text(), "xquad.yaml"), "xquad.yaml")
    assert xquad.main_measures == {s: MAIN_NAMES[s] for s in SCENARIOS}
    clirudit = parse_card(load_yaml((cards_dir() / "clirudit.yaml").read_text(), "clirudit.yaml"), "clirudit.yaml")
    assert clirudit.main_measures == {"retrieval": ("AP@1000", "R@100")}
    data = dict(load_yaml((cards_dir() / "xquad.yaml").read_text(), "xquad.yaml"), main_measures={"multi": ["nDCG@10"]})
    assert parse_card(data, "x.yaml").main_measures["multi"] == ("nDCG@10",)
    data = dict(load_yaml((cards_dir() / "clirudit.yaml").read_text(), "clirudit.yaml"))
    del data["main_measures"]
    with pytest.raises(MalformedDataError, match="main_measures must name the main measures of retrieval"):
        parse_card(data, "clirudit.yaml")


def test_trec_eval_names_read_the_family_records():
    """One measure-name table: ``clirbench evaluate``'s ir_measures names come from ``FAMILIES``."""
    from clirbench.measures.families import TREC_EVAL
    from clirbench.trec_eval.names import IR_MEASURES, lookup

    for name, f in FAMILIES.items():
        if f.trec is not None:
            assert TREC_EVAL[name] is f.trec and IR_MEASURES[name] == (f.trec.cut, f.trec.plain, f.trec.params)
    assert lookup("NDCG@10").arg == "ndcg_cut.10" and lookup("Precision@5").arg == "P.5"
