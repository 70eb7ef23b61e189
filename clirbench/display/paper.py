r"""Paper-ready tables (docs/commands.md, docs/leaderboards.md): booktabs LaTeX and Markdown from
cells of a value with its interval, the best in bold and a marker for a significant difference.

A ``Cell`` is one number with its interval, both with the column's decimals (``precision``: one
rule for every output); ``latex_table`` and ``markdown_table`` render a header (each measure with
its direction mark: ↑ higher is better, ↓ lower is better, ``best at 50``), rows of cells or
strings, and a note under the table. In LaTeX a column of cells is two aligned columns (``r@{}l``:
the value, then its interval and the † marker, so neither bold nor a marker moves the ± of a row),
in ``\small`` with narrow column gaps; ``latex_width`` estimates a table's width in points, so
a caller can split a wide table into several that fit ``TEXTWIDTH_PT``. ``comparison_table`` renders
a ``stats.paired.Comparison`` (``clirbench compare --format latex``). ``--ci pm`` shows the
interval's half-width (``±``; a percentile interval need not be symmetric, so it is half its
length), ``--ci bracket`` both ends.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..measures import parse
from ..stats.significance_tests import paired_test
from .precision import fmt, measure_decimals

__all__ = ["CI_STYLES", "TABLE_FORMATS", "MARKER", "SIGNIFICANCE_LEVEL", "TEXTWIDTH_PT", "Cell", "latex_escape",
           "latex_table", "latex_note", "latex_width", "markdown_table", "markdown_note", "comparison_table", "check_ci_style", "direction_legend"]

CI_STYLES = ("pm", "bracket")
TABLE_FORMATS = ("text", "markdown", "latex", "csv")  # leaderboard show --format (here: the parser needs no numpy)
MARKER = {"latex": r"$^{\dagger}$", "markdown": "†", "text": "†"}
SIGNIFICANCE_LEVEL = 0.05
TEXTWIDTH_PT = 345.0  # \textwidth of LaTeX's article class (10pt); LNCS: 347pt, a two-column paper's table*: wider
LATEX_OPEN = r"{\small\setlength{\tabcolsep}{4pt}%"
NAME_PT = 110.0  # a longer system name wraps in the first column (after / : - _), in a box this wide

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "±": r"$\pm$",
                  "×": r"$\times$", "−": "-", "–": "--", "↑": r"$\uparrow$", "↓": r"$\downarrow$",
                  "Δ": r"$\Delta$"}
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


def direction_legend(marks) -> str:
    """What the direction marks used in a table's header mean (``↑ higher is better; ↓ ...``)."""
    words, used = {"↑": "↑ higher is better", "↓": "↓ lower is better"}, set(marks)
    return "; ".join(words[m] for m in ("↑", "↓") if m in used)


@dataclass(frozen=True)
class Cell:
    """One reported number: the value, its interval (NaN: none), ``places`` decimals for both,
    bold (best of its column), whether it carries the significance marker, ``signed`` (a leading +
    on a difference) and ``after``: text after the value instead of an interval (``(incomplete, 1/2
    pools)``)."""

    value: float
    low: float = math.nan
    high: float = math.nan
    bold: bool = False
    marked: bool = False
    places: int = 3
    signed: bool = False
    after: str = ""

    def parts(self, fmt_: str, ci: str = "pm") -> tuple[str, str]:
        """``(value, rest)`` in ``fmt_`` (``latex`` or ``markdown``): the value (bold when best) and
        what follows it: the interval in style ``ci`` (or ``after``), then the marker."""
        escape = latex_escape if fmt_ == "latex" else _markdown_escape
        value = fmt(self.value, self.places, sign=self.signed)
        if self.bold and not math.isnan(self.value):
            value = rf"\textbf{{{value}}}" if fmt_ == "latex" else f"**{value}**"
        if self.after:
            rest = escape(self.after)
        elif math.isnan(self.low) or math.isnan(self.high):
            rest = ""
        elif ci == "pm":
            rest = (r"$\pm$\," if fmt_ == "latex" else "± ") + fmt((self.high - self.low) / 2, self.places)
        else:
            rest = f"[{fmt(self.low, self.places)}, {fmt(self.high, self.places)}]"
        if self.marked:
            rest += MARKER[fmt_]
        return value, rest

    def render(self, fmt_: str, ci: str = "pm") -> str:
        """The cell in ``fmt_`` as one string (Markdown; LaTeX uses ``parts`` in two columns)."""
        value, rest = self.parts(fmt_, ci)
        if self.marked and rest == MARKER[fmt_]:
            return value + rest
        return f"{value} {rest}".rstrip()


def _pairs(header: Sequence[str], rows: Sequence[Sequence]) -> list[bool]:
    """Per column: whether it holds cells (two LaTeX columns: value and interval)."""
    return [j > 0 and any(isinstance(r[j], Cell) for r in rows) for j in range(len(header))]


def _name(text: object, wrap: bool) -> str:
    """A first-column name: escaped; when ``wrap``, in a ``NAME_PT`` box that breaks it after
    ``/``, ``:``, ``-`` and ``_`` (never inside a word)."""
    out = latex_escape(text)
    if not wrap:
        return out
    for c in ("/", ":", "-", r"\_"):
        out = out.replace(c, c + r"\allowbreak{}")
    return rf"\parbox[t]{{{NAME_PT:g}pt}}{{\raggedright\hangindent=1em {out}}}"


def _latex_row(row: Sequence, pairs: list[bool], ci: str, wrap: bool = False) -> str:
    out = [_name(row[0], wrap)]
    for c, pair in zip(row[1:], pairs[1:]):
        if isinstance(c, Cell):
            out += list(c.parts("latex", ci))
        elif pair:
            out.append(rf"\multicolumn{{2}}{{c}}{{{latex_escape(c)}}}")
        else:
            out.append(latex_escape(c))
    return " & ".join(out) + r" \\"


def latex_table(header: Sequence[str], rows: Sequence[Sequence], note: str = "", ci: str = "pm",
                groups: Sequence[tuple[str, int]] = ()) -> str:
    """A booktabs ``tabular`` in ``\\small`` (first column left, a column of cells as value and
    interval columns, others right), ``groups`` (``(label, columns)`` over the header after the
    first column: a scenario over its measures) as a header row with rules, then ``note`` in small
    type under it. Strings are escaped; cells rendered (bold, interval, marker)."""
    pairs = _pairs(header, rows)
    wrap = max((_text_pt(str(r[0])) for r in rows), default=0.0) > NAME_PT
    align = "l" + "".join(r"r@{\hspace{0.3em}}l" if p else "r" for p in pairs[1:])
    lines = [LATEX_OPEN, rf"\begin{{tabular}}{{{align}}}", r"\toprule"]
    if groups:
        cells, rules, col = [""], [], 2  # tabular column index (1-based) after the first column
        logical = 1
        for label, span in groups:
            width = sum(2 if pairs[j] else 1 for j in range(logical, logical + span))
            cells.append(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(label)}}}" if label else
                         " & ".join([""] * width))
            if label:
                rules.append(rf"\cmidrule(lr){{{col}-{col + width - 1}}}")
            col, logical = col + width, logical + span
        lines += [" & ".join(cells) + r" \\", "".join(rules)]
    head = [latex_escape(header[0])] + [rf"\multicolumn{{2}}{{c}}{{{latex_escape(h)}}}" if p else latex_escape(h)
                                        for h, p in zip(header[1:], pairs[1:])]
    lines += [" & ".join(head) + r" \\", r"\midrule"]
    lines += [_latex_row(r, pairs, ci, wrap) for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}}"]
    if note:
        lines += ["", latex_note(note)]
    return "\n".join(lines)


def latex_note(note: str) -> str:
    """A table's note in LaTeX: escaped, in footnote size, † as the LaTeX marker."""
    return r"{\footnotesize " + latex_escape(note).replace("†", MARKER["latex"]) + "}"


# Widths (pt) of characters in Computer Modern at \small (9pt): digits 0.5em, bold digits 0.575em;
# others by class. An estimate on the wide side: a table it says fits, fits.
_PT = {**{c: 4.7 for c in "0123456789"}, ".": 2.6, ",": 2.6, " ": 3.1, "±": 7.2, "†": 4.0, "-": 3.1, "[": 2.6,
       "]": 2.6, "(": 3.6, ")": 3.6, "/": 4.7, "@": 7.2, "_": 4.7, "↑": 4.7, "↓": 4.7, ":": 2.6, "+": 7.2}


def _text_pt(text: str, bold: bool = False) -> float:
    width = sum(_PT.get(c, 7.0 if c.isupper() else 5.0) for c in text)
    return width * (1.15 if bold else 1.0)


def latex_width(header: Sequence[str], rows: Sequence[Sequence], ci: str = "pm") -> float:
    """An estimate (pt, on the wide side) of ``latex_table``'s natural width at ``\\small`` with 4pt
    column gaps; ``TEXTWIDTH_PT`` is a page's."""
    pairs = _pairs(header, rows)
    total = 0.0
    for j, (h, pair) in enumerate(zip(header, pairs)):
        if pair:
            value = max((_text_pt(r[j].parts("markdown", ci)[0].strip("*"), r[j].bold) for r in rows
                         if isinstance(r[j], Cell)), default=0.0)
            rest = max((_text_pt(r[j].parts("markdown", ci)[1]) for r in rows if isinstance(r[j], Cell)), default=0.0)
            others = max((_text_pt(str(r[j])) for r in rows if not isinstance(r[j], Cell)), default=0.0)
            width = max(value + 2.7 + rest, others, _text_pt(h))
        elif j == 0:
            width = max(_text_pt(h), min(NAME_PT, max((_text_pt(str(r[0])) for r in rows), default=0.0)))
        else:
            width = max([_text_pt(h)] + [_text_pt(str(r[j])) for r in rows])
        total += width + 8.0
    return total


def markdown_table(header: Sequence[str], rows: Sequence[Sequence], note: str = "", ci: str = "pm") -> str:
    """A GitHub Markdown table (first column left, the others right), then ``note``."""
    lines = ["| " + " | ".join(_markdown_escape(h) for h in header) + " |",
             "|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(c.render("markdown", ci) if isinstance(c, Cell) else _markdown_escape(c) for c in r)
              + " |" for r in rows]
    if note:
        lines += ["", markdown_note(note)]
    return "\n".join(lines)


def markdown_note(note: str) -> str:
    """A table's note in Markdown: one paragraph, escaped (``*`` kept)."""
    return _markdown_escape(note).replace("\\*", "*")


def _significant(p: float | None) -> bool:
    return p is not None and not math.isnan(p) and p < SIGNIFICANCE_LEVEL


def comparison_table(report, fmt: str = "latex", ci: str = "pm") -> str:
    """``clirbench compare`` as a paper table: per measure (with its direction mark) A and B (the
    better in bold), B - A with its paired-bootstrap interval (marked † when the adjusted p is below
    0.05) and the adjusted p; each row's numbers with its measure's decimals (``precision``)."""

    check_ci_style(ci)
    header = ["Measure", report.a.system, report.b.system, "B - A", "p (adj.)"]
    rows, marks = [], []
    for name, r in report.measures.items():
        family = parse(name).record
        ga, gb = float(family.goodness(r.mean_a)), float(family.goodness(r.mean_b))
        p = r.p_adjusted if r.p_adjusted is not None else r.p_value
        places = measure_decimals(name, [(r.ci_high - r.ci_low) / 2])
        marks.append(family.arrow)
        rows.append([f"{name} {family.arrow}", Cell(r.mean_a, bold=ga > gb, places=places),
                     Cell(r.mean_b, bold=gb > ga, places=places),
                     Cell(r.diff, r.ci_low, r.ci_high, marked=_significant(p), places=places, signed=True),
                     "–" if p is None or math.isnan(p) else (f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}")])
    legend = direction_legend(marks)
    note = (f"† adjusted p < {SIGNIFICANCE_LEVEL:g}: paired {paired_test(report.test).describe(report.permutations)}; "
            f"{report.family}; B - A with its {report.confidence:.0%} paired bootstrap interval "
            f"({report.resamples} resamples, {'± half its length' if ci == 'pm' else '[low, high]'}); "
            f"{report.num_queries} quer{'ies' if report.num_queries != 1 else 'y'}; better of A and B in bold"
            + (f"; {legend}." if legend else "."))
    render = latex_table if fmt == "latex" else markdown_table
    return render(header, rows, note, ci)
