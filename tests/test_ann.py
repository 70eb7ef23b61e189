"""faiss top-k (rank/ann.py) against exact top-k, with the real faiss library."""
from __future__ import annotations

import sys
import zlib

import numpy as np
import pytest

from clirbench.util.errors import ClirbenchError, UnknownNameError
from clirbench.util.optional import MissingDependencyError
from clirbench.rank.rows import rank_relevant
from clirbench.rank.table import tie_keys
from clirbench.rank.ann import (ann_depth, ann_run, check_ann_measures, exact_topk, measured_recall,
                                split_ann_measures)
from clirbench.rank.ann_index import AnnIndex, parse_index_spec
from clirbench.rank.runs import rank_run
from xquad_files import XQUAD

import faiss  # noqa: E402  (the test extra installs faiss-cpu: a missing one fails, never skips)


class _Text:
    def __init__(self, id, text, lang="en"):
        self.id, self.text, self.lang = id, text, lang


class TableEncoder:
    """Looks a text up in a fixed table of vectors (synthetic embeddings through the real DenseRetriever)."""

    model_id, revision = "test/table", "1"

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


class ProjectedBagEncoder:
    """Deterministic float encoder: hashed character bigram counts times a fixed Gaussian matrix, L2-normalised.

    Scores of different texts are distinct floats (no accidental ties), identical texts tie exactly.
    """

    model_id, revision = "test/projected-bag", "1"

    def __init__(self, dim: int = 48, buckets: int = 512):
        self.buckets = buckets
        self.proj = np.random.default_rng(7).normal(size=(buckets, dim)).astype(np.float32)

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        counts = np.zeros((len(texts), self.buckets), dtype=np.float32)
        for i, text in enumerate(texts):
            t = text.lower()
            for a, b in zip(t, t[1:]):
                counts[i, zlib.crc32((a + b).encode()) % self.buckets] += 1
        v = counts @ self.proj
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def _retriever(encoder):
    from clirbench.retrievers.dense import DenseRetriever

    return DenseRetriever(encoder, None, spec="test:ann")


def _synthetic(vectors: np.ndarray, prefix: str):
    texts = [_Text(f"{prefix}{i:06d}", f"{prefix}-text-{i}") for i in range(len(vectors))]
    return texts, {t.text: v for t, v in zip(texts, vectors)}


def _clustered(n_docs=6000, n_q=120, dim=32, clusters=60, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    D = centres[rng.integers(0, clusters, n_docs)] + 1.2 * rng.normal(size=(n_docs, dim))
    Q = centres[rng.integers(0, clusters, n_q)] + 1.2 * rng.normal(size=(n_q, dim))
    norm = lambda x: (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    return norm(D), norm(Q)


def _tie_rule_topk(S: np.ndarray, doc_ids, k: int) -> list[list[str]]:
    """Independent top-k: Python sort by (score desc, doc id desc) on float32 scores."""
    out = []
    for row in S.astype(np.float32):
        order = sorted(range(len(doc_ids)), key=lambda j: (-float(row[j]), tuple(-ord(c) for c in doc_ids[j])))
        out.append([doc_ids[j] for j in order[:k]])
    return out


# --------------------------------------------------------------------------- specs


@pytest.mark.parametrize("text,factory,params", [
    ("faiss:Flat", "Flat", ""),
    ("faiss:HNSW32?efSearch=128", "HNSW32", "efSearch=128"),
    ("faiss:IVF1024,Flat?nprobe=32", "IVF1024,Flat", "nprobe=32"),
    ("faiss:IVF4096,PQ64", "IVF4096,PQ64", ""),
    (" faiss:IVF64,Flat?nprobe=8 ", "IVF64,Flat", "nprobe=8"),
])
def test_spec_parses_and_round_trips(text, factory, params):
    spec = parse_index_spec(text)
    assert (spec.factory, spec.params) == (factory, params)
    assert parse_index_spec(str(spec)) == spec and str(spec) == text.strip()


@pytest.mark.parametrize("text,words", [
    ("faiss:bogus", "could not parse index string bogus"),
    ("faiss:IVF64,Flat?efSearch=3", "could not set parameter efSearch"),
    ("faiss:HNSW32?nprobe=3", "could not set parameter nprobe"),
    ("faiss:IVF64,Flat?nprobe=lots", "search parameter nprobe must be an integer between 1 and 1,000,000"),
    ("faiss:HNSW32?efSearch=-1", "search parameter efSearch must be an integer"),
    ("faiss:HNSW32?efSearch=8,efSearch=9", "parameter 'efSearch' given twice"),
    ("faiss:IVF0,Flat", "at least one list"),
    ("faiss:", "names no faiss factory"),
    ("hnsw32", "unknown index 'hnsw32'"),
])
def test_malformed_specs_are_one_line(text, words):
    with pytest.raises(UnknownNameError) as info:
        parse_index_spec(text)
    msg = str(info.value)
    assert words in msg and "\n" not in msg and "Error in" not in msg and ".cpp" not in msg


def test_factory_checked_at_the_real_dimension():
    assert parse_index_spec("faiss:PQ16", dim=64).factory == "PQ16"
    with pytest.raises(UnknownNameError, match="multiple of the number of subquantizers.*for 30-dimensional"):
        parse_index_spec("faiss:PQ16", dim=30)


def test_missing_faiss_names_the_extra(monkeypatch):
    for loaded in [m for m in sys.modules if m == "faiss" or m.startswith("faiss.")]:
        monkeypatch.setitem(sys.modules, loaded, None)  # what Python's import answers for an absent package
    with pytest.raises(MissingDependencyError) as info:
        parse_index_spec("faiss:Flat")
    msg = str(info.value)
    assert "'faiss-cpu'" in msg and "pip install 'clirbench[ann]'" in msg and "\n" not in msg
    with pytest.raises(MissingDependencyError, match=r"clirbench\[ann\]"):
        AnnIndex("faiss:Flat", 8)


# --------------------------------------------------------------------------- index


def test_flat_gives_the_exact_topk_with_distinct_scores():
    D, Q = _clustered(3000, 40)
    keys = tie_keys([f"d{i:05d}" for i in range(len(D))])
    index = AnnIndex("faiss:Flat", D.shape[1]).build(D)
    _, ids = index.search(Q, 25)
    S = Q @ D.T
    assert len(np.unique(S.round(6), axis=1)[0]) == S.shape[1]  # distinct scores: the comparison is fair
    ref = np.argsort(-S, axis=1, kind="stable")[:, :25]
    cols, vals = exact_topk(Q, D, 25, keys)
    assert np.array_equal(cols, ref) and np.array_equal(np.sort(ids, axis=1), np.sort(ref, axis=1))
    assert np.allclose(vals, np.take_along_axis(S, ref, axis=1))


def test_exact_topk_follows_the_tie_rule_and_exclusions():
    rng = np.random.default_rng(3)
    D = rng.integers(0, 3, (300, 4)).astype(np.float32)  # small integers: exact products, heavy ties
    Q = rng.integers(0, 3, (30, 4)).astype(np.float32)
    ids = [f"doc{(i * 37) % 1000:03d}" for i in range(300)]
    exclude = [np.array(sorted(rng.choice(300, 3, replace=False))) for _ in range(30)]
    cols, _ = exact_topk(Q, D, 12, tie_keys(ids), exclude)
    S = Q @ D.T
    for r in range(30):
        S[r, exclude[r]] = -np.inf
    assert [[ids[c] for c in row] for row in cols] == _tie_rule_topk(S, ids, 12)


def test_ann_run_flat_equals_exact_under_ties_with_a_wide_margin():
    """faiss keeps an arbitrary subset of the documents tied at its k-th score; the margin and the
    exact rescoring make the kept top-k follow the tie rule whenever the ties fit in the margin."""
    rng = np.random.default_rng(5)
    D = rng.integers(0, 3, (400, 6)).astype(np.float32)
    Q = rng.integers(0, 3, (25, 6)).astype(np.float32)
    docs, dt = _synthetic(D, "d")
    queries, qt = _synthetic(Q, "q")
    retriever = _retriever(TableEncoder({**dt, **qt}))
    doc_ids = [d.id for d in docs]
    run, info = ann_run(retriever, queries, docs, "faiss:Flat", 10, margin=400)
    want = _tie_rule_topk(Q @ D.T, doc_ids, 10)
    got = [sorted(run[q.id], key=lambda d: (-run[q.id][d], tuple(-ord(c) for c in d))) for q in queries]
    assert got == want
    assert info["recall"]["recall"] == 1.0 and info["boundary_ties_unresolved"] == 0
    # no margin: faiss's own choice among ties; the reported recall says how far it is from exact
    run0, info0 = ann_run(retriever, queries, docs, "faiss:Flat", 10, margin=0)
    overlap = np.mean([len(set(run0[q.id]) & set(w)) / 10 for q, w in zip(queries, want)])
    assert info0["recall"]["recall"] == pytest.approx(overlap)


@pytest.mark.parametrize("spec,low,high", [
    ("faiss:IVF64,Flat?nprobe=2", 0.5, 0.99),  # about 0.86
    ("faiss:IVF64,Flat?nprobe=64", 1.0, 1.0),  # every list probed: exhaustive
    ("faiss:HNSW8?efSearch=10", 0.4, 0.99),  # about 0.77
    ("faiss:IVF32,PQ8x4", 0.2, 0.99),  # compressed codes, rescored exactly
])
def test_recall_on_clustered_data_matches_numpy(spec, low, high):
    D, Q = _clustered()
    docs, dt = _synthetic(D, "d")
    queries, qt = _synthetic(Q, "q")
    retriever = _retriever(TableEncoder({**dt, **qt}))
    k = 20
    run, info = ann_run(retriever, queries, docs, spec, k, recall_sample=len(Q) + 5)
    exact = np.argsort(-(Q @ D.T), axis=1)[:, :k]  # distinct scores: no tie to settle
    per_q = np.array([len({f"d{j:06d}" for j in exact[i]} & set(run[q.id])) / k for i, q in enumerate(queries)])
    rec = info["recall"]
    assert rec["recall"] == pytest.approx(per_q.mean()) and rec["sample"] == len(Q) and rec["k"] == k
    assert low <= rec["recall"] <= high and 0 < rec["recall"] <= 1
    assert all(len(run[q.id]) == k for q in queries)
    # a seeded sample: the mean over the sampled queries, reproducibly
    run2, info2 = ann_run(retriever, queries, docs, spec, k, recall_sample=30, seed=11)
    rows = np.sort(np.random.default_rng(11).choice(len(Q), 30, replace=False))
    per_q2 = [len({f"d{j:06d}" for j in exact[i]} & set(run2[queries[i].id])) / k for i in rows]
    assert info2["recall"]["recall"] == pytest.approx(np.mean(per_q2))
    assert info2["recall"]["sample"] == 30 and info2["recall"]["seed"] == 11
    d = info["index"]
    assert d["index"] == spec and d["ntotal"] == len(D) and d["device"] == "cpu"
    assert d["faiss_version"] == faiss.__version__ and d["build_s"] > 0 and d["search_s"] > 0
    assert d["train_size"] == (len(D) if "IVF" in spec else 0)


def test_training_sample_and_too_many_lists():
    D, _ = _clustered(2000, 1)
    index = AnnIndex("faiss:IVF16,Flat", D.shape[1], train_size=500, seed=1).build(D)
    assert index.describe()["train_size"] == 500 and index.describe()["ntotal"] == 2000
    with pytest.raises(ClirbenchError) as info:
        AnnIndex("faiss:IVF4096,Flat", D.shape[1]).build(D)
    assert "4096 lists for 2000 documents" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ClirbenchError) as info:  # PQ8 has 256 centroids per sub-quantizer
        AnnIndex("faiss:PQ8", D.shape[1]).build(D[:100])
    assert "cannot be trained on 100 documents" in str(info.value) and "\n" not in str(info.value)


def test_search_parameters_change_on_a_built_index():
    D, Q = _clustered(3000, 30)
    index = AnnIndex("faiss:IVF32,Flat?nprobe=1", D.shape[1]).build(D)
    _, one = index.search(Q, 10)
    _, every = index.set_params("nprobe=32").search(Q, 10)
    exact = np.argsort(-(Q @ D.T), axis=1)[:, :10]
    assert str(index.spec) == "faiss:IVF32,Flat?nprobe=32" and index.describe()["params"] == "nprobe=32"
    assert np.array_equal(np.sort(every, axis=1), np.sort(exact, axis=1)) and not np.array_equal(one, every)
    with pytest.raises(UnknownNameError, match="could not set parameter efSearch"):
        index.set_params("efSearch=4")


def test_gpu_asked_for_without_one_is_one_line():
    if faiss.get_num_gpus() > 0:
        pytest.skip("this machine has a GPU: the refusal cannot happen")
    with pytest.raises(ClirbenchError) as info:
        AnnIndex("faiss:Flat", 8, device="cuda")
    assert "faiss sees 0 GPU(s)" in str(info.value) and "\n" not in str(info.value)
    assert AnnIndex("faiss:Flat", 8).describe()["device"] == "cpu"


# --------------------------------------------------------------------------- measures


CUTOFF = ["nDCG@10", "nDCG@1", "AP@100", "R@100", "R@10", "RR@10", "P@10", "Success@5"]


def _measures(names) -> list:
    """Measure objects (the ANN checks read their attributes)."""
    from clirbench.measures import parse

    return [parse(n) for n in names]


def ann_measures(run, qrels, measures, k: int) -> dict:
    """The oracle: per-query values of cutoff measures from an ANN run (rank_run + measures.compute)."""
    from clirbench.measures import compute

    return compute(check_ann_measures(_measures(measures), k), rank_run(run, qrels))


@pytest.mark.parametrize("scenario", ["multi", "multi-1", "mono-cross"])
def test_cutoff_measures_from_flat_equal_the_exact_path_on_xquad(scenario):
    from clirbench.measures import compute
    from clirbench.tasks import get_task

    pool, = [p for p in get_task("xquad").pools("en,zh", scenario, data_dir=XQUAD) if p.query_lang == "zh"]
    retriever = _retriever(ProjectedBagEncoder())
    table = rank_relevant(retriever.score(pool.queries, pool.docs), [d.id for d in pool.docs],
                          [q.id for q in pool.queries], pool.qrels, pool.exclusions)
    exact = compute(CUTOFF, table)
    run, info = ann_run(retriever, pool.queries, pool.docs, "faiss:Flat", 100, exclusions=pool.exclusions)
    approx = ann_measures(run, pool.qrels, CUTOFF, 100)
    assert info["recall"]["recall"] == 1.0 and info["boundary_ties_unresolved"] == 0
    assert len(pool.docs) > 100 and len(pool.queries) == 1190
    for m in CUTOFF:
        assert np.array_equal(approx[m], exact[m]), m
    for q, excluded in pool.exclusions.items():
        assert not set(run[q]) & set(excluded)
    # an approximate index gives other values, still from its own lists
    run_ivf, info_ivf = ann_run(retriever, pool.queries, pool.docs, "faiss:IVF16,Flat?nprobe=1", 100,
                                exclusions=pool.exclusions)
    assert 0 < info_ivf["recall"]["recall"] < 1
    assert set(ann_measures(run_ivf, pool.qrels, CUTOFF, 100)) == set(CUTOFF)


@pytest.mark.parametrize("measure", ["MaxR", "MaxR_norm", "MaxR_norm_of_mean", "SameLangFirst", "Max@R"])
def test_rank_set_measures_are_refused(measure):
    with pytest.raises(ClirbenchError) as info:
        check_ann_measures(_measures(["nDCG@10", measure]), 1000)
    msg = str(info.value)
    assert "--shards N" in msg and "exact rank" in msg and "\n" not in msg
    with pytest.raises(ClirbenchError):
        ann_measures({"q": {"d": 1.0}}, {"q": {"d": 1}}, [measure], 1000)


def test_the_allowed_families_are_those_a_depth_k_list_gives():
    from clirbench.measures import FAMILIES

    allowed, refused = split_ann_measures(_measures([f"{f}@5" if FAMILIES[f].cutoff != "none" else f for f in FAMILIES]))
    assert {m.family for m in allowed} == {"nDCG", "AP", "RR", "R", "P", "Success", "Complete", "PEER",
                                           *(f for f in FAMILIES if FAMILIES[f].needs_head)}  # from its top-k
    assert {m.family for m in refused} == {"MaxR", "MaxR_norm", "MaxR_norm_of_mean", "SameLangFirst"}


def test_cutoff_measures_allowed_up_to_the_depth():
    allowed, refused = split_ann_measures(_measures(["nDCG@10", "RR", "AP", "AP@1000", "R@100", "P@10", "MaxR"]), 1000)
    assert [str(m) for m in allowed] == ["nDCG@10", "RR", "AP", "AP@1000", "R@100", "P@10"]
    assert [str(m) for m in refused] == ["MaxR"]
    with pytest.raises(ClirbenchError, match="deeper lists than the ANN depth k=100"):
        check_ann_measures(_measures(["AP@1000"]), 100)
    assert ann_depth(_measures(["nDCG@10", "R@100"])) == 100 and ann_depth(_measures(["nDCG@10", "RR"])) == 1000
    assert ann_depth(_measures(["AP@2000", "RR"])) == 2000


def test_measured_recall_counts_missing_entries():
    D, Q = _clustered(500, 10)
    keys = tie_keys([f"d{i:03d}" for i in range(500)])
    exact, _ = exact_topk(Q, D, 10, keys)
    half = exact.copy()
    half[:, 5:] = -1
    rec = measured_recall(Q, D, half, 10, keys)
    assert rec["recall"] == 0.5 and rec["sample"] == 10 and rec["queries"] == 10


def test_copies_of_a_document_get_equal_scores_and_enter_together():
    """Identical texts share one cached embedding; the exact rescoring gives them bit-equal scores,
    so the tie rule (not faiss's heap) decides between copies, as on the exact path."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((300, 96)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    docs = [_Text(f"d{i:04d}", f"text-{i % 300}") for i in range(450)]  # d0300..d0449 copy d0000..d0149
    queries, qt = _synthetic(rng.standard_normal((60, 96)).astype(np.float32), "q")
    retriever = _retriever(TableEncoder({**{f"text-{i}": base[i] for i in range(300)}, **qt}))
    run, info = ann_run(retriever, queries, docs, "faiss:Flat", 30)
    S = retriever.embed(queries, "query") @ retriever.embed(docs, "document").T
    assert [sorted(run[q.id]) for q in queries] == [sorted(w) for w in _tie_rule_topk(S, [d.id for d in docs], 30)]
    for q in queries:
        for i in range(150):
            a, b = f"d{i:04d}", f"d{i + 300:04d}"
            if a in run[q.id] and b in run[q.id]:
                assert run[q.id][a] == run[q.id][b]
            elif b in run[q.id]:
                assert run[q.id][b] == min(run[q.id].values())  # a copy cut off only at the k-th place
            else:
                assert a not in run[q.id]  # the copy with the greater id sorts first on equal scores


def test_empty_pools():
    queries, qt = _synthetic(np.eye(4, dtype=np.float32), "q")
    docs, dt = _synthetic(np.eye(4, dtype=np.float32)[::-1].copy(), "d")
    retriever = _retriever(TableEncoder({**dt, **qt}))
    run, info = ann_run(retriever, queries, [], "faiss:Flat", 5)
    assert run == {q.id: {} for q in queries} and info["index"]["ntotal"] == 0
    run, info = ann_run(retriever, [], docs, "faiss:Flat", 5)
    assert run == {} and info["recall"]["sample"] == 0
    run, info = ann_run(retriever, queries, docs, "faiss:Flat", 10)  # k above the pool size: every doc
    assert all(len(r) == 4 for r in run.values()) and info["recall"]["recall"] == 1.0
