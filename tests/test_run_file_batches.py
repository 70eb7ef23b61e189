"""Queries that cross pyarrow's record batches and the reader's byte chunks (rank/run_file.py joins a
batch's last query to its rest at the head of the next): the pyarrow reader against the strict one."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clirbench.rank.run_file as rf
from clirbench.formats.trec import read_run
from clirbench.rank.runs import rank_run

_QUERY_IDS = ["q1", "q10", "q2", "q" + "x" * 20, "7", "q1b"]


@st.composite
def _run_lines(draw):
    """(lines, qrels): queries of 1 to 400 lines (some longer than a batch), ids that are prefixes of
    each other, scores with ties; sometimes one query's lines in two places (ungrouped)."""
    ids = draw(st.permutations(_QUERY_IDS))[:draw(st.integers(1, len(_QUERY_IDS)))]
    groups = [(q, draw(st.integers(1, 400))) for q in ids]
    if len(groups) > 1 and draw(st.integers(0, 4)) == 0:  # a query again after another one
        groups.append((groups[0][0], draw(st.integers(1, 30))))
    lines, qrels, used = [], {}, {}
    for q, n in groups:
        start = used.get(q, 0)
        used[q] = start + n
        for i in range(start, start + n):
            doc = f"doc{i}" + "z" * (i % 11)
            lines.append(f"{q} Q0 {doc} {i + 1} {draw(st.integers(0, 6)) / 4} tag")
            if i % 5 == 0:
                qrels.setdefault(q, {})[doc] = draw(st.integers(0, 3))
    qrels["q-absent"] = {"doc1": 1}
    return lines, qrels


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_run_lines(), block=st.sampled_from([1 << 10, 1 << 11, 1 << 14]),
       chunk=st.sampled_from([997, 4096, 20_000, 1 << 23]), two=st.booleans())
def test_queries_across_batches_give_the_strict_readers_table(tmp_path, monkeypatch, case, block, chunk, two):
    lines, qrels = case
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    lengths: list = []
    with monkeypatch.context() as m:
        m.setattr(rf, "_BLOCK", block)
        m.setattr(rf, "_CHUNK", chunk)
        m.setattr(rf, "_TWO_AT_ONCE", 0 if two else 1 << 40)
        got = rf.rank_run_file(path, qrels, lengths=lengths)
    order = list(dict.fromkeys(line.split()[0] for line in lines))
    grouped = sum(1 for a, b in zip(lines, lines[1:]) if a.split()[0] != b.split()[0]) == len(order) - 1
    if not grouped:
        assert got is None  # the strict reader decides
        return
    assert got is not None
    table, run_queries = got
    assert run_queries == order
    counts = [sum(1 for line in lines if line.split()[0] == q) for q in order]
    np.testing.assert_array_equal(np.concatenate(lengths), counts)
    ref = rank_run(read_run(path), qrels)
    assert table.query_ids == ref.query_ids
    for field in ("qidx", "rank", "grade", "num_docs"):
        np.testing.assert_array_equal(getattr(table, field), getattr(ref, field))
