"""``clirbench plot ecdf | ranks | gaps | preference | pareto``: figures of results and leaderboards (SVG or PNG by the
``--out`` suffix), one sub-subcommand per figure module of ``clirbench.plots``.

A figure is added with an ``_add_<name>(sub)`` function that adds its parser and sets ``figure``
to a handler calling its ``clirbench.plots`` module, listed in ``_FIGURES``.
"""
from __future__ import annotations

import argparse

__all__ = ["add_plot_parser", "cmd_plot"]


def _leaderboard_args(s) -> None:
    s.add_argument("task")
    s.add_argument("--dir", default="leaderboards", help="leaderboard folder (default: leaderboards)")


def _add_ecdf(sub) -> None:
    s = sub.add_parser("ecdf", help="the distribution of a per-query measure (default MaxR) per query language")
    s.add_argument("results", nargs="+", metavar="RESULT.json|FOLDER", help="result files, or folders of them")
    s.add_argument("--measure", default="MaxR")

    def figure(args):
        from ..plots.ecdf import plot_ecdf

        return plot_ecdf(args.results, args.out, args.measure)

    s.set_defaults(figure=figure)
    s.add_argument("--out", required=True, help="the figure's file (.svg or .png)")


def _add_ranks(sub) -> None:
    s = sub.add_parser("ranks", help="each system's rank and 95%% rank interval per leaderboard board")
    _leaderboard_args(s)
    s.add_argument("--scenario", default=None)
    s.add_argument("--measure", default=None)

    def figure(args):
        from ..plots.rank_intervals import plot_rank_intervals

        return plot_rank_intervals(args.task, args.out, args.dir, args.scenario, args.measure)

    s.set_defaults(figure=figure)
    s.add_argument("--out", required=True, help="the figure's file (.svg or .png)")


def _add_gaps(sub) -> None:
    s = sub.add_parser("gaps", help="the query-language gap per system and language pair (heatmap)")
    _leaderboard_args(s)
    s.add_argument("--scenario", default="multi")
    s.add_argument("--measure", default=None, help="default: the scenario's first higher-is-better measure")

    def figure(args):
        from ..plots.gap_heatmap import plot_gap_heatmap

        return plot_gap_heatmap(args.task, args.out, args.dir, args.scenario, args.measure)

    s.set_defaults(figure=figure)
    s.add_argument("--out", required=True, help="the figure's file (.svg or .png)")


def _add_preference(sub) -> None:
    s = sub.add_parser("preference", help="the language-preference matrix of multi pools (query × document language)")
    s.add_argument("results", nargs="+", metavar="RESULT.json|FOLDER", help="result files, or folders of them")

    def figure(args):
        from ..plots.preference import plot_preference

        return plot_preference(args.results, args.out)

    s.set_defaults(figure=figure)
    s.add_argument("--out", required=True, help="the figure's file (.svg or .png)")


def _add_pareto(sub) -> None:
    from ..plots.pareto import COSTS

    s = sub.add_parser("pareto", help="effectiveness against cost per system, with the Pareto front")
    s.add_argument("results", nargs="+", metavar="RESULT.json|FOLDER", help="result files, or folders of them")
    s.add_argument("--measure", default="nDCG@10", help="effectiveness: a measure of the results (default nDCG@10)")
    s.add_argument("--cost", choices=sorted(COSTS), default="search_ms_per_query",
                   help="the cost axis (default search_ms_per_query)")
    s.add_argument("--scenario", default=None, help="only results of this scenario")

    def figure(args):
        from ..plots.figure import result_paths
        from ..plots.pareto import write_pareto

        return write_pareto(result_paths(args.results), args.out, args.measure, args.cost, args.scenario)

    s.set_defaults(figure=figure)
    s.add_argument("--out", required=True, help="the figure's file (.svg or .png)")


_FIGURES = (_add_ecdf, _add_ranks, _add_gaps, _add_preference, _add_pareto)


def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``plot`` and its figures to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("plot", help="figures (SVG or PNG) of results and leaderboards")
    sub = p.add_subparsers(dest="figure_name", parser_class=type(p))
    for add in _FIGURES:
        add(sub)
    p.set_defaults(handler=cmd_plot)
    return p


def cmd_plot(args) -> int:
    from ..errors import ClirbenchError
    from ..plots.figure import check_output

    if getattr(args, "figure", None) is None:
        raise ClirbenchError("clirbench plot: expected a figure: ecdf, ranks, gaps, preference or pareto")
    check_output(args.out)
    print(args.figure(args))
    return 0
