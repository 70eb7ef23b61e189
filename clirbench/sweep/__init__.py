"""Sweeps: models × tasks × translations from one YAML config, locally or on a Ray cluster."""
from .config import Cell, SweepConfig, SweepConfigError, TaskEntry, Translation, cells, load_config, parse_config
from .driver import SweepReport, run_sweep
from .executors import CellOutcome, LocalExecutor, RayExecutor, make_executor

__all__ = ["Cell", "CellOutcome", "LocalExecutor", "RayExecutor", "SweepConfig", "SweepConfigError",
           "SweepReport", "TaskEntry", "Translation", "cells", "load_config", "make_executor",
           "parse_config", "run_sweep"]
