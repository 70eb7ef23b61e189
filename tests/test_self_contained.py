"""The suite reads nothing outside the repository: a user's clone has no steering folder beside it.

Two guards: a scan of every file under ``tests/``, ``benchmarks/``, ``examples/``, ``.ci/`` and the
README for a path that leaves the repository, and (in ``conftest.py``) an audit hook that fails any
test which opens a file in a sibling folder of the clone named ``shared``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["tests", "benchmarks", "examples", ".ci", "README.md", "docs"]
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".json", ".sh", ".txt", ".toml", ""}

BESIDE = "sha" + "red"  # the folder beside the clone (spelt in two parts so that a grep for it finds no use)

# A path that leaves the repository: the steering folder beside the clone, an absolute path of the
# machine the suite was written on, or ``..`` climbing out of the clone.
OUTSIDE = [
    (re.compile(r"\.\./" + BESIDE + r"\b"), "../" + BESIDE),
    (re.compile(r"""["']shared["']\s*/\s*["']data["']"""), '"shared" / "data"'),
    (re.compile(r"(?<![\w.])/work/"), "an absolute /work/ path"),
    (re.compile(r"(?<![\w.])/home/\w+"), "an absolute home path"),
    (re.compile(r"CLIRBENCH_DATA_DIR.*shared"), "a data folder under shared"),
]
PARENTS = re.compile(r"__file__\)\.resolve\(\)\.parents\[(\d+)\]")


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out.extend(p for p in candidates if p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts
                   and p != Path(__file__).resolve())
    return out


def outside_references(text: str, depth: int) -> list[str]:
    """``line: what`` for every place in a file's text that names a path outside the repository
    (``depth``: how many folders down the file is, so that ``parents[depth]`` is the repository)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found.extend(f"{number}: {what}" for pattern, what in OUTSIDE if pattern.search(line))
        found.extend(f"{number}: parents[{m.group(1)}] climbs above the repository"
                     for m in PARENTS.finditer(line) if int(m.group(1)) > depth)
    return found


def test_no_file_names_a_path_outside_the_repository():
    offenders = {}
    for path in _files():
        rel = path.relative_to(ROOT)
        hits = outside_references(path.read_text(encoding="utf-8", errors="replace"), len(rel.parts) - 1)
        if hits:
            offenders[str(rel)] = hits
    assert not offenders, f"paths outside the repository: {offenders}"


@pytest.mark.parametrize("line, bad", [
    (f'XQUAD = Path(__file__).resolve().parents[{2}] / "{BESIDE}" / "data" / "xquad"', True),
    (f"data_dir = '../{BESIDE}/data/xquad'", True),
    ('SHARED = Path("/work/shared/data")', True),
    ('ROOT = Path(__file__).resolve().parents[1]', False),
    (f'ROOT = Path(__file__).resolve().parents[{2}]', True),
    ("--src ../../pwn", False),  # a hostile input, not a path the suite reads
])
def test_the_scan_finds_what_it_should(line, bad):
    assert bool(outside_references(line, depth=1)) is bad  # as a line of a test file


def test_the_audit_hook_refuses_a_read_of_the_folder_beside_the_clone():
    from conftest import OUTSIDE_READS, SHARED_BESIDE

    before = len(OUTSIDE_READS)
    with pytest.raises(PermissionError, match="outside the repository"):
        open(SHARED_BESIDE / "DESIGN.md", encoding="utf-8")
    assert len(OUTSIDE_READS) == before + 1
    del OUTSIDE_READS[before:]  # this read was the test's own: the session stays green
