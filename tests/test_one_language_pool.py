"""A one-language pool (docs/scenarios.md#one-language): ``--langs en --scenario mono-same`` through the
real CLI on the real XQuAD, measured against an independent BM25 (the Lucene formula in numpy over
the same analyzer's terms) scored by pytrec_eval; the other scenarios refused in one line; the
language measures undefined, said so."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from clirbench.cli import main


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clirbench: ") and "Traceback" not in err
    return err


def _bm25_run(queries, docs) -> dict:
    """{qid: {docid: score}} of BM25 (k1 0.9, b 0.4, Lucene's idf and length norm) over clirbench's
    English analyzer's terms, computed here from the formula."""
    from clirbench.retrievers.analyzers import get_analyzer

    analyze = get_analyzer("en")
    dterms = [analyze(d.text) for d in docs]
    n, avgdl = len(docs), np.mean([len(t) for t in dterms])
    df: dict[str, int] = {}
    tf = []
    for terms in dterms:
        counts: dict[str, int] = {}
        for t in terms:
            counts[t] = counts.get(t, 0) + 1
        tf.append(counts)
        for t in counts:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(1 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}
    run = {}
    for q in queries:
        scores = {}
        for d, counts, terms in zip(docs, tf, dterms):
            norm = 0.9 * (1 - 0.4 + 0.4 * len(terms) / avgdl)
            scores[d.id] = sum(idf[t] * counts[t] / (counts[t] + norm) for t in analyze(q.text) if t in counts)
        run[q.id] = scores
    return run


def test_monolingual_xquad_pool_through_the_cli(tmp_path, capsys):
    import pytrec_eval

    from clirbench.results import read_per_query, read_result
    from clirbench.tasks import get_task

    out = tmp_path / "r"
    argv = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en", "--scenario", "mono-same",
            "--measures", "nDCG@1,nDCG@10,RR,SameLangFirst,PEER@10", "--resamples", "50", "--no-progress",
            "--output", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    [row] = [line.split() for line in text.splitlines() if line.startswith("xquad/mono-same")]
    assert row[1:5] == ["en", "en", "240", "1190"] and row[-2:] == ["-", "-"]
    assert "-: no value; SameLangFirst, PEER@10: undefined on a pool whose documents are in one language" in text
    assert "1 pool (0 reused)" in text
    [path] = list(out.rglob("*.q-*.json"))
    assert path.relative_to(out).as_posix() == "bm25/xquad/mono-same/unique/en.q-en.json"
    record = read_result(path)
    assert record.pool_key.name == "xquad/mono-same/en/q-en" and record.doc_langs == ("en",)
    assert math.isnan(record.measures["SameLangFirst"].value) and math.isnan(record.measures["PEER@10"].value)
    assert json.loads(path.read_text())["measures"]["PEER@10"]["value"] is None

    [pool] = get_task("xquad").pools("en", "mono-same")
    assert pool.name == "xquad/mono-same/en/q-en" and len(pool.docs) == 240
    te = pytrec_eval.RelevanceEvaluator({q: dict(d) for q, d in pool.qrels.items()},
                                        {"ndcg_cut.1", "ndcg_cut.10", "recip_rank"})
    theirs = te.evaluate(_bm25_run(pool.queries, pool.docs))
    ids, values = read_per_query(path)
    for name, key in (("nDCG@1", "ndcg_cut_1"), ("nDCG@10", "ndcg_cut_10"), ("RR", "recip_rank")):
        other = np.array([theirs[q][key] for q in ids])
        np.testing.assert_allclose(values[name], other, rtol=0, atol=1e-12, err_msg=name)  # all 1190 queries
        assert record.measures[name].value == pytest.approx(other.mean(), abs=1e-12), name
    assert record.measures["RR"].value > 0.9  # BM25 finds English passages for English questions

    # the same pool inside a two-language run is the same pool with the same values (reused from disk)
    assert main(argv[:6] + ["en,zh", "--query-lang", "en"] + argv[7:]) == 0
    assert "1 pool (1 reused)" in capsys.readouterr().out


@pytest.mark.parametrize("scenario", ["multi", "multi-1", "mono-cross", "all"])
def test_one_language_refuses_the_scenarios_that_compare_languages(tmp_path, capsys, scenario):
    err = _one_line_error(capsys, ["run", "--model", "bm25", "--task", "xquad", "--langs", "en", "--scenario",
                                   scenario, "--no-progress", "--output", str(tmp_path)])
    assert "one language (en) gives only the mono-same pool" in err and "--scenario mono-same" in err
    assert not (tmp_path / "bm25").exists()


def test_a_mistyped_language_list_is_one_line(tmp_path, capsys):
    err = _one_line_error(capsys, ["run", "--model", "bm25", "--task", "xquad", "--langs", "en-zh",
                                   "--scenario", "mono-same", "--output", str(tmp_path)])
    assert "--langs 'en-zh': expected two or more languages like en,zh" in err and "one language for mono-same" in err


def test_compare_on_a_one_language_pool_leaves_the_language_measures_out(tmp_path, capsys):
    base = ["run", "--task", "xquad", "--langs", "en", "--scenario", "mono-same", "--resamples", "20",
            "--measures", "RR,SameLangFirst", "--no-progress", "--output", str(tmp_path)]
    assert main(base + ["--model", "bm25"]) == 0
    assert main(base + ["--model", "fusion:rrf(bm25,bm25)"]) == 0
    capsys.readouterr()
    a, b = sorted(tmp_path.rglob("*.q-en.json"))
    assert main(["compare", str(a), str(b), "--json", "--resamples", "20", "--permutations", "20"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["measures"]) == ["RR"] and report["undefined"] == ["SameLangFirst"]
    assert report["pool"]["doc_langs"] == ["en"]
