"""A faiss index over document embeddings (``--index faiss:<factory>``): its spec, checked by faiss.

Spec: ``faiss:<factory>[?<params>]``. ``<factory>`` is a faiss ``index_factory`` string (``Flat``,
``HNSW32``, ``IVF4096,Flat``, ``IVF4096,PQ64``); ``<params>`` are faiss ``ParameterSpace``
search parameters, comma-separated (``faiss:IVF1024,Flat?nprobe=32``, ``faiss:HNSW32?efSearch=128``).
Both are checked by faiss itself. Quote the spec in a shell (``?`` is a glob character).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import require
from ..util.spec_text import check_spec_text, spec_params
from ..util.strict import ascii_int

__all__ = ["IndexSpec", "AnnIndex", "parse_index_spec", "PREFIX"]

PREFIX = "faiss:"
_PROBE_DIMS = (64, 384, 768, 1024, 1536)  # dims at which a factory string is checked before the data is known
_TRAIN_MAX = 1_000_000  # training vectors at most (a seeded sample of the pool)
_FAISS_PREFIX = re.compile(r"^Error in .*? at \S+:\d+: (?:Error: '.*?' failed: )?")
# search parameters that count something (lists probed, candidates kept): positive integers at most this
_COUNT_PARAMS = ("nprobe", "efSearch", "quantizer_efSearch", "efConstruction", "max_codes", "k_factor", "k_factor_rf")
_MAX_PARAM = 1_000_000


def _faiss(purpose: str = "--index faiss"):
    return require("faiss", purpose=purpose)


def _reason(exc: BaseException) -> str:
    """faiss's message on one line, without its C++ location."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    line = _FAISS_PREFIX.sub("", line)
    return line.replace("ParameterSpace::set_index_parameter:", "").strip()


@dataclass(frozen=True)
class IndexSpec:
    """A faiss index: factory string plus ParameterSpace search parameters; ``str`` round-trips."""

    factory: str
    params: str = ""

    def __str__(self) -> str:
        return PREFIX + self.factory + (f"?{self.params}" if self.params else "")


def _apply_params(faiss, index, params: str, gpu: bool = False) -> None:
    if params:
        space = faiss.GpuParameterSpace() if gpu else faiss.ParameterSpace()
        space.set_index_parameters(index, params)


def _check_params(params: str, text: str) -> None:
    """Every search parameter once, a finite number >= 0 (faiss casts ``efSearch=-1`` to a huge
    unsigned count without a word); the counts positive integers at most ``_MAX_PARAM``."""
    for name, value in spec_params(params, ",", f"index {text!r}", UnknownNameError).items():
        name = name.split(".")[-1]  # faiss allows e.g. "quantizer_efSearch"; prefixes stay faiss's
        try:
            number = ascii_int(value, 1, _MAX_PARAM) if name in _COUNT_PARAMS else float(value)
        except ValueError:
            number = None
        if number is None or not (0 <= number < float("inf")):
            kind = f"an integer between 1 and {_MAX_PARAM:,}" if name in _COUNT_PARAMS else "a number >= 0"
            raise UnknownNameError(f"index {text!r}: search parameter {name} must be {kind}, got {value[:40]!r}")


def parse_index_spec(text: str | IndexSpec, dim: int | None = None) -> IndexSpec:
    """``"faiss:IVF1024,Flat?nprobe=32"`` -> IndexSpec, checked by faiss (at ``dim``, else at common dims).

    An unknown prefix, a factory faiss cannot build, or a search parameter it cannot set raises
    :class:`UnknownNameError` with one line.
    """
    if isinstance(text, IndexSpec):
        text = str(text)
    text = check_spec_text(str(text).strip(), "index")
    if not text.startswith(PREFIX):
        raise UnknownNameError(f"unknown index {text!r}; valid: faiss:<factory>[?<param>=<value>,...], "
                               f"e.g. faiss:Flat, faiss:HNSW32?efSearch=128, faiss:IVF1024,Flat?nprobe=32")
    factory, _, params = text[len(PREFIX):].partition("?")
    factory, params = factory.strip(), params.strip()
    if not factory:
        raise UnknownNameError(f"index {text!r} names no faiss factory string, e.g. faiss:Flat or faiss:HNSW32")
    if "?" in text:
        _check_params(params, text)
    faiss = _faiss()
    first = None
    for d in ((dim,) if dim else _PROBE_DIMS):
        try:
            index = faiss.index_factory(int(d), factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as exc:
            first = first or f"faiss cannot build index {factory!r}: {_reason(exc)}"
            continue
        ivf = _ivf(faiss, index)
        if ivf is not None and ivf.nlist < 1:
            raise UnknownNameError(f"index {text!r}: an IVF index needs at least one list")
        try:
            _apply_params(faiss, index, params)
        except RuntimeError as exc:
            raise UnknownNameError(f"index {text!r}: bad search parameters {params!r}: {_reason(exc)}") from None
        return IndexSpec(factory, params)
    where = f" for {dim}-dimensional embeddings" if dim else ""
    raise UnknownNameError(first + where)


def _ivf(faiss, index):
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def _gpu_number(device: str | None, faiss) -> int | None:
    """GPU to use: None for CPU. ``device`` None: the first GPU when faiss sees one; "cpu"; "cuda[:N]"."""
    count_gpus = getattr(faiss, "get_num_gpus", None)  # faiss-cpu builds may lack it
    gpus = count_gpus() if count_gpus is not None else 0
    if device is None:
        return 0 if gpus > 0 else None
    if device == "cpu":
        return None
    m = re.fullmatch(r"(?:cuda|gpu)(?::([0-9]{1,4}))?", device)
    if not m:
        raise ValueError(f"index device must be cpu, cuda or cuda:N, got {device!r}")
    n = int(m.group(1) or 0)
    if n >= gpus:
        raise ClirbenchError(f"index device {device!r} asked for, but faiss sees {gpus} GPU(s)"
                             + ("" if gpus else " (faiss-cpu has no GPU support: install faiss-gpu)"))
    return n


class AnnIndex:
    """A faiss index over L2-normalised document embeddings, searched by inner product."""

    def __init__(self, spec: str | IndexSpec, dim: int, *, device: str | None = None,
                 train_size: int | None = None, seed: int = 0) -> None:
        self.faiss = _faiss()
        self.spec = parse_index_spec(spec, dim)
        self.dim = int(dim)
        self.seed = int(seed)
        self.train_size = train_size
        self.gpu = _gpu_number(device, self.faiss)
        self.gpu_note = ""
        self.index = None
        self.trained_on = 0
        self.build_s = 0.0
        self.search_s = 0.0

    def build(self, vectors: np.ndarray) -> "AnnIndex":
        """Train (when the index needs it, on a seeded sample) and add ``vectors``; row i gets id i."""
        faiss = self.faiss
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected ({len(x)}, {self.dim}) vectors, got shape {x.shape}")
        t0 = time.perf_counter()
        index = faiss.index_factory(self.dim, self.spec.factory, faiss.METRIC_INNER_PRODUCT)
        ivf = _ivf(faiss, index)
        if ivf is not None and ivf.nlist > len(x):
            raise ClirbenchError(f"index {self.spec} has {ivf.nlist} lists for {len(x)} documents: "
                                 f"use IVF<n> with n <= {len(x)} (about sqrt of the pool, here "
                                 f"{max(1, int(len(x) ** 0.5))}) or faiss:Flat")
        if self.gpu is not None:
            index = self._to_gpu(index)
        if not index.is_trained:
            cap = min(len(x), self.train_size or _TRAIN_MAX)
            rows = np.sort(np.random.default_rng(self.seed).choice(len(x), cap, replace=False)) \
                if cap < len(x) else slice(None)
            try:
                index.train(x[rows])
            except RuntimeError as exc:
                raise ClirbenchError(f"index {self.spec} cannot be trained on {cap} documents: "
                                     f"{_reason(exc)}") from None
            self.trained_on = cap
        try:
            index.add(x)
            _apply_params(faiss, index, self.spec.params, gpu=self.gpu is not None)
        except RuntimeError as exc:
            raise ClirbenchError(f"index {self.spec}: {_reason(exc)}") from None
        self.index = index
        self.build_s = time.perf_counter() - t0
        return self

    def set_params(self, params: str) -> "AnnIndex":
        """Apply other search parameters (``"nprobe=32"``) to the built index, e.g. to sweep them."""
        spec = parse_index_spec(f"{PREFIX}{self.spec.factory}" + (f"?{params}" if params else ""), self.dim)
        if self.index is not None:
            try:
                _apply_params(self.faiss, self.index, spec.params, gpu=self.gpu is not None)
            except RuntimeError as exc:
                raise ClirbenchError(f"index {spec}: {_reason(exc)}") from None
        self.spec = spec
        self.search_s = 0.0
        return self

    def _to_gpu(self, index):
        faiss = self.faiss
        try:
            self._res = faiss.StandardGpuResources()
            return faiss.index_cpu_to_gpu(self._res, self.gpu, index)
        except (RuntimeError, AttributeError) as exc:  # e.g. HNSW has no GPU version
            self.gpu_note = f"on CPU: {_reason(exc)}"
            self.gpu = None
            return index

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (n, k); id -1 where the index holds fewer than k reachable documents."""
        if self.index is None:
            raise RuntimeError("AnnIndex.search before build")
        q = np.ascontiguousarray(queries, dtype=np.float32)
        t0 = time.perf_counter()
        k_eff = max(1, min(int(k), self.index.ntotal or 1))
        scores, ids = self.index.search(q, k_eff)
        self.search_s += time.perf_counter() - t0
        return scores, ids

    def describe(self) -> dict:
        out = {
            "index": str(self.spec),
            "factory": self.spec.factory,
            "params": self.spec.params,
            "metric": "inner product",
            "ntotal": int(self.index.ntotal) if self.index is not None else 0,
            "train_size": int(self.trained_on),
            "build_s": round(self.build_s, 6),
            "search_s": round(self.search_s, 6),
            "faiss_version": getattr(self.faiss, "__version__", "unknown"),
            "device": "cpu" if self.gpu is None else f"cuda:{self.gpu}",
        }
        if self.gpu_note:
            out["device_note"] = self.gpu_note
        return out
