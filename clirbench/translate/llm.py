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

import hashlib
import http.client
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from ..util.errors import ClirbenchError
from ..util.http_client import JsonClient, Response, Retry, RetryPolicy, Wire, stretched_backoff
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


#: the translator's exchange as it always was: no Accept header, the key as set, fewer dropped-connection
#: kinds retried, a cannot-connect reason only redacted
_WIRE = Wire(accept_json=False, strip_key=False, dropped=(TimeoutError, ConnectionResetError, http.client.HTTPException),
             clean_reasons=False)


def _capped_retry_after(headers) -> float | None:
    """A numeric ``Retry-After``, at most 60 s (None: absent or not a number)."""
    value = headers.get("Retry-After") if headers else None
    try:
        return min(float(value), 60.0) if value else None
    except ValueError:
        return None


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
        self.model, self.base_url = model, redact_url(url)  # shown everywhere; the client's URL is only requested
        self.spec = f"openai:{redact(arg)}"
        if url == DEFAULT_BASE_URL and not os.environ.get(KEY_ENV, "").strip():
            # OpenAI's own API refuses every request without a key: say so now, not after the retries
            raise ClirbenchError(f"translator openai:{model} needs an API key in ${KEY_ENV} (or name a local "
                                 f"server: openai:<model>@<base_url>)")
        self.temperature, self.top_p, self.concurrency = temperature, top_p, max(1, concurrency)
        self.max_retries, self.backoff, self.timeout = max_retries, backoff, timeout
        self.system_prompt, self.json_mode, self.progress = system_prompt, json_mode, progress
        self.stats = {"requests": 0, "retries": 0, "parse_fallbacks": 0}
        self.client = JsonClient(url, KEY_ENV, RetryPolicy(max_retries, backoff, timeout, pause=stretched_backoff),
                                 _WIRE, self.stats)

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
            self.client.count("parse_fallbacks")
        return translation

    def _post(self, body: dict) -> str:
        data = json.dumps(body).encode("utf-8")
        return self.client.call(lambda: self._content(self.client.send("/chat/completions", data)))

    def _content(self, resp: Response) -> str:
        if resp.failed:
            if resp.status == 429 or resp.status >= 500:
                raise Retry(f"HTTP {resp.status}", _capped_retry_after(resp.headers))
            raise ClirbenchError(f"{self.base_url}: HTTP {resp.status} ({resp.reason}); check the model name "
                                 f"and ${KEY_ENV}")
        try:
            return json.loads(resp.body)["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retry("unreadable response body") from None
