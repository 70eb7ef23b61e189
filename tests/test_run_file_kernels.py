"""The TREC run reader's vectorised kernels (rank/run_file.py) against plain-Python oracles: the
document fingerprints (read in place from pyarrow's buffers) and the duplicate candidates (a
uint32 row sort first); and evaluate's one BLAS thread."""
from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from clirbench.rank.run_file import _fingerprints, _repeated  # noqa: E402

_M = (1 << 64) - 1


def _mix(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _M
    return x ^ (x >> 29)


def _word(b: bytes) -> int:
    return int.from_bytes(b[:8].ljust(8, b"\0"), "little")


def _reference(s: str, seg: int) -> int:
    """The fingerprint's formula, one string at a time with Python integers."""
    b = s.encode("utf-8")
    n = len(b)
    head = _word(b) & ((1 << (8 * min(n, 8))) - 1)
    fp = (_word(b[n - 8:]) if n >= 8 else head) ^ ((n * 0x27D4EB2F165667C5) & _M)
    fp = _mix(fp)
    if n > 16:
        fp = _mix(fp ^ _word(b[n // 2 - 4:n // 2 + 4]))
    return fp ^ head ^ ((seg * 0xC2B2AE3D27D4EB4F) & _M)


@pytest.mark.parametrize("seed", range(6))
def test_fingerprints_equal_the_formula_for_every_string(seed):
    """Short and long strings, at the data's very end (read from a padded copy), sliced arrays,
    large_string, empty strings, arrays under 8 bytes of data."""
    rng = np.random.default_rng(seed)
    alphabet = list("ab1_-é中xyz09")
    for trial in range(60):
        m = int(rng.integers(0, 40))
        longest = int(rng.choice([1, 3, 9, 17, 40]))
        strings = ["".join(rng.choice(alphabet, int(k))) for k in rng.integers(0, longest, m)]
        arr = pa.array(strings, type=pa.large_string() if trial % 3 == 0 else pa.string())
        if m > 2 and trial % 2:
            a = int(rng.integers(0, m))
            arr = arr.slice(a, int(rng.integers(0, m - a + 1)))
        seg = rng.integers(0, 1000, len(arr))
        got = _fingerprints(arr, seg).tolist()
        assert got == [_reference(s, int(g)) for s, g in zip(arr.to_pylist(), seg.tolist())]


def _brute_repeated(fp: np.ndarray, widths: np.ndarray) -> set[int]:
    out, at = set(), 0
    for w in widths.tolist():
        values = fp[at:at + w].tolist()
        out |= {v for v in values if values.count(v) > 1}
        at += w
    return out


@pytest.mark.parametrize("layout", ["equal", "uneven", "very uneven"])
@pytest.mark.parametrize("seed", range(4))
def test_repeated_finds_every_duplicate_in_a_segment(layout, seed):
    """Every value twice in one segment is returned; every value returned occurs twice somewhere.
    Values share their top 32 bits often (candidates sorted in full) and take the padding's value."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        segments = int(rng.integers(1, 30))
        if layout == "equal":
            widths = np.full(segments, int(rng.integers(1, 50)))
        elif layout == "uneven":
            widths = rng.integers(20, 41, segments)
        else:
            widths = np.r_[rng.integers(1, 3, segments), 400]
        segments, n = len(widths), int(widths.sum())
        top = rng.choice(np.array([0, 7, 0xFFFFFFFE, 0xFFFFFFFF], dtype=np.uint64), n)
        fp = (top << np.uint64(32)) | rng.integers(0, 4, n).astype(np.uint64)  # many equal top halves
        if rng.random() < 0.5:
            fp = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2)  # mostly distinct
            if n > 1:
                i, j = sorted(rng.choice(n, 2, replace=False))
                fp[j] = fp[i]  # one duplicate, maybe across segments
        starts = np.r_[0, np.cumsum(widths)[:-1]]
        seg = np.repeat(np.arange(segments), widths)
        got = set(_repeated(fp, seg, starts, starts + widths).tolist())
        want = _brute_repeated(fp, widths)
        assert want <= got
        counts = {v: c for v, c in zip(*np.unique(fp, return_counts=True))}
        assert all(counts[v] > 1 for v in got)


def test_a_duplicate_whose_top_half_is_the_padding_value_is_found():
    """Uneven segments are padded with 0xFFFFFFFF: a real pair with that top half, alone in its
    segment, is still a duplicate."""
    rng = np.random.default_rng(5)
    widths = np.array([30, 25, 40, 33])
    n = int(widths.sum())
    fp = rng.integers(0, 1 << 62, n, dtype=np.uint64)  # distinct top halves, none 0xFFFFFFFF
    dup = np.uint64(0xFFFFFFFF_00000123)
    fp[[31, 50]] = dup  # both in the second segment (30..54)
    starts = np.r_[0, np.cumsum(widths)[:-1]]
    seg = np.repeat(np.arange(len(widths)), widths)
    assert _repeated(fp, seg, starts, starts + widths).tolist() == [int(dup)]
    fp[50] = dup + np.uint64(1)  # the same top half, different fingerprints: not a duplicate
    assert _repeated(fp, seg, starts, starts + widths).tolist() == []


@pytest.mark.parametrize("user", [None, "2"])
def test_evaluate_runs_openblas_on_one_thread_unless_the_user_says(tmp_path, user):
    """``clirbench evaluate`` sets OPENBLAS_NUM_THREADS=1 before numpy loads (its pool's threads
    spin at start-up); a user's own value is kept."""
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run").write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\n")
    code = ("import os, sys, json; from clirbench.cli import main; "
            f"main(['evaluate', '--qrels', {str(tmp_path / 'qrels')!r}, '--run', {str(tmp_path / 'run')!r}, "
            "'--resamples', '10', '--json']); "
            "print(json.dumps(os.environ.get('OPENBLAS_NUM_THREADS')))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user is not None:
        env["OPENBLAS_NUM_THREADS"] = user
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == (user or "1")
    assert '"RR"' in out


@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("buffers", [1, 2, 3])
def test_whole_lines_cover_the_file_and_leave_held_buffers_alone(tmp_path, monkeypatch, buffers, bom):
    """The reused buffers: every byte of the file (a leading BOM dropped) is in exactly one
    ``buffer[:length]``, lines whole, lines longer than a chunk included; a buffer's lines are
    intact until the caller has taken ``buffers - 1`` more."""
    from collections import deque

    from clirbench.rank import run_file as rf

    monkeypatch.setattr(rf, "_CHUNK", 64)
    rng = np.random.default_rng(buffers)
    data = b"".join(b"x" * int(n) + b"\n" for n in rng.integers(0, 150, 300)) + b"tail without newline"
    path = tmp_path / "run"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    source = rf._CheckedBytes(path, b" ")
    held: deque = deque()
    pieces = []
    for buf, cut in rf._whole_lines(source, buffers):
        piece = bytes(buf[:cut])
        assert piece == b"" or piece.endswith(b"\n") or piece.endswith(b"tail without newline")
        for earlier, length, copy in held:
            assert bytes(earlier[:length]) == copy
        held.append((buf, cut, piece))
        while len(held) > buffers - 1:
            held.popleft()
        pieces.append(piece)
    source.close()
    assert b"".join(pieces) == data
