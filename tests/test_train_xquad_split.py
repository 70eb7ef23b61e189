"""XQuAD's article split (``--task-option articles=train|test``): disjoint halves, recorded in results."""
from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from clirbench.cli import main
from clirbench.tasks import get_task


def test_halves_follow_the_articles_of_the_file_and_do_not_overlap():
    task = get_task("xquad")
    train, test = (task.load(["en", "de"], articles=a) for a in ("train", "test"))
    full = task.load(["en", "de"])
    assert set(train.passages["en"]).isdisjoint(test.passages["en"])
    assert set(train.passages["de"]) | set(test.passages["de"]) == set(full.passages["de"])
    assert len(train.questions["en"]) == 632 and len(test.questions["en"]) == 558
    assert {q.id for q in train.questions["de"]}.isdisjoint({q.id for q in test.questions["de"]})
    # golden check against the SQuAD JSON itself: article 24 (0-based) opens the test half
    import clirbench

    data = json.loads(lzma.open(Path(clirbench.__file__).parent / "data/xquad/xquad.en.json.xz").read())["data"]
    first_test = data[24]["paragraphs"][0]["context"].strip()
    assert test.passages["en"]["p120"] == first_test and "p120" not in train.passages["en"]
    assert data[24]["title"] == "American_Broadcasting_Company"
    assert train.source["subset"] == "articles=train"


def test_pools_and_results_record_the_subset(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,de", "--scenario", "mono-same",
                 "--query-lang", "de", "--task-option", "articles=test", "--output", str(out),
                 "--resamples", "10", "--no-progress", "--cache-dir", str(tmp_path / "c")]) == 0
    files = [p for p in out.rglob("*.json") if "articles=test" in str(p) and "gap" not in p.name]
    assert files, sorted(out.rglob("*"))
    record = json.loads(files[0].read_text())
    assert record["subset"] == "articles=test" and record["num_queries"] == 558


@pytest.mark.parametrize("option, message", [("articles=dev", "expected articles=train or articles=test"),
                                             ("split=test", "takes no option(s) split")])
def test_bad_article_options_are_one_line_errors(option, message, capsys, tmp_path):
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,de", "--task-option", option,
                 "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("clirbench: error:") and message in err and err.count("\n") == 1


def test_belebele_still_takes_no_option(capsys, tmp_path):
    with pytest.raises(Exception, match="takes no option"):
        get_task("belebele").pools("eng_Latn,deu_Latn", "multi", articles="train")
