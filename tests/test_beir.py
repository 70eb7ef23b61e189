"""BEIR-format reader and ``beir:<dir>`` bring-your-own collections (mixed languages get SameLangFirst)."""
from __future__ import annotations

import json

import pytest

from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task
from clirbench.formats.beir import read_corpus, read_qrels, read_queries, truncate_tokens

DOCS = [{"_id": "en1", "title": "Paris", "text": "Paris is the capital of France.", "lang": "en", "url": "u1"},
        {"_id": "fr1", "title": "Paris", "text": "Paris est la capitale de la France.", "lang": "fr"},
        {"_id": "en2", "title": "", "text": "Berlin is the capital of Germany.", "lang": "en"},
        {"_id": 7, "title": "Berlin", "text": "Berlin est la capitale de l'Allemagne.", "lang": "fr"}]
QUERIES = [{"_id": "q1", "text": "capital of France", "lang": "en"},
           {"_id": "q2", "text": "capitale de l'Allemagne", "lang": "fr"},
           {"_id": "q3", "text": "unjudged", "lang": "en"}]
QRELS = "query-id\tcorpus-id\tscore\nq1\ten1\t1\nq1\tfr1\t1\nq2\ten2\t1\nq2\t7\t2\n"


def write_beir(folder, docs=DOCS, queries=QUERIES, qrels=QRELS, split="test"):
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")
    (folder / "qrels" / f"{split}.tsv").write_text(qrels, "utf-8")
    return folder


def test_reader_records_and_metadata(tmp_path):
    folder = write_beir(tmp_path / "b")
    docs = list(read_corpus(folder / "corpus.jsonl"))
    assert [d.id for d in docs] == ["en1", "fr1", "en2", "7"]
    assert docs[0].text == "Paris Paris is the capital of France." and docs[0].lang == "en"
    assert dict(docs[0].meta) == {"url": "u1", "title": "Paris"}
    assert docs[2].text == "Berlin is the capital of Germany."  # empty title: text alone
    assert [q.lang for q in read_queries(folder / "queries.jsonl")] == ["en", "fr", "en"]
    assert read_qrels(folder / "qrels" / "test.tsv") == {"q1": {"en1": 1, "fr1": 1}, "q2": {"en2": 1, "7": 2}}
    no_lang = [{"_id": "a", "text": "x"}]
    write_beir(tmp_path / "c", docs=no_lang)
    assert next(read_corpus(tmp_path / "c" / "corpus.jsonl", "de")).lang == "de"
    assert next(read_corpus(tmp_path / "c" / "corpus.jsonl")).lang == "und"


@pytest.mark.parametrize("content, message", [
    ('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', r"corpus.jsonl:2: duplicate _id 'a'"),
    ('{"_id": "a", "text": "x"}\n\n{"text": "y"}\n', r"corpus.jsonl:3: missing field '_id'"),
    ('{"_id": "a", "text": 3}\n', r"corpus.jsonl:1: field 'text' must be str"),
    ('{"_id": "a", "text": "x"\n', r"corpus.jsonl:1: not valid JSON"),
    ('["a"]\n', r"corpus.jsonl:1: expected a JSON object"),
])
def test_corpus_errors_are_one_line_with_file_and_line(tmp_path, content, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text(content, "utf-8")
    with pytest.raises(MalformedDataError, match=message) as err:
        list(read_corpus(path))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("content, message", [
    ("q1\td1\t1\n", r"test.tsv:1: expected the header"),
    ("query-id\tcorpus-id\tscore\nq1\td1\n", r"test.tsv:2: expected 3 tab-separated fields"),
    ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", r"test.tsv:2: score 'high' is not an integer"),
    ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", r"test.tsv:3: \(q1, d1\) judged twice"),
])
def test_qrels_errors(tmp_path, content, message):
    path = tmp_path / "test.tsv"
    path.write_text(content, "utf-8")
    with pytest.raises(MalformedDataError, match=message):
        read_qrels(path)


def test_mixed_language_collection_one_pool_per_query_language(tmp_path):
    folder = write_beir(tmp_path / "mixed")
    task = get_task(f"beir:{folder}")
    assert task.id == "beir-mixed" and task.card.languages == ("en", "fr")
    assert "SameLangFirst" in task.card.main_measures["retrieval"]
    en, fr = task.pools()
    assert (en.doc_langs, en.query_lang, [q.id for q in en.queries]) == (("en", "fr"), "en", ["q1"])
    assert (fr.query_lang, dict(fr.qrels)) == ("fr", {"q2": {"en2": 1, "7": 2}})
    assert len(en.docs) == 4 and en.source["split"] == "test"
    assert [p.query_lang for p in task.pools(query_langs=["fr"])] == ["fr"]


def test_run_gives_same_language_first(tmp_path, bag_retriever):
    from clirbench.runner import run

    folder = write_beir(tmp_path / "mixed")
    retriever, _ = bag_retriever()
    report = run(retriever, task=f"beir:{folder}", langs=None, output_dir=tmp_path / "out",
                 measures=["nDCG@10", "SameLangFirst"], resamples=20, progress=False)
    by_lang = {o.record.to_dict()["query_lang"]: o.record.to_dict() for o in report.pools}
    assert set(by_lang) == {"en", "fr"}
    for record in by_lang.values():  # one query each, with a relevant document in both languages
        assert record["measures"]["SameLangFirst"]["n"] == 1
        # 50: the two documents' scores tie, so either comes first under random tie-breaking
        assert record["measures"]["SameLangFirst"]["value"] in (0.0, 50.0, 100.0)


def test_options_and_missing_files(tmp_path):
    folder = write_beir(tmp_path / "b", docs=[{"_id": "d", "text": "x"}], queries=[{"_id": "q", "text": "x"}],
                        qrels="query-id\tcorpus-id\tscore\nq\td\t1\n", split="dev")
    task = get_task(f"beir:{folder}")
    with pytest.raises(DataNotFoundError, match="splits present: dev"):
        task.pools()
    (pool,) = task.pools(split="dev", lang="de")
    assert (pool.doc_langs, pool.query_lang) == (("de",), "de")
    with pytest.raises(UnknownNameError, match="no option"):
        task.pools(split="dev", k1="2")
    with pytest.raises(UnknownNameError, match="only the scenario"):
        task.pools(scenarios="multi", split="dev")
    with pytest.raises(DataNotFoundError, match="corpus.jsonl, queries.jsonl and qrels"):
        get_task(f"beir:{tmp_path / 'nowhere'}")
    write_beir(tmp_path / "bad", qrels="query-id\tcorpus-id\tscore\nq1\tnope\t1\n")
    with pytest.raises(MalformedDataError, match="judged document 'nope'"):
        get_task(f"beir:{tmp_path / 'bad'}").pools()


def test_truncate_tokens():
    assert truncate_tokens("a  b\nc d", 3) == "a b c"
    assert truncate_tokens("a  b", 3) == "a  b"  # shorter: unchanged
    assert truncate_tokens("a b c", None) == "a b c"
