"""Paper-ready tables (docs/commands.md): booktabs LaTeX and Markdown from cells of a value with
its interval, the best in bold and a marker for a significant difference.

A ``Cell`` is one number with its interval; ``latex_table`` and ``markdown_table`` render a header,
rows of cells or strings, and a note line under the table. ``comparison_table`` renders a
``stats.paired.Comparison`` (``clirbench compare --format latex``). Rounding happens here, for
display only: 4 decimals below 10, else 2 (the leaderboard's rule); ``--ci pm`` shows the
interval's half-width (``±``; a percentile interval need not be symmetric, so it is half its
length), ``--ci bracket`` both ends.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["CI_STYLES", "TABLE_FORMATS", "MARKER", "SIGNIFICANCE_LEVEL", "Cell", "latex_escape", "number", "latex_table",
           "markdown_table", "comparison_table", "check_ci_style"]

CI_STYLES = ("pm", "bracket")
TABLE_FORMATS = ("text", "markdown", "latex", "csv")  # leaderboard show --format (here: the parser needs no numpy)
MARKER = {"latex": r"$^{\dagger}$", "markdown": "†", "text": "†"}
SIGNIFICANCE_LEVEL = 0.05

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "±": r"$\pm$",
                  "×": r"$\times$", "−": "-", "–": "--"}
_MARKDOWN_SPECIAL = "\\`*_[]<>|"


def check_ci_style(style: str) -> str:
    if style not in CI_STYLES:
        raise ValueError(f"unknown --ci {style!r}; choose one of {', '.join(CI_STYLES)}")
    return style


def latex_escape(text: object) -> str:
    """``text`` safe in LaTeX text mode (every special character escaped)."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def _markdown_escape(text: object) -> str:
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in " ".join(str(text).split()))


def number(x: float | None, like: float | None = None) -> str:
    """``x`` rounded for display: 4 decimals when ``like`` (default ``x``) is below 10, else 2."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    ref = x if like is None or math.isnan(like) else like
    return f"{x:.4f}" if abs(ref) < 10 else f"{x:.2f}"


@dataclass(frozen=True)
class Cell:
    """One reported number: the value, its interval (NaN: none), bold (best of its column) and
    whether it carries the significance marker."""

    value: float
    low: float = math.nan
    high: float = math.nan
    bold: bool = False
    marked: bool = False

    def render(self, fmt: str, ci: str = "pm") -> str:
        """The cell in ``fmt`` (``latex`` or ``markdown``) with its interval in style ``ci``."""
        value = number(self.value)
        if self.bold and not math.isnan(self.value):
            value = rf"\textbf{{{value}}}" if fmt == "latex" else f"**{value}**"
        if self.marked:
            value += MARKER[fmt]
        if math.isnan(self.low) or math.isnan(self.high):
            return value
        if ci == "pm":
            pm = r"$\pm$" if fmt == "latex" else "±"
            return f"{value} {pm} {number((self.high - self.low) / 2, like=self.value)}"
        return f"{value} [{number(self.low, like=self.value)}, {number(self.high, like=self.value)}]"


def _cells(row: Sequence, fmt: str, ci: str, escape) -> list[str]:
    out = [c.render(fmt, ci) if isinstance(c, Cell) else escape(c) for c in row]
    return [c.replace("–", "--") for c in out] if fmt == "latex" else out


def latex_table(header: Sequence[str], rows: Sequence[Sequence], note: str = "", ci: str = "pm",
                align: str | None = None) -> str:
    """A booktabs ``tabular`` (first column left, the others right unless ``align``), then ``note``
    in small type under it. Strings are escaped; cells rendered (bold, marker, interval)."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
             " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_cells(r, "latex", ci, latex_escape)) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if note:
        lines += ["", r"{\footnotesize " + latex_escape(note).replace("†", MARKER["latex"]) + "}"]
    return "\n".join(lines)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence], note: str = "", ci: str = "pm") -> str:
    """A GitHub Markdown table (first column left, the others right), then ``note``."""
    lines = ["| " + " | ".join(_markdown_escape(h) for h in header) + " |",
             "|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(_cells(r, "markdown", ci, _markdown_escape)) + " |" for r in rows]
    if note:
        lines += ["", _markdown_escape(note).replace("\\*", "*")]
    return "\n".join(lines)


def _significant(p: float | None) -> bool:
    return p is not None and not math.isnan(p) and p < SIGNIFICANCE_LEVEL


def comparison_table(report, fmt: str = "latex", ci: str = "pm") -> str:
    """``clirbench compare`` as a paper table: per measure A and B (the better in bold), B - A with
    its paired-bootstrap interval (marked † when the adjusted p is below 0.05) and the adjusted p."""
    from .measures import parse

    check_ci_style(ci)
    header = ["Measure", report.a.system, report.b.system, "B - A", "p (adj.)"]
    rows = []
    for name, r in report.measures.items():
        good = parse(name).record.goodness
        ga, gb = float(good(r.mean_a)), float(good(r.mean_b))
        p = r.p_adjusted if r.p_adjusted is not None else r.p_value
        rows.append([name, Cell(r.mean_a, bold=ga > gb), Cell(r.mean_b, bold=gb > ga),
                     Cell(r.diff, r.ci_low, r.ci_high, marked=_significant(p)),
                     "–" if p is None or math.isnan(p) else (f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}")])
    note = (f"† adjusted p < {SIGNIFICANCE_LEVEL:g}: paired randomisation test ({report.permutations} sign flips); "
            f"{report.family}; B - A with its {report.confidence:.0%} paired bootstrap interval "
            f"({report.resamples} resamples, {'± half its length' if ci == 'pm' else '[low, high]'}); "
            f"{report.num_queries} queries; better of A and B in bold.")
    render = latex_table if fmt == "latex" else markdown_table
    return render(header, rows, note, ci)
