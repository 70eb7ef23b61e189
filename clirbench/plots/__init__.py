"""Figures of results, one module per figure (matplotlib, imported lazily)."""
