"""``cross-encoder:<model>`` as a second stage, through the real CLI: a tiny random-weight
sentence-transformers ``CrossEncoder`` built offline (a BERT with a WordPiece vocabulary trained here,
a one-label classification head), loaded from its folder and, the same files, by hub id from a local
Hugging Face cache with the hub offline. The reranked heads equal a re-sort of bm25's saved top K by
the model's own raw outputs (``CrossEncoder.predict`` without activation, called here); a second run
scores no pair again (the pair-score cache) and gives the same values."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from clirbench.cli import main
from clirbench.results.files import read_result

from conftest import TINY_SENTENCES

ITEMS = [
    ("p1", "The cat sat on the mat in the garden.", "Die Katze sass auf der Matte im Garten.",
     "Where did the cat sit?", "Wo sass die Katze?"),
    ("p2", "A dog barked at the mailman every morning.", "Ein Hund bellte jeden Morgen den Briefträger an.",
     "Who did the dog bark at?", "Wen bellte der Hund an?"),
    ("p3", "Paris is the capital and largest city of France.", "Paris ist die Hauptstadt von Frankreich.",
     "What is the capital of France?", "Was ist die Hauptstadt von Frankreich?"),
    ("p4", "Retrieval of documents in many languages is hard.", "Die Suche in vielen Sprachen ist schwer.",
     "Is retrieval in many languages hard?", "Ist die Suche in vielen Sprachen schwer?"),
    ("p5", "The benchmark builds bilingual pools from parallel data.", "Der Benchmark baut zweisprachige Pools.",
     "What does the benchmark build?", "Was baut der Benchmark?"),
    ("p6", "Rivers flow into the sea after heavy rain.", "Flüsse fliessen nach starkem Regen ins Meer.",
     "Where do rivers flow?", "Wohin fliessen Flüsse?"),
]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    """A random-weight BERT cross-encoder (2 layers, hidden 32, one output), saved by CrossEncoder.save."""
    import torch
    from sentence_transformers import CrossEncoder
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    raw, folder = tmp_path_factory.mktemp("ce-raw"), tmp_path_factory.mktemp("tiny-ce") / "tiny-ce"
    wp = BertWordPieceTokenizer(lowercase=True)
    texts = TINY_SENTENCES + [t for item in ITEMS for t in item[1:]]
    wp.train_from_iterator(texts * 4, vocab_size=400, min_frequency=1,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tokenizer = BertTokenizerFast(vocab=wp.get_vocab(), do_lower_case=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=1)
    torch.manual_seed(7)
    BertForSequenceClassification(config).save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    CrossEncoder(str(raw), device="cpu", max_length=128).save(str(folder))
    return folder


@pytest.fixture(scope="module")
def task_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("parallel") / "tiny.jsonl"
    path.write_text("".join(json.dumps({"item": i, "passages": {"en": en, "de": de},
                                        "questions": [{"id": f"q-{i}", "text": {"en": qen, "de": qde}}]}) + "\n"
                            for i, en, de, qen, qde in ITEMS))
    return path


def _run(task: Path, out: Path, second: str, k: int, capsys, *extra: str) -> str:
    capsys.readouterr()
    assert main(["run", "--model", "bm25", "--rerank", f"{second}@{k}", "--task", f"parallel:{task}", "--langs", "en,de",
                 "--scenario", "multi,mono-cross", "--output", str(out), "--save-run", "--depth", str(k),
                 "--resamples", "20", "--no-progress", "--device", "cpu", *extra]) == 0
    return capsys.readouterr().out


def _same(a, b) -> bool:
    """Two records' measures alike, value for value (NaN equal to NaN)."""
    def text(m):
        return json.dumps({k: v.to_dict() for k, v in sorted(m.items())})
    return text(a) == text(b)


def _saved(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, float]]] = {}
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, []).append((d, float(s)))
    return run


def test_cross_encoder_reranks_bm25s_top_k_by_its_raw_outputs(tiny_cross_encoder, task_file, tmp_path, capsys,
                                                              monkeypatch):
    import torch
    from sentence_transformers import CrossEncoder

    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out, k = tmp_path / "results", 4
    capsys.readouterr()
    assert main(["run", "--model", "bm25", "--task", f"parallel:{task_file}", "--langs", "en,de", "--scenario",
                 "multi,mono-cross", "--output", str(out), "--save-run", "--depth", str(k), "--resamples", "20",
                 "--no-progress"]) == 0
    text = _run(task_file, out, f"cross-encoder:{tiny_cross_encoder}", k, capsys)
    (system,) = [p for p in out.iterdir() if p.name.startswith("bm25+rerank-")]
    assert system.name.startswith("bm25+rerank-cross-encoder__tiny-ce-") and system.name.endswith(f"@{k}")
    assert "== reranking bm25 → cross-encoder:" in text
    model = CrossEncoder(str(tiny_cross_encoder), device="cpu")
    pools = sorted(p for p in system.rglob("*.json") if ".gap." not in p.name and "consistency" not in p.name)
    assert len(pools) == 4
    texts = {f"{lang}/{i}": passage for i, en, de, _, _ in ITEMS for lang, passage in (("en", en), ("de", de))}
    questions = {f"q-{i}": {"en": qen, "de": qde} for i, _, _, qen, qde in ITEMS}
    values = {}
    for path in pools:
        record = read_result(path)
        first = _saved(Path(str(out / "bm25" / path.relative_to(system))[:-5] + ".run.gz"))
        got = _saved(Path(str(path)[:-5] + ".run.gz"))
        assert sorted(got) == sorted(first) == sorted(questions)
        for q, listed in first.items():
            docs = [d for d, _ in listed]
            pairs = [[questions[q][record.query_lang], texts[d]] for d in docs]
            raw = model.predict(pairs, activation_fn=torch.nn.Identity(), convert_to_numpy=True).astype(np.float32)
            mine = dict(got[q])
            assert sorted(mine) == sorted(docs), (path.name, q)  # bm25's top K, nothing else
            # each pair's score is the model's raw output (batches of other shapes: last bits may differ)
            assert [mine[d] for d in docs] == pytest.approx(raw.tolist(), rel=1e-5, abs=1e-6), (path.name, q)
            # and the list is its re-sort by the tie rule (float32 score, then doc id, descending)
            assert got[q] == sorted(got[q], key=lambda x: (np.float32(x[1]), x[0]), reverse=True)
        info = record.retriever.settings["ranking"]["rerank"]
        assert info["second_stage"]["scoring"] == "score_pairs" and info["second_stage"]["revision"].startswith("sha256:")
        assert info["pairs"] == sum(len(v) for v in first.values())
        values[path.relative_to(system)] = record.measures
    assert (tmp_path / "cache" / "embeddings" / "pairs").is_dir()

    # again, recomputed: every pair from the cache, the same values
    _run(task_file, out, f"cross-encoder:{tiny_cross_encoder}", k, capsys, "--overwrite")
    for path in pools:
        record = read_result(path)
        assert _same(record.measures, values[path.relative_to(system)])
        assert record.retriever.settings["ranking"]["rerank"]["pairs_computed"] == 0

    # the same files as a hub id in a local Hugging Face cache, the hub offline: the same scores
    hub = tmp_path / "hf"
    snapshot = hub / "models--tiny-org--tiny-ce" / "snapshots" / COMMIT
    shutil.copytree(tiny_cross_encoder, snapshot)
    (hub / "models--tiny-org--tiny-ce" / "refs").mkdir()
    (hub / "models--tiny-org--tiny-ce" / "refs" / "main").write_text(COMMIT)
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    text = _run(task_file, out, "cross-encoder:tiny-org/tiny-ce", k, capsys)
    by_id = out / f"bm25+rerank-cross-encoder__tiny-org__tiny-ce@{k}"
    assert by_id.is_dir(), sorted(p.name for p in out.iterdir())
    for path in pools:
        record = read_result(by_id / path.relative_to(system))
        assert _same(record.measures, values[path.relative_to(system)])
        stage = record.retriever.settings["ranking"]["rerank"]["second_stage"]
        assert stage["model_id"] == "tiny-org/tiny-ce" and stage["revision"] == COMMIT
        assert [l.rsplit(" ", 1)[0] for l in gzip.decompress(Path(str(by_id / path.relative_to(system))[:-5]
                                                                   + ".run.gz").read_bytes()).decode().splitlines()] \
            == [l.rsplit(" ", 1)[0] for l in gzip.decompress(Path(str(path)[:-5] + ".run.gz").read_bytes())
                .decode().splitlines()]


def test_a_cross_encoder_cannot_rank_a_pool_alone(tiny_cross_encoder, task_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["run", "--model", f"cross-encoder:{tiny_cross_encoder}", "--task", f"parallel:{task_file}",
                 "--langs", "en,de", "--output", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot be ranked: it gives no score rows" in err and len(err.splitlines()) == 1
    assert main(["run", "--model", "bm25", "--rerank", "cross-encoder:@5", "--task", f"parallel:{task_file}",
                 "--langs", "en,de", "--output", str(tmp_path / "r"), "--no-progress"]) == 2
    assert "cross-encoder:' needs a model" in capsys.readouterr().err
