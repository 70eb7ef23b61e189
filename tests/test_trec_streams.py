"""TREC qrels and runs given as streams -- process substitution, pipes, ``-``, ``/dev/stdin``, a
named FIFO, gzip through a pipe -- are read once, through the real command line (a subprocess:
the shell makes the pipes), with the values the same files give by name. A hang fails the test
(every subprocess has a timeout) instead of stopping the suite."""
from __future__ import annotations

import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading

import pytest

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq2 0 d4 1\n"
RUN = "".join(f"q{q} Q0 d{d} {r} {10 - r} t\n" for q in (1, 2) for r, d in enumerate((3, 5, 1, 4, 2), 1))
CLI = f"{shlex.quote(sys.executable)} -m clirbench"
TIMEOUT = 60

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or os.name != "posix", reason="needs bash and pipes")


def sh(command: str, tmp_path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "HF_HUB_OFFLINE": "1"}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    out = subprocess.run(["bash", "-c", command], cwd=tmp_path, input=stdin, capture_output=True, timeout=TIMEOUT,
                         env=env)
    assert not list((tmp_path / "tmp").iterdir()), "a temporary copy was left behind"
    return out


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(RUN)
    (tmp_path / "r.gz").write_bytes(gzip.compress(RUN.encode()))
    return tmp_path


def measures(out: subprocess.CompletedProcess) -> dict:
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    return json.loads(out.stdout)["measures"]


EVALUATE = "evaluate --json --resamples 10 --measures nDCG@10,RR,Bpref"  # Bpref: trec_eval's code reads the run too


def test_evaluate_reads_process_substitutions_stdin_and_gzip_pipes(files):
    want = measures(sh(f"{CLI} {EVALUATE} --qrels q --run r", files))
    assert want["RR"]["value"] == pytest.approx(2 / 3)  # q1: d3 first; q2: d1 third
    for command, stdin in [
        (f"{CLI} {EVALUATE} --qrels <(cat q) --run <(cat r)", None),
        (f"{CLI} {EVALUATE} --qrels q --run <(zcat r.gz)", None),
        (f"{CLI} {EVALUATE} --qrels <(gzip -c q) --run <(cat r.gz)", None),  # gzip bytes through a pipe
        (f"cat r | {CLI} {EVALUATE} --qrels q --run /dev/stdin", None),
        (f"{CLI} {EVALUATE} --qrels q --run -", RUN.encode()),
        (f"{CLI} {EVALUATE} --qrels - --run r", QRELS.encode()),
        (f"{CLI} {EVALUATE} --qrels - --run <(cat r)", gzip.compress(QRELS.encode())),
    ]:
        assert measures(sh(command, files, stdin)) == want, command


def test_trec_eval_reads_pipes_and_dash(files):
    want = sh(f"{CLI} trec_eval -q -m all_trec q r", files)
    assert want.returncode == 0 and want.stdout.count(b"\n") > 100
    for command, stdin in [(f"{CLI} trec_eval -q -m all_trec <(cat q) <(cat r)", None),
                           (f"{CLI} trec_eval -q -m all_trec q -", RUN.encode()),
                           (f"{CLI} trec_eval -q -m all_trec - <(zcat r.gz)", QRELS.encode())]:
        got = sh(command, files, stdin)
        assert (got.returncode, got.stdout, got.stderr) == (0, want.stdout, b""), command


@pytest.mark.parametrize("command", ["evaluate --qrels - --run -", "trec_eval - -", "trec_eval /dev/stdin -"])
def test_one_stream_for_both_files_is_one_line(files, command):
    out = sh(f"{CLI} {command}", files, QRELS.encode())
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().count("\n") == 1 and "the qrels and the run are one stream" in out.stderr.decode()


def test_errors_in_a_stream_name_it_and_its_line(files):
    bad = RUN.replace("q2 Q0 d5 2 8 t", "q2 Q0 d5 2 high t")
    out = sh(f"{CLI} evaluate --qrels q --run -", files, bad.encode())
    assert out.returncode == 2 and out.stderr.decode() == "clirbench: error: <stdin>:7: score 'high' is not a number\n"
    out = sh(f"{CLI} evaluate --qrels q --run <(printf '# only a comment\\n')", files)
    err = out.stderr.decode()
    assert out.returncode == 2 and "/dev/fd/" in err and "no result line in the run file" in err
    out = sh(f"{CLI} trec_eval <(printf 'q1 0 d1 1\\nq1 0 d1 1\\n') r", files)
    assert out.returncode == 2 and ":2: doc 'd1' of query 'q1' judged twice (1 and 1)" in out.stderr.decode()


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_a_named_fifo_with_a_writer_is_read_once(files, which):
    """A FIFO is opened once: a second open would wait forever for a writer that has gone."""
    fifo = files / "fifo"
    os.mkfifo(fifo)
    text = RUN if which == "run" else QRELS

    def write():
        with open(fifo, "w") as f:  # blocks until the reader opens it
            f.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    args = "--qrels q --run fifo" if which == "run" else "--qrels fifo --run r"
    got = measures(sh(f"{CLI} {EVALUATE} {args}", files))
    writer.join(5)
    assert not writer.is_alive()
    assert got == measures(sh(f"{CLI} {EVALUATE} --qrels q --run r", files))


def test_dev_zero_as_a_stream_is_one_line_not_a_full_disk(files):
    out = sh(f"{CLI} evaluate --qrels q --run /dev/zero", files)
    assert out.returncode == 2 and "/dev/zero:1: a line longer than 16 MiB" in out.stderr.decode()


def test_gzip_magic_split_over_two_writes_is_still_gzip(files):
    """The two magic bytes are read from the one open handle, waiting for a slow writer (a second
    open or a short peek would see one byte, or none)."""
    import time

    from clirbench.formats.trec import read_run

    data = gzip.compress(RUN.encode())
    r, w = os.pipe()

    def write():
        os.write(w, data[:1])
        time.sleep(0.3)
        os.write(w, data[1:])
        os.close(w)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        assert read_run(f"/dev/fd/{r}") == read_run(files / "r")
    finally:
        writer.join(5)
        os.close(r)


def test_stdin_is_left_open_and_read_once_in_process(files, monkeypatch):
    """``-`` through ``evaluate_files`` in-process: the run from standard input, copied once for the
    two readers (the fast path and trec_eval's Bpref), standard input not closed."""
    import io

    from clirbench.trec_files import evaluate_files

    stdin = io.TextIOWrapper(io.BytesIO(RUN.encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("tempfile.tempdir", str(files))
    got = evaluate_files(files / "q", "-", ["RR", "Bpref"], resamples=10)
    want = evaluate_files(files / "q", files / "r", ["RR", "Bpref"], resamples=10)
    assert got.measures == want.measures and not stdin.closed
    assert sorted(p.name for p in files.iterdir()) == ["q", "r", "r.gz"]  # the copy is gone



def _open_files(pid: int) -> list[str]:
    """What process ``pid``'s file descriptors point at (those still open while we look)."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return links


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="finds the copy through /proc")
def test_a_killed_evaluate_leaves_no_copy_of_a_stream(files):
    """kill -9 while the run is being copied (its writer holds the pipe open): nothing is left in TMPDIR."""
    import signal
    import time

    tmp = files / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "clirbench", "evaluate", "--resamples", "10", "--qrels", "q",
                             "--run", "-"], cwd=files, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        proc.stdin.write(RUN.encode() * 50)  # part of a run; the pipe stays open, so the copy waits for more
        proc.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while not any(link.startswith(str(tmp)) for link in _open_files(proc.pid)):  # the copy is open
            assert proc.poll() is None and time.monotonic() < deadline, "evaluate never opened a copy of the stream"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(TIMEOUT)
    finally:
        proc.kill()
        proc.stdin.close()
    assert not list(tmp.iterdir()), "a killed evaluate left its copy of the stream"
