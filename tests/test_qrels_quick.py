"""The quick qrels path (formats.trec._quick_qrels) against the strict line-by-line reader: the same
dict in the same order, or None and the strict reader decides (the same result or error)."""
from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clirbench.formats.trec import _quick_qrels, _strict_qrels, read_qrels

_FIELD = st.text(alphabet="aq1_#-+09é\u00a0\x0b\x1c\x7f\r", min_size=1, max_size=4)
_GRADE = st.one_of(st.integers(-3, 4).map(str), st.sampled_from(["+1", "01", "-0", "1234567890", "999999999",
                                                                 "-999999999", "-", "x", "1.0", "２"]))
_BLANK = st.sampled_from([" ", "\t", "  ", " \t", "\x0c", "\u3000"])


@st.composite
def _qrels_text(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["judgement"] * 6 + ["blank", "comment", "fields"]))
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", " ", "\t "])))
        elif kind == "comment":
            lines.append("#" + draw(_FIELD))
        else:
            n = 4 if kind == "judgement" else draw(st.integers(1, 6))
            fields = [draw(st.sampled_from(["q1", "q2", "q10"])), "0", draw(st.sampled_from(["d1", "d2", "d3"])),
                      draw(_GRADE)][:n] + [draw(_FIELD) for _ in range(n - 4)]
            if draw(st.booleans()):
                fields = [draw(_FIELD) if draw(st.integers(0, 9)) == 0 else f for f in fields]
            sep = draw(_BLANK)
            lines.append(draw(st.sampled_from(["", " "])) + sep.join(fields) + draw(st.sampled_from(["", " ", "\r"])))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


def _strict(path):
    try:
        return "ok", list((q, list(d.items())) for q, d in _strict_qrels(path).items())
    except ValueError as exc:
        return "error", str(exc)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_qrels_text(), gz=st.booleans())
def test_quick_qrels_equal_the_strict_reader(tmp_path, text, gz):
    path = tmp_path / ("q.gz" if gz else "q")
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    want = _strict(path)
    quick = _quick_qrels(path)
    if quick is not None:
        assert want == ("ok", list((q, list(d.items())) for q, d in quick.items()))
    try:
        got = "ok", list((q, list(d.items())) for q, d in read_qrels(path).items())
    except ValueError as exc:
        got = "error", str(exc)
    assert got == want


def test_quick_qrels_take_plain_files_and_leave_the_rest(tmp_path):
    """A plain file is read quickly; a carriage return, a BOM, '+1', a duplicate leave it to the strict reader."""
    plain = tmp_path / "plain"
    plain.write_text("q1 0 d1 1\n# note\n\nq1\t0\td2  -1\nq2 0 d1 0\n")
    assert _quick_qrels(plain) == {"q1": {"d1": 1, "d2": -1}, "q2": {"d1": 0}}
    for text in ["q1 0 d1 1\r\n", "\ufeffq1 0 d1 1\n", "q1 0 d1 +1\n", "q1 0 d1 1\nq1 0 d1 2\n", "q1 0 d1\n", ""]:
        plain.write_text(text)
        assert _quick_qrels(plain) is None


@pytest.mark.parametrize("text", ["q1 0 d1 1\nq1 0 d1 2\n", "q1 0 d1 x\n", "q1 0 d1\n"])
def test_errors_still_name_the_line(tmp_path, text):
    path = tmp_path / "q"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"q:\d+: "):
        read_qrels(path)
