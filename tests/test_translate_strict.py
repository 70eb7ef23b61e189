"""Translator endpoints: credentials never shown, unreachable endpoints fail fast, --no-progress
silences the translators' bars."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clirbench.cli import main
from clirbench.util.redact import redact, redact_url

KEY = "SECRETKEY-9f8e7d"


def write_parallel(path: Path) -> Path:
    rows = [("i1", "the cat sat on the mat", "le chat est sur le tapis", "where is the cat", "où est le chat"),
            ("i2", "a dog barked", "un chien aboie", "what did the dog do", "que fait le chien"),
            ("i3", "paris is the capital", "paris est la capitale", "capital of france", "capitale de la france")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps({"item": i, "passages": {"en": en, "fr": fr},
                                          "questions": [{"id": f"{i}q", "en": qe, "fr": qf}]})
                              for i, en, fr, qe, qf in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def server():
    """A local chat-completions endpoint: echoes '[text]'; ``status`` set to answer with an error."""
    state = {"status": 200, "auth": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["auth"].append(self.headers.get("Authorization"))
            if state["status"] != 200:
                self.send_response(state["status"])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            content = json.dumps({"translation": f"[{body['messages'][1]['content']}]"})
            raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    state["port"] = httpd.server_address[1]
    yield state
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def run_argv(tmp_path: Path, translator: str, *extra: str) -> list[str]:
    data = write_parallel(tmp_path / "data.jsonl")
    return ["run", "--model", "bm25", "--task", f"parallel:{data}", "--scenario", "mono-cross", "--query-lang", "en",
            "--resamples", "20", "--output", str(tmp_path / "out"), "--translate", "docs", "--translator", translator,
            "--translation-cache", str(tmp_path / "tcache"), *extra]


def no_key_anywhere(tmp_path: Path, *texts: str) -> None:
    for text in texts:
        assert KEY not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
        assert KEY not in str(path)


def test_redact_removes_userinfo_and_key_parameters():
    assert redact_url(f"http://user:{KEY}@host:8080/v1") == "http://***@host:8080/v1"
    assert KEY not in redact_url(f"https://host/v1?api_key={KEY}&model=x")
    assert "model=x" in redact_url(f"https://host/v1?api_key={KEY}&model=x")
    for name in ("key", "token", "access_token", "apiKey", "x-api-key"):
        assert KEY not in redact(f"failed: https://h/p?{name}={KEY} (refused)")
    assert redact("no url here") == "no url here"


def test_closed_port_fails_fast_in_one_line_without_the_key(tmp_path, capsys):
    spec = f"openai:m@http://user:{KEY}@127.0.0.1:{closed_port()}/v1"
    t0 = time.perf_counter()
    code = main(run_argv(tmp_path, spec, "--no-progress"))
    elapsed = time.perf_counter() - t0
    out, err = capsys.readouterr()
    assert code == 2 and elapsed < 5.0, (elapsed, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "cannot connect" in lines[0] and "http://***@127.0.0.1" in lines[0], err
    no_key_anywhere(tmp_path, out, err)


def test_unknown_host_fails_fast(tmp_path, capsys):
    t0 = time.perf_counter()
    code = main(run_argv(tmp_path, f"openai:m@http://no-such-host.invalid/v1?api_key={KEY}", "--no-progress"))
    out, err = capsys.readouterr()
    assert code == 2 and time.perf_counter() - t0 < 5.0 and "cannot connect" in err
    no_key_anywhere(tmp_path, out, err)


def test_a_refusing_server_error_names_no_key(tmp_path, capsys, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server["status"] = 401
    code = main(run_argv(tmp_path, f"openai:m@http://user:{KEY}@127.0.0.1:{server['port']}/v1", "--no-progress"))
    out, err = capsys.readouterr()
    assert code == 2 and "HTTP 401" in err and "http://***@127.0.0.1" in err
    no_key_anywhere(tmp_path, out, err)
    assert server["auth"] and all(a and a.startswith("Basic ") for a in server["auth"])  # the key went as auth only


def test_no_progress_silences_the_translator_and_results_keep_no_key(tmp_path, capsys, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = f"openai:m@http://user:{KEY}@127.0.0.1:{server['port']}/v1"
    assert main(run_argv(tmp_path, spec, "--no-progress")) == 0
    out, err = capsys.readouterr()
    assert err == "", err  # no bar at all (tqdm writes "translate fr->en: 100%|...")
    records = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("*.json") if ".gap." not in p.name]
    assert records and records[0]["translation"]["translator"] == f"openai:m@http://***@127.0.0.1:{server['port']}/v1"
    no_key_anywhere(tmp_path, out, err)
    # with progress on, the translator's bar is there (so the assertion above means something)
    assert main(run_argv(tmp_path / "again", spec)) == 0
    assert "translate fr->en" in capsys.readouterr().err
