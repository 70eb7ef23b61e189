"""A JSON-over-HTTP client for OpenAI-compatible servers, shared by the ``openai:`` retriever
(``retrievers/served_http.py``) and the ``openai:`` translator (``translate/llm.py``).

The key is read from the environment at request time and goes only into the Authorization header (a
``user:password@`` in the URL as Basic when the key is unset); the URL is shown with its credentials
masked; a server's words become one short line with the key and anything secret-looking masked.
Requests are retried (:class:`Retry`) with exponential backoff and jitter, within an optional time
budget, and end early when a ``stop`` event is set.
"""
from __future__ import annotations

import base64
import email.utils
import http.client
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable, NamedTuple, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from .errors import ClirbenchError
from .redact import MASK, redact, redact_url

__all__ = ["JsonClient", "RetryPolicy", "Wire", "Response", "Retry", "DROPPED", "MAX_RETRY_AFTER",
           "split_userinfo", "retry_after", "spread_backoff", "stretched_backoff"]

T = TypeVar("T")
MAX_RETRY_AFTER = 300.0  # a longer Retry-After gives up at once
#: what a retry may cure when a request fails below HTTP: a timeout, a dropped connection
DROPPED = (TimeoutError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.HTTPException)


class Retry(Exception):
    """What a retry may cure: 429, 408, 5xx, a timeout, a dropped connection, an unreadable body;
    ``wait``: the seconds the server asked for (None: backoff)."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.wait = wait


class Response(NamedTuple):
    """One HTTP answer: ``failed`` when urllib raised it as an HTTPError (``reason``: its phrase)."""

    status: int
    body: bytes
    headers: object
    reason: str
    failed: bool


def spread_backoff(backoff: float, attempt: int, asked: float | None) -> float:
    """The server's wait when it asked for one, else ``backoff * 2**(attempt-1)`` times 0.5-1.5."""
    return asked if asked is not None else backoff * 2 ** (attempt - 1) * (0.5 + random.random())


def stretched_backoff(backoff: float, attempt: int, asked: float | None) -> float:
    """The server's wait or ``backoff * 2**(attempt-1)``, times 1-1.1."""
    return (asked if asked is not None else backoff * 2 ** (attempt - 1)) * (1 + 0.1 * random.random())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a request is tried; ``hint`` ends the messages of giving up."""

    retries: int = 6  # retries of one request
    backoff: float = 1.0  # the first retry's wait in seconds (doubled each time)
    timeout: float = 600.0  # seconds one request may take
    budget: float | None = None  # seconds all requests of this client may take (None: no limit)
    pause: Callable[[float, int, float | None], float] = spread_backoff
    hint: str = ""


@dataclass(frozen=True)
class Wire:
    """Details of the exchange: an ``Accept: application/json`` header, the key stripped of blanks,
    which exceptions count as a dropped connection (retried), and whether a cannot-connect reason is
    clipped with the key masked (:meth:`JsonClient.clean`) or only redacted."""

    accept_json: bool = True
    strip_key: bool = True
    dropped: tuple = DROPPED
    clean_reasons: bool = True


def split_userinfo(url: str) -> tuple[str, str | None]:
    """(url without ``user:password@``, base64 of ``user:password`` or None)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    basic = base64.b64encode(unquote(userinfo).encode("utf-8")).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), basic


def retry_after(headers) -> float | None:
    """A ``Retry-After`` header's seconds (a number or an HTTP date), or None."""
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


class JsonClient:
    """Requests to ``<url><path>`` with the key from ``$<key_env>``; counts ``requests``, ``retries``
    and ``seconds`` into those keys of ``stats`` it has (thread-safe)."""

    def __init__(self, url: str, key_env: str, policy: RetryPolicy = RetryPolicy(), wire: Wire = Wire(),
                 stats: dict | None = None) -> None:
        self.key_env, self.policy, self.wire = key_env, policy, wire
        self._url, self._basic = split_userinfo(url)
        self.shown = redact_url(url)
        self.stats = stats if stats is not None else {"requests": 0, "retries": 0, "seconds": 0.0}
        self._lock = threading.Lock()
        self._deadline: float | None = None

    def count(self, name: str, amount: float = 1) -> None:
        """Add ``amount`` to ``stats[name]`` when ``stats`` keeps that count."""
        with self._lock:
            if name in self.stats:
                self.stats[name] += amount

    # -- secrets ---------------------------------------------------------------------------------
    def key(self) -> str:
        key = os.environ.get(self.key_env, "")
        return key.strip() if self.wire.strip_key else key

    def headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.wire.accept_json:
            headers["Accept"] = "application/json"
        key = self.key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif self._basic:
            headers["Authorization"] = f"Basic {self._basic}"
        return headers

    def clean(self, text) -> str:
        """A server's words on one short line, the key and anything secret-looking masked."""
        text = " ".join(str(text).split())[:240]
        key = self.key()
        return redact(text.replace(key, MASK) if key else text)

    def message(self, raw: bytes) -> str:
        """An error body's message (OpenAI's ``{"error": {"message": ...}}`` and the like), cleaned."""
        try:
            obj = json.loads(raw)
        except ValueError:
            return self.clean(raw.decode("utf-8", "replace"))
        text = obj.get("error", obj) if isinstance(obj, dict) else obj
        if isinstance(text, dict):
            text = text.get("message") or text.get("detail") or text
        return self.clean(text if isinstance(text, str) else json.dumps(text))

    def refuse(self, status: int, raw: bytes):
        """The one-line error of a 401/403."""
        unset = "" if self.key() else f" (${self.key_env} is not set)"
        raise ClirbenchError(f"{self.shown}: HTTP {status}: the server refuses the request's key{unset}: "
                             f"{self.message(raw)}")

    # -- one exchange ----------------------------------------------------------------------------
    def exchange(self, path: str, data: bytes | None, timeout: float) -> Response:
        """The answer, whatever its status; :class:`Retry` for a timeout or a dropped connection,
        ClirbenchError for a server that cannot be reached at all (refused, unknown host: a retry
        would not help)."""
        try:
            req = urllib.request.Request(self._url + path, data=data, headers=self.headers(),
                                         method="POST" if data is not None else "GET")
        except ValueError:
            raise ClirbenchError(f"{self.shown}: not a valid URL") from None
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return Response(resp.status, resp.read(), resp.headers, resp.reason, False)
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read()
            except (OSError, http.client.HTTPException):
                body = b""
            return Response(exc.code, body, exc.headers, exc.reason, True)
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, self.wire.dropped):
                raise Retry(f"connection: {type(reason).__name__}") from None
            why = self.clean(reason) if self.wire.clean_reasons else redact(" ".join(str(reason).split()))
            raise ClirbenchError(f"{self.shown}: cannot connect ({why or type(reason).__name__})") from None

    def send(self, path: str, data: bytes) -> Response:
        """One POST within the policy's timeout and what is left of the budget, counted and timed."""
        timeout = min(self.policy.timeout, self.remaining("before a request"))
        t0 = time.perf_counter()
        self.count("requests")
        try:
            return self.exchange(path, data, timeout)
        finally:
            self.count("seconds", time.perf_counter() - t0)

    def answer(self, resp: Response):
        """The JSON of a 2xx answer; Retry for 429, 408, 5xx and an unreadable body, one-line errors
        for the rest (401/403: :meth:`refuse`)."""
        status = resp.status
        if status == 429 or status == 408 or status >= 500:
            raise Retry(f"HTTP {status}", retry_after(resp.headers))
        if status in (401, 403):
            self.refuse(status, resp.body)
        if status >= 400 or status < 200:
            raise ClirbenchError(f"{self.shown}: HTTP {status}: {self.message(resp.body)}")
        try:
            return json.loads(resp.body)
        except ValueError:
            raise Retry("unreadable response body") from None

    def post_json(self, path: str, body: dict, stop: threading.Event | None = None):
        """``POST <url><path>`` of ``body`` answered (:meth:`answer`), after retries."""
        data = json.dumps(body).encode("utf-8")
        return self.call(lambda: self.answer(self.send(path, data)), stop)

    # -- retries ---------------------------------------------------------------------------------
    def call(self, once: Callable[[], T], stop: threading.Event | None = None) -> T:
        """``once()`` until it returns, retried on :class:`Retry`; ``stop`` set (another request
        failed) ends the waits between tries."""
        attempt = 0
        while True:
            if stop is not None and stop.is_set():
                raise ClirbenchError(f"{self.shown}: stopped (another request failed)")
            try:
                return once()
            except Retry as exc:
                attempt += 1
                if attempt > self.policy.retries:
                    raise ClirbenchError(f"{self.shown}: gave up after {attempt} tries ({exc}){self.policy.hint}") \
                        from None
                if exc.wait is not None and exc.wait > MAX_RETRY_AFTER:
                    raise ClirbenchError(f"{self.shown}: {exc}, and the server asks to wait {exc.wait:.0f} s "
                                         f"(Retry-After); run again later") from None
                self._wait(self.policy.pause(self.policy.backoff, attempt, exc.wait), exc, stop)

    def remaining(self, why: str) -> float:
        """Seconds left of the budget (from the first request on); ClirbenchError when none."""
        with self._lock:
            if self._deadline is None:
                self._deadline = time.monotonic() + (self.policy.budget or float("inf"))
            left = self._deadline - time.monotonic()
        if left <= 0:
            raise ClirbenchError(f"{self.shown}: the time budget of {self.policy.budget:g} s is spent "
                                 f"({why}){self.policy.hint}")
        return left

    def _wait(self, seconds: float, exc: Retry, stop: threading.Event | None) -> None:
        self.count("retries")
        if seconds >= self.remaining(str(exc)):
            raise ClirbenchError(f"{self.shown}: the time budget of {self.policy.budget:g} s ends before the "
                                 f"next try ({exc}){self.policy.hint}")
        if stop is None:  # nothing can end the wait early
            time.sleep(seconds)
        elif stop.wait(seconds):
            raise ClirbenchError(f"{self.shown}: stopped (another request failed)")
