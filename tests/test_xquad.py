"""XQuAD loader on the real files in ../shared/data/xquad: counts, alignment, spot checks."""
import json
import shutil
from pathlib import Path

import pytest

from clirbench.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task, list_tasks

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad"


@pytest.fixture(scope="module")
def xquad():
    return get_task("xquad").load(data_dir=XQUAD)


def test_card_and_registry_agree():
    task = get_task("xquad")
    assert "xquad" in [t.id for t in list_tasks()]
    assert task.card.languages == ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
    assert set(task.card.files_sha256) == set(task.card.languages)


def test_counts_per_language(xquad):
    for lang in xquad.languages:
        assert len(xquad.passages[lang]) == 240
        assert len(xquad.questions[lang]) == 1190
        assert len({q.id for q in xquad.questions[lang]}) == 1190


def test_files_match_the_card_hashes(xquad):
    assert xquad.source["files_match_card"] is True
    assert xquad.source["files_sha256"]["en"] == get_task("xquad").card.files_sha256["en"]


def test_spot_checks_first_middle_last(xquad):
    en, zh = xquad.questions["en"], xquad.questions["zh"]
    assert en[0].id == zh[0].id == "56beb4343aeaaa14008c925b"
    assert en[0].text == "How many points did the Panthers defense surrender?"
    assert zh[0].text == "黑豹队的防守丢了多少分？"
    assert en[0].item == "p000"
    assert xquad.passages["en"]["p000"].startswith("The Panthers defense gave up just 308 points")
    assert xquad.passages["zh"]["p000"].startswith("黑豹队的防守只丢了 308分")
    # the last question belongs to the last paragraph in every language
    assert en[-1].item == zh[-1].item == "p239"
    assert en[-1].id == zh[-1].id
    middle = en[595]
    assert xquad.questions["ar"][595].id == middle.id and xquad.questions["ar"][595].item == middle.item


def test_items_align_across_languages(xquad):
    reference = [(q.id, q.item) for q in xquad.questions["en"]]
    for lang in xquad.languages:
        assert [(q.id, q.item) for q in xquad.questions[lang]] == reference
        assert [q.lang for q in xquad.questions[lang]] == [lang] * 1190


def test_texts_are_stripped(xquad):
    for lang in xquad.languages:
        assert all(t == t.strip() for t in xquad.passages[lang].values())
        assert all(q.text == q.text.strip() for q in xquad.questions[lang])


def test_env_var_location(tmp_path, monkeypatch):
    (tmp_path / "xquad").mkdir()
    for lang in ("en", "de"):
        shutil.copy(XQUAD / f"xquad.{lang}.json", tmp_path / "xquad")
    monkeypatch.setenv("CLIRBENCH_DATA_DIR", str(tmp_path))
    collection = get_task("xquad").load(["en", "de"])
    assert collection.source["origin"] == str(tmp_path / "xquad")
    assert len(collection.questions["de"]) == 1190


def test_misaligned_files_fail_with_a_clear_message(tmp_path):
    for lang in ("en", "de"):
        shutil.copy(XQUAD / f"xquad.{lang}.json", tmp_path)
    data = json.loads((tmp_path / "xquad.de.json").read_text())
    data["data"][3]["paragraphs"][1]["qas"][0]["id"] = "not-the-same-id"
    (tmp_path / "xquad.de.json").write_text(json.dumps(data))
    with pytest.raises(MalformedDataError, match="do not align"):
        get_task("xquad").load(["en", "de"], data_dir=tmp_path)


def test_malformed_file(tmp_path):
    (tmp_path / "xquad.en.json").write_text("{not json")
    with pytest.raises(MalformedDataError, match="xquad.en.json"):
        get_task("xquad").load(["en"], data_dir=tmp_path)


def test_missing_language_file(tmp_path):
    shutil.copy(XQUAD / "xquad.en.json", tmp_path)
    with pytest.raises(DataNotFoundError, match="xquad.zh.json"):
        get_task("xquad").load(["en", "zh"], data_dir=tmp_path)


def test_unknown_task_and_language():
    with pytest.raises(UnknownNameError, match="unknown task 'nope'"):
        get_task("nope")
    with pytest.raises(UnknownNameError, match="unknown language"):
        get_task("xquad").load(["en", "fr"], data_dir=XQUAD)
