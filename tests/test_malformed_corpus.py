"""The malformed-input corpus (``tests/malformed/cases.yaml`` and ``cases.<topic>.yaml``) run through the real CLI.

Every case writes its files into a fresh folder (a valid base plus the case's damage), runs
``clirbench.cli.main(argv)`` in-process and requires: no traceback, exit code 2 (or, for a cache
the run repairs, 0 with a warning), exactly one line on stderr starting ``clirbench: ``, holding
the case's expected text. An input accepted silently (exit 0, nothing on stderr) fails.
"""
from __future__ import annotations

import base64
import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest
import yaml

from clirbench import cli

HERE = Path(__file__).parent / "malformed"


def _manifest() -> dict:
    """``cases.yaml`` and every ``cases.<topic>.yaml`` beside it: their commands, bases and cases together."""
    merged: dict = {"commands": {}, "bases": {}, "cases": []}
    for path in [HERE / "cases.yaml", *sorted(HERE.glob("cases.*.yaml"))]:
        part = yaml.safe_load(path.read_text(encoding="utf-8"))
        for key in ("commands", "bases"):
            clash = merged[key].keys() & part.get(key, {}).keys()
            assert not clash, f"{path.name} redefines {key} {sorted(clash)}"
            merged[key].update(part.get(key, {}))
        merged["cases"].extend(part.get("cases", []))
    ids = [c["id"] for c in merged["cases"]]
    assert len(ids) == len(set(ids)), "a case id is used twice"
    return merged


MANIFEST = _manifest()


def _content(spec) -> bytes:
    """A file's bytes from the manifest: a string, or a small generator spec."""
    if isinstance(spec, str):
        return spec.encode("utf-8")
    (kind, arg), = spec.items()
    if kind == "hex":
        return bytes.fromhex(arg)
    if kind == "b64":
        return base64.b64decode(arg)
    if kind == "gzip":
        return gzip.compress(arg.encode("utf-8"), mtime=0)
    if kind == "gzip_corrupt":  # a valid header, a damaged deflate block
        data = bytearray(gzip.compress(arg.encode("utf-8"), mtime=0))
        for i in range(12, min(len(data) - 8, 40)):
            data[i] ^= 0x5A
        return bytes(data)
    if kind == "gzip_truncated":
        data = gzip.compress(arg.encode("utf-8"), mtime=0)
        return data[: len(data) // 2]
    if kind == "deep_json":  # {"key": [[[...]]]} nested `depth` deep, in a template
        depth = int(arg["depth"])
        return arg["template"].replace("DEEP", "[" * depth + "]" * depth).encode("utf-8")
    if kind == "repeat":  # a line repeated n times (large inputs)
        return (arg["line"] * int(arg["n"])).encode("utf-8")
    if kind in ("fill", "gzip_fill"):  # a template whose FILL is `text` repeated n times (huge numbers, long lines)
        data = arg["template"].replace("FILL", arg["text"] * int(arg["n"])).encode("utf-8")
        return gzip.compress(data, mtime=0) if kind == "gzip_fill" else data
    if kind == "latin1":
        return arg.encode("latin-1")
    if kind == "repo":
        return (Path(__file__).parent.parent / arg).read_bytes()
    raise AssertionError(f"unknown content kind {kind}")


def _set_json(path: Path, changes: dict) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value == "__delete__":
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    path.write_text(json.dumps(data), encoding="utf-8")


def _place(path: Path, spec) -> None:
    """Write a manifest file; ``{symlink: /dev/zero}`` links to a device (an endless file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(spec, dict) and "symlink" in spec:
        path.unlink(missing_ok=True)
        path.symlink_to(spec["symlink"])
    else:
        path.write_bytes(_content(spec))


def _build(case: dict, folder: Path, generated: dict[str, Path]) -> None:
    base = case.get("base")
    if base in generated:
        shutil.copytree(generated[base], folder, dirs_exist_ok=True)
    elif base:
        for name, spec in MANIFEST["bases"][base].items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(_content(spec))
    for name, spec in (case.get("files") or {}).items():
        _place(folder / name, spec)
    for name, pairs in (case.get("replace") or {}).items():
        text = (folder / name).read_text(encoding="utf-8")
        for old, new in pairs:
            assert old in text, f"{case['id']}: {old!r} not in base file {name}"
            text = text.replace(old, new, 1)
        (folder / name).write_bytes(text.encode("utf-8"))
    for name, changes in (case.get("json") or {}).items():
        _set_json(folder / name, changes)
    for pattern in case.get("truncate") or []:  # cache files: "glob:bytes"
        glob, size = pattern.rsplit(":", 1)
        matches = sorted(folder.glob(glob))
        assert matches, f"{case['id']}: nothing matches {glob}"
        for path in matches:
            path.write_bytes(path.read_bytes()[: int(size)])
    for name in case.get("delete") or []:
        (folder / name).unlink()


def _argv(case: dict, folder: Path, extra: dict[str, str]) -> list[str]:
    template = case["argv"]
    if isinstance(template, str):
        template = MANIFEST["commands"][template]
    template = list(template) + list(case.get("extra_argv") or [])
    return [a.replace("{dir}", str(folder)).format_map(extra) if "{" in a else a for a in template]


class _Keep(dict):
    def __missing__(self, key):
        return "{" + key + "}"


@pytest.fixture(scope="session")
def generated(tmp_path_factory, tiny_bert_dir) -> dict[str, Path]:
    """Valid bases made by clirbench itself: a result and a leaderboard (xquad, bm25), a PSQ table,
    an embedding cache (tiny random BERT)."""
    root = tmp_path_factory.mktemp("malformed-bases")
    out: dict[str, Path] = {}
    data = root / "data"
    data.mkdir()
    for name, spec in MANIFEST["bases"]["parallel_jsonl"].items():
        (data / name).write_bytes(_content(spec))
    common = ["--output", str(root / "runs"), "--cache-dir", str(root / "unused-cache"), "--no-progress",
              "--resamples", "10"]
    assert cli.main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,de", "--scenario", "mono-cross",
                     "--query-lang", "de", *common]) == 0
    result_dir = root / "result" / "res"
    result_dir.mkdir(parents=True)
    src = root / "runs" / "bm25" / "xquad" / "mono-cross" / "unique"
    shutil.copy(src / "en.q-de.json", result_dir / "r.json")
    shutil.copy(src / "en.q-de.perquery.tsv", result_dir / "en.q-de.perquery.tsv")
    shutil.copy(src / "en.q-de.json", result_dir / "r2.json")
    out["result"] = root / "result"
    board = root / "board"
    shutil.copytree(root / "result", board)
    assert cli.main(["leaderboard", "submit", str(board / "res" / "r.json"), "--dir", str(board / "lb")]) == 0
    out["board"] = board
    psq = root / "psq"
    shutil.copytree(data, psq)
    (psq / "bitext.tsv").write_bytes(_content(MANIFEST["bases"]["bitext"]["bitext.tsv"]))
    assert cli.main(["psq", "train", "--bitext", str(psq / "bitext.tsv"), "--src", "de", "--tgt", "en",
                     "--out", str(psq / "t.json.gz"), "--iterations", "2"]) == 0
    out["psq"] = psq
    cache = root / "cache"
    shutil.copytree(data, cache)
    assert cli.main(["run", "--model", f"dense:{tiny_bert_dir}", "--task", f"parallel:{cache}/p.jsonl",
                     "--scenario", "mono-cross", "--output", str(cache / "out"), "--cache-dir", str(cache / "cache"),
                     "--no-progress", "--resamples", "10"]) == 0
    shutil.rmtree(cache / "out")
    out["cache"] = cache
    return out


CASES = MANIFEST["cases"]


def test_the_corpus_is_large_and_ids_are_unique():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 400


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_malformed_input_is_refused_on_one_line(case, tmp_path, capsys, monkeypatch, generated,
                                                tiny_bert_dir):
    folder = tmp_path / "case"
    folder.mkdir()
    _build(case, folder, generated)
    if case["argv"] == "cards":  # the CLI reads the task cards from this folder instead of tasks/
        import clirbench.tasks.card as cards

        monkeypatch.setattr(cards, "cards_dir", lambda: folder / "cards")
    monkeypatch.delenv("CLIRBENCH_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    argv = _argv(case, folder, _Keep(bert=tiny_bert_dir, many9="9" * 5000))
    with warnings.catch_warnings(record=True) as caught:  # what the console would print as warnings
        warnings.simplefilter("always")
        code = cli.main(argv)  # an exception escaping here is a traceback: the test fails
    err = capsys.readouterr().err
    lines = err.splitlines()
    expected_code = case.get("exit", 2)
    assert code == expected_code, f"exit {code} (expected {expected_code}); stderr: {err!r}"
    assert "Traceback" not in err
    expect = case["expect"]
    if expected_code == 0:  # repaired with a warning: the warning must say what happened
        shown = lines + [str(w.message) for w in caught]
        assert any(expect in line for line in shown), shown
        return
    assert len(lines) == 1, f"stderr is not one line: {err!r}"
    assert lines[0].startswith("clirbench: "), lines[0]
    assert expect in lines[0], f"{expect!r} not in {lines[0]!r}"
