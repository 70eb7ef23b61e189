"""``clirbench export-results``: a results folder, a result file or a leaderboard written as
``ir_metadata`` (a YAML per pool, the saved run annotated with it, the per-query table beside them),
MTEB's results layout (``mteb_results``) or Hugging Face ``.eval_results`` files (``hf_eval``)."""
from __future__ import annotations

import gzip
import math
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..identity import check_path_fits
from ..results import result_path
from ..results.saved_run import file_sha256
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError, UnknownNameError
from .entries import Entry, query_ids_of, read_entries
from .hf_eval import write_hf
from .ir_metadata import dump, header, metadata
from .mteb_results import write_mteb

__all__ = ["EXPORT_FORMATS", "export_results", "write_ir_metadata", "per_query_text"]

EXPORT_FORMATS = ("ir_metadata", "mteb", "hf-eval-results")


def per_query_text(ids: Sequence[str], vectors) -> str:
    """A per-query table (``query_id<TAB><measure>…``, floats as Python ``repr``, ``nan`` for no value)."""
    names = list(vectors)
    lines = ["\t".join(["query_id", *names])]
    for i, q in enumerate(ids):
        lines.append("\t".join([q, *(("nan" if math.isnan(v) else repr(v))
                                     for v in (float(vectors[m][i]) for m in names))]))
    return "\n".join(lines) + "\n"


def _stem(out: Path, entry: Entry) -> Path:
    """``<out>/<system folder>/<task>/…/<L1-L2>.q-<Lq>`` (the results layout, without ``.json``)."""
    path = result_path(out, entry.system, entry.pool)
    return path.with_name(path.name[: -len(".json")])


def write_ir_metadata(entries: Sequence[Entry], out: Path, data_dir=None) -> list[Path]:
    """Per entry: ``<stem>.ir_metadata.yaml``; ``<stem>.run``, its saved run (when the record has one)
    with the ir_metadata in its header; ``<stem>.perquery.tsv``, its per-query values (a board's when
    its queries' ids can be read from the task's data)."""
    written = []
    for entry in entries:
        stem = _stem(out, entry)
        stem.parent.mkdir(parents=True, exist_ok=True)
        meta = metadata(entry)
        target = stem.with_name(stem.name + ".ir_metadata.yaml")
        write_text_atomic(target, dump(meta))
        written.append(target)
        if entry.run_file is not None:
            if file_sha256(entry.run_file) != entry.run_sha256:
                raise ClirbenchError(f"{entry.run_file}: missing, or not the run its record names (SHA-256)")
            with gzip.open(entry.run_file, "rt", encoding="utf-8") as handle:
                run = handle.read()
            target = stem.with_name(stem.name + ".run")
            write_text_atomic(target, header(meta) + run)
            written.append(target)
        ids = query_ids_of(entry, data_dir)
        if ids is not None and entry.vectors:
            target = stem.with_name(stem.name + ".perquery.tsv")
            write_text_atomic(target, per_query_text(ids, {m: np.asarray(v) for m, v in entry.vectors.items()}))
            written.append(target)
    return written


def export_results(source: str | os.PathLike, out: str | os.PathLike, fmt: str, data_dir=None) -> list[Path]:
    """Write the entries of ``source`` (a results folder, a result file or a leaderboard) under ``out``
    in ``fmt`` (``EXPORT_FORMATS``); returns the files written, sorted."""
    if fmt not in EXPORT_FORMATS:
        raise UnknownNameError(f"unknown export format {str(fmt)[:40]!r}; known: {', '.join(EXPORT_FORMATS)}")
    out = Path(out)
    check_path_fits(out, "--output")
    if out.exists() and not out.is_dir():
        raise ClirbenchError(f"--output {out}: a file, not a folder")
    entries = read_entries(source)
    if fmt == "ir_metadata":
        written = write_ir_metadata(entries, out, data_dir)
    elif fmt == "mteb":
        written = write_mteb(entries, out)
    else:
        written = write_hf(entries, out)
    return sorted(written)
