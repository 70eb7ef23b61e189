"""The names ``clirbench train`` accepts: its recipes and the align recipe's losses (no torch here)."""
from __future__ import annotations

__all__ = ["LOSSES", "RECIPES"]

LOSSES = ("jsd+nce", "nce", "jsd", "nce-psg")
RECIPES = ("align", "compose")
