"""Cache shards check themselves: checksums, quarantine, stale temp files, `cache verify|clean`, umask, locks."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from clirbench.util.atomic import STALE_AFTER, write_text_atomic
from clirbench.cli import main
from clirbench.cache.embeddings import EmbeddingCache, space_key
from clirbench.cache.store import npy_bytes
from clirbench.retrievers.colbert import TokenEmbeddingCache
from clirbench.retrievers.splade import SparseVectorCache
from clirbench.cache.shards import MANIFEST

TEXTS = [f"passage {i} " + "word " * (i % 7) for i in range(24)]


def _vec(text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


class Dense:
    model_id, revision, batch_size = "test/dense", "1", 4

    def __init__(self):
        self.sent: list[str] = []

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        self.sent += list(texts)
        return np.stack([_vec(t, 8) for t in texts])


class Sparse(Dense):
    model_id = "test/sparse"

    def settings_key(self):
        return ""

    def encode(self, texts, role):
        import scipy.sparse as sp

        self.sent += list(texts)
        dense = np.abs(np.stack([_vec(t, 32) for t in texts]))
        dense[dense < 1.0] = 0
        return sp.csr_matrix(dense, dtype=np.float32)


class Tokens(Dense):
    model_id = "test/tokens"

    def space(self, role):
        return "settings"

    def encode(self, texts, role):
        self.sent += list(texts)
        return [np.stack([_vec(t + str(k), 4) for k in range(1 + len(t) % 3)]) for t in texts]


def _dense(root, texts, enc=None):
    enc = enc or Dense()
    return EmbeddingCache(root).embed(enc, texts, "document", batch_size=8), enc


def _sparse(root, texts, enc=None):
    enc = enc or Sparse()
    mat, rows = SparseVectorCache(root).vectors_rows(enc, texts, "document", chunk=8)
    return mat[rows].toarray(), enc


def _tokens(root, texts, enc=None):
    enc = enc or Tokens()
    return np.concatenate(TokenEmbeddingCache(root).embed(enc, texts, "document", chunk=8)), enc


CACHES = {"dense": (_dense, ".vecs.npy"), "sparse": (_sparse, ".npz"), "tokens": (_tokens, ".tokens.npy")}


def _space(root: Path) -> Path:
    [folder] = [p for p in root.iterdir() if p.is_dir() and p.name != "quarantine"]
    return folder


@pytest.mark.parametrize("kind", sorted(CACHES))
@pytest.mark.parametrize("damage", ["zero-byte hashes", "zeroed data", "swapped rows", "truncated manifest"])
def test_a_damaged_shard_is_set_aside_and_its_texts_encoded_again(tmp_path, capsys, kind, damage):
    run, data_suffix = CACHES[kind]
    expected, _ = run(tmp_path, TEXTS)
    folder = _space(tmp_path)
    manifest = sorted(folder.glob(f"*{MANIFEST}"))[1]
    name = manifest.name[: -len(MANIFEST)]
    data = folder / f"{name}{data_suffix}"
    if damage == "zero-byte hashes":
        (folder / f"{name}.hashes.npy").write_bytes(b"")
    elif damage == "zeroed data":  # same size, valid header: only the checksum can tell
        raw = bytearray(data.read_bytes())
        raw[-64:] = bytes(64)
        data.write_bytes(bytes(raw))
    elif damage == "swapped rows":
        raw = data.read_bytes()
        data.write_bytes(raw[:-32] + raw[-16:] + raw[-32:-16])
    else:
        manifest.write_bytes(manifest.read_bytes()[:20])
    capsys.readouterr()

    again, enc = run(tmp_path, TEXTS)
    np.testing.assert_array_equal(again, expected)
    assert 0 < len(enc.sent) <= 8  # that shard's texts only (chunks of 8)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("clirbench: warning: damaged cache shard") and name in err[0]
    assert sorted(p.name for p in (tmp_path / "quarantine" / folder.name).iterdir()) == \
        sorted({f"{name}{s}" for s in (MANIFEST, ".hashes.npy", data_suffix)} |
               ({f"{name}.offsets.npy"} if kind == "tokens" else set()))
    third, enc3 = run(tmp_path, TEXTS)  # the damage is gone: nothing encoded, nothing said
    np.testing.assert_array_equal(third, expected)
    assert enc3.sent == [] and capsys.readouterr().err == ""


def _legacy_shard(folder: Path, name: str, texts: list[str]) -> None:
    """A dense shard as clirbench wrote them before checksums: vecs, then hashes, no manifest."""
    keys = np.frombuffer(b"".join(hashlib.sha256(t.encode()).digest() for t in texts), np.uint8).reshape(-1, 32)
    (folder / f"{name}.vecs.npy").write_bytes(npy_bytes(np.stack([_vec(t, 8) for t in texts])))
    (folder / f"{name}.hashes.npy").write_bytes(npy_bytes(keys))


def test_shards_written_before_checksums_are_read_and_checked_by_loading(tmp_path, capsys):
    folder = tmp_path / space_key("test/dense", "1", "", "document")
    folder.mkdir()
    _legacy_shard(folder, "1700000000000-42-0123abcd", TEXTS[:10])
    out, enc = _dense(tmp_path, TEXTS[:10])
    assert enc.sent == []  # valid but unverified: used, not encoded again
    np.testing.assert_array_equal(out, Dense().encode(TEXTS[:10], "document"))
    assert main(["cache", "verify", "--cache-dir", str(tmp_path)]) == 0
    assert "1 written before checksums" in capsys.readouterr().out

    # the case: a zero-byte legacy hashes file ended every later run in EOFError
    _legacy_shard(folder, "1700000000001-42-0123abce", TEXTS[10:12])
    (folder / "1700000000001-42-0123abce.hashes.npy").write_bytes(b"")
    assert main(["cache", "verify", "--cache-dir", str(tmp_path)]) == 1
    assert "bad    " in capsys.readouterr().out
    out, enc = _dense(tmp_path, TEXTS[:12])
    assert sorted(enc.sent) == sorted(TEXTS[10:12])
    assert "1700000000001-42-0123abce" in capsys.readouterr().err


def test_a_truncated_meta_json_is_named_and_set_aside(tmp_path, capsys):
    _dense(tmp_path, TEXTS[:8])
    meta = _space(tmp_path) / "meta.json"
    meta.write_text('{"model_id": "te', encoding="utf-8")
    out, enc = _dense(tmp_path, TEXTS[:8])
    assert enc.sent == []
    err = capsys.readouterr().err
    assert str(meta) in err and err.count("\n") == 1
    assert (tmp_path / "quarantine" / meta.parent.name / "meta.json").is_file()
    _dense(tmp_path, TEXTS[8:10])  # rewritten with the next shard
    assert json.loads(meta.read_text())["dim"] == 8


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _host() -> str:
    import re
    import socket

    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"  # as temp names spell it


def test_stale_temp_files_are_removed_live_ones_kept(tmp_path):
    target = tmp_path / "result.json"
    dead = tmp_path / f".result.json.{_host()}.{_dead_pid()}.0badf00d.tmp"
    live_proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f".result.json.{_host()}.{live_proc.pid}.0badf00e.tmp"
        other_host = tmp_path / ".result.json.elsewhere.1.0badf00f.tmp"
        old_other_host = tmp_path / ".result.json.elsewhere.2.0badf010.tmp"
        older_format = tmp_path / ".result.json.k2j4h_x.tmp"  # tempfile.mkstemp's, before this change
        for p in (dead, live, other_host, old_other_host, older_format):
            p.write_text("half")
        past = time.time() - STALE_AFTER - 60
        os.utime(old_other_host, (past, past))
        os.utime(older_format, (past, past))
        write_text_atomic(target, "{}")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name, other_host.name])
    finally:
        live_proc.kill()
        live_proc.wait()


def test_cache_verify_and_clean_through_the_cli(tmp_path, capsys):
    cache = tmp_path / "cache"
    _dense(cache / "embeddings", TEXTS)
    _sparse(cache / "embeddings" / "sparse", TEXTS)
    assert main(["cache", "verify", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "0 bad, 0 stray" in out and "6 shards" in out

    folder = _space(cache / "embeddings" / "sparse")
    shard = sorted(folder.glob("*.npz"))[0]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    shard.write_bytes(bytes(raw))
    stray = folder / f".{shard.name}.{_host()}.{_dead_pid()}.00000001.tmp"
    stray.write_bytes(b"half a shard")
    orphan = folder / "v2-1700000000000-7-00000002.npz"  # killed before its manifest landed
    orphan.write_bytes(b"data")
    assert main(["cache", "verify", "--cache-dir", str(cache)]) == 1
    out = capsys.readouterr().out
    assert f"bad    {folder / shard.name[:-4]}: {shard.name} does not match its checksum" in out
    assert f"stray  {stray}" in out and f"stray  {orphan}" in out and "1 bad, 2 stray" in out

    assert main(["cache", "clean", "--cache-dir", str(cache)]) == 0
    assert "1 bad set aside, 2 stray removed" in capsys.readouterr().out
    assert not stray.exists() and not orphan.exists() and not shard.exists()
    assert main(["cache", "verify", "--cache-dir", str(cache)]) == 0
    assert "3 files in quarantine" in capsys.readouterr().out
    assert main(["cache", "clean", "--cache-dir", str(cache), "--purge"]) == 0
    assert not list(cache.rglob("quarantine"))
    out, enc = _sparse(cache / "embeddings" / "sparse", TEXTS)
    assert len(enc.sent) == 8  # the quarantined shard's texts, encoded again


def test_cache_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["cache", "verify", "--cache-dir", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"clirbench: error: no cache folder at {tmp_path / 'none'}"
    assert main(["cache", "frob"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_written_files_respect_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_text_atomic(tmp_path / "result.json", "{}")
        _dense(tmp_path / "cache", TEXTS[:3])
    finally:
        os.umask(old)
    files = [tmp_path / "result.json"] + [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len(files) > 4
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


_WORKER = textwrap.dedent('''
    import hashlib, json, sys, time
    import numpy as np
    from clirbench.cache.embeddings import EmbeddingCache

    class Slow:
        model_id, revision, batch_size = "test/slow", "1", 2
        def __init__(self): self.sent = []
        def prompt(self, role): return ""
        def encode(self, texts, role):
            time.sleep(0.05 * len(texts))
            self.sent += list(texts)
            return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[:8].astype(np.float32)
                             for t in texts])

    root, texts = sys.argv[1], json.loads(sys.argv[2])
    enc = Slow()
    start = time.time()
    out = EmbeddingCache(root).embed(enc, texts, "document", batch_size=4)
    print(json.dumps({"encoded": len(enc.sent), "start": start, "end": time.time(),
                      "digest": hashlib.sha256(out.tobytes()).hexdigest()}))
''')


def test_two_processes_on_one_cache_encode_each_text_once(tmp_path):
    texts = [f"text {i}" for i in range(30)] + ["text 0", "text 1"]
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache"), json.dumps(texts)],
                              stdout=subprocess.PIPE, env=env, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0]["start"] < outs[1]["end"] and outs[1]["start"] < outs[0]["end"]  # they did overlap
    assert sum(o["encoded"] for o in outs) == 30
    assert outs[0]["digest"] == outs[1]["digest"]


def test_the_writer_lock_file_goes_with_its_holder_on_every_exit(tmp_path):
    import threading

    from clirbench.cache.shards import HASHES, LOCK, writer_lock

    with writer_lock(tmp_path, HASHES) as held:
        assert held and (tmp_path / LOCK).is_file()
    assert not (tmp_path / LOCK).exists()
    with pytest.raises(KeyboardInterrupt):
        with writer_lock(tmp_path, HASHES):
            raise KeyboardInterrupt
    assert not (tmp_path / LOCK).exists()
    got = []

    def second():
        with writer_lock(tmp_path, HASHES) as held:
            got.append((held, (tmp_path / LOCK).is_file()))

    with writer_lock(tmp_path, HASHES):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)
        assert got == []  # it waits for the holder
    waiter.join(10)
    assert got == [(True, True)]  # then holds a lock file of its own (the removed one does not count)
    assert not (tmp_path / LOCK).exists()


def test_a_killed_writers_lock_neither_blocks_nor_stays(tmp_path):
    from clirbench.cache.shards import LOCK, remove_free_lock

    expected, _ = _dense(tmp_path, TEXTS)
    folder = _space(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f'''
        import fcntl, os, time
        fd = os.open({str(folder / LOCK)!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep(60)
    ''')], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    assert not remove_free_lock(folder) and (folder / LOCK).is_file()  # a live writer's stays
    holder.kill()
    holder.wait()
    assert (folder / LOCK).is_file()
    got, enc = _dense(tmp_path, TEXTS)  # a reader (nothing to encode) removes it on its first look
    assert enc.sent == [] and not (folder / LOCK).exists()
    np.testing.assert_array_equal(got, expected)
    (folder / LOCK).touch()
    start = time.time()
    _, enc = _dense(tmp_path, TEXTS + ["one more"])  # nor does a writer wait for it
    assert time.time() - start < 10 and enc.sent == ["one more"] and not (folder / LOCK).exists()
