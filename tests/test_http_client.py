"""util/http_client.JsonClient against a real local HTTP server (http.server in a thread): retries after
503 and 429, a one-line 401 error without the key, timeouts, the key only in the Authorization header."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from clirbench.util.errors import ClirbenchError
from clirbench.util.http_client import JsonClient, RetryPolicy, Wire

KEY = "sk-test-Zq81unitKEYnotreal0042"
FAST = RetryPolicy(retries=3, backoff=0.01, timeout=5.0)


class Server:
    """Answers each POST with the next scripted (status, headers, body, delay); records what it got."""

    def __init__(self, script):
        self.script, self.seen = list(script), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.seen.append((self.path, dict(self.headers), body))
                status, headers, answer, delay = outer.script.pop(0) if outer.script else (200, {}, b"{}", 0)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*script):
        servers.append(Server(script))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def ok(obj) -> tuple:
    return 200, {"Content-Type": "application/json"}, json.dumps(obj).encode(), 0


@pytest.mark.parametrize("status", [503, 429, 500, 408])
def test_a_retryable_status_is_tried_again(serve, monkeypatch, status):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    server = serve((status, {"Retry-After": "0"}, b"busy", 0), (status, {}, b"busy", 0), ok({"data": [1, 2]}))
    client = JsonClient(server.url, "TEST_HTTP_KEY", FAST)
    assert client.post_json("/embeddings", {"input": ["a"]}) == {"data": [1, 2]}
    assert len(server.seen) == 3
    assert client.stats["requests"] == 3 and client.stats["retries"] == 2 and client.stats["seconds"] > 0
    for path, headers, body in server.seen:  # the same request each time, the key in its header only
        assert path == "/v1/embeddings" and json.loads(body) == {"input": ["a"]}
        assert headers["Authorization"] == f"Bearer {KEY}" and KEY not in path and KEY.encode() not in body


def test_retry_after_is_honoured(serve, monkeypatch):
    monkeypatch.delenv("TEST_HTTP_KEY", raising=False)
    server = serve((429, {"Retry-After": "0.4"}, b"slow down", 0), ok({"x": 1}))
    client = JsonClient(server.url, "TEST_HTTP_KEY", RetryPolicy(retries=1, backoff=0.0, timeout=5.0))
    t0 = time.monotonic()
    assert client.post_json("/x", {}) == {"x": 1}
    assert time.monotonic() - t0 >= 0.4
    assert "Authorization" not in server.seen[0][1]  # no key, no credentials in the URL: no header


def test_giving_up_says_how_many_tries_on_one_line(serve, monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    server = serve(*[(503, {}, b"down", 0)] * 3)
    client = JsonClient(server.url, "TEST_HTTP_KEY", RetryPolicy(retries=2, backoff=0.01, hint="; try later"))
    with pytest.raises(ClirbenchError) as err:
        client.post_json("/x", {})
    assert str(err.value) == f"{server.url}: gave up after 3 tries (HTTP 503); try later"
    assert len(server.seen) == 3


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_one_line_without_the_key(serve, monkeypatch, status):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.\nSee your account.", "code": "invalid"}}
    server = serve((status, {"Content-Type": "application/json"}, json.dumps(echo).encode(), 0))
    client = JsonClient(server.url, "TEST_HTTP_KEY", FAST)
    with pytest.raises(ClirbenchError) as err:
        client.post_json("/x", {})
    message = str(err.value)
    assert KEY not in message and KEY[3:20] not in message and "\n" not in message
    assert message == f"{server.url}: HTTP {status}: the server refuses the request's key: " \
                      "Incorrect API key provided: ***. See your account."
    assert len(server.seen) == 1  # not retried


def test_a_refusal_without_a_key_names_the_unset_variable_and_hides_url_credentials(serve, monkeypatch):
    monkeypatch.delenv("TEST_HTTP_KEY", raising=False)
    server = serve((401, {}, b"who are you", 0))
    url = server.url.replace("http://", "http://alice:s3cr3t-pw@")
    client = JsonClient(url, "TEST_HTTP_KEY", FAST)
    with pytest.raises(ClirbenchError) as err:
        client.post_json("/x", {})
    assert "s3cr3t-pw" not in str(err.value) and "($TEST_HTTP_KEY is not set)" in str(err.value)
    assert server.seen[0][1]["Authorization"] == "Basic YWxpY2U6czNjcjN0LXB3"  # alice:s3cr3t-pw


def test_a_timeout_is_retried_then_given_up(serve, monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    server = serve((200, {}, b"{}", 1.0), (200, {}, b"{}", 1.0))
    client = JsonClient(server.url, "TEST_HTTP_KEY", RetryPolicy(retries=1, backoff=0.01, timeout=0.2))
    t0 = time.monotonic()
    with pytest.raises(ClirbenchError) as err:
        client.post_json("/x", {})
    assert str(err.value) == f"{server.url}: gave up after 2 tries (connection: TimeoutError)"
    assert time.monotonic() - t0 < 0.9 and len(server.seen) == 2


def test_a_slow_answer_within_the_timeout_after_a_timeout(serve, monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    server = serve((200, {}, b"{}", 1.0), (*ok({"late": True})[:3], 0.05))
    client = JsonClient(server.url, "TEST_HTTP_KEY", RetryPolicy(retries=1, backoff=0.01, timeout=0.3))
    assert client.post_json("/x", {}) == {"late": True}


def test_the_time_budget_ends_the_retries(serve, monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    server = serve((503, {"Retry-After": "5"}, b"", 0))
    client = JsonClient(server.url, "TEST_HTTP_KEY", RetryPolicy(retries=5, backoff=0.01, budget=1.0))
    with pytest.raises(ClirbenchError, match=r"the time budget of 1 s ends before the next try \(HTTP 503\)"):
        client.post_json("/x", {})
    assert len(server.seen) == 1


def test_a_closed_port_fails_at_once_in_one_line(monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = JsonClient(f"http://127.0.0.1:{port}/v1?api_key={KEY}", "TEST_HTTP_KEY", FAST)
    with pytest.raises(ClirbenchError) as err:
        client.post_json("/x", {})
    assert str(err.value).startswith(f"http://127.0.0.1:{port}/v1?api_key=***: cannot connect (")
    assert KEY not in str(err.value) and client.stats["retries"] == 0


def test_a_set_stop_event_ends_the_wait(serve, monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", KEY)
    server = serve((503, {"Retry-After": "30"}, b"", 0))
    client = JsonClient(server.url, "TEST_HTTP_KEY", FAST)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    t0 = time.monotonic()
    with pytest.raises(ClirbenchError, match="stopped"):
        client.post_json("/x", {}, stop)
    assert time.monotonic() - t0 < 10


def test_the_wire_options_shape_the_headers(serve, monkeypatch):
    monkeypatch.setenv("TEST_HTTP_KEY", f"  {KEY}  ")
    server = serve(ok({}), ok({}))
    JsonClient(server.url, "TEST_HTTP_KEY", FAST).post_json("/x", {})
    bare = Wire(accept_json=False)
    JsonClient(server.url, "TEST_HTTP_KEY", FAST, bare).post_json("/x", {})
    (_, first, _), (_, second, _) = server.seen
    assert first["Accept"] == "application/json" and first["Authorization"] == f"Bearer {KEY}"
    assert "Accept" not in second or second["Accept"] != "application/json"
