"""The one TREC reader (formats.trec) against what NIST trec_eval 10.0 and 9.0.8 print for the same
files (tests/fixtures/trec_eval/reader: inputs and recorded outputs, written by its make.py):
``clirbench trec_eval`` prints trec_eval's lines, ``clirbench evaluate`` its values, and both
refuse what trec_eval refuses -- or what docs/commands.md ("TREC qrels and run files") says
clirbench refuses beyond it."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from clirbench.cli import main

FIX = Path(__file__).parent / "fixtures" / "trec_eval" / "reader"
EXPECTED = json.loads((FIX / "expected.json").read_text(encoding="utf-8"))
TE10, TE9 = "trec_eval_10.0", "trec_eval_9.0.8"

# read by trec_eval 10.0 (exit 0): clirbench prints the same lines
SAME = ["plain", "nbsp-in-doc-id", "unicode-spaces-in-ids", "ascii-blanks", "vertical-tab-splits-an-id",
        "form-feed-splits-an-id", "comments", "fields-after-the-tag", "run-from-stdin"]
# refused by trec_eval (both versions) and by clirbench, in one line naming the file and line
REFUSED = {"duplicate-judgement": "duplicate-judgement.qrels:6: doc 'a' of query 'q1' judged twice (1 and 1)",
           "duplicate-judgement-other-grade": "duplicate-judgement-other-grade.qrels:6: doc 'a' of query 'q1' "
                                              "judged twice (1 and 2)"}
# read by trec_eval, refused by clirbench (documented): a carriage return is a blank to trec_eval, so
# a file with CR-only line ends is one line (its run: the first result, the rest ignored), and it
# takes control characters and line separators as id text
STRICTER = {"cr-only-line-ends": "cr-only-line-ends.run:1: a carriage return (\\r) not followed by a line feed",
            "lone-cr-splits-an-id": "lone-cr-splits-an-id.run:1: a carriage return (\\r) not followed by a line feed",
            "unit-separator-in-id": "unit-separator-in-id.run:1: the forbidden character U+001F",
            "next-line-in-id": "next-line-in-id.run:1: the forbidden character U+0085",
            "line-separator-in-id": "line-separator-in-id.run:1: the forbidden character U+2028"}
# refused by trec_eval 10.0 (a malformed line, a crash, no qrels from "-"), read by clirbench: the
# output of trec_eval on the same judgements without the comments / given by name
KINDER = {"two-comment-lines-in-qrels": "plain", "comment-at-the-end-of-qrels": "plain",
          "qrels-from-stdin": "run-from-stdin"}


def test_every_recorded_case_is_checked():
    assert set(SAME) | set(REFUSED) | set(STRICTER) | set(KINDER) == set(EXPECTED)


def cli(capsys, monkeypatch, argv: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def files(case: str) -> tuple[list[str], bytes | None]:
    """(qrels and run arguments, bytes for standard input) as the case gave them to trec_eval."""
    spec, qrels, run = EXPECTED[case], str(FIX / f"{case}.qrels"), str(FIX / f"{case}.run")
    if spec["run_from_stdin"]:
        return [qrels, "-"], (FIX / f"{case}.run").read_bytes()
    if spec["qrels_from_stdin"]:
        return ["-", run], (FIX / f"{case}.qrels").read_bytes()
    return [qrels, run], None


@pytest.mark.parametrize("case", SAME)
def test_trec_eval_prints_trec_eval_10s_lines(capsys, monkeypatch, case):
    want = EXPECTED[case][TE10]
    assert want["exit"] == 0 and want["stdout"]
    names, stdin = files(case)
    code, out, err = cli(capsys, monkeypatch, ["trec_eval", *EXPECTED[case]["args"], *names], stdin)
    assert (code, err) == (0, "")
    assert out == want["stdout"]


def summary(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"(?m)^(\S+)\s*\tall\t(\S+)$", text)}


@pytest.mark.parametrize("case", SAME)
def test_evaluate_gives_trec_eval_10s_values(capsys, monkeypatch, case):
    """The kernel's AP, nDCG, P@5, RR and the trec_eval-computed Bpref and Rprec on the files trec_eval
    read (ids with no-break spaces, \\v and \\f between fields, comments, fields after the tag, stdin)."""
    want = summary(EXPECTED[case][TE10]["stdout"])
    names = {"AP": "map", "nDCG": "ndcg", "P@5": "P_5", "RR": "recip_rank", "Bpref": "bpref", "Rprec": "Rprec"}
    asked = [n for n, te in names.items() if te in want]
    assert "AP" in asked
    (qrels, run), stdin = files(case)
    code, out, err = cli(capsys, monkeypatch, ["evaluate", "--json", "--qrels", qrels, "--run", run, "--resamples", "10",
                                               "--measures", ",".join(asked)], stdin)
    assert (code, err) == (0, ""), err
    got = json.loads(out)["measures"]
    for n in asked:
        assert f"{got[n]['value']:.4f}" == want[names[n]], n


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("command", ["trec_eval", "evaluate"])
def test_refused_as_trec_eval_refuses_it(capsys, monkeypatch, case, command):
    for version in (TE10, TE9):
        assert EXPECTED[case][version]["exit"] != 0 and "duplicate docs a" in EXPECTED[case][version]["stderr"]
    qrels, run = str(FIX / f"{case}.qrels"), str(FIX / f"{case}.run")
    argv = ["trec_eval", qrels, run] if command == "trec_eval" else ["evaluate", "--qrels", qrels, "--run", run]
    code, out, err = cli(capsys, monkeypatch, argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("clirbench: error: ") and REFUSED[case] in err


@pytest.mark.parametrize("case", sorted(STRICTER))
@pytest.mark.parametrize("command", ["trec_eval", "evaluate"])
def test_refused_where_trec_eval_reads_something_else(capsys, monkeypatch, case, command):
    assert EXPECTED[case][TE10]["exit"] in (0, 4) and EXPECTED[case][TE9]["exit"] == 0  # trec_eval read it
    qrels, run = str(FIX / f"{case}.qrels"), str(FIX / f"{case}.run")
    argv = ["trec_eval", qrels, run] if command == "trec_eval" else ["evaluate", "--qrels", qrels, "--run", run]
    code, out, err = cli(capsys, monkeypatch, argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and STRICTER[case] in err


def test_trec_eval_takes_unicode_spaces_as_id_text():
    """What the recorded outputs show: the no-break space is part of the document id (map 0, the run id
    is the sixth field), \\v and \\f separate fields (the fifth field "1" is the score, map 1)."""
    nbsp = summary(EXPECTED["nbsp-in-doc-id"][TE10]["stdout"])
    assert (nbsp["map"], nbsp["runid"]) == ("0.0000", "t")
    for case in ("vertical-tab-splits-an-id", "form-feed-splits-an-id", "lone-cr-splits-an-id"):
        split = summary(EXPECTED[case][TE10]["stdout"])
        assert (split["map"], split["runid"]) == ("1.0000", "2.5"), case


@pytest.mark.parametrize("case", sorted(KINDER))
def test_read_where_trec_eval_10_fails(capsys, monkeypatch, case):
    assert EXPECTED[case][TE10]["exit"] != 0
    reference = EXPECTED[KINDER[case]]
    assert reference["args"] == EXPECTED[case]["args"] and reference[TE10]["exit"] == 0
    names, stdin = files(case)
    code, out, err = cli(capsys, monkeypatch, ["trec_eval", *EXPECTED[case]["args"], *names], stdin)
    assert (code, err) == (0, "")
    assert out == reference[TE10]["stdout"]
