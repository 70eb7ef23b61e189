"""Texts are batched by token length (``fill(..., length=)``, the encoders' ``token_lengths``), and
how texts are batched never changes their vectors: each text's vector through the cache equals the
library encoding that text alone (no padding at all), whatever the order and batch size."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirbench.cache.embeddings import EmbeddingCache
from clirbench.cache.store import fill
from clirbench.retrievers.encoders import SentenceTransformerEncoder, token_lengths

TEXTS = ["a", "Paris is the capital of France.", "巴黎是法国的首都。", "What is the capital of France?",
         "The cat sat on the mat and the dog barked at the mailman for a long, long time.", "猫", "de", "Le chat",
         "Retrieval of documents in many languages.", "北京是中华人民共和国的首都，也是全国的政治和文化中心。"]


class _Space:
    def __init__(self):
        self.memo, self.store = {}, _Store()

    def refresh(self):
        pass

    def read(self, keys):
        return []


class _Store:
    redundant: list = []

    def lock(self):
        import contextlib

        return contextlib.nullcontext(True)


class _Counters:
    hits = misses = loaded = 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=0, max_size=25, unique=True),
       st.integers(1, 7), st.sampled_from(["chars", "tokens"]))
def test_fill_encodes_each_missing_text_once_longest_first(texts, chunk, key):
    lengths = (lambda xs: [len(set(x)) for x in xs]) if key == "tokens" else None  # a stand-in tokenizer
    keys = [hashlib.sha256(t.encode()).digest() for t in texts]
    space, sent = _Space(), []
    space.memo.update({k: 0 for k in keys[::3]})  # every third text is there already
    fill(_Counters(), space, keys, texts, chunk, lambda part, _: sent.extend(part), length=lengths)
    missing = [i for i in range(len(texts)) if i % 3]
    assert sorted(sent) == missing  # each once
    size = [len(set(t)) if key == "tokens" else len(t) for t in texts]
    order = [(-size[i], -len(texts[i])) for i in sent]
    assert order == sorted(order)  # longest first, ties by characters
    assert sent == sorted(missing, key=lambda i: (-size[i], -len(texts[i])))  # then text order (stable)


def test_token_lengths_count_the_tokenizers_tokens(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    got = token_lengths(tok, TEXTS, None)
    assert got == [len(tok.tokenize(t)) for t in TEXTS]
    assert token_lengths(tok, TEXTS, 5) == [min(5, n) for n in got]
    assert token_lengths(None, TEXTS, 5) == [len(t) for t in TEXTS]


@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_dense_vectors_do_not_depend_on_batching(tiny_bert_dir, batch_size):
    from sentence_transformers import SentenceTransformer

    alone = SentenceTransformer(tiny_bert_dir, device="cpu")
    encoder = SentenceTransformerEncoder(tiny_bert_dir, device="cpu", batch_size=batch_size)
    rng = np.random.default_rng(batch_size)
    for _ in range(2):
        order = rng.permutation(len(TEXTS))
        texts = [TEXTS[i] for i in order]
        sent = []
        encoder.encode_batches = lambda xs, role, own=type(encoder).encode_batches.__get__(encoder), seen=sent: (
            seen.extend(xs), own(xs, role))[1]
        vecs = EmbeddingCache(None).embed(encoder, texts, "document", batch_size=2 * batch_size)
        tokens = [len(alone.tokenizer.tokenize(t)) for t in sent]
        assert sorted(sent) == sorted(TEXTS) and tokens == sorted(tokens, reverse=True)  # by tokens, not characters
        for text, vec in zip(texts, vecs):
            ref = alone.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
            np.testing.assert_allclose(vec, ref, rtol=0, atol=2e-6)


def test_splade_vectors_do_not_depend_on_batching(tiny_bert_dir):
    from sentence_transformers import SparseEncoder

    from clirbench.retrievers.splade import SparseEncoderModel, SparseVectorCache

    alone = SparseEncoder(tiny_bert_dir, device="cpu")
    encoder = SparseEncoderModel(tiny_bert_dir, device="cpu", batch_size=3)
    texts = TEXTS[::-1]
    mat = SparseVectorCache(None).vectors(encoder, texts, "document").toarray()
    for text, row in zip(texts, mat):
        ref = alone.encode_document([text], convert_to_tensor=True, convert_to_sparse_tensor=False)[0].numpy()
        np.testing.assert_allclose(row, ref, rtol=0, atol=2e-6)


def test_colbert_vectors_do_not_depend_on_batching(tmp_path):
    from test_colbert import build_pylate_checkpoint

    from clirbench.retrievers.colbert import MultiVectorModel, TokenEmbeddingCache

    folder = build_pylate_checkpoint(tmp_path / "colbert")
    model = MultiVectorModel(folder, device="cpu", batch_size=3)
    alone = MultiVectorModel(folder, device="cpu", batch_size=1)
    for role in ("document", "query"):
        vecs = TokenEmbeddingCache(None).embed(model, TEXTS, role)
        for text, vec in zip(TEXTS, vecs):
            ref = alone.encode([text], role)[0]
            assert vec.shape == ref.shape
            np.testing.assert_allclose(vec, ref, rtol=0, atol=2e-6)
