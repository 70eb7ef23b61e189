"""kill -9 a real `clirbench run` at several moments, rerun: results identical to an uninterrupted run, no stray file."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clirbench.cache.shards import MANIFEST, verify_cache

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
VOLATILE = {"timings_s", "created_at", "hardware"}


def _parallel_file(path: Path, items: int = 30) -> None:
    en = json.loads((XQUAD / "xquad.en.json").read_text(encoding="utf-8"))["data"]
    de = json.loads((XQUAD / "xquad.de.json").read_text(encoding="utf-8"))["data"]
    rows = []
    for a, b in zip(en, de):
        for pa, pb in zip(a["paragraphs"], b["paragraphs"]):
            qa, qb = pa["qas"][0], pb["qas"][0]
            rows.append({"item": qa["id"], "passages": {"en": pa["context"], "de": pb["context"]},
                         "questions": [{"id": qa["id"], "en": qa["question"], "de": qb["question"]}]})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:items]), encoding="utf-8")


def _start(tmp_path: Path, bert: str, name: str) -> subprocess.Popen:
    # batch size 1: every text is encoded alone, so its vector does not depend on which run encoded it
    argv = [sys.executable, "-m", "clirbench.cli", "run", "--model", f"fusion:rrf(bm25,dense:{bert})",
            "--task", f"parallel:{tmp_path / 'data.jsonl'}", "--langs", "en,de", "--resamples", "20",
            "--batch-size", "1", "--output", str(tmp_path / name / "out"), "--cache-dir", str(tmp_path / name / "cache"),
            "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 120) -> bool:
    """SIGKILL ``proc`` as soon as ``ready()``; False if it ended first."""
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    raise AssertionError("the moment to kill never came")


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _results(out: Path) -> dict[str, object]:
    found = {}
    for path in _files(out):
        rel = str(path.relative_to(out))
        found[rel] = _strip(json.loads(path.read_text())) if path.suffix == ".json" else path.read_bytes()
    return found


def test_kill_9_at_several_moments_then_rerun_gives_identical_results(tmp_path, tiny_bert_dir):
    _parallel_file(tmp_path / "data.jsonl")

    reference = _start(tmp_path, tiny_bert_dir, "reference")
    assert reference.wait(timeout=300) == 0, reference.stderr.read()

    out, cache = tmp_path / "killed" / "out", tmp_path / "killed" / "cache"
    manifests = lambda: len(list(cache.rglob(f"*{MANIFEST}")))  # noqa: E731
    moments = [
        ("while starting", lambda: time.sleep(0.5) or True),
        ("mid-encode", lambda: manifests() >= 3),
        ("at the first file in the results folder", lambda: bool(_files(out))),
        ("after two results", lambda: len(list(out.rglob("*.q-*.json"))) >= 2),
    ]
    killed = []
    for label, ready in moments:
        proc = _start(tmp_path, tiny_bert_dir, "killed")
        if _kill_when(proc, ready):
            killed.append(label)
        else:
            assert proc.returncode == 0, proc.stderr.read()
    assert len(killed) >= 3, killed  # the run outlived at most one of the moments chosen to kill it

    final = _start(tmp_path, tiny_bert_dir, "killed")
    assert final.wait(timeout=300) == 0, final.stderr.read()

    expected = _results(tmp_path / "reference" / "out")
    assert len([k for k in expected if k.endswith(".perquery.tsv")]) == 8
    got = _results(out)
    assert sorted(got) == sorted(expected)  # the same files, no stray one
    for name in expected:
        assert got[name] == expected[name], name
    leftovers = [p for p in _files(tmp_path / "killed") if p.name.endswith(".tmp")]
    assert leftovers == []
    report = verify_cache(cache)
    assert report.clean and report.shards > 0, (report.bad, report.stray)
