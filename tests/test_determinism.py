"""Dense scores and ranks are a function of the embeddings only: the same (query, doc) pair gets the
same float32 score, ``fl32(fl64(q . d))``, whatever its query block, document shard, ranking path
or BLAS thread count (a float32 BLAS product rounds by shape, position and threads)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clirbench.retrievers.dense import ExactScores, exact_scores

ROOT = Path(__file__).resolve().parents[1]


def _reference(Q, D):
    """fl32(fl64(exact)) by math.fsum (correctly rounded) of the exact float64 products."""
    Q64, D64 = Q.astype(np.float64), D.astype(np.float64)
    return np.array([[np.float32(math.fsum((q * d).tolist())) for d in D64] for q in Q64], dtype=np.float32)


def _unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("dim", [1, 3, 16, 384])
def test_exact_scores_equal_the_correctly_rounded_dot_product(dim):
    rng = np.random.default_rng(dim)
    Q, D = _unit(rng, 23, dim), _unit(rng, 41, dim)
    D[5] = -D[4]  # sign patterns, exact cancellations
    Q[3] = 0
    want = _reference(Q, D)
    S = exact_scores(Q, D)
    assert S.dtype == np.float32 and np.array_equal(S, want)
    wide = exact_scores(Q, D, np.float64)
    assert wide.dtype == np.float64 and np.array_equal(wide.astype(np.float32), want)


def test_exact_scores_decide_rounding_boundaries_and_exact_zeros():
    """Dot products on (or a hair off) a float32 rounding midpoint, and integer vectors whose dot
    products are exactly 0: where a float64 BLAS sum cannot decide the rounding."""
    t = np.float32(2.0 ** -24)
    Q = np.array([[1, t, 0], [1, t, 2.0 ** -60], [1, t, -(2.0 ** -60)], [3, -2, 5], [1, 1, 1]], dtype=np.float32)
    D = np.array([[1, 1, 1], [1, 1, 0], [2, 3, 0], [1e-20, 1e-20, 1e-20]], dtype=np.float32)
    assert np.array_equal(exact_scores(Q, D), _reference(Q, D))
    rng = np.random.default_rng(0)
    Qi = rng.integers(-3, 4, (40, 64)).astype(np.float32)
    Di = rng.integers(-3, 4, (50, 64)).astype(np.float32)
    S = exact_scores(Qi, Di)
    assert np.array_equal(S, Qi.astype(np.float64) @ Di.T.astype(np.float64)) and (S == 0).any()


def test_exact_scores_do_not_depend_on_the_block_or_the_neighbours():
    rng = np.random.default_rng(7)
    Q, D = _unit(rng, 64, 96), _unit(rng, 300, 96)
    full = ExactScores(D)(Q)
    for rows in (1, 3, 7, 64):
        assert np.array_equal(np.concatenate([ExactScores(D)(Q[a:a + rows]) for a in range(0, 64, rows)]), full)
    for cols in (1, 16, 100):
        parts = [ExactScores(D[a:a + cols])(Q) for a in range(0, 300, cols)]
        assert np.array_equal(np.concatenate(parts, axis=1), full)
    perm = rng.permutation(300)
    assert np.array_equal(ExactScores(D[perm])(Q[::-1]), full[::-1][:, perm])


_CHILD = r"""
import hashlib, json, sys
import numpy as np
from clirbench.collection import Pool, Text
from clirbench.retrievers.dense import DenseRetriever
from clirbench.rank.rows import rank_relevant
from clirbench.rank.sharded import rank_pool_sharded
from threadpoolctl import threadpool_info

class Enc:
    model_id, revision, batch_size = "test/matrix", "0", 1024
    def __init__(self, Q, D): self.Q, self.D = Q, D
    def prompt(self, role): return ""
    def encode(self, texts, role):
        M = self.Q if role == "query" else self.D
        return M[[int(t[1:]) for t in texts]]

rng = np.random.default_rng(3)
def unit(n, d=48):
    # nearly parallel vectors: many near-ties, as a small random model's embeddings
    x = rng.standard_normal((n, d)).astype(np.float32) * 0.02 + 1
    return x / np.linalg.norm(x, axis=1, keepdims=True)
Q, D = unit(150), unit(230)
qtexts = [f"q{i}" for i in range(150)] + ["q3", "q77"]          # repeated queries
dtexts = [f"d{i}" for i in range(230)] + ["d5", "d17"]          # repeated documents
queries = tuple(Text(f"Q{i}", t, "en") for i, t in enumerate(qtexts))
docs = tuple(Text(f"D{i:03d}", t, "zh" if i % 2 else "en") for i, t in enumerate(dtexts))
qrels = {q.id: {docs[(7 * i) % len(docs)].id: 1, docs[(11 * i + 3) % len(docs)].id: 2} for i, q in enumerate(queries)}
pool = Pool("t", "multi", "unique", ("en", "zh"), "en", docs, queries, qrels)
out = {"threads": [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]}
for rows in (1, 7, 64, None):
    r = DenseRetriever(Enc(Q, D), block_rows=rows)
    S = np.concatenate([b for _, b in r.score(queries, docs)])
    out[f"scores/{rows}"] = hashlib.sha256(S.tobytes()).hexdigest()
    if rows == 7:
        out["copies_equal"] = bool(np.array_equal(S[3], S[150]) and np.array_equal(S[:, 5], S[:, 230]))
        t = rank_relevant(DenseRetriever(Enc(Q, D), block_rows=rows).score(queries, docs), [d.id for d in docs],
                          [q.id for q in queries], qrels)
        out["ranks/full"] = t.rank.tolist()
    t = rank_relevant(DenseRetriever(Enc(Q, D), block_rows=rows).score_bounded(queries, docs), [d.id for d in docs],
                      [q.id for q in queries], qrels)
    out[f"ranks/bounded/{rows}"] = t.rank.tolist()
for shards in (1, 3, 7):
    out[f"ranks/sharded/{shards}"] = rank_pool_sharded(DenseRetriever(Enc(Q, D)), pool, pool, shards).table.rank.tolist()
import clirbench
out["package"] = clirbench.__file__
print(json.dumps(out))
"""


def _child(threads: int) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_scores_and_ranks_identical_across_blocks_shards_and_blas_threads():
    one, two = _child(1), _child(2)
    assert one["threads"] == [1] and two["threads"] == [2]
    assert one["package"] == two["package"] == str(ROOT / "clirbench" / "__init__.py")
    for got in (one, two):
        assert got["copies_equal"]
        assert len({got[f"scores/{rows}"] for rows in (1, 7, 64, None)}) == 1, got
        for shards in (1, 3, 7):
            assert got[f"ranks/sharded/{shards}"] == got["ranks/full"], shards
        for rows in (1, 7, 64, None):  # float32 product + exact near-ties: the same ranks
            assert got[f"ranks/bounded/{rows}"] == got["ranks/full"], rows
    assert one == {**two, "threads": [1]}
