"""splade:<model>: SparseEncoder vectors, an on-disk sparse cache, exact scores via a CSR inverted index."""
from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest

from clirbench.collection import Text
from clirbench.util.errors import ClirbenchError, UnknownNameError
from clirbench.retrievers.splade import (
    SparseEncoderModel,
    SparseVectorCache,
    SpladeRetriever,
    from_spec,
)

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


def _xquad_sentences(lang: str, n: int) -> list[str]:
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    out = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            out.append(paragraph["context"])
            out.extend(qa["question"] for qa in paragraph["qas"])
    return out[:n]


@pytest.fixture(scope="module")
def splade_dir(tmp_path_factory) -> str:
    """A random-weight 2-layer BertForMaskedLM whose WordPiece vocabulary is trained on some XQuAD en+zh text."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    folder = str(tmp_path_factory.mktemp("tiny-splade"))
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(_xquad_sentences("en", 300) + _xquad_sentences("zh", 300), vocab_size=600,
                           min_frequency=1, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tokenizer = BertTokenizerFast(vocab=wp.get_vocab(), do_lower_case=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    assert tokenizer.vocab_size > 300 and tokenizer("the river")["input_ids"].count(tokenizer.unk_token_id) == 0
    return folder


class HashedBigrams:
    """A fast exact sparse test encoder: counts of hashed character bigrams (small integers), as CSR."""

    model_id, revision, dim = "test/hashed-bigrams", "1", 4096

    def __init__(self):
        self.calls = 0
        self.texts: list[str] = []

    def prompt(self, role: str) -> str:
        return ""

    def settings_key(self) -> str:
        return ""

    def encode(self, texts, role):
        import scipy.sparse as sp

        self.calls += 1
        self.texts.extend(texts)
        out = sp.lil_matrix((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for a, b in zip(t.lower(), t.lower()[1:]):
                out[i, zlib.crc32((a + b).encode()) % self.dim] += 1
        return out.tocsr()


def _rows(retriever, queries, docs) -> np.ndarray:
    blocks = list(retriever.score(queries, docs))
    starts = [s for s, _ in blocks]
    assert starts == sorted(starts) and sum(len(b) for _, b in blocks) == len(queries)
    return np.concatenate([b for _, b in blocks])


def test_splade_runs_xquad_end_to_end_and_reuses_its_cache(splade_dir, tmp_path):
    from clirbench.runner import run

    kwargs = dict(task="xquad", langs="en,zh", scenarios="mono-same", data_dir=XQUAD, output_dir=tmp_path / "out",
                  cache_dir=tmp_path / "cache", resamples=50, progress=False)
    report = run(f"splade:{splade_dir}", **kwargs)
    by = {o.name: o.record.to_dict() for o in report.pools}
    assert set(by) == {"xquad/mono-same/en/q-en", "xquad/mono-same/zh/q-zh"}
    for record in by.values():
        assert record["pool_size"] == 240 and record["num_queries"] == 1190
        assert record["retriever"]["spec"] == f"splade:{splade_dir}"
        assert record["retriever"]["revision"].startswith("sha256:")
        assert 1 <= record["measures"]["MaxR"]["value"] <= 240
        assert 0 <= record["measures"]["nDCG@1"]["value"] <= 1
    shards = list((tmp_path / "cache" / "sparse").rglob("*.npz"))
    assert shards and all(p.stat().st_size > 0 for p in shards)

    # a fresh retriever over the same cache never loads the model, and gets the same measures
    retriever = from_spec(splade_dir, {"cache_dir": tmp_path / "cache"})
    again = run(retriever, **{**kwargs, "overwrite": True})
    assert retriever.encoder._model is None
    assert retriever.cache.stats()["encoded"] == 0 and retriever.cache.stats()["loaded"] > 0
    for o in again.pools:
        assert o.record.to_dict()["measures"] == by[o.name]["measures"]


def test_sparse_vectors_equal_the_models_own_output(splade_dir):
    from sentence_transformers import SparseEncoder

    texts = ["The river Seine flows through Paris.", "北京是中国的首都。", "", "a"]
    enc = SparseEncoderModel(splade_dir, device="cpu")
    mat = enc.encode(texts, "document")
    dense = SparseEncoder(splade_dir, device="cpu").encode_document(texts, convert_to_sparse_tensor=False,
                                                                     convert_to_tensor=True).numpy()
    assert mat.shape == dense.shape and mat.dtype == np.float32
    np.testing.assert_array_equal(mat.toarray(), dense)
    assert mat.nnz == np.count_nonzero(dense) and mat.has_sorted_indices


def test_scores_equal_a_dense_reference_from_the_same_vectors(splade_dir):
    enc = SparseEncoderModel(splade_dir, device="cpu")
    retriever = SpladeRetriever(enc, SparseVectorCache(None), max_block_bytes=2000)  # many small blocks
    docs = [Text(f"d{i}", t, "en") for i, t in enumerate(
        _xquad_sentences("en", 12) + ["a copy", "a copy"] + _xquad_sentences("zh", 6) + ["a copy"])]
    queries = [Text(f"q{i}", t, "en") for i, t in enumerate(_xquad_sentences("en", 40)[12:] + ["", "a copy"])]
    S = _rows(retriever, queries, docs)
    assert S.shape == (len(queries), len(docs)) and S.dtype == np.float32
    Q = retriever.cache.vectors(enc, [q.text for q in queries], "query").toarray().astype(np.float64)
    D = retriever.cache.vectors(enc, [d.text for d in docs], "document").toarray().astype(np.float64)
    np.testing.assert_allclose(S, (Q @ D.T).astype(np.float32), rtol=1e-6, atol=1e-6)
    copies = [i for i, d in enumerate(docs) if d.text == "a copy"]
    assert (S[:, copies] == S[:, copies[:1]]).all()  # bit-identical columns
    assert np.ptp(S[:-2], axis=1).min() > 0  # real, varying scores


def test_exact_scores_with_an_integer_encoder_and_duplicates():
    enc = HashedBigrams()
    retriever = SpladeRetriever(enc, SparseVectorCache(None), max_block_bytes=64)
    texts = ["the cat sat", "a dog barked", "the cat sat", "", "cat cat cat"]
    docs = [Text(f"d{i}", t, "en") for i, t in enumerate(texts)]
    queries = [Text("q0", "cat", "en"), Text("q1", "dog cat", "en"), Text("q2", "cat", "en")]
    S = _rows(retriever, queries, docs)
    V = HashedBigrams().encode([q.text for q in queries] + texts, "document").toarray()
    np.testing.assert_array_equal(S, V[:3] @ V[3:].T)  # small integers: exact in float32
    assert enc.texts.count("the cat sat") == 1 and enc.texts.count("cat") == 1  # each distinct text once


def test_sparse_cache_on_disk_round_trip(tmp_path):
    enc = HashedBigrams()
    texts = ["one text", "another one", "one text", "third"]
    first = SparseVectorCache(tmp_path)
    a = first.vectors(enc, texts, "document")
    assert first.stats() == {"hits": 0, "misses": 3, "encoded": 3, "loaded": 0}
    b = first.vectors(enc, list(reversed(texts)), "document")
    np.testing.assert_array_equal(b.toarray(), a.toarray()[::-1])
    assert enc.calls == 1

    second = SparseVectorCache(tmp_path)
    c = second.vectors(enc, texts + ["new"], "document")
    np.testing.assert_array_equal(c.toarray()[:4], a.toarray())
    assert second.stats() == {"hits": 3, "misses": 1, "encoded": 1, "loaded": 3}
    third = SparseVectorCache(tmp_path)
    third.vectors(enc, texts, "query")  # another role: another space
    assert third.stats()["encoded"] == 3
    meta = [json.loads(p.read_text()) for p in tmp_path.glob("*/meta.json")]
    assert sorted(m["role"] for m in meta) == ["document", "query"]
    assert {m["model_id"] for m in meta} == {"test/hashed-bigrams"} and {m["dim"] for m in meta} == {4096}


def test_empty_pools_and_queries():
    retriever = SpladeRetriever(HashedBigrams(), SparseVectorCache(None))
    assert _rows(retriever, [Text("q", "cat", "en")], []).shape == (1, 0)
    assert list(retriever.score([], [Text("d", "cat", "en")])) == []


def test_spec_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ClirbenchError, match="needs a model"):
        from_spec("", {})
    with pytest.raises(UnknownNameError):
        from_spec(str(tmp_path / "no-such-model"), {})
    from clirbench.retrievers import make_retriever

    with pytest.raises(UnknownNameError, match="not in the local Hugging Face cache"):
        make_retriever("splade:naver/splade-cocondenser-ensembledistil", cache_dir=tmp_path)


def test_describe_records_model_and_prompts(splade_dir, tmp_path):
    retriever = from_spec(splade_dir, {"cache_dir": tmp_path, "query_prompt": "query: "})
    d = retriever.describe()
    assert d["spec"] == f"splade:{splade_dir}" and d["family"] == "splade"
    assert d["model_id"] == splade_dir and d["revision"].startswith("sha256:")
    assert d["prompts"] == {"query": "query: ", "document": ""}
    assert os.path.isdir(splade_dir)
