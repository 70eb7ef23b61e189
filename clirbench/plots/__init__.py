"""Figures of clirbench results (matplotlib, imported only inside the plotting functions)."""
