"""Connecting to Ray (a cluster's address, or a local Ray started for the run) and talking to its
workers: the environment they get, a worker's name, results fetched with ClirbenchErrors kept
(docs/large-pools.md)."""
from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from typing import Iterator

from ..util.errors import ClirbenchError
from ..util.optional import require

__all__ = ["ray_session", "check_reachable", "forwarded_env", "worker_id", "ray_get", "QUIET", "MAX_RETRIES",
           "CONNECT_TIMEOUT_S"]

CONNECT_TIMEOUT_S = 5.0
MAX_RETRIES = 3  # per shard task / encoder actor
QUIET = {"log_to_driver": False}  # workers' own output (encoder progress bars) stays in Ray's logs


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` to probe for ``HOST:PORT`` or ``ray://HOST[:PORT]``; None for ``auto``."""
    if address in ("auto", "local"):
        return None
    rest, default = (address[len("ray://"):], 10001) if address.startswith("ray://") else (address, 6379)
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, str(default)
    host = host.strip("[]")
    if not host or not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise ClirbenchError(f"Ray address {address[:80]!r} is not HOST:PORT, ray://HOST:PORT or auto")
    return host, int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """A one-line error, within ``timeout`` seconds, when nothing listens at ``address``."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, socket.timeout) else (exc.strerror or type(exc).__name__)
        raise ClirbenchError(f"cannot connect to Ray at {address}: {reason}") from None


@contextmanager
def ray_session(address: str | None = None, workers: int | None = None, *, purpose: str = "--executor ray",
                init_kwargs: dict | None = None) -> Iterator[object]:
    """The ``ray`` module, connected: to the Ray this process already has, else to ``address``,
    else to a local Ray started with ``workers`` CPUs (no dashboard) and shut down at the end."""
    ray = require("ray", purpose=purpose)  # one line naming the extra when missing
    if address:
        check_reachable(address)
    if ray.is_initialized():
        yield ray
        return
    kwargs = dict(init_kwargs or {})
    if address:
        kwargs["address"] = address
    else:
        kwargs.setdefault("include_dashboard", False)
        if workers:
            kwargs.setdefault("num_cpus", int(workers))
    try:
        ray.init(**kwargs)
    except ConnectionError as exc:
        raise ClirbenchError(f"cannot connect to Ray at {address}: {str(exc).splitlines()[0]}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def forwarded_env() -> dict:
    """Ray options passing this process's CLIRBENCH_*, HF_* and TRANSFORMERS_* variables to its workers."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("CLIRBENCH_", "HF_", "TRANSFORMERS_"))}
    return {"runtime_env": {"env_vars": env}} if env else {}


def worker_id() -> str:
    """``host:pid`` of this process (a Ray worker's name in reports)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def ray_get(ray, ref):
    """``ray.get``, a ClirbenchError raised on a worker coming back as itself (one line)."""
    try:
        return ray.get(ref)
    except ClirbenchError:
        raise
    except Exception as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, ClirbenchError):
            raise ClirbenchError(str(cause)) from None
        raise
