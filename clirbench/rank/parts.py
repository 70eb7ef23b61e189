"""Score rows still to compute (``products.BoundedBlock``), computed and counted part by part on the
BLAS's thread count of threads, so that the counting spreads over the cores like the product."""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Callable

__all__ = ["BlockParts", "blas_threads"]


class BlockParts:
    """Computes ``BoundedBlock`` rows on the BLAS's thread count of threads: each thread computes one
    part's product on one BLAS thread and hands it to ``work(scores, offset)`` (a ``BoundedScores``
    of rows ``offset:offset + b`` of the block), so the counting spreads over the cores like the
    product. One thread: the parts are worked in turn, in the caller's thread. Parts of at most two
    blocks are queued; a part's scores exist only while a thread works on it, so at most one
    block's worth of scores is held. Leaving the ``with`` waits for every part (or, on an error,
    drops the queued ones) and lifts the one-thread limit."""

    def __init__(self) -> None:
        self.threads = 0
        self.pool = None
        self.stack = ExitStack()
        self.queued: deque = deque()  # per block, its parts' futures

    def __enter__(self) -> "BlockParts":
        return self

    def submit(self, block, work: Callable[[object, int], None]) -> None:
        if not self.threads:
            self.threads = blas_threads()
            if self.threads > 1:
                from threadpoolctl import ThreadpoolController

                self.stack.enter_context(ThreadpoolController().limit(limits=1, user_api="blas"))
                self.pool = self.stack.enter_context(ThreadPoolExecutor(self.threads, "clirbench-rank"))
        n = block.shape[0]
        step = max(1, -(-n // self.threads))
        if self.pool is None:
            for a in range(0, n, step):
                work(block.part(a, a + step), a)
            return
        self.queued.append([self.pool.submit(_work_on_part, work, block, a, a + step) for a in range(0, n, step)])
        while len(self.queued) > 2:
            for f in self.queued.popleft():
                f.result()

    def __exit__(self, kind, *_) -> None:
        try:
            if kind is None:
                while self.queued:
                    for f in self.queued.popleft():
                        f.result()
        finally:
            for fs in self.queued:
                for f in fs:
                    f.cancel()
            self.stack.close()


def _work_on_part(work, block, a: int, b: int) -> None:
    work(block.part(a, b), a)


def blas_threads() -> int:
    """The thread count of the loaded BLAS (threadpoolctl; OPENBLAS_NUM_THREADS and the like set it)."""
    from threadpoolctl import threadpool_info

    return max([i.get("num_threads") or 1 for i in threadpool_info() if i.get("user_api") == "blas"], default=1)
