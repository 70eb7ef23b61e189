"""What every figure shares: matplotlib on the Agg backend (imported lazily, through
``optional.require``), the output format from the file's suffix, and a deterministic write (SVG
ids from a fixed hash salt, no date in the metadata: two renders of one figure are identical
bytes), atomic."""
from __future__ import annotations

import io
import os
from pathlib import Path

from ..identity import PoolKey
from ..util.atomic import write_bytes_atomic
from ..util.errors import ClirbenchError
from ..util.optional import require

__all__ = ["SUFFIXES", "STYLE", "plain", "check_output", "result_paths", "check_distinct", "distinct_results", "pyplot", "subplots", "save"]

SUFFIXES = (".svg", ".png")
STYLE = {"svg.hashsalt": "clirbench", "svg.fonttype": "path", "font.size": 9, "axes.grid": True,
         "grid.alpha": 0.3, "figure.dpi": 100}


def plain(text: object) -> str:
    """``text`` drawn as itself by matplotlib: every ``$`` escaped (``\\$``), so no part of a name
    is read as mathtext (``bm25 $x^2$``, an unbalanced ``$\\frac{$``). Matplotlib parses math only
    between unescaped ``$`` pairs and draws ``\\$`` as ``$`` elsewhere; backslashes stay as they
    are. Every user-provided string in a figure (system, task, pool and language names, measures,
    titles, labels) goes through it."""
    return str(text).replace("$", r"\$")


def check_output(path: str | os.PathLike) -> Path:
    """``path`` if it ends in .svg or .png; a one-line error otherwise (before any work)."""

    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise ClirbenchError(f"--out {str(path)[:80]!r}: the file name must end in .svg or .png")
    if path.is_dir():
        raise ClirbenchError(f"--out {str(path)[:80]!r}: a folder, not a file name")
    return path


def result_paths(paths) -> list[Path]:
    """Result files named by ``paths``: a file as given, a folder as every result JSON under it
    (gap files left out), in order."""
    from ..leaderboard.submit import result_files  # lazy: numpy

    out: list[Path] = []
    for path in map(Path, paths):
        out.extend(result_files(path) if path.is_dir() else [path])
    return out


def check_distinct(records, places) -> None:
    """Refuse two results of one system on one pool (a file given twice, a folder and a file in it, a
    copy): a figure counts each pool of a system once. ``places`` name the records in the error."""

    seen: dict = {}
    for record, place in zip(records, places):
        key = (record.system_key, PoolKey.of(record))
        if key in seen:
            raise ClirbenchError(f"{place}: a second result of {record.system_key.label} on {key[1].name} "
                                 f"(the first: {seen[key]}); a figure counts each pool once")
        seen[key] = place


def distinct_results(paths) -> tuple[list[Path], list]:
    """The result files named by ``paths`` (``result_paths``) and their records, each system's pool
    once (``check_distinct``)."""
    from ..results import read_result  # lazy: numpy

    files = result_paths(paths)
    records = [read_result(p) for p in files]
    check_distinct(records, files)
    return files, records


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (a missing matplotlib: one line naming the extra)."""

    matplotlib = require("matplotlib")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def subplots(rows: int = 1, width: float = 6.0, height: float = 3.5):
    """``(figure, axes)`` in clirbench's style; ``axes`` a list of ``rows`` stacked axes."""
    plt = pyplot()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, 1, figsize=(width, height * rows), squeeze=False)
    return fig, [row[0] for row in axes]


def save(fig, path: str | os.PathLike) -> Path:
    """Write ``fig`` to ``path`` (SVG or PNG by the suffix) atomically, then close it."""

    path = check_output(path)
    plt = pyplot()
    fmt = path.suffix.lower()[1:]
    buffer = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    with plt.rc_context(STYLE):
        fig.savefig(buffer, format=fmt, metadata=metadata, bbox_inches="tight")
    plt.close(fig)
    return write_bytes_atomic(path, buffer.getvalue())
