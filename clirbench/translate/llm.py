"""``openai:<model>[@<base_url>]``: any OpenAI-compatible chat-completions endpoint.

The default prompt follows the CLIRudit paper's description (a translator persona, the answer as
JSON with a ``translation`` field, temperature 0.1, top-p 1.0); the paper's exact wording was not
available here, so the template is ours. The key is read from ``$OPENAI_API_KEY`` at request time
and goes only into the Authorization header: never into ``spec``, ``describe()``, caches, results
or error messages; credentials in the base URL (``user:key@``, ``?api_key=``) are shown as ``***``
everywhere (``spec``, ``describe()``, errors); without a key, OpenAI's own endpoint is refused at
once, before any request (a server named by ``@<base_url>`` may need none), and a ``user:password@`` goes into a Basic
Authorization header when ``$OPENAI_API_KEY`` is unset. Rate limits (429) and server errors (5xx,
unreadable bodies, read timeouts, dropped connections) are retried with exponential backoff
(``Retry-After`` honoured); an endpoint that cannot be reached at all (connection refused, unknown
host, bad URL) fails at once. Requests run ``concurrency`` at a time.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from ..util.errors import ClirbenchError
from ..util.redact import redact, redact_url
from .base import language_name

__all__ = ["OpenAITranslator", "SYSTEM_PROMPT", "parse_answer"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"
SYSTEM_PROMPT = ("You are a professional translator of scholarly and general texts. Translate the text "
                 "given by the user from {src} into {tgt}. Preserve its meaning, terminology and style, "
                 "and do not add, omit or explain anything. Answer only with a JSON object of the form "
                 '{{"translation": "<the translated text>"}}.')
_FIELD = re.compile(r'"translation"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def _split_userinfo(url: str) -> tuple[str, str | None]:
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


class _Retryable(Exception):
    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.wait = wait


def parse_answer(content: str) -> tuple[str, bool]:
    """(translation, parsed cleanly) from a model's answer.

    The JSON object's ``translation`` field; else the field pulled out of broken JSON; else the
    whole answer without code fences. The flag is False for the fallbacks.
    """
    text = _FENCE.sub("", content.strip())
    for candidate in (text, text[text.find("{"): text.rfind("}") + 1] if "{" in text else ""):
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("translation"), str):
            return obj["translation"].strip(), True
    m = _FIELD.search(text)
    if m:
        try:
            return json.loads(f'"{m.group(1)}"').strip(), False
        except ValueError:
            return m.group(1).strip(), False
    return text.strip(), False


class OpenAITranslator:
    """Chat-completions translation, one request per text, ``concurrency`` requests in flight."""

    def __init__(self, arg: str, temperature: float = 0.1, top_p: float = 1.0, concurrency: int = 4,
                 max_retries: int = 6, backoff: float = 1.0, timeout: float = 120.0,
                 system_prompt: str = SYSTEM_PROMPT, json_mode: bool = True, progress: bool = True) -> None:
        model, sep, base_url = arg.partition("@")
        if not model:
            raise ClirbenchError("openai translator needs a model: openai:<model>[@<base_url>]")
        url = (base_url if sep else DEFAULT_BASE_URL).rstrip("/")
        self._url, self._basic = _split_userinfo(url)
        self.model, self.base_url = model, redact_url(url)  # shown everywhere; _url is only requested
        self.spec = f"openai:{redact(arg)}"
        if url == DEFAULT_BASE_URL and not os.environ.get(KEY_ENV, "").strip():
            # OpenAI's own API refuses every request without a key: say so now, not after the retries
            raise ClirbenchError(f"translator openai:{model} needs an API key in ${KEY_ENV} (or name a local "
                                 f"server: openai:<model>@<base_url>)")
        self.temperature, self.top_p, self.concurrency = temperature, top_p, max(1, concurrency)
        self.max_retries, self.backoff, self.timeout = max_retries, backoff, timeout
        self.system_prompt, self.json_mode, self.progress = system_prompt, json_mode, progress
        self.stats = {"requests": 0, "retries": 0, "parse_fallbacks": 0}
        self._lock = threading.Lock()

    def _count(self, what: str) -> None:
        with self._lock:
            self.stats[what] += 1

    def describe(self) -> dict:
        return {"spec": self.spec, "backend": "openai-chat", "model": self.model, "base_url": self.base_url,
                "temperature": self.temperature, "top_p": self.top_p, "json_mode": self.json_mode,
                "system_prompt_sha256": hashlib.sha256(self.system_prompt.encode()).hexdigest(),
                "parse_fallbacks": self.stats["parse_fallbacks"]}

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        texts = list(texts)
        system = self.system_prompt.format(src=language_name(src), tgt=language_name(tgt))
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            jobs = pool.map(lambda t: self._one(system, t), texts)
            if self.progress and len(texts) > 1:
                from tqdm.auto import tqdm

                jobs = tqdm(jobs, total=len(texts), desc=f"translate {src}->{tgt}", unit="text")
            return list(jobs)

    def _one(self, system: str, text: str) -> str:
        if not text.strip():
            return text
        body = {"model": self.model, "temperature": self.temperature, "top_p": self.top_p,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}]}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        content = self._post(body)
        translation, clean = parse_answer(content)
        if not clean:
            self._count("parse_fallbacks")
        return translation

    def _post(self, body: dict) -> str:
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            try:
                return self._request(data)
            except _Retryable as exc:
                if attempt == self.max_retries:
                    raise ClirbenchError(f"{self.base_url}: gave up after {attempt + 1} tries ({exc})") from None
                self._count("retries")
                wait = exc.wait if exc.wait is not None else self.backoff * 2 ** attempt
                time.sleep(wait * (1 + 0.1 * random.random()))
        raise AssertionError("unreachable")

    def _request(self, data: bytes) -> str:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif self._basic:
            headers["Authorization"] = f"Basic {self._basic}"
        try:
            req = urllib.request.Request(f"{self._url}/chat/completions", data=data, headers=headers, method="POST")
        except ValueError:
            raise ClirbenchError(f"{self.base_url}: not a valid URL") from None
        self._count("requests")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 429 or exc.code >= 500:
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                try:
                    wait = min(float(retry_after), 60.0) if retry_after else None
                except ValueError:
                    wait = None
                raise _Retryable(f"HTTP {exc.code}", wait) from None
            raise ClirbenchError(f"{self.base_url}: HTTP {exc.code} ({exc.reason}); check the model name "
                                 f"and ${KEY_ENV}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, (TimeoutError, ConnectionResetError, http.client.HTTPException)):
                raise _Retryable(f"connection: {redact(type(reason).__name__)}") from None
            # refused, unknown host, no route, bad URL: retrying will not help
            why = redact(" ".join(str(reason).split())) or type(reason).__name__
            raise ClirbenchError(f"{self.base_url}: cannot connect ({why})") from None
        try:
            return json.loads(raw)["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Retryable("unreadable response body") from None
