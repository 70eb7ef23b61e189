"""The pyarrow run reader (rank/run_file.py) gives rank_run(read_run(...))'s table exactly, or defers to
the strict reader: every malformed file gives the strict reader's one-line error, through the CLI."""
from __future__ import annotations

import gzip
import json
import random
import re
import zlib

import numpy as np
import pytest

from clirbench.rank import runs as ranking
from clirbench.cli import main
from clirbench.rank.runs import rank_run
from clirbench.formats.trec import read_run
from clirbench.rank.run_file import _BAD_NON_ASCII, rank_run_file
from test_pytrec_eval_agreement import assert_agree, random_case


def same_table(a, b) -> None:
    assert a.query_ids == b.query_ids
    for f in ("qidx", "rank", "grade", "num_docs"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def write_layout(path, run, sep=" ", shuffle_within=False, seed=0):
    """A run in trec_eval order with separator ``sep`` (gzip when the name ends in .gz)."""
    rng = random.Random(seed)
    lines = []
    for q, docs in run.items():
        items = list(docs.items())
        if shuffle_within:
            rng.shuffle(items)
        lines += [sep.join([q, "Q0", d, str(i), repr(float(s)), "t"]) for i, (d, s) in enumerate(items, 1)]
    data = ("\n".join(lines) + "\n").encode() if lines else b""
    path.write_bytes(gzip.compress(data) if str(path).endswith(".gz") else data)


@pytest.mark.parametrize("seed", range(150))
def test_fast_reader_equals_strict_reader_and_pytrec_eval(tmp_path, seed):
    docs, qrels, run = random_case(seed)  # heavy ties, graded qrels, queries missing on either side
    run = {q: v for q, v in run.items() if v}  # a file cannot hold a query without documents
    name = ["run.txt", "run.txt.gz"][seed % 2]
    write_layout(tmp_path / name, run, sep=" \t"[seed % 3 == 0], shuffle_within=True, seed=seed)
    got = rank_run_file(tmp_path / name, qrels)
    if not run:
        return
    assert got is not None, "the canonical layout must take the fast path"
    table, run_queries = got
    assert run_queries == list(run)
    same_table(table, rank_run(read_run(tmp_path / name), qrels))
    if table.query_ids:
        assert_agree(table, qrels, run)


@pytest.mark.parametrize("seed", range(40))
def test_both_ranking_layouts_agree(tmp_path, seed, monkeypatch):
    """Padded rows (equal-depth runs) and the flat path (one long query) give the same ranks."""
    rng = np.random.default_rng(seed)
    run = {f"q{j}": {f"d{int(i)}": float(rng.integers(0, 3)) for i in rng.choice(60, size=int(rng.integers(1, 60)), replace=False)}
           for j in range(8)}
    qrels = {q: {d: int(rng.integers(0, 3)) for d in list(v)[:10]} for q, v in run.items()}
    write_layout(tmp_path / "r", run)
    ref = rank_run(run, qrels)
    same_table(rank_run_file(tmp_path / "r", qrels)[0], ref)
    monkeypatch.setattr(ranking, "_CHUNK", 7)  # forces the flat path and many chunks
    same_table(rank_run_file(tmp_path / "r", qrels)[0], ref)


@pytest.mark.parametrize("name", ["r", "r.gz"])
@pytest.mark.parametrize("two_at_once", [0, 1 << 40])
def test_many_chunks_and_queries_spanning_them(tmp_path, monkeypatch, two_at_once, name):
    import clirbench.rank.run_file as tf

    monkeypatch.setattr(tf, "_TWO_AT_ONCE", two_at_once)  # chunks parsed two at a time, or one
    monkeypatch.setattr(tf, "_BLOCK", 1 << 10)  # pyarrow's minimum-ish block: queries cross batches
    monkeypatch.setattr(tf, "_CHUNK", 3001)  # and lines cross the byte chunks parsed at once
    rng = np.random.default_rng(1)
    run = {f"q{j}": {f"doc{i}": float(rng.integers(0, 4)) for i in rng.choice(500, 120, replace=False)} for j in range(30)}
    qrels = {q: {d: int(rng.integers(1, 4)) for d in list(v)[::7]} for q, v in run.items()}
    write_layout(tmp_path / name, run)
    got = rank_run_file(tmp_path / name, qrels)
    assert got is not None
    same_table(got[0], rank_run(run, qrels))


@pytest.mark.parametrize("chunk", [7, 64, 4096])
def test_byte_chunks_with_long_lines_and_runs_of_empty_lines(tmp_path, monkeypatch, chunk):
    """Chunks shorter than a line, chunks holding only empty lines: the same table as the strict reader's."""
    import clirbench.rank.run_file as tf

    monkeypatch.setattr(tf, "_CHUNK", chunk)
    lines = [f"q1 Q0 {'d' * 90}{i} {i} {i % 3} t" for i in range(5)] + [""] * 300 + \
            [f"q2 Q0 d{i} {i} {i % 2} t" for i in range(9)] + ["", ""]
    (tmp_path / "r").write_text("\n".join(lines) + "\n\n\n")
    qrels = {"q1": {"d" * 90 + "3": 1}, "q2": {"d4": 2, "d7": 1}}
    got = rank_run_file(tmp_path / "r", qrels)
    assert got is not None
    same_table(got[0], rank_run(read_run(tmp_path / "r"), qrels))


def test_refused_characters_above_ascii_are_the_strict_readers():
    """The fast path defers on exactly the characters above ASCII that ``strict.bad_character`` refuses
    in an id (U+0085, U+2028, U+FEFF...); the other ones, no-break spaces included, are id text."""
    import re

    from clirbench.util.strict import bad_character

    ours = re.compile(f"[{_BAD_NON_ASCII}]")
    text = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)  # UTF-8 holds no surrogate
    assert {m.group() for m in ours.finditer(text)} == {c for c in text if bad_character(c)}


GOOD = "q1 Q0 a 1 2.5 t\nq1 Q0 b 2 1.5 t\nq2 Q0 a 1 1 t\n"
QRELS = "q1 0 a 1\nq1 0 b 2\nq2 0 a 1\n"

# (file bytes, expected error fragment, or "SAME": valid, and must score as GOOD does)
CASES = [
    (b"\xef\xbb\xbf" + GOOD.encode(), "SAME"),  # BOM: dropped, not part of the first id
    (GOOD.replace(" ", "  ").encode(), "SAME"),  # other layouts are valid: the strict reader reads them
    (("  " + GOOD.replace("\n", " \n")).encode(), "SAME"),
    (GOOD.replace("\n", "\r\n").encode(), "SAME"),
    (b"q1 Q0 a 1 2.5 t\nq2 Q0 a 1 1 t\nq1 Q0 b 2 1.5 t\n", "SAME"),  # not grouped by query
    (GOOD.replace(" t\n", " \n", 1).encode(), "run:1: expected 6 fields"),  # empty last field
    # fields are split at ASCII blanks only (trec_eval's isspace): U+001F, U+0085, U+2028 are inside an id, refused
    (GOOD.replace("Q0 b", "Q0 b\x1fx").encode(), "run:2: the forbidden character U+001F"),
    (GOOD.replace("Q0 b", "Q0 b\x85x").encode(), "run:2: the forbidden character U+0085"),
    (GOOD.replace("Q0 b", "Q0 b\u2028x").encode(), "run:2: the forbidden character U+2028"),
    (GOOD.replace("Q0 b", "Q0 b\uffff").encode(), "run:2: the forbidden character U+FFFF"),
    (GOOD.replace("Q0 b", "Q0\x0bb").encode(), "SAME"),  # every ASCII blank separates fields
    (GOOD.replace("Q0 b", "Q0\x0cb").encode(), "SAME"),
    (GOOD.replace("Q0 b", "Q0\tb").encode(), "SAME"),  # mixed separators
    (GOOD.replace(" t\n", " t x\n", 1).encode(), "SAME"),  # fields after the tag are ignored, as trec_eval
    (GOOD.replace(" t\n", "\tt\tx y\n").encode(), "SAME"),
    (("# a comment\n#q1 Q0 z 1 9 t\n" + GOOD + "#\n").encode(), "SAME"),  # comment lines
    (GOOD.replace("\n", "\n  # indented comment\n", 1).encode(), "SAME"),
    (("#\x01 a comment is not read: \x1f\u2028\ufeff\x0b\n" + GOOD).encode(), "SAME"),
    (GOOD.replace("\n", "\r").encode(), "run:1: a carriage return (\\r) not followed by a line feed"),
    (GOOD.replace("Q0 b", "Q0\rb").encode(), "run:2: a carriage return"),
    (GOOD.replace("\n", "\r\r\n", 1).encode(), "run:1: a carriage return"),
    (GOOD.encode()[:-1] + b"\r", "run:3: a carriage return"),
    (b"# only a comment\n\n", "run: no result line in the run file"),
    (GOOD.replace("\n", " #\n").encode(), "SAME"),  # "#" as a seventh field: ignored
    (GOOD.replace("1.5", "high").encode(), "run:2: score 'high' is not a number"),
    (GOOD.replace("1.5", "1_5").encode(), "run:2: score '1_5' is not a number"),
    (GOOD.replace("1.5", "\u0661").encode(), "run:2: score '\u0661' is not a number"),  # Arabic-Indic 1
    (GOOD.replace("1.5", "nan(1)").encode(), "run:2: score 'nan(1)' is not a number"),
    (GOOD.replace("1.5", "NaN").encode(), "run:2: score is NaN"),
    (GOOD.replace("b 2 1.5", "a 2 1.5").encode(), "run:2: doc 'a' retrieved twice for query 'q1'"),
    (GOOD.replace("b 2 1.5", "a 2 2.5").encode(), "run:2: doc 'a' retrieved twice for query 'q1'"),
    (GOOD.encode().replace(b" t\n", b" \xff\n", 1), "not UTF-8"),  # bad bytes in an ignored column
    (GOOD.encode() + b"q2 Q0 \xed\xa0\x80 2 0 t\n", "not UTF-8"),  # an encoded surrogate
]


@pytest.mark.parametrize("data,error", CASES)
@pytest.mark.parametrize("gz", [False, True])
def test_malformed_runs_give_the_strict_readers_error_through_the_cli(tmp_path, capsys, data, error, gz):
    (tmp_path / "qrels").write_text(QRELS)
    run = tmp_path / ("run.gz" if gz else "run")
    run.write_bytes(gzip.compress(data) if gz else data)
    argv = ["evaluate", "--qrels", str(tmp_path / "qrels"), "--run", str(run), "--resamples", "10",
            "--measures", "nDCG@10,RR", "--json"]
    code = main(argv)
    out, err = capsys.readouterr()
    if error == "SAME":
        assert code == 0, err
        (tmp_path / "good").write_text(GOOD)
        want = json.loads(out)["measures"]
        assert main(argv[:4] + [str(tmp_path / "good")] + argv[5:]) == 0
        assert json.loads(capsys.readouterr().out)["measures"] == want
        return
    assert code == 2 and out == ""
    assert err.startswith("clirbench: error: ") and err.count("\n") == 1 and error.replace("run:", f"{run}:") in err
    with pytest.raises(ValueError) as strict:
        read_run(run)
    assert str(strict.value) in err


def corrupt_gz(path, line) -> None:
    rng = np.random.default_rng(0)
    text = "".join(line.format(q=i // 50, d=rng.integers(10**9), i=i, s=rng.random()) for i in range(20000))
    blob = bytearray(gzip.compress(text.encode()))
    blob[100:108] = b"\xff" * 8  # "invalid block type"
    with pytest.raises(zlib.error):
        gzip.decompress(bytes(blob))
    path.write_bytes(bytes(blob))


def test_corrupt_gzip_block_is_one_line(tmp_path, capsys):
    corrupt_gz(tmp_path / "run.gz", "q{q} Q0 d{d} {i} {s} t\n")
    corrupt_gz(tmp_path / "qrels.gz", "q{q} 0 d{d} 1\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\n")
    for qrels, run, bad in (("qrels", "run.gz", "run.gz"), ("qrels.gz", "run", "qrels.gz")):
        assert main(["evaluate", "--qrels", str(tmp_path / qrels), "--run", str(tmp_path / run)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{tmp_path / bad}: cannot read" in err, err


def test_per_query_tsv_and_jsonl(tmp_path, capsys):
    (tmp_path / "qrels").write_text(QRELS + "q3 0 z 1\n")
    (tmp_path / "run").write_text(GOOD + "q3 Q0 a 1 1 t\n")
    base = ["evaluate", "--json", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--measures", "RR,MaxR",
            "--resamples", "10"]
    assert main(base + ["--per-query", str(tmp_path / "pq.tsv")]) == 0
    rows = [l.split("\t") for l in (tmp_path / "pq.tsv").read_text().splitlines()]
    assert rows[0] == ["query_id", "measure", "value"]
    assert ["q1", "RR", "1.0"] in rows and ["q3", "RR", "0.0"] in rows and ["q3", "MaxR", "null"] in rows
    assert len(rows) == 1 + 3 * 2
    assert main(base + ["--per-query", str(tmp_path / "pq.jsonl")]) == 0
    recs = [json.loads(l) for l in (tmp_path / "pq.jsonl").read_text().splitlines()]
    assert {"query_id": "q2", "measure": "RR", "value": 1.0} in recs and len(recs) == 6
    report = json.loads(capsys.readouterr().out.split("\n}\n")[-2] + "\n}")
    rr = [r["value"] for r in recs if r["measure"] == "RR"]
    assert report["measures"]["RR"]["value"] == pytest.approx(np.mean(rr), abs=1e-12)
    capsys.readouterr()
    assert main(base + ["--per-query", str(tmp_path / "pq.csv")]) == 2
    assert "--per-query" in capsys.readouterr().err


def test_evaluate_imports_no_pandas(tmp_path):
    """pyarrow imports pandas (0.3 s of start-up) from to_numpy, fill_null, pa.array(list) and
    take(numpy): the fast reader avoids them, so `clirbench evaluate` starts light."""
    import subprocess
    import sys

    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d3 0\nq2 0 d2 2\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\nq2 Q0 d1 1 1.0 t\nq2 Q0 d2 2 1.0 t\n")
    code = ("import sys; from clirbench.trec_files import evaluate_files; from clirbench.rank import run_file as trec_fast\n"
            f"assert trec_fast.rank_run_file({str(tmp_path / 'r.txt')!r}, {{'q1': {{'d1': 1}}}}) is not None\n"
            f"evaluate_files({str(tmp_path / 'q.txt')!r}, {str(tmp_path / 'r.txt')!r}, resamples=10)\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_prefetched_keeps_order_passes_errors_and_stops_when_the_caller_does():
    import itertools
    import threading
    import time

    from clirbench.rank.run_file import _prefetched

    assert list(_prefetched(iter(range(100)))) == list(range(100))

    def failing():
        yield 1
        raise ValueError("bad block")

    got = []
    with pytest.raises(ValueError, match="bad block"):
        for x in _prefetched(failing()):
            got.append(x)
    assert got == [1]

    t = time.perf_counter()  # the caller stops early: the reader thread must end, not block on a full queue
    gen = _prefetched(itertools.count())
    assert next(gen) == 0
    gen.close()
    assert time.perf_counter() - t < 5
    assert not [th for th in threading.enumerate() if th.name.startswith("clirbench-trec-reader")]


def test_fingerprints_depend_only_on_the_string_and_its_segment():
    """Equal (segment, string) pairs get equal fingerprints wherever they sit in the array (the
    duplicate check relies on it; the converse is checked on the strings themselves)."""
    import pyarrow as pa

    from clirbench.rank.run_file import _fingerprints

    rng = np.random.default_rng(7)
    alphabet = list("ab1_-é中")
    strings = ["".join(rng.choice(alphabet, n)) for n in rng.integers(0, 40, 400)] + ["", "a", "abcdefgh", "abcdefghi"]
    for trial in range(3):
        order = rng.permutation(len(strings))
        arr = pa.array([strings[i] for i in order] + strings, type=pa.string())
        if trial == 2:
            arr = arr.slice(3)  # an offset into the buffers
            order = order[3:]
        fp = _fingerprints(arr, np.zeros(len(arr), dtype=np.int64))
        first = {}
        for s, f in zip(arr.to_pylist(), fp.tolist()):
            assert first.setdefault(s, f) == f
        other = _fingerprints(arr, np.ones(len(arr), dtype=np.int64))
        assert (other != fp).mean() > 0.99  # the segment is mixed in
    alone = {x: int(_fingerprints(pa.array([x], type=pa.string()), np.zeros(1, dtype=np.int64))[0]) for x in strings}
    assert first == alone  # whatever the other strings of the array (short ones beside long ones)


@pytest.mark.parametrize("delim", [b" ", b"\t"])
def test_bad_ascii_check_equals_the_byte_set_it_names(tmp_path, delim):
    """Every ASCII byte, alone and among 300,000 good ones (several counting slices): refused
    exactly when it is a control character but \\n, \\r and a tab delimiter, 0x7f or the other delimiter."""
    from clirbench.rank.run_file import _CheckedBytes

    (tmp_path / "r").write_bytes(b"")
    check = _CheckedBytes(tmp_path / "r", delim)
    other = b"\t" if delim == b" " else b" "
    allowed_low = {10, 13} | ({9} if delim == b"\t" else set())
    filler = delim.join([b"q1", b"Q0", b"d", b"1", b"2", b"t\n"]) * 30000
    for c in range(128):
        want = (c < 32 and c not in allowed_low) or c == 127 or bytes([c]) == other
        for block in (bytes([c]), filler + bytes([c]) + filler):
            assert check._bad_ascii(block) == want, (c, len(block))
    check.close()


@pytest.mark.parametrize("delim", [b" ", b"\t"])
def test_empty_field_check_equals_splitting_each_line(delim):
    """``_empty_field`` (numpy over slices of 2**18 bytes) against ``bytes.split`` of every line,
    on random lines with \\n and \\r\\n endings, and with two delimiters around each slice edge."""
    from clirbench.rank.run_file import _empty_field

    def want(buf):
        return any(b"" in line.split(delim) for line in buf.splitlines() if line)

    rng = random.Random(5)
    for _ in range(400):
        end = rng.choice([b"\n", b"\r\n"])
        lines = [delim.join(rng.choice([b"a", b"bc", b"", b"d"]) for _ in range(rng.randint(1, 6)))
                 for _ in range(rng.randint(1, 5))]
        buf = end.join(lines) + (end if rng.random() < 0.8 else b"")
        assert _empty_field(buf + b"q1", len(buf), delim) == want(buf), buf
    for at in range(2**18 - 3, 2**18 + 3):
        good = (b"a" + delim) * (at // 2) + b"z\n"
        bad = good[:at] + delim + delim + b"x\n"
        assert not _empty_field(good, len(good), delim)
        assert _empty_field(bad, len(bad), delim) == want(bad), at


@pytest.mark.parametrize("qrels_text,says", [("q1 0 d1 x\n", "qrels.txt:1"), (None, "qrels.txt")])
def test_the_qrels_error_comes_first_and_stops_the_reader_thread(tmp_path, qrels_text, says):
    """The run's reader thread starts before the qrels are read (the two overlap): a malformed or
    missing qrels file is still the error reported, and the thread is stopped, not left running."""
    import threading

    from clirbench.trec_files import evaluate_files

    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {1000 - d} t\n" for q in range(200) for d in range(500)))
    qrels = tmp_path / "qrels.txt"
    if qrels_text is not None:
        qrels.write_text(qrels_text)
    with pytest.raises((ValueError, OSError)) as err:  # what the CLI turns into one line
        evaluate_files(qrels, run, ["RR"], resamples=10)
    assert says in str(err.value)
    assert not [t for t in threading.enumerate() if t.name.startswith("clirbench-trec-reader")]


@pytest.mark.parametrize("delim", [b" ", b"\t"])
def test_line_check_refuses_exactly_what_the_exact_checks_refuse(tmp_path, delim):
    """``_CheckedBytes.check`` (two numpy passes when pyarrow parsed the lines into rows, the exact
    checks otherwise) against the exact checks and UTF-8 decoding, on random lines of six fields
    with empty fields, empty lines, control bytes, \\r, non-ASCII text and invalid UTF-8, around the
    counting slices' edges; only lines pyarrow parses are asked (the rows are its count)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from clirbench.rank import run_file as tf

    (tmp_path / "r").write_bytes(b"")
    check = tf._CheckedBytes(tmp_path / "r", delim)
    options = dict(read_options=pcsv.ReadOptions(column_names=list("abcdef")),
                   parse_options=pcsv.ParseOptions(delimiter=delim.decode(), quote_char=False, ignore_empty_lines=True),
                   convert_options=pcsv.ConvertOptions(column_types={k: pa.binary() for k in "abcdef"}))

    def exact(buf):
        try:
            text = buf.decode()
        except UnicodeDecodeError:
            return True
        lone_cr = re.search(rb"\r(?!\n)", buf)
        comment = any(line.startswith(b"#") for line in buf.split(b"\n"))
        return bool(check._bad_ascii(buf) or tf._empty_field(buf, len(buf), delim) or check.bad_text.search(text)
                    or lone_cr or comment)

    rng = random.Random(11)
    odd = [b"", b"\x0b", b"\r", b"\r\n", b"\x7f", b"\x01", " é".encode(), b"\xff", b"\xc3", "\u2003".encode(),
           b"\n", delim, b"#", "\u2028".encode(), b"\xc2\x85"]
    asked = refused = 0
    for trial in range(1500):
        lines = []
        for _ in range(rng.randint(1, 8)):
            fields = [rng.choice([b"q1", b"Q0", b"doc7", b"3", b"1.5", b"run"]) for _ in range(6)]
            if rng.random() < 0.3:
                i = rng.randrange(6)
                fields[i] = rng.choice([fields[i] + rng.choice(odd), rng.choice(odd)])
            lines.append(delim.join(fields))
        buf = b"\n".join(lines) + rng.choice([b"\n", b"", b"\n\n"])
        if trial % 50 == 0:  # past a counting slice of 2**18 bytes
            buf = (delim.join([b"q", b"Q0", b"d", b"1", b"2", b"t"]) + b"\n") * (2**18 // 12 + rng.randint(-3, 3)) + buf
        try:
            rows = pcsv.read_csv(pa.py_buffer(buf), **options).num_rows
        except pa.ArrowInvalid:
            continue
        asked += 1
        try:
            check.check(buf + b"q2", len(buf), rows)
            said = False
        except tf._NotCanonical:
            said = True
        refused += said
        assert said == exact(buf), buf[-200:]
    check.close()
    assert asked > 500 and 0.1 < refused / asked < 0.9  # both answers were asked for


def test_relevant_entries_survive_fingerprint_collisions(monkeypatch):
    """``_find_relevant`` gives exactly the (entry, row) pairs of equal segment and string, also when
    entries' fingerprints collide with rows' (forced here) and when two rows share one (the lookup
    by id then decides)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from clirbench.rank import run_file as tf

    rng = np.random.default_rng(3)
    docs = [f"d{int(i)}" for i in rng.integers(0, 40, 600)]
    seg = np.repeat(np.arange(12), 50)
    rel_docs = [f"d{int(i)}" for i in rng.integers(0, 40, 60)]
    rel_seg = np.sort(rng.integers(0, 12, 60))
    keep = sorted({(int(s), d) for s, d in zip(rel_seg, rel_docs)})  # a query's qrels hold a document once
    rel_seg, rel_docs = np.array([s for s, _ in keep]), [d for _, d in keep]
    d, rel = pa.array(docs), pa.array(rel_docs)
    want = sorted((e, r) for e, (s, doc) in enumerate(zip(seg.tolist(), docs))
                  for r, (rs, rd) in enumerate(zip(rel_seg.tolist(), rel_docs)) if s == rs and doc == rd)
    ranker = tf._Ranker({})
    fp = tf._fingerprints(d, seg)
    rel_fp = tf._fingerprints(rel, rel_seg)
    forced = fp.copy()
    wrong = rng.random(len(fp)) < 0.5
    forced[wrong] = rng.choice(rel_fp, int(wrong.sum()))  # false candidates: right fingerprint, wrong id or segment
    true_pairs = np.isin(fp, rel_fp)
    forced[true_pairs] = fp[true_pairs]  # a true pair keeps its fingerprint (equal strings, equal fingerprints)
    for entry_fp in (fp, forced):
        entry, row = ranker._find_relevant(pc, d, seg, entry_fp, rel, rel_seg)
        assert sorted(zip(entry.tolist(), row.tolist())) == want
    real = tf._fingerprints
    monkeypatch.setattr(tf, "_fingerprints", lambda arr, s: real(arr, s) & np.uint64(3))  # rows share fingerprints
    entry, row = ranker._find_relevant(pc, d, seg, tf._fingerprints(d, seg), rel, rel_seg)
    assert sorted(zip(entry.tolist(), row.tolist())) == want


@pytest.mark.parametrize("delim", [" ", "\t"])
def test_random_damage_takes_the_fast_path_only_where_the_strict_reader_agrees(tmp_path, delim):
    """Runs of random lines, some damaged (empty fields, empty lines, control bytes, \\r, a repeated
    document, extra or missing fields, non-ASCII ids, a BOM): ``rank_run_file`` gives the strict
    reader's table, or None where the strict reader must decide (it may then also refuse the file)."""
    rng = random.Random(17 + (delim == "\t"))
    qrels = {f"q{j}": {f"d{i}": (i % 3) for i in range(0, 12, 2)} for j in range(4)}
    damage = ["", " ", "\t", "\x0b", "\x0c", "\r", "\x00", "\x1f", "\x85", "é", "\u00a0", "\u3000", "\u2003",
              "\u2028", "\ufeff", "\uffff", "x y", delim * 2, "#", "# c"]
    fast_taken = 0
    for trial in range(300):
        lines = [[f"q{j}", "Q0", f"d{doc}", str(i + 1), str(rng.choice([0.5, 1.0, 1.5, -2.0])), "run"]
                 for j in range(rng.randint(1, 4)) for i, doc in enumerate(rng.sample(range(12), rng.randint(1, 12)))]
        at, k, kind = rng.randrange(len(lines)), rng.randrange(6), rng.random()  # one damage, or none
        if kind < 0.5:
            lines[at][k] = rng.choice([lines[at][k] + rng.choice(damage), rng.choice(damage)])
        elif kind < 0.6:
            lines[at] = lines[at][:rng.randint(1, 5)] if rng.random() < 0.5 else lines[at] + ["extra"]
        elif kind < 0.7:
            lines.insert(at, lines[at] if rng.random() < 0.5 else [])
        lines = [delim.join(f) for f in lines]
        path = tmp_path / f"r{trial}"
        path.write_bytes(("\ufeff" if trial % 37 == 0 else "").encode() + ("\n".join(lines) + "\n").encode())
        got = rank_run_file(path, qrels)
        try:
            strict = read_run(path)
        except ValueError:  # the one-line error the CLI prints
            assert got is None, path.read_bytes()[:300]
            continue
        if got is not None:
            fast_taken += 1
            same_table(got[0], rank_run(strict, qrels))
            assert got[1] == list(strict)
    assert fast_taken > 100


@pytest.mark.parametrize("two_at_once", [0, 1 << 40])
def test_a_bad_chunk_far_in_stops_every_reader_thread(tmp_path, monkeypatch, two_at_once):
    """Chunks parsed one or two at a time: a control byte in a late chunk still sends the file to the
    strict reader (its error, through evaluate_files), and no reader or parse thread is left running."""
    import threading

    import clirbench.rank.run_file as tf
    from clirbench.trec_files import evaluate_files

    monkeypatch.setattr(tf, "_CHUNK", 4096)
    monkeypatch.setattr(tf, "_TWO_AT_ONCE", two_at_once)
    lines = [f"q{q} Q0 d{d} {d + 1} {100 - d} t" for q in range(60) for d in range(40)]
    lines[-7] = lines[-7].replace(" t", " t\x0bx\x01")  # \x0b separates fields (the strict reader's split)
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text("".join(f"q{q} 0 d3 1\n" for q in range(60)))
    assert tf.rank_run_file(tmp_path / "run.txt", {"q1": {"d3": 1}}) is None
    with pytest.raises(ValueError, match="run.txt:2394: the forbidden character U\\+0001"):
        evaluate_files(tmp_path / "qrels.txt", tmp_path / "run.txt", ["RR"], resamples=10)
    assert not [t for t in threading.enumerate() if t.name.startswith("clirbench-trec-reader")]
    lines[-7] = lines[-7].replace("\x0bx\x01", "")
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    got = tf.rank_run_file(tmp_path / "run.txt", {"q1": {"d3": 1}})
    assert got is not None and got[0].rank.tolist() == [4.0]
    assert not [t for t in threading.enumerate() if t.name.startswith("clirbench-trec-reader")]


def test_relevant_short_ids_are_found_beside_long_ones(tmp_path):
    """Ids over 16 bytes and short ones in one chunk, the relevant ones short (and then long): the
    fingerprints of the judged ids, computed apart from the run's, must still match theirs."""
    lines = [f"q1 Q0 {'x' * 30}{i} {i + 1} {9 - i} t" for i in range(6)]
    lines += [f"q2 Q0 d{i} {i + 1} {9 - i} t" for i in range(6)]
    lines += [f"q3 Q0 {'y' * 20}{i} {i + 1} {9 - i} t" for i in range(6)]
    (tmp_path / "r").write_text("\n".join(lines) + "\n")
    for qrels in ({"q2": {"d3": 1, "d5": 2}}, {"q1": {"x" * 30 + "2": 1}, "q2": {"d1": 1}}, {"q3": {"y" * 20 + "4": 1}}):
        got = rank_run_file(tmp_path / "r", qrels)
        assert got is not None
        same_table(got[0], rank_run(read_run(tmp_path / "r"), qrels))
        assert np.isfinite(got[0].rank).all()
