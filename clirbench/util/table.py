"""Plain-text tables: the one formatter of the CLI's tables."""
from __future__ import annotations


def format_table(header: list[str], rows: list[list[str]], right: tuple[int, ...] = (),
                 rule: bool = True) -> list[str]:
    """The lines of a plain-text table (the one formatter of the CLI's tables): columns padded to
    their widest cell, two spaces apart, the columns in ``right`` right-aligned, a dashed rule
    under the header unless ``rule`` is False."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.rjust(w) if i in right else c.ljust(w)
                              for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [fmt(header)] + ([fmt(["-" * w for w in widths])] if rule else []) + [fmt(r) for r in rows]
