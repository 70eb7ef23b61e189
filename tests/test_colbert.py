"""Late interaction: a tiny PyLate-format checkpoint built offline, exact MaxSim against naive and
library computations, the token-embedding cache, the approximate path, and the missing-library error."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from clirbench.collection import Text
from clirbench.util.errors import ClirbenchError
from clirbench.retrievers import make_retriever
from clirbench.retrievers.colbert import ColBERTRetriever, MultiVectorModel, from_spec, maxsim

SENTENCES = [
    "The cat sat on the mat.", "Paris is the capital of France.", "Le chat est assis sur le tapis.",
    "What is the capital of France?", "A dog barked at the mailman.", "Der Hund bellt den Briefträger an.",
    "Retrieval of documents in many languages.", "Where did the cat sit?",
]


def build_pylate_checkpoint(folder: Path, seed: int = 0) -> str:
    """What ``pylate.models.ColBERT(...).save()`` writes (PyLate 1.6), for a random 2-layer BERT."""
    import torch
    from safetensors.torch import save_file
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True)
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(SENTENCES * 4, vocab_size=300, min_frequency=1,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok = BertTokenizerFast(tokenizer_object=wp._tokenizer, unk_token="[UNK]", pad_token="[MASK]",
                            cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    tok.add_tokens(["[Q] ", "[D] "])
    tok.save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256)
    BertModel(config).save_pretrained(folder)
    (folder / "1_Dense").mkdir()
    save_file({"linear.weight": torch.randn(128, 32) / 6}, str(folder / "1_Dense" / "model.safetensors"))
    (folder / "1_Dense" / "config.json").write_text(json.dumps(
        {"in_features": 32, "out_features": 128, "bias": False,
         "activation_function": "torch.nn.modules.linear.Identity", "use_residual": False}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}]))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256, "do_lower_case": False}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps({
        "model_type": "ColBERT", "prompts": {"query": "", "document": ""}, "default_prompt_name": None,
        "similarity_fn_name": "MaxSim", "query_prefix": "[Q] ", "document_prefix": "[D] ", "query_length": 32,
        "document_length": 180, "attend_to_expansion_tokens": False,
        "skiplist_words": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "do_query_expansion": True}))
    return str(folder)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    return build_pylate_checkpoint(tmp_path_factory.mktemp("colbert") / "tiny-pylate")


def _naive_maxsim(q: np.ndarray, d: np.ndarray) -> float:
    return float(sum(max(float(np.dot(qt, dk)) for dk in d) for qt in q)) if len(d) else 0.0


def _library_maxsim(queries, docs) -> np.ndarray:
    """sentence-transformers' maxsim (>= 6), else PyLate's colbert_scores on padded tensors."""
    try:
        from sentence_transformers.util.similarity import maxsim as st_maxsim

        return st_maxsim(queries, docs).numpy()
    except ImportError:
        import torch
        from pylate.scores import colbert_scores

        pad = lambda xs: torch.nn.utils.rnn.pad_sequence([torch.from_numpy(x) for x in xs], batch_first=True)  # noqa: E731
        mask = lambda xs: pad([np.ones(len(x), np.float32) for x in xs])  # noqa: E731
        return colbert_scores(pad(queries), pad(docs), mask(queries), mask(docs)).numpy()


def test_maxsim_is_exact_against_a_naive_loop_and_the_library():
    rng = np.random.default_rng(0)
    queries = [rng.standard_normal((n, 8)).astype(np.float32) for n in (4, 1, 6)]
    docs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (3, 9, 1, 5, 2, 7, 0)]
    S = maxsim(queries, docs, max_elements=200)  # tiny chunks: padding and chunk borders exercised
    for i, q in enumerate(queries):
        for j, d in enumerate(docs):
            assert S[i, j] == pytest.approx(_naive_maxsim(q, d), abs=1e-5)
    # all similarities negative: padding must not win the max
    assert maxsim([-np.ones((2, 3), np.float32)], [np.ones((1, 3), np.float32)])[0, 0] == pytest.approx(-6)
    # the libraries agree (on equal lengths: PyLate's padded scoring lets a padding token win with 0)
    same = [rng.standard_normal((5, 8)).astype(np.float32) for _ in range(4)]
    np.testing.assert_allclose(maxsim(queries, same), _library_maxsim(queries, same), rtol=1e-5, atol=1e-5)


def test_loads_a_pylate_checkpoint_and_scores_exactly(checkpoint):
    model = MultiVectorModel(checkpoint, device="cpu")
    assert model.prompt("query") == "[Q] " and model.prompt("document") == "[D] "
    q = model.encode(["Where did the cat sit?"], "query")[0]
    d = model.encode(["The cat sat on the mat.", "The cat sat on the mat"], "document")
    assert q.shape == (32, 128)  # padded with [MASK] to query_length 32
    assert len(d[0]) == len(d[1])  # the punctuation skiplist drops "."
    np.testing.assert_allclose(np.linalg.norm(d[0], axis=1), 1.0, rtol=1e-5)
    retriever = ColBERTRetriever(model)
    docs = [Text(f"d{i}", t, "en") for i, t in enumerate(SENTENCES)] + [Text("copy", SENTENCES[0], "en")]
    queries = [Text(f"q{i}", t, "en") for i, t in enumerate(["capital of France", "cat mat", "dog"])]
    S = np.concatenate([b for _, b in retriever.score(queries, docs)])
    qv = model.encode([x.text for x in queries], "query")
    dv = model.encode([x.text for x in docs], "document")
    for i in range(len(queries)):
        for j in range(len(docs)):
            assert S[i, j] == pytest.approx(_naive_maxsim(qv[i], dv[j]), abs=1e-4)
    assert (S[:, 0] == S[:, -1]).all()  # a copy gets an identical column
    d = retriever.describe()
    assert d["family"] == "colbert" and d["prompts"]["query"] == "[Q] " and len(d["revision"]) == 16


def test_token_embeddings_are_cached_on_disk(checkpoint, tmp_path):
    docs = [Text(f"d{i}", t, "en") for i, t in enumerate(SENTENCES)]
    queries = [Text("q", "capital of France", "en")]
    first = from_spec(checkpoint, {"cache_dir": tmp_path, "device": "cpu"})
    S1 = np.concatenate([b for _, b in first.score(queries, docs)])
    assert first.cache.encoded == len(SENTENCES) + 1
    assert list((tmp_path / "multivector").glob("*/*.hashes.npy"))
    second = from_spec(checkpoint, {"cache_dir": tmp_path, "device": "cpu"})
    S2 = np.concatenate([b for _, b in second.score(queries, docs)])
    assert second.cache.encoded == 0 and second.cache.loaded == len(SENTENCES) + 1
    assert np.array_equal(S1, S2)
    # a different role or model setting is a different space: nothing shared by mistake
    keys = {p.parent.name for p in (tmp_path / "multivector").glob("*/meta.json")}
    assert len(keys) == 2


def test_above_the_exact_limit_candidates_are_scored_exactly_and_the_rest_is_minus_inf(checkpoint):
    model = MultiVectorModel(checkpoint, device="cpu")
    words = " ".join(SENTENCES).split()
    docs = [Text(f"d{i}", " ".join(words[(7 * i) % 30: (7 * i) % 30 + 2 + i % 4]), "en") for i in range(80)]
    queries = [Text("q0", "capital of France", "en"), Text("q1", "cat", "en")]
    exact = np.concatenate([b for _, b in ColBERTRetriever(model).score(queries, docs)])
    wide = ColBERTRetriever(model, exact_limit=3, k_tokens=10_000)  # every token is a neighbour
    np.testing.assert_array_equal(np.concatenate([b for _, b in wide.score(queries, docs)]), exact)
    narrow = ColBERTRetriever(model, exact_limit=3, k_tokens=1)
    S = np.concatenate([b for _, b in narrow.score(queries, docs)])
    found = np.isfinite(S)
    assert found.any(axis=1).all() and not found.all()
    np.testing.assert_array_equal(S[found], exact[found])


def test_runs_through_the_runner_by_spec(checkpoint, tmp_path):
    from clirbench.runner import run

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = {"en1": ("Paris is the capital of France.", "en"), "fr1": ("Paris est la capitale de la France.", "fr"),
            "en2": ("The cat sat on the mat.", "en"), "fr2": ("Le chat est assis sur le tapis.", "fr")}
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": k, "text": t, "lang": lang}) + "\n" for k, (t, lang) in docs.items()))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "capital of France", "lang": "en"}) + "\n"
                                          + json.dumps({"_id": "q2", "text": "Where did the cat sit?", "lang": "en"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ten1\t1\nq1\tfr1\t1\nq2\ten2\t1\nq2\tfr2\t1\n")
    report = run(f"colbert:{checkpoint}", task=f"beir:{folder}", output_dir=tmp_path / "out",
                 cache_dir=tmp_path / "cache", resamples=20, progress=False, device="cpu")
    record = report.pools[0].record.to_dict()
    assert record["retriever"]["spec"] == f"colbert:{checkpoint}" and record["pool_size"] == 4
    assert record["retriever"]["family"] == "colbert" and record["retriever"]["prompts"]["query"] == "[Q] "


def test_a_missing_library_is_a_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setitem(sys.modules, "pylate", None)
    with pytest.raises(ClirbenchError) as err:
        make_retriever("colbert:some/model")
    assert "\n" not in str(err.value) and "MultiVectorEncoder" in str(err.value) and "PyLate" in str(err.value)
