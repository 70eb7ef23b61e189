"""The package's house (docs/architecture.md#layers): imports point downward only, through the levels
below; the longest chain of imports between packages and top-level modules has at most 12 links'
worth of units; no module over 500 lines without its reason written at its top; no function over
complexity 15; an import inside a function only for an optional or heavy dependency, with a
``# lazy:`` comment where it is a clirbench module. Imports inside functions count as dependencies;
imports under ``if TYPE_CHECKING:`` (annotations only) do not."""
from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "clirbench"

#: every package and top-level module of clirbench, by level: a unit imports only units of lower levels
LEVELS = {
    "util": 0, "__init__": 0,  # __init__ imports nothing at load: its verbs are imported when first used
    "identity": 1, "run_config": 1,
    "collection": 2,
    "scenarios": 3, "cache": 3,
    "formats": 4, "measures": 4,
    "rank": 5, "tasks": 5, "results": 5,
    "stats": 6, "retrievers": 6, "translate": 6,
    "display": 7, "evaluation": 7, "trec_eval": 7, "train": 7,
    "runner": 8, "trec_files": 8, "mteb": 8, "leaderboard": 8,
    "api": 9, "sweep": 9, "plots": 9, "provenance": 9,
    "cli": 10,
    "__main__": 11,
}
MAX_CHAIN = 12
MAX_LINES = 500
MAX_COMPLEXITY = 15


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_only(tree: ast.AST) -> set[int]:
    return {id(x) for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
            for x in ast.walk(n)}


def _targets(module: str, path: Path, node: ast.AST) -> list[str]:
    """clirbench modules (or packages) an import statement names."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            parts = (module if path.name == "__init__.py" else module.rsplit(".", 1)[0]).split(".")
            base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        return [f"{base}.{a.name}" for a in node.names] + [base] if base.split(".")[0] == "clirbench" else []
    return [a.name for a in node.names if a.name.split(".")[0] == "clirbench"]


@functools.lru_cache(maxsize=1)
def _unit_edges() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> 'file:line' of each import between two different units."""
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skip:
                continue
            for target in _targets(module, path, node):
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                a, b = _unit(module), _unit(target)
                if target in modules and a != b:
                    edges.setdefault((a, b), []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return edges


def _units() -> set[str]:
    return {_unit(m) for m in _modules()}


def test_every_unit_has_a_level():
    assert sorted(_units() - set(LEVELS)) == [] and sorted(set(LEVELS) - _units()) == []


def test_imports_point_downward_only():
    upward = [f"{where[0]}: {a} (level {LEVELS[a]}) imports {b} (level {LEVELS[b]})"
              for (a, b), where in sorted(_unit_edges().items()) if LEVELS.get(b, 99) >= LEVELS.get(a, -1)]
    assert upward == []


def _longest_chain(edges) -> list[str]:
    """The longest path of units (a unit already on the path ends it: a circle counts once)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    best: dict[str, list[str]] = {}

    def longest(unit: str, path: frozenset) -> list[str]:
        if unit in best:
            return best[unit]
        tails = [longest(b, path | {unit}) for b in sorted(graph.get(unit, ())) if b not in path and b != unit]
        out = [unit, *max(tails, key=len, default=[])]
        if not path & set(out):
            best[unit] = out
        return out

    return max((longest(u, frozenset()) for u in sorted(graph)), key=len, default=[])


def test_the_longest_import_chain_is_at_most_12_units():
    chain = _longest_chain(tuple(_unit_edges()))
    assert len(chain) <= MAX_CHAIN, " -> ".join(chain)


def test_the_chain_counter_counts_units():
    assert _longest_chain((("a", "b"), ("b", "c"), ("a", "c"), ("d", "c"))) == ["a", "b", "c"]


def test_no_module_over_500_lines_without_its_reason_at_its_top():
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_LINES and not any("over 500 lines" in line.lower() for line in lines[:20]):
            over.append(f"{path.relative_to(ROOT)} ({len(lines)} lines)")
    assert over == []


def _platform_imports(tree: ast.AST) -> set[int]:
    """Imports tried under ``except ImportError`` (``fcntl`` here, ``msvcrt`` on Windows)."""
    return {id(x) for n in ast.walk(tree) if isinstance(n, ast.Try)
            and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in n.handlers)
            for part in (n.body, *[h.body for h in n.handlers]) for stmt in part for x in ast.walk(stmt)}


def _function_imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_only(tree) | _platform_imports(tree)
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                    yield node


def test_imports_inside_functions_are_only_for_optional_or_heavy_dependencies():
    """A standard-library import belongs at the top (one tried under ``except ImportError`` is a
    platform's); a clirbench module imported inside a function says why with ``# lazy: <the heavy or
    optional dependency it pulls in>``; third-party imports inside functions are the optional and
    heavy dependencies themselves."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        seen = set()
        for node in _function_imports(path):
            if id(node) in seen:
                continue
            seen.add(id(node))
            text = "\n".join(lines[node.lineno - 2: node.end_lineno])
            if isinstance(node, ast.ImportFrom) and node.level:
                top = "clirbench"
            else:
                top = (node.module if isinstance(node, ast.ImportFrom) else node.names[0].name).split(".")[0]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if top == "clirbench" and "# lazy:" not in text:
                wrong.append(f"{where}: clirbench import inside a function without '# lazy: <why>'")
            elif top in sys.stdlib_module_names:
                wrong.append(f"{where}: standard-library import {top!r} inside a function")
    assert wrong == []


def test_ruff_finds_nothing():
    """ruff with the rule set of pyproject.toml ([tool.ruff.lint]: syntax, undefined and unused names,
    complexity over 15)."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "clirbench", "tests", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_architecture_page_shows_these_levels():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    shown = {}
    for level, cells in re.findall(r"^\| (\d+) \| (.+) \|$", section, flags=re.M):
        for name in re.findall(r"`([\w]+)(?:\.py|/)`", cells):
            shown[name] = int(level)
    assert shown == LEVELS
