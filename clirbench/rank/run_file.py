"""A TREC run file read at C speed (pyarrow's CSV reader) straight into a RankTable, by chunks.

Over 500 lines because the fast path must re-check every rule of the strict reader (formats/trec.py)
on pyarrow's columns, block by block, to give the same table or defer.

It reads only regular files (a pipe or standard input is read once, by the caller) of runs in the
canonical layout (one space or one tab between the six fields, queries grouped, as every tool
writes them) and checks everything ``trec.read_trec_run`` checks. Whatever it cannot prove valid --
another layout, a seventh field, a comment line, an unparsable score, NaN, a repeated (query, doc),
invalid UTF-8, a blank that the strict reader splits on (vertical tab, form feed, the other
delimiter), a character it refuses in an id (a control character, U+2028, U+FEFF...), a carriage
return that does not end a line, a corrupt gzip stream, no line at all -- makes ``rank_run_file``
return None, and the caller reads the file with the strict reader, which then gives the same result
or the same one-line error naming file and line. Memory is bounded by a chunk of the file (plus the
longest query), not by the run's size.
"""
from __future__ import annotations

import contextlib
import os
import queue
import re
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping

import numpy as np

from ..formats.jsonl import MAX_LINE_BYTES
from ..formats.trec import is_stream, open_input
from .runs import rank_in_segments
from .table import RankTable, finish_table

__all__ = ["rank_run_file"]

# pyarrow's parse block. Whole `clirbench evaluate`, peak RSS / seconds, interleaved (2026-11-26, AMD EPYC):
# 5k x 1000 run: 8 MB 274-286 MB / 0.64-0.88 s, 4 MB 194-224 MB / 0.58-0.70 s, 2 MB 187-197 MB / 0.66-0.77 s;
# 50k x 1000: 8 MB 324-326 MB / 5.0-5.1 s, 4 MB 233-252 MB / 4.6-4.9 s, 2 MB 243-245 MB / 5.2-5.3 s
_BLOCK = 4 << 20
# bytes of whole lines per read_csv call (pyarrow's threads, a block each; two calls at once) while the
# caller ranks the chunks before; 5k x 1000 run (192 MB), process CPU: 16 MB 0.95 s, 53k page faults;
# 64 MB 1.36 s, 216k (buffers over malloc's mmap threshold are fresh pages every time). 50k x 1000,
# interleaved, 2026-11-26, one call at a time and the checks in a thread of their own: 8, 12 and 16 MB
# 3.95, 3.86 and 3.94 s (medians of 5), peak RSS 0.28, 0.37 and 0.41 GB
_CHUNK = 2 * _BLOCK
# files of this size or more (on disk) have two chunks parsed at once: 50k x 1000 (1.97 GB), whole
# `clirbench evaluate`, 3.75 s and 0.25 GB peak RSS instead of about 4.0 s and 0.26 GB; below it one
# chunk at a time (5k x 1000, 192 MB: 0.62 s and 0.24 GB with two, 0.64 s and 0.22 GB with one: a
# quarter of pytrec_eval's 0.89 GB)
_TWO_AT_ONCE = 512 << 20
# the characters above ASCII that the strict reader refuses in an id (``strict.bad_character``: C1
# controls, line and paragraph separators, BOMs, non-characters; a lone surrogate is not UTF-8)
_BAD_NON_ASCII = "\x80-\x9f\u2028\u2029\ufeff\ufffe\uffff"


class _NotCanonical(Exception):
    """The fast path cannot vouch for the file; the strict reader decides."""


class _CheckedBytes:
    """The file's bytes (gunzipped), BOM dropped, and the check that its lines hold no blank but the
    delimiter and line ends, no character the strict reader refuses, no empty field (two delimiters
    in a row, or one at either end of a line), no comment, no lone carriage return, and valid UTF-8."""

    def __init__(self, path: str | os.PathLike, delim: bytes) -> None:
        self._files = contextlib.ExitStack()
        self.raw = self._files.enter_context(open_input(path))
        self.size = os.path.getsize(path)  # on disk
        self.first = True
        other = b"\t" if delim == b" " else b" "
        # the ASCII bytes the strict reader splits on or refuses: 0x7f, the other delimiter, and every
        # byte < 0x20 but \n, \r and a tab delimiter (``_bad_ascii``)
        self.other, self.delim = other, delim
        # and the characters above ASCII it refuses (a BOM past the first, C1 controls, U+2028...)
        self.bad_text = re.compile(f"[{_BAD_NON_ASCII}]")

    def read_into(self, buf: bytearray, start: int, stop: int) -> int:
        """Fill ``buf[start:stop]`` with the next bytes, unchecked (``check`` every line); returns how
        many were read (fewer at the file's end only)."""
        got = start
        try:
            with memoryview(buf) as view:
                while got < stop:
                    n = self.raw.readinto(view[got:stop])
                    if not n:
                        break
                    got += n
        except Exception as exc:  # zlib.error, EOFError, BadGzipFile...: the strict reader names them
            raise _NotCanonical(str(exc)) from None
        if self.first and got > start:
            self.first = False
            if buf.startswith(b"\xef\xbb\xbf", start, got):
                buf[start:got - 3] = buf[start + 3:got]
                got -= 3
        return got - start

    def check(self, buf: bytes, cut: int, rows: int) -> None:
        """Raise _NotCanonical unless the whole lines ``buf[:cut]`` are clean; pyarrow parsed them
        into ``rows`` rows of six fields (so, without a \r, they hold 5 * rows delimiters)."""
        if not cut:
            return
        if not buf.isascii():  # past cut: earlier bytes of the file (a reused buffer), decoded if not ASCII
            try:
                text = str(memoryview(buf)[:cut], "utf-8")  # whole lines: no character is cut
            except UnicodeDecodeError:
                raise _NotCanonical("utf-8") from None
            if self.bad_text.search(text):
                raise _NotCanonical("whitespace")
        if buf.find(b"\x7f", 0, cut) >= 0 or buf.find(self.other, 0, cut) >= 0:
            raise _NotCanonical("whitespace")
        first_hash = buf.find(b"#", 0, cut)  # memchr: most runs have none, and "\n#" alone is slow to find
        if first_hash >= 0 and (buf[:1] == b"#" or buf.find(b"\n#", first_hash - 1, cut) >= 0):
            raise _NotCanonical("comment")  # a comment line (no blank before it here)
        if buf.find(b"\r", 0, cut) < 0 and self._only_fields(buf, cut, rows):
            return
        if buf.count(b"\r", 0, cut) != buf.count(b"\r\n", 0, cut):  # pyarrow ends a line at a lone \r
            raise _NotCanonical("carriage return")
        if self._bad_ascii(buf[:cut]):
            raise _NotCanonical("whitespace")
        if _empty_field(buf, cut, self.delim):
            raise _NotCanonical("empty field")

    def _only_fields(self, buf: bytes, cut: int, rows: int) -> bool:
        """True when ``buf[:cut]`` (no \r, 0x7f or other delimiter in it) is ``rows`` lines of six
        non-empty fields and nothing else: its bytes <= 0x20 are exactly the 5 delimiters and the
        \n of each row (none at the start, none next to another). False: the exact checks decide
        (empty lines, control characters, empty fields). Two numpy passes instead of eleven."""
        a = np.frombuffer(buf, dtype=np.uint8, count=cut)
        if a[0] <= 32 or a[-1] == self.delim[0]:
            return False
        step, seps = 1 << 18, 0
        for i in range(0, cut, step):
            low = a[i:i + step + 1] <= 32  # one byte of overlap: pairs across slices
            seps += np.count_nonzero(low[:step])
            if np.any(low[1:] & low[:-1]):
                return False
        return seps == 6 * rows - (a[-1] != 10)

    def _bad_ascii(self, block) -> bool:
        """Whether ``block`` holds 0x7f, the other delimiter, or a byte < 0x20 but \\n, \\r and a tab
        delimiter: counted with numpy in cache-sized slices (15x faster than a regular expression)."""
        if b"\x7f" in block or self.other in block:
            return True
        a = np.frombuffer(block, dtype=np.uint8)
        for i in range(0, len(a), 1 << 18):
            c = a[i:i + (1 << 18)]
            low = np.count_nonzero(c < 32)
            if low != np.count_nonzero(c == 10):
                fine = np.count_nonzero(c == 10) + np.count_nonzero(c == 13)
                if low != fine + (np.count_nonzero(c == 9) if self.delim == b"\t" else 0):
                    return True
        return False

    def close(self) -> None:
        self._files.close()


def _delimiter(path) -> bytes:
    try:
        with open_input(path) as f:
            line = f.readline(1 << 16)
    except Exception as exc:
        raise _NotCanonical(str(exc)) from None
    return b"\t" if b"\t" in line and b" " not in line else b" "


_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _fingerprints(arr, seg: np.ndarray) -> np.ndarray:
    """uint64 per string of a pyarrow string array, mixed with its segment: equal (segment, string)
    pairs give equal fingerprints (the converse is checked on the strings).

    Words are read in place from the array's data (no padded copy): a string's head word and its
    tail word (the same for strings under 8 bytes, masked to their own bytes), its middle word when
    over 16 bytes. Only a short string in the data's last 7 bytes would read past its end: those
    (a suffix of the array) are read from a padded copy of the last 16 bytes."""
    bufs = arr.buffers()
    wide = np.int64 if str(arr.type) == "large_string" else np.int32
    off = np.frombuffer(bufs[1], dtype=wide, count=len(arr) + 1, offset=arr.offset * np.dtype(wide).itemsize)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    data = data[:int(off[-1])]
    n = len(data)
    start = off[:-1].astype(np.int64)
    length = np.diff(off)
    head = np.empty(len(start), dtype=np.uint64)
    safe = int(np.searchsorted(start, n - 8, side="right")) if n >= 8 else 0  # start <= n - 8: in place
    words = _words(data) if n >= 8 else np.zeros(1, np.uint64)
    head[:safe] = words[start[:safe]]
    if safe < len(start):  # the last strings: from the last 16 bytes, zero-padded
        k = min(16, n)
        tail = np.zeros(k + 16, dtype=np.uint8)
        tail[:k] = data[n - k:]
        head[safe:] = _words(tail)[start[safe:] - (n - k)]
    short = np.flatnonzero(length < 8)
    head[short] &= _MASKS[length[short]]  # the string's own bytes of its word
    # the tail word ends where the string does (in the data for strings of 8 bytes or more; a
    # shorter one's is replaced by its head)
    fp = words[np.maximum(off[1:] - np.int64(8), 0)] if n >= 8 else np.empty_like(head)
    fp[short] = head[short]
    with np.errstate(over="ignore"):
        # ids differ mostly in their last bytes, the high bytes of a little-endian word, and a
        # product carries differences upward only: words are mixed (xor-shift-multiply) before
        # they are combined
        fp ^= length.astype(np.uint64) * np.uint64(0x27D4EB2F165667C5)
        _mix(fp)
        long = np.flatnonzero(length > 16)  # the middle word of long strings, mixed in theirs only: a
        if len(long):  # string's fingerprint must not depend on the others' lengths
            x = fp[long] ^ words[start[long] + length[long] // 2 - 4]
            _mix(x)
            fp[long] = x
        fp ^= head
        fp ^= seg.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    return fp


def _chunked_fingerprints(arr, seg: np.ndarray) -> np.ndarray:
    """``_fingerprints`` of a string array or of a ChunkedArray's chunks, one after the other."""
    parts, at = [], 0
    for chunk in _chunks(arr):
        parts.append(_fingerprints(chunk, seg[at:at + len(chunk)]))
        at += len(chunk)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _words(data: np.ndarray) -> np.ndarray:
    """The little-endian uint64 word at every byte offset of ``data`` (a view: ``len(data) - 7`` words)."""
    return np.ndarray((len(data) - 7,), dtype=np.uint64, buffer=data, offset=0, strides=(1,))


_TOP_PAD = np.uint32(0xFFFFFFFF)  # an empty cell of the padded rows (real top halves are clamped below it)


def _repeated(fp: np.ndarray, seg: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The fingerprints that occur twice or more in one segment (and, rarely, some that occur in two:
    the strings decide). The top 32 bits are sorted within each segment, a uint32 row sort (3x
    faster than the uint64 one; rows padded when segments differ in length, within twice the
    entries); only segments where two top halves are equal (1 in 10,000 of 1,000 distinct
    documents) are sorted in full."""
    widths = ends - starts
    width = int(widths.max())
    padded = not np.all(widths == width)
    if padded and len(widths) * width > 2 * len(fp):  # very uneven segments: one flat sort
        by = np.sort(fp)
        return by[1:][by[1:] == by[:-1]]
    top = (fp >> np.uint64(32)).astype(np.uint32)
    if padded:
        cells = np.full((len(widths), width), _TOP_PAD, dtype=np.uint32)
        cells[seg, np.arange(len(fp)) - starts[seg]] = np.minimum(top, _TOP_PAD - np.uint32(1))
        top = cells
    else:
        top = top.reshape(-1, width)
    top.sort(axis=1)
    same = top[:, 1:] == top[:, :-1]
    if padded:
        same &= top[:, 1:] != _TOP_PAD
    rows = same.any(axis=1)
    if not rows.any():
        return fp[:0]
    by = np.sort(fp[np.repeat(rows, widths)])
    return by[1:][by[1:] == by[:-1]]


def _mix(x: np.ndarray) -> None:
    """A 64-bit xor-shift-multiply mix in place (MurmurHash3's finaliser, one round)."""
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(29)


def _numpy(arr, dtype, missing=None) -> np.ndarray:
    """The values of a pyarrow array of ``dtype`` as numpy, nulls replaced by ``missing``. Read
    from the buffers: ``Array.to_numpy`` and ``pc.fill_null`` import pandas (0.3 s) when installed."""
    assert np.dtype(dtype).itemsize * 8 == arr.type.bit_width
    validity, values = arr.buffers()[:2]
    out = np.frombuffer(values, dtype=dtype, count=len(arr), offset=arr.offset * np.dtype(dtype).itemsize)
    if arr.null_count:
        assert missing is not None
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        out = np.where(bits[arr.offset: arr.offset + len(arr)].astype(bool), out, missing)
    return out


class _Compute:
    """The pyarrow compute functions the reader calls, through ``call_function``: importing
    ``pyarrow.compute`` (also done by ``Array.take``) builds a Python wrapper for every function,
    0.04 s of CPU per process."""

    def __init__(self, pa) -> None:
        try:
            from pyarrow._compute import SetLookupOptions, call_function
        except ImportError:  # another pyarrow's layout: the public module
            from pyarrow.compute import SetLookupOptions, call_function
        self.pa, self.call, self.set_lookup = pa, call_function, SetLookupOptions

    def indices_nonzero(self, arr):
        return self.call("indices_nonzero", [arr])

    def equal(self, a, b):
        return self.call("equal", [a, b])

    def not_equal(self, a, b):
        return self.call("not_equal", [a, b])

    def greater(self, a, b):
        return self.call("greater", [a, b])

    def index_in(self, arr, value_set):
        return self.call("index_in", [arr], self.set_lookup(value_set))

    def take(self, arr, positions: np.ndarray):
        """``arr.take(positions)``, the positions handed over as an Arrow buffer (a numpy array
        would go through ``pa.array``, which imports pandas)."""
        pa = self.pa
        idx = np.ascontiguousarray(positions, dtype=np.int64)
        return self.call("take", [arr, pa.Array.from_buffers(pa.int64(), len(idx), [None, pa.py_buffer(idx)])])


def _string_array(pa, strings: list[str]):
    """A pyarrow string array built from its buffers: ``pa.array(list)`` would import pandas (0.3 s)."""
    data = [x.encode("utf-8") for x in strings]
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in data], out=offsets[1:])
    return pa.LargeStringArray.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)))


class _Ranker:
    """Ranks the relevant entries of each complete query of a chunk."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], exact_scores: bool = False,
                 lengths: list | None = None, pc: _Compute | None = None) -> None:
        if pc is None:
            import pyarrow as pa

            pc = _Compute(pa)
        self.pa, self.pc = pc.pa, pc
        self.qrels = qrels
        self.exact_scores, self.lengths = exact_scores, lengths
        self.run_queries: list[str] = []
        self.seen: set[str] = set()
        self.parts: list[tuple[np.ndarray, ...]] = []  # (t, rank, grade, tied, tied_before)
        self.evaluated: list[str] = []

    def add(self, q, d, score: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        pc = self.pc
        qids = pc.take(q, starts).to_pylist()
        for qid in qids:
            if qid in self.seen:  # not grouped by query: the strict reader decides
                raise _NotCanonical("ungrouped")
            self.seen.add(qid)
        self.run_queries.extend(qids)
        if self.lengths is not None:
            self.lengths.append(ends - starts)
        seg = np.repeat(np.arange(len(starts)), ends - starts)
        fp = _chunked_fingerprints(d, seg)
        dup = _repeated(fp, seg, starts, ends)
        if len(dup):
            self._check_duplicates(d, seg, fp, dup)
        # relevant judgements of the evaluated queries, in qrels order (as rank_run_arrays): this
        # chunk's only (a set of all the qrels' relevant documents, rebuilt for every chunk, cost
        # 4.7 s of 9 at 50,000 queries)
        row_doc, row_seg, grade = [], [], []
        for i, qid in enumerate(qids):
            judged = self.qrels.get(qid)
            if not judged:
                continue
            self.evaluated.append(qid)
            for doc, g in judged.items():
                if g > 0:
                    row_doc.append(doc)
                    row_seg.append(i)
                    grade.append(g)
        if not row_doc:
            return
        rank = np.full(len(row_doc), np.inf)
        tied, tied_before = np.zeros(len(row_doc), np.int64), np.zeros(len(row_doc), np.int64)
        entry, row = self._find_relevant(pc, d, seg, fp, _string_array(self.pa, row_doc),
                                         np.asarray(row_seg, dtype=np.int64))
        if len(entry):
            def doc_before(a, b):
                before = np.zeros(len(a), dtype=bool)  # byte-wise
                before[_numpy(pc.indices_nonzero(pc.greater(pc.take(d, a), pc.take(d, b))), np.uint64)] = True
                return before
            got = rank_in_segments(score, starts, ends, entry, seg[entry], doc_before)
            rank[row], tied[row], tied_before[row] = got, got.tied, got.tied_before
        t_of_seg = np.full(len(qids), -1, dtype=np.int64)
        evaluated_here = [i for i, qid in enumerate(qids) if self.qrels.get(qid)]
        t_of_seg[evaluated_here] = np.arange(len(self.evaluated) - len(evaluated_here), len(self.evaluated))
        self.parts.append((t_of_seg[np.asarray(row_seg)], rank, np.asarray(grade, dtype=np.float64), tied,
                           tied_before))

    def _find_relevant(self, pc, d, seg: np.ndarray, fp: np.ndarray, rel_docs, rel_seg: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(entry, row): the run entries holding relevant row ``row``'s document in its segment.

        Found by fingerprint: a table of the rows' top fingerprint bits picks the candidates (about
        1/64 of them false), a binary search pairs them with rows, and the pairs' segments and strings
        are compared, so a fingerprint collision changes nothing. (Hashing every document id against
        the rows' ids with ``pc.index_in``, the fallback when two rows share a fingerprint, cost 0.9 s
        of a 50,000-query run's 4.5.)"""
        rel_fp = _fingerprints(rel_docs, rel_seg)
        order = np.argsort(rel_fp, kind="stable")
        sorted_fp = rel_fp[order]
        if np.any(sorted_fp[1:] == sorted_fp[:-1]):
            return self._find_relevant_by_id(pc, d, seg, rel_docs, rel_seg)
        bits = min(24, max(10, (len(rel_fp) * 64).bit_length()))
        shift = np.uint64(64 - bits)
        table = np.zeros(1 << bits, dtype=bool)
        table[rel_fp >> shift] = True
        cand = np.flatnonzero(table[fp >> shift])
        pos = np.minimum(np.searchsorted(sorted_fp, fp[cand]), len(sorted_fp) - 1)
        hit = sorted_fp[pos] == fp[cand]
        entry, row = cand[hit], order[pos[hit]]
        keep = np.flatnonzero(seg[entry] == rel_seg[row])
        entry, row = entry[keep], row[keep]
        if len(entry):
            same = _numpy(pc.indices_nonzero(pc.equal(pc.take(d, entry), pc.take(rel_docs, row))), np.uint64).astype(np.int64)
            entry, row = entry[same], row[same]
        return entry, row

    def _find_relevant_by_id(self, pc, d, seg: np.ndarray, rel_docs, rel_seg: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
        """``_find_relevant`` by looking every document id up among the rows' ids."""
        ids = rel_docs.to_pylist()
        rel_index: dict[str, int] = {}
        row_doc = np.asarray([rel_index.setdefault(doc, len(rel_index)) for doc in ids], dtype=np.int64)
        n_rel = len(rel_index)
        row_key = rel_seg * n_rel + row_doc
        ix = _numpy(pc.index_in(d, value_set=_string_array(self.pa, list(rel_index))), np.int32, missing=-1)
        cand = np.flatnonzero(ix >= 0)
        cand_key = seg[cand].astype(np.int64) * n_rel + ix[cand]
        order = np.argsort(row_key, kind="stable")
        pos = np.minimum(np.searchsorted(row_key[order], cand_key), len(row_key) - 1)
        hit = row_key[order][pos] == cand_key
        return cand[hit], order[pos[hit]]

    def _check_duplicates(self, d, seg: np.ndarray, fp: np.ndarray, same: np.ndarray) -> None:
        where = np.flatnonzero(np.isin(fp, same))
        if len(where) > 100_000:
            raise _NotCanonical("fingerprints")
        pairs = set()
        for s, doc in zip(seg[where].tolist(), self.pc.take(d, where).to_pylist()):
            if (s, doc) in pairs:
                raise _NotCanonical("duplicate")  # the strict reader names the line
            pairs.add((s, doc))

    def table(self) -> RankTable:
        parts = self.parts or [(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64),
                                np.zeros(0, np.int64))]
        t, rank, grade, tied, tied_before = (np.concatenate(x) for x in zip(*parts))
        return finish_table(self.evaluated, np.full(len(self.evaluated), np.nan), t, rank, grade, None,
                            tied=tied, tied_before=tied_before)


def rank_run_file(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]] | Callable[[], Mapping],
                  *, exact_scores: bool = False, lengths: list | None = None) -> tuple[RankTable, list[str]] | None:
    """``(rank_run(read_run(path), qrels), run query ids)``, or None when the strict reader must decide.

    ``exact_scores``: rank by the float64 scores (trec_eval 10's doubles, ``clirbench trec_eval``)
    instead of float32 (trec_eval 9, pytrec_eval). ``lengths``: a list that gets, per chunk, the
    number of result lines of each run query (numpy arrays, in run query order).

    ``qrels`` may be a function that reads them: it is called while the run's first blocks are parsed
    (its errors propagate; an OSError gives None, so the caller calls it again). None also when
    pyarrow is missing (``pip install 'clirbench[evaluate]'`` for the fast path), and when ``path`` is
    not a regular file (``-``, a pipe, a FIFO: read once by the strict reader, or copied first with
    ``trec.rereadable``).
    """
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    pc = _Compute(pa)
    if is_stream(path):
        return None
    try:
        delim = _delimiter(path)
        source = _CheckedBytes(path, delim)
        try:
            return _read(pa, pcsv, pc, source, delim, qrels, exact_scores, lengths)
        finally:
            source.close()
    except (_NotCanonical, pa.ArrowException, OSError):
        return None


def _read(pa, pcsv, pc, source: _CheckedBytes, delim: bytes, qrels, exact_scores: bool = False,
          lengths: list | None = None) -> tuple[RankTable, list[str]]:
    names = ["q", "q0", "d", "rank", "s", "tag"]
    options = dict(
        read_options=pcsv.ReadOptions(column_names=names, block_size=_BLOCK, use_threads=True),
        parse_options=pcsv.ParseOptions(delimiter=delim.decode(), quote_char=False, double_quote=False,
                                        escape_char=False, newlines_in_values=False, ignore_empty_lines=True),
        # q0, rank and tag are ignored (as trec_eval ignores them): never converted (an empty field,
        # which the strict reader would see as a missing one, is found in the bytes: ``_empty_field``)
        # UTF-8 is checked with the other byte checks, on every field (``_CheckedBytes.check``), so not
        # again by pyarrow (0.3 s of CPU at 50,000 x 1,000)
        convert_options=pcsv.ConvertOptions(column_types={"q": pa.string(), "d": pa.string(), "s": pa.float64()},
                                            check_utf8=False,
                                            include_columns=["q", "d", "s"], null_values=[],
                                            strings_can_be_null=False, quoted_strings_can_be_null=False))
    # parsing starts now, in the reader thread and its parse workers (with pyarrow's pool), which also
    # check each chunk's lines (two numpy passes: where they ran changed the wall time by under 2%).
    # One parsed chunk waits for the ranking, not two (peak RSS at 5,000 queries: 0.24 -> 0.22 GB)
    workers = 2 if source.size >= _TWO_AT_ONCE else 1
    chunks = _prefetched(_parsed(pa, pcsv, source, options, workers), depth=1)
    try:
        ranker = _Ranker(qrels() if callable(qrels) else qrels, exact_scores, lengths, pc)
        carry = None
        for batches in chunks:
            for batch in batches:
                carry = _rank_complete(ranker, pa, pc, carry, tuple(batch.column(name) for name in ("q", "d", "s")))
        if carry is not None:
            _rank_complete(ranker, pa, pc, carry, None)
        if not ranker.run_queries:  # no result line: the strict reader says so
            raise _NotCanonical("empty")
    finally:
        chunks.close()
        # pyarrow's allocator keeps freed pages for reuse; what it kept is returned before the
        # caller's next steps (the bootstrap) allocate theirs: 40 MB of peak RSS at 5,000 queries
        pa.default_memory_pool().release_unused()
    return ranker.table(), ranker.run_queries


def _parsed(pa, pcsv, source: _CheckedBytes, options: dict, workers: int = 2):
    """The record batches of each ``_CHUNK`` bytes of the file's whole lines, in order, once its
    lines are checked. Chunks are parsed by ``pcsv.read_csv`` (its threaded reader: the streaming
    one parses on one thread), ``workers`` chunks at once, so that one call's slower block does not
    leave the cores idle (one chunk at a time kept the ranking thread waiting 0.4-0.8 s of 3.8 at
    50,000 queries)."""

    def parse(buf: bytes, cut: int) -> list:
        data = memoryview(buf)[:cut]
        batches = []
        # pyarrow refuses a chunk of empty lines only ("Empty CSV file")
        if cut and not (buf[:1] in (b"\n", b"\r") and not bytes(data).translate(None, b"\r\n")):
            batches = pcsv.read_csv(pa.py_buffer(data), **options).to_batches()
        source.check(buf, cut, sum(b.num_rows for b in batches))
        return batches

    with ThreadPoolExecutor(workers, thread_name_prefix="clirbench-trec-reader") as pool:
        pending: deque = deque()
        try:
            for buf, cut in _whole_lines(source, workers + 1):
                pending.append(pool.submit(parse, buf, cut))
                if len(pending) >= workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _whole_lines(source: _CheckedBytes, buffers: int = 1):
    """``(buffer, length of its whole lines)`` for each ``_CHUNK`` bytes of the file: every byte of
    the file is in exactly one ``buffer[:length]``. The ``buffers`` buffers are reused in turn (a
    fresh 8 MB buffer per chunk was fresh pages each time, zeroed by the kernel): the caller is done
    with a buffer once it has taken the next ``buffers - 1``. Bytes past a buffer's length are the
    partial line that starts the next, then earlier bytes of the file or zeros."""
    ring: list[bytearray] = []
    rest, turn = b"", 0
    while True:
        need = len(rest) + _CHUNK
        if turn == len(ring):
            ring.append(bytearray(need))
        elif len(ring[turn]) < need:  # a line longer than a chunk was carried
            ring[turn] = bytearray(need)
        buf = ring[turn]
        buf[:len(rest)] = rest
        size = len(rest) + source.read_into(buf, len(rest), need)
        end = size == len(rest)
        cut = size
        if not end:
            cut = buf.rfind(b"\n", 0, size) + 1
            if cut == 0:
                if size > MAX_LINE_BYTES:  # the strict reader names the line (an endless file: /dev/zero)
                    raise _NotCanonical("long line")
                rest = bytes(buf[:size])
                continue
        rest = bytes(buf[cut:size]) if not end else b""
        turn = (turn + 1) % buffers
        yield buf, cut
        if end:
            return


def _empty_field(buf: bytes, cut: int, delim: bytes) -> bool:
    """Whether a line of ``buf[:cut]`` (whole lines) has an empty field: it starts or ends with the
    delimiter, or holds two in a row. numpy over cache-sized slices; bytes searches where there is a \\r."""
    if cut == 0:
        return False
    if buf[:1] == delim or buf[cut - 1:cut] == delim:
        return True
    if buf.find(b"\r", 0, cut) >= 0:
        return any(buf.find(p, 0, cut) >= 0 for p in (delim + delim, b"\n" + delim, delim + b"\n", b"\r" + delim,
                                                       delim + b"\r"))
    a = np.frombuffer(buf, dtype=np.uint8, count=cut)
    code, step = ord(delim), 1 << 18
    for i in range(0, cut, step):
        c = a[i:i + step + 1]  # one byte of overlap: pairs across slices
        is_d, is_n = c == code, c == 10
        if np.any(is_d[1:] & (is_d[:-1] | is_n[:-1])) or np.any(is_d[:-1] & is_n[1:]):
            return True
    return False


class _prefetched:
    """The items of an iterator, pulled by a background thread ahead of the caller from the moment this
    is made: the reader parses the next blocks (without the GIL) while the caller reads the qrels,
    then while it ranks each block. Reading in the caller's thread left the second core idle (5k x
    1000 run: 1.5 s -> 1.2 s with both cores). ``close()`` stops the thread (also before the first
    item)."""

    def __init__(self, items, depth: int = 2) -> None:
        self._ahead: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._items = items
        self._worker = threading.Thread(target=self._pull, name="clirbench-trec-reader", daemon=True)
        self._worker.start()

    def _offer(self, message) -> bool:  # False once the caller has stopped listening
        while not self._stop.is_set():
            try:
                self._ahead.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _pull(self) -> None:
        try:
            for item in self._items:
                if not self._offer(("item", item)):
                    return
            self._offer(("end", None))
        except BaseException as exc:  # raised again in the caller's thread
            self._offer(("error", exc))

    def __iter__(self):
        return self

    def __next__(self):
        if self._stop.is_set():
            raise StopIteration
        kind, item = self._ahead.get()
        if kind == "item":
            return item
        self.close()
        if kind == "error":
            raise item
        raise StopIteration

    def close(self) -> None:
        self._stop.set()
        self._worker.join()
        close = getattr(self._items, "close", None)
        if close is not None:  # a generator: its ``finally`` runs now (it may own a _prefetched too)
            close()


def _chunks(arr) -> list:
    """The pyarrow arrays of ``arr`` (a ChunkedArray's chunks, or ``arr`` itself)."""
    return arr.chunks if hasattr(arr, "chunks") else [arr]


def _joined(pa, carry: tuple | None, rows: tuple) -> tuple:
    """``carry`` (q, d, s) followed by ``rows`` as chunked arrays: no id is copied."""
    if carry is None:
        return rows
    return tuple(pa.chunked_array([*_chunks(a), b]) for a, b in zip(carry, rows))


def _rank_complete(ranker: _Ranker, pa, pc, carry: tuple | None, rows: tuple | None):
    """Rank the queries that end in ``rows`` (q, d, s), the carried query's rows ``carry`` (the
    previous batch's last query, or None) before them, in one call; return the rows of the query
    that may go on in the next batch (None when nothing is left). ``rows`` None: the file has
    ended, the carried query is complete. Query ends are found in ``rows`` only (the carry holds one
    query); the carry's rows are not copied (chunked arrays): ranking the carried query on its own
    cost a call per batch (0.3 s of CPU at 50,000 x 1,000), joining it to the batch copied every id."""
    if rows is None:
        q, d, s = carry
        cut = len(q)
        starts = np.zeros(1, np.int64)
    else:
        n = len(rows[0])
        if n == 0:
            return carry
        m = 0 if carry is None else len(carry[0])
        qr = rows[0]
        changes = _numpy(pc.indices_nonzero(pc.not_equal(qr.slice(1), qr.slice(0, n - 1))), np.uint64)
        head = [0]
        if m and qr.slice(0, 1).to_pylist() != carry[0].slice(0, 1).to_pylist():
            head.append(m)  # the carried query ended with the previous batch
        starts = np.r_[np.asarray(head, np.int64), m + 1 + changes.astype(np.int64)]
        q, d, s = _joined(pa, carry, rows)
        cut = int(starts[-1])  # the last query may go on in the next batch
        if cut == 0:
            return q, d, s
        starts = starts[:-1]
    ends = np.r_[starts[1:], cut].astype(np.int64)
    score = np.concatenate([_numpy(c, np.float64) for c in _chunks(s.slice(0, cut))]) if hasattr(s, "chunks") \
        else _numpy(s.slice(0, cut), np.float64)
    if np.isnan(score).any():
        raise _NotCanonical("NaN")
    if ranker.exact_scores:
        score = score + 0.0  # trec_eval 10's double; -0.0 ties with 0.0
    else:
        with np.errstate(over="ignore"):
            score = score.astype(np.float32) + np.float32(0)  # trec_eval's float; -0.0 ties with 0.0
    ranker.add(q.slice(0, cut), d.slice(0, cut), score, starts, ends)
    return (q.slice(cut), d.slice(cut), s.slice(cut)) if cut < len(q) else None
