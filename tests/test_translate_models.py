"""hf: and ct2: on a tiny random-weight MarianMT built here; openai: against a local fake server."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clirbench.util.errors import ClirbenchError
from clirbench.translate import TranslationCache, make_translator, translate_texts
from clirbench.translate.llm import parse_answer

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
LINES = ["the cat sits on the mat.", "le chat est sur le tapis.", "a dog runs in the park.",
         "un chien court dans le parc.", "workers of quebec study health and history.",
         "les ouvriers du québec étudient la santé et l'histoire."]


@pytest.fixture(scope="module")
def tiny_marian(tmp_path_factory) -> str:
    """MarianMT with random weights and a SentencePiece vocabulary trained here (no download)."""
    return build_marian(tmp_path_factory.mktemp("marian"))


def build_marian(folder: Path, positions: int = 128) -> str:
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    (folder / "corpus.txt").write_text("\n".join(LINES * 20), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(folder / "corpus.txt"), model_prefix=str(folder / "spm"),
                                   vocab_size=50, model_type="unigram", character_coverage=1.0, bos_id=-1,
                                   eos_id=-1, unk_id=0, pad_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.id_to_piece(i) != "<unk>"]
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(pieces)}}
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    for name in ("source.spm", "target.spm"):
        (folder / name).write_bytes((folder / "spm.model").read_bytes())
    tok = MarianTokenizer(vocab=str(folder / "vocab.json"), source_spm=str(folder / "source.spm"),
                          target_spm=str(folder / "target.spm"), source_lang="fr", target_lang="en")
    torch.manual_seed(0)
    config = MarianConfig(vocab_size=len(vocab), d_model=32, encoder_layers=1, decoder_layers=1,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                          decoder_ffn_dim=32, max_position_embeddings=positions, pad_token_id=vocab["<pad>"],
                          eos_token_id=0, decoder_start_token_id=vocab["<pad>"], forced_eos_token_id=None,
                          max_length=16, num_beams=1, init_std=0.5)
    out = folder / "model"
    MarianMTModel(config).eval().save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def test_hf_marian_end_to_end_document_and_sentence_units(tiny_marian, tmp_path):
    doc = make_translator(f"hf:{tiny_marian}", max_new_tokens=8, batch_size=2, progress=False)
    sent = make_translator(f"hf:{tiny_marian}#sentence", max_new_tokens=8, batch_size=2, progress=False)
    texts = [LINES[1], LINES[3], LINES[1] + " " + LINES[3]]
    out = doc.translate(texts, "fr", "en")
    assert len(out) == 3 and all(isinstance(t, str) and t for t in out)
    assert doc.translate(texts[::-1], "fr", "en") == out[::-1]  # batching and length sorting keep order
    by_sentence = sent.translate(texts, "fr", "en")
    assert by_sentence[:2] == out[:2]  # one sentence: the same as the whole text
    assert by_sentence[2] == f"{out[0]} {out[1]}"  # two sentences translated apart, joined by a space
    assert doc.describe()["unit"] == "document" and sent.describe()["unit"] == "sentence"
    assert doc.spec != sent.spec  # separate cache entries and result folders
    cache = TranslationCache(tmp_path)
    first, hits = translate_texts(doc, texts, "fr", "en", cache)
    assert first == out and hits == 0
    assert translate_texts(doc, texts, "fr", "en", TranslationCache(tmp_path)) == (out, 3)


def test_hf_truncates_at_the_models_own_position_limit(tmp_path):
    """A model with 16 positions: inputs are cut at 16 tokens (not 512) and generation stops there."""
    (tmp_path / "m16").mkdir()
    small = build_marian(tmp_path / "m16", positions=16)
    long_text = " ".join(LINES * 4)  # far more than 16 tokens
    for options in ({}, {"max_new_tokens": 40}):
        tr = make_translator(f"hf:{small}", progress=False, **options)
        assert tr.max_input_tokens == 16 and tr.describe()["max_input_tokens"] == 16
        (out,) = tr.translate([long_text], "fr", "en")
        assert isinstance(out, str)
    assert make_translator(f"hf:{small}", max_input_tokens=8, progress=False).max_input_tokens == 8


def test_ct2_conversion_agrees_with_transformers(tiny_marian, tmp_path):
    from ctranslate2.converters import TransformersConverter
    from transformers import AutoTokenizer

    ct2_dir = TransformersConverter(tiny_marian).convert(str(tmp_path / "ct2"), force=True)
    AutoTokenizer.from_pretrained(tiny_marian).save_pretrained(ct2_dir)
    texts = [LINES[1], LINES[3], LINES[5]]
    hf = make_translator(f"hf:{tiny_marian}", max_new_tokens=6, progress=False).translate(texts, "fr", "en")
    ct2 = make_translator(f"ct2:{ct2_dir}", max_new_tokens=6, progress=False)
    assert ct2.translate(texts, "fr", "en") == hf
    assert ct2.describe()["backend"] == "ct2"


# ---------------------------------------------------------------------------------------------
# openai: a local server speaking the chat-completions protocol

KEY = "sk-test-SECRET-never-on-disk-1234"


class _Server:
    def __init__(self, script):
        self.script = list(script)  # per request: ("status", code) | ("content", text) | ("body", raw)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                           "body": body})
                    step = outer.script.pop(0) if outer.script else ("echo", None)
                kind, value = step
                if kind == "status":
                    self.send_response(value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if kind == "body":
                    raw = value.encode()
                else:
                    text = body["messages"][1]["content"]
                    content = value if kind == "content" else json.dumps({"translation": f"[{text}]"})
                    raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def server():
    made = []

    def make(script=()):
        made.append(_Server(script))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_openai_retries_on_429_and_500_and_sends_the_paper_settings(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    s = server([("status", 429), ("status", 500), ("body", "not json")])
    tr = make_translator(f"openai:gpt-test@{s.url}", backoff=0.001, concurrency=1, progress=False)
    assert tr.translate(["Bonjour le monde."], "fr", "en") == ["[Bonjour le monde.]"]
    assert len(s.requests) == 4 and tr.stats["retries"] == 3
    req = s.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == f"Bearer {KEY}"
    body = req["body"]
    assert body["model"] == "gpt-test" and body["temperature"] == 0.1 and body["top_p"] == 1.0
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]["content"]
    assert "translator" in system and "French" in system and "English" in system and '"translation"' in system
    assert KEY not in json.dumps(tr.describe()) and KEY not in tr.spec


def test_openai_gives_up_in_one_line_and_fails_fast_on_4xx(server):
    s = server([("status", 503)] * 3)
    tr = make_translator(f"openai:m@{s.url}", backoff=0.001, max_retries=2, progress=False)
    with pytest.raises(ClirbenchError, match="gave up after 3 tries"):
        tr.translate(["x"], "fr", "en")
    s = server([("status", 401)])
    with pytest.raises(ClirbenchError, match="HTTP 401"):
        make_translator(f"openai:m@{s.url}", backoff=0.001, progress=False).translate(["x"], "fr", "en")
    assert len(s.requests) == 1


def test_openai_parses_malformed_answers_with_fallbacks(server):
    s = server([("content", 'Sure! {"translation": "Hello \\"world\\"", '),  # broken JSON
                ("content", "```json\n{\"translation\": \"fenced\"}\n```"),
                ("content", "just text")])
    tr = make_translator(f"openai:m@{s.url}", concurrency=1, progress=False)
    assert tr.translate(["a", "b", "c"], "fr", "en") == ['Hello "world"', "fenced", "just text"]
    assert tr.stats["parse_fallbacks"] == 2
    assert parse_answer('{"translation": " ok "}') == ("ok", True)


def test_openai_dt_run_keeps_the_key_off_disk(server, monkeypatch, tmp_path, bag_retriever):
    from clirbench.runner import run

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    s = server([("status", 429)])
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=["zh"],
                 data_dir=XQUAD, output_dir=tmp_path / "out", resamples=20, progress=False,
                 translation={"direction": "docs", "translator": f"openai:m@{s.url}",
                              "cache_dir": tmp_path / "tc", "backoff": 0.001, "concurrency": 8})
    [o] = report.pools
    assert o.record.to_dict()["translation"]["translated"] == 240 and len(s.requests) == 241
    assert all(r["auth"] == f"Bearer {KEY}" for r in s.requests)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files) and any(p.suffix == ".json" for p in files)
    assert not [p for p in files if KEY.encode() in p.read_bytes()]
    # the cache answers a second run without a request
    before = len(s.requests)
    run(retriever, task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=["zh"], data_dir=XQUAD,
        output_dir=tmp_path / "out2", resamples=20, progress=False,
        translation={"direction": "docs", "translator": f"openai:m@{s.url}", "cache_dir": tmp_path / "tc"})
    assert len(s.requests) == before
