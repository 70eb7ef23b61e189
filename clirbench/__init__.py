"""clirbench: a benchmark harness for cross-lingual information retrieval.

The public API mirrors the CLI: ``get_task``, ``list_tasks``, ``run``, ``evaluate``, ``compare``
and the measure objects (``parse("nDCG@10")``). Heavy libraries are imported only when used.
"""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "get_task": ("clirbench.tasks", "get_task"),
    "list_tasks": ("clirbench.tasks", "list_tasks"),
    "run": ("clirbench.runner", "run"),
    "evaluate": ("clirbench.evaluate", "evaluate"),
    "compare": ("clirbench.compare", "compare"),
    "parse": ("clirbench.measures", "parse"),
    "measures": ("clirbench.measures", None),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'clirbench' has no attribute {name!r}")
    import importlib

    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attr is None else getattr(module, attr)
