"""Domains of numeric options, checked before any work.

``check_*`` raise ``ValueError`` naming the parameter (the Python API); the argparse ``type=``
functions below wrap them so that the CLI names the option (``argument --seed: ...``, exit 2).
"""
from __future__ import annotations

import argparse
import math
import numbers

from .errors import UnknownNameError
from .strict import ascii_int

__all__ = ["MAX_RESAMPLES", "MAX_SEED", "MAX_COUNT", "MAX_BATCH_SIZE", "MAX_WORKERS", "MAX_SHARDS", "MAX_ITERATIONS", "MAX_LONG",
           "check_int", "check_float", "check_resamples", "check_seed", "int_in", "float_in",
           "positive_int", "nonnegative_int", "resample_count", "seed", "probability", "finite_float",
           "positive_float", "nonnegative_float", "batch_size", "worker_count", "shard_count", "iteration_count",
           "CORRECTIONS", "check_correction"]

#: upper limit on bootstrap resamples and randomisation-test permutations (documented in docs/measures.md)
MAX_RESAMPLES = 1_000_000
#: seeds are stored in result and leaderboard files as JSON integers of at most 63 bits
MAX_SEED = 2**63 - 1
#: every count has an upper bound (a typo of a few digits must not run for days):
MAX_COUNT = 1_000_000_000  # any count without a bound of its own (steps, examples)
MAX_BATCH_SIZE = 65_536  # texts per encoder or translator batch
MAX_WORKERS = 4_096  # Ray workers, requests in flight
MAX_SHARDS = 1_000_000  # document shards of exact ranking
MAX_ITERATIONS = 1_000  # EM iterations (psq train)
MAX_LONG = 2**63 - 1  # C's long: trec_eval's -M, -N and measure cutoffs
#: multiple-testing corrections of a family of p-values (stats.correction), the default first
CORRECTIONS = ("holm", "bh", "none")


def _span(low, high) -> str:
    if low is not None and high is not None:
        return f"between {low:,} and {high:,}" if isinstance(low, int) else f"in [{low:g}, {high:g}]"
    return f">= {low:,}" if low is not None else f"<= {high:,}"


def check_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int within [low, high]; ValueError naming ``name`` otherwise (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer {_span(low, high)}, got {value:,}")
    return value


def check_float(value, name: str, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> float:
    """``value`` as a finite float within [low, high] (``(low, high]`` if ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {value:g}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high:g}, got {value:g}")
    return value


def check_resamples(value, name: str = "resamples") -> int:
    return check_int(value, name, 1, MAX_RESAMPLES)


def check_correction(method: str) -> str:
    """``method`` if it is one of ``CORRECTIONS``; else an UnknownNameError naming them."""
    if method not in CORRECTIONS:
        raise UnknownNameError(f"unknown correction {method!r}; expected {', '.join(CORRECTIONS)}")
    return method


def check_seed(value, name: str = "seed") -> int:
    return check_int(value, name, 0, MAX_SEED)


# ---------------------------------------------------------------------------------------------
# argparse types: argparse prefixes the message with "argument --option: "


def _argtype(convert, check, label: str):
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            shown = repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text):,} characters)"
            raise argparse.ArgumentTypeError(f"must be {label}, got {shown}") from None
        try:
            return check(value, "value")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace("value must", "must", 1)) from None

    parse.__name__ = label.replace(" ", "_")
    return parse


def _int(text: str) -> int:
    return ascii_int(text.strip())


def int_in(low: int, high: int):
    """argparse type: an integer in [low, high] (ASCII digits, at most ``strict.MAX_INT_DIGITS``)."""
    return _argtype(_int, lambda v, n: check_int(v, n, low, high), f"an integer between {low:,} and {high:,}")


def float_in(low: float, high: float, low_open: bool = False):
    """argparse type: a finite number in [low, high] (``(low, high]`` if ``low_open``)."""
    span = f"{'(' if low_open else '['}{low:g}, {high:g}]"
    return _argtype(float, lambda v, n: check_float(v, n, low, high, low_open), f"a number in {span}")


positive_int = int_in(1, MAX_COUNT)
nonnegative_int = int_in(0, MAX_COUNT)
batch_size = int_in(1, MAX_BATCH_SIZE)
worker_count = int_in(1, MAX_WORKERS)
shard_count = int_in(1, MAX_SHARDS)
iteration_count = int_in(1, MAX_ITERATIONS)
resample_count = _argtype(_int, check_resamples, f"an integer between 1 and {MAX_RESAMPLES:,}")
seed = _argtype(_int, check_seed, "a non-negative integer")
probability = _argtype(float, lambda v, n: check_float(v, n, 0.0, 1.0), "a probability in [0, 1]")
finite_float = _argtype(float, check_float, "a finite number")
positive_float = _argtype(float, lambda v, n: check_float(v, n, 0.0, low_open=True), "a positive number")
nonnegative_float = _argtype(float, lambda v, n: check_float(v, n, 0.0), "a non-negative number")
