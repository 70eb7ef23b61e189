"""clirbench: a benchmark harness for cross-lingual information retrieval.

The public API mirrors the CLI and works in memory: ``get_task``, ``list_tasks``,
``register_task``, ``run`` (its settings: ``RunConfig``), ``evaluate``, ``compare``, ``load_results``, ``export_pools``, the measure objects (``parse("nDCG@10")``, ``nDCG``,
``MaxR``, …), the data types ``Text`` and ``Pool``, the ``Retriever`` protocol and
``RunRetriever`` (a ``{qid: {docid: score}}`` run as a retriever). See docs/python-api.md.
``run`` writes files only when given a results folder (``output_dir=``), as ``clirbench run
--output`` does. Nothing heavy is imported until a name is used.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_MEASURES = ("nDCG", "AP", "RR", "R", "P", "Success", "Complete", "MaxR", "MaxR_norm", "MaxR_norm_of_mean",
             "SameLangFirst", "PEER")

_LAZY = {
    "get_task": ("clirbench.tasks", "get_task"),
    "list_tasks": ("clirbench.tasks", "list_tasks"),
    "register_task": ("clirbench.tasks", "register_task"),
    "run": ("clirbench.api", "run"),
    "evaluate": ("clirbench.api", "evaluate"),
    "compare": ("clirbench.stats.paired", "compare"),
    "format_comparison": ("clirbench.stats.paired", "format_comparison"),
    "load_results": ("clirbench.api", "load_results"),
    "export_pools": ("clirbench.tasks.export", "export_pools"),
    "RunResult": ("clirbench.api", "RunResult"),
    "PoolResult": ("clirbench.api", "PoolResult"),
    "Evaluation": ("clirbench.api", "Evaluation"),
    "RunConfig": ("clirbench.run_config", "RunConfig"),
    "Retriever": ("clirbench.retrievers.base", "Retriever"),
    "RunRetriever": ("clirbench.retrievers.run_adapter", "RunRetriever"),
    "Text": ("clirbench.collection", "Text"),
    "Pool": ("clirbench.collection", "Pool"),
    "parse": ("clirbench.measures", "parse"),
    "measures": ("clirbench.measures", None),
    **{name: ("clirbench.measures", name) for name in _MEASURES},
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'clirbench' has no attribute {name!r}")
    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attr is None else getattr(module, attr)


def __dir__() -> list[str]:
    return sorted(__all__)
