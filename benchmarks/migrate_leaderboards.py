"""Migrate leaderboard files to the current schema and make their recorded commands runnable as written.

    python benchmarks/migrate_leaderboards.py leaderboards/*.json [--check]

Reading a schema-1 board upgrades it (``clirbench.leaderboard.store.upgrade``: one system per
``SystemKey``, hardware per result, commands redacted); values are not touched. Each command is then
rewritten to what a user can run:

* ``--data-dir <folder>`` is dropped when the board's dataset hashes (``dataset.files_sha256``) are
  those of the copy clirbench finds without it (the task's default loader: for XQuAD the embedded
  copy, SHA-256 pinned in the task card). The data then are byte for byte the same, so no value
  depends on the dropped option; otherwise the script stops.
* ``--output <folder>`` becomes ``--output results`` (where results are written changes no value).
* ``python benchmarks/xquad_sweep.py … (…; CLI equivalent: <command>)`` becomes ``<command>``
  (the sweep calls ``clirbench.runner.run`` with the same arguments and default settings).

``--check`` writes nothing and exits 1 when a board would change.
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from clirbench.leaderboard import store

_EQUIVALENT = re.compile(r"CLI equivalent: (clirbench [^)]*)\)")


def _default_hashes(task: str) -> dict:
    from clirbench.tasks import get_task

    source = get_task(task).load().source
    return dict(source.get("files_sha256") or {})


def runnable(command: str, task: str, dataset: dict) -> str:
    """``command`` as a user can run it (see the module docstring); ValueError when not provably equal."""
    found = _EQUIVALENT.search(command)
    if found:
        command = found.group(1)
    words = shlex.split(command)
    out, i = [], 0
    while i < len(words):
        word = words[i]
        name, eq, inline = word.partition("=")
        if name in ("--data-dir", "--output"):
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
            i += 1 if eq else 2
            if name == "--output":
                out += ["--output", "results"]
            elif (dataset.get("files_sha256") or {}) != _default_hashes(task):
                raise ValueError(f"{command!r}: the board's data are not the default copy; keep --data-dir {value}")
            continue
        out.append(word)
        i += 1
    return shlex.join(out)


def migrate(path: Path) -> tuple[str, str]:
    """(old text, new text) of one board."""
    old = path.read_text(encoding="utf-8")
    data = store.load(path)  # upgrades a schema-1 board
    for system in data["systems"].values():
        commands = []
        for command in system["commands"]:
            command = runnable(command, data["task"], data["dataset"])
            if command not in commands:
                commands.append(command)
        system["commands"] = commands
    notes = []
    for note in data.get("notes") or []:
        if note.startswith("Rebuild:"):
            note = ("Rebuild: clirbench run --model SYSTEM --task " + data["task"] + " --langs en+all --output results, "
                    "then clirbench leaderboard build results --command \"THE RUN COMMAND\"")
        notes.append(note.replace("; data: the local XQuAD files", "; data: the XQuAD files"))
    if notes:
        data["notes"] = notes
    return old, store.dumps(store.validate(data, str(path)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("boards", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a board would change")
    args = parser.parse_args()
    changed = 0
    for path in args.boards:
        old, new = migrate(path)
        if old != new:
            changed += 1
            print(f"{path}: {'would change' if args.check else 'migrated'}")
            if not args.check:
                with store.locked(path):
                    store.save(store.validate(__import__("json").loads(new), str(path)), path)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
