"""The package's shape: docs/architecture.md names every module and only modules that exist; no
import circle (imports inside functions included, a package's own modules included); no private
name imported across modules; no function over 12 parameters; no comment or docstring citing a
document that is not in the repository."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "clirbench"
DOC = ROOT / "docs" / "architecture.md"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__), for every .py file of the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _imports(name: str, path: Path, is_pkg: bool, modules) -> list[tuple[str, list[str], int]]:
    """(imported clirbench module, names imported from it, line) for every import in the file."""
    base = name if is_pkg else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                target = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "clirbench":
                found.append((target, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.split(".")[0] == "clirbench"]
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in modules.items():
        deps = set()
        for target, names, _ in _imports(name, path, is_pkg, modules):
            for imported in [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]:
                while imported not in modules and "." in imported:
                    imported = imported.rsplit(".", 1)[0]
                # ``import pkg.sub`` runs pkg/__init__ first, which is no edge; but a name taken from
                # the package's own __init__ (``from . import X``, X not a module) is one
                own_package = name.startswith(imported + ".") and not names
                if imported in modules and imported != name and not own_package:
                    deps.add(imported)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_is_imported_across_modules():
    modules = _modules()
    private = [f"{path.relative_to(ROOT)}:{line}: {name}"
               for module, (path, is_pkg) in modules.items()
               for target, names, line in _imports(module, path, is_pkg, modules)
               for name in names if name.startswith("_") and not name.startswith("__")]
    assert private == []


def test_the_architecture_page_names_every_module_and_only_real_ones():
    text = DOC.read_text(encoding="utf-8")
    named = {n for n in re.findall(r"`([A-Za-z_][\w/]*(?:\.py|/))`", text) if not n.startswith("tests/")}
    files = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    folders = {p.relative_to(PACKAGE).as_posix() + "/" for p in PACKAGE.rglob("*") if p.is_dir()
               and p.name != "__pycache__"}
    stems = {Path(f).name for f in files} | {Path(f).stem for f in files}

    def exists(name: str) -> bool:
        return name in files or name in folders or name.rstrip("/").split("/")[-1] + ".py" in stems \
            or any(f.endswith("/" + name) for f in files | folders)

    assert sorted(n for n in named if not exists(n)) == []
    missing = []
    for f in sorted(files):
        stem, folder = Path(f).stem, (f.split("/")[0] + "/" if "/" in f else "")
        if stem in ("__init__", "__main__"):
            continue
        named_file = f"`{f}`" in text or f"`{stem}.py`" in text or f"`{stem}`" in text
        if not named_file or (folder and f"`{folder}`" not in text):
            missing.append(f)
    assert missing == []


def test_a_package_and_its_own_module_importing_each_other_is_a_circle(tmp_path, monkeypatch):
    pkg = tmp_path / "clirbench" / "p"
    pkg.mkdir(parents=True)
    (tmp_path / "clirbench" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("def f():\n    from .m import g\nNAMES = 1\n")
    (pkg / "m.py").write_text("from . import NAMES\ndef g():\n    return NAMES\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "clirbench")
    assert _cycles(_graph()) == [["clirbench.p", "clirbench.p.m"]]


MAX_PARAMETERS = 12


def test_no_function_takes_more_than_12_parameters():
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
                if len(names) > MAX_PARAMETERS:
                    over.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({len(names)})")
    assert over == []


# A document cited by name that a reader of the repository cannot open: the steering files beside the
# clone (DESIGN.md, STYLE.md, ENV-NOTES.md), an issue of the project's tracker, a "§" of no page here.
OUTSIDE_DOCUMENT = re.compile(r"\bDESIGN(?:\.md)?\b|\bSTYLE\.md\b|\bENV-NOTES\b|\bissue \d+\b|(?<!docs/)(?<![\w.])§")
DOCS_PAGE = re.compile(r"\bdocs/([\w-]+\.md)")


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    import io
    import tokenize

    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))):
            out.append((tok.start[0], tok.string))
    return out


def _cited() -> list[tuple[str, int, str]]:
    return [(str(path.relative_to(ROOT)), line, text)
            for folder in (PACKAGE, ROOT / "tests", ROOT / "benchmarks")
            for path in sorted(folder.rglob("*.py")) if path.name != "test_architecture.py"
            for line, text in _comments_and_docstrings(path)]


def test_no_comment_cites_a_document_outside_the_repository():
    outside = [f"{path}:{line}: {m.group()}" for path, line, text in _cited()
               for m in [OUTSIDE_DOCUMENT.search(text)] if m]
    missing = [f"{path}:{line}: docs/{page}" for path, line, text in _cited()
               for page in DOCS_PAGE.findall(text) if not (ROOT / "docs" / page).is_file()]
    assert outside == [] and missing == []
