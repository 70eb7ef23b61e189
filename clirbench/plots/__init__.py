"""Figures of results and leaderboards (``clirbench plot``): the package holds one module per
figure, each with a function that draws it and writes it with ``figure.save`` (SVG or PNG by the
file's suffix, deterministic SVG). matplotlib (the ``plot`` extra) is imported lazily, with the Agg
backend, by ``figure.pyplot``.
"""
