"""``clirbench plot ecdf | ranks | gaps | preference | exposure | pareto``: figures of results and leaderboards (SVG or PNG by the
``--out`` suffix), one sub-subcommand per figure module of ``clirbench.plots``.

A figure is added with an ``_add_<name>(sub)`` function, listed in ``_FIGURES``: it makes its parser
with ``_figure`` (which adds ``--out`` and the handler calling its ``clirbench.plots`` module) and adds
its own arguments.
"""
from __future__ import annotations

import argparse
import sys

from ..plots.exposure import plot_exposure
from ..plots.figure import check_output
from ..plots.gap_heatmap import plot_gap_heatmap
from ..plots.pareto import COSTS, DEFAULT_COST, write_pareto
from ..plots.preference import plot_preference
from ..plots.rank_intervals import plot_rank_intervals
from ..util.errors import ClirbenchError

__all__ = ["add_plot_parser", "cmd_plot"]


def _figure(sub, name: str, helptext: str, draw) -> argparse.ArgumentParser:
    """The parser of figure ``name``: ``--out`` and ``draw(args) -> written path`` as its handler."""
    s = sub.add_parser(name, help=helptext)
    s.add_argument("--out", required=True, help="the figure's file (.svg or .png)")
    s.set_defaults(figure=draw)
    return s


def _leaderboard_args(s) -> None:
    s.add_argument("task")
    s.add_argument("--dir", default=None, help="leaderboard folder (default: leaderboard, in the current folder, "
                                                "when it holds the task's board, else the reference board "
                                                "shipped with clirbench)")


def _board_note(args) -> None:
    """Say on stderr which board a leaderboard figure draws (``leaderboard.store.board_note``)."""

    from ..leaderboard import store  # lazy: numpy

    path = store.path_for(args.task, args.dir)
    if path.is_file():
        print(store.board_note(path), file=sys.stderr)


def _results_arg(s) -> None:
    s.add_argument("results", nargs="+", metavar="RESULT.json|FOLDER", help="result files, or folders of them")


def _add_ecdf(sub) -> None:
    def draw(args):
        from ..plots.ecdf import plot_ecdf  # lazy: numpy

        return plot_ecdf(args.results, args.out, args.measure)

    s = _figure(sub, "ecdf", "the distribution of a per-query measure (default MaxR) per query language", draw)
    _results_arg(s)
    s.add_argument("--measure", default="MaxR")


def _add_ranks(sub) -> None:
    def draw(args):
        drawn = plot_rank_intervals(args.task, args.out, args.dir, args.scenario, args.measure)
        _board_note(args)  # after drawing: a refusal stays the one line on stderr
        return drawn

    s = _figure(sub, "ranks", "each system's rank and 95%% rank interval per leaderboard board", draw)
    _leaderboard_args(s)
    s.add_argument("--scenario", default=None)
    s.add_argument("--measure", default=None)


def _add_gaps(sub) -> None:
    def draw(args):
        drawn = plot_gap_heatmap(args.task, args.out, args.dir, args.scenario, args.measure)
        _board_note(args)  # after drawing: a refusal stays the one line on stderr
        return drawn

    s = _figure(sub, "gaps", "the query-language gap per system and language pair (heatmap)", draw)
    _leaderboard_args(s)
    s.add_argument("--scenario", default="multi")
    s.add_argument("--measure", default=None, help="default: the scenario's first higher-is-better measure")


def _add_preference(sub) -> None:
    def draw(args):
        return plot_preference(args.results, args.out)

    s = _figure(sub, "preference", "the language-preference matrix of multi pools (query × document language)", draw)
    _results_arg(s)


def _add_exposure(sub) -> None:
    def draw(args):
        return plot_exposure(args.results, args.out)

    s = _figure(sub, "exposure", "which document languages fill each query's top 10, per system and query "
                                 "language (multi pools)", draw)
    _results_arg(s)


def _add_pareto(sub) -> None:
    def draw(args):
        return write_pareto(args.results, args.out, args.measure, args.cost, args.scenario)

    s = _figure(sub, "pareto", "effectiveness against cost per system, with the Pareto front", draw)
    _results_arg(s)
    s.add_argument("--measure", default="nDCG@10", help="effectiveness: a measure of the results (default nDCG@10)")
    s.add_argument("--cost", choices=sorted(COSTS), default=DEFAULT_COST,
                   help=f"the cost axis (default {DEFAULT_COST}: the cold cost, seconds to encode, index and "
                        f"search a pool, docs/results.md#cost)")
    s.add_argument("--scenario", default=None, help="only results of this scenario")


_FIGURES = (_add_ecdf, _add_ranks, _add_gaps, _add_preference, _add_exposure, _add_pareto)


def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``plot`` and its figures to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("plot", help="figures (SVG or PNG) of results and leaderboards")
    sub = p.add_subparsers(dest="figure_name", parser_class=type(p))
    for add in _FIGURES:
        add(sub)
    p.set_defaults(handler=cmd_plot)
    return p


def cmd_plot(args) -> int:
    if getattr(args, "figure", None) is None:
        raise ClirbenchError("clirbench plot: expected a figure: ecdf, ranks, gaps, preference, exposure or "
                             "pareto")
    check_output(args.out)
    print(args.figure(args))
    return 0
