"""ko-en: Belebele eng_Latn/kor_Hang (through the belebele task) and StrategyQA ko/en in BEIR layout."""
from __future__ import annotations

import json

import pytest

from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task
from clirbench.tasks.ko_en import summary_table, table_rows

FIELDS = ("link", "question_number", "flores_passage", "question", "mc_answer1", "mc_answer2",
          "mc_answer3", "mc_answer4", "correct_answer_num", "dialect", "ds")


def write_belebele(folder, variants=("eng_Latn", "kor_Hang")):
    """A full-size Belebele stand-in in the upstream schema: 488 passages, 900 questions per variant."""
    (folder / "data").mkdir(parents=True)
    for lang in variants:
        rows = []
        for p in range(488):
            for number in (1, 2) if p < 412 else (1,):
                rows.append({"link": f"https://en.wikibooks.org/wiki/P{p}", "question_number": number,
                             "flores_passage": f"{lang} passage {p} about topic {p % 37}",
                             "question": f"{lang} question {number} on topic {p % 37} of {p}",
                             "mc_answer1": "a", "mc_answer2": "b", "mc_answer3": "c", "mc_answer4": "d",
                             "correct_answer_num": "2", "dialect": lang, "ds": "2023-05-03"})
        with open(folder / "data" / f"{lang}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return folder


def write_beir(folder, lang, qrels=True):
    (folder / "qrels").mkdir(parents=True)
    word = {"ko": "한국어", "en": "english"}[lang]
    docs = [{"_id": f"d{i}", "title": f"{word} title {i}", "text": f"{word} text {i}"} for i in range(6)]
    queries = [{"_id": f"q{i}", "text": f"{word} question {i}"} for i in range(4)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")
    if qrels:  # q3 has no judgement: not in the dev split
        (folder / "qrels" / "dev.tsv").write_text(
            "query-id\tcorpus-id\tscore\nq0\td0\t1\nq0\td1\t1\nq1\td2\t1\nq2\td4\t1\n", "utf-8")
    return folder


@pytest.fixture
def ko_en_dir(tmp_path):
    root = tmp_path / "ko-en"
    write_belebele(root / "belebele")
    write_beir(root / "strategyqa" / "ko", "ko")
    write_beir(root / "strategyqa" / "en", "en", qrels=False)
    return root


def test_four_directions_per_subset(ko_en_dir):
    pools = get_task("ko-en").pools(None, data_dir=ko_en_dir)
    names = [p.name for p in pools]
    assert names == ["ko-en/belebele/retrieval/ko/q-en", "ko-en/belebele/retrieval/en/q-ko",
                     "ko-en/belebele/retrieval/ko/q-ko", "ko-en/belebele/retrieval/en/q-en",
                     "ko-en/strategyqa/retrieval/ko/q-en", "ko-en/strategyqa/retrieval/en/q-ko",
                     "ko-en/strategyqa/retrieval/ko/q-ko", "ko-en/strategyqa/retrieval/en/q-en"]
    t_en_ko = pools[0]
    assert (len(t_en_ko.docs), len(t_en_ko.queries)) == (488, 900)
    assert {d.lang for d in t_en_ko.docs} == {"ko"} and {q.lang for q in t_en_ko.queries} == {"en"}
    (gold,) = t_en_ko.qrels[t_en_ko.queries[0].id]
    assert gold.startswith("kor_Hang/") or gold.startswith("ko/")
    sqa = {(p.query_lang, p.doc_langs[0]): p for p in pools if p.subset == "strategyqa"}
    en_ko = sqa[("en", "ko")]
    assert [q.text for q in en_ko.queries] == ["english question 0", "english question 1", "english question 2"]
    assert en_ko.docs[0].text == "한국어 title 0 한국어 text 0"
    assert en_ko.qrels == sqa[("ko", "ko")].qrels == {"q0": {"d0": 1, "d1": 1}, "q1": {"d2": 1}, "q2": {"d4": 1}}
    assert en_ko.source["counts"] == {"strategyqa_corpus": 6, "strategyqa_queries": 3, "strategyqa_judgements": 4}


def test_card_agrees_with_belebele_card_and_fixture(ko_en_dir):
    card = get_task("ko-en").card
    belebele = get_task("belebele").card
    assert card.expected["belebele_questions"] == belebele.expected["questions_per_language"] == 900
    assert card.expected["belebele_passages"] == belebele.expected["passages_per_language"] == 488
    assert {"eng_Latn", "kor_Hang"} <= set(belebele.languages)
    assert card.main_measures == {"retrieval": ("nDCG@10",)} and card.languages == ("en", "ko")
    assert (card.expected["strategyqa_corpus"], card.expected["strategyqa_queries"],
            card.expected["strategyqa_judgements"]) == (9251, 592, 1145)
    pools = get_task("ko-en").pools(None, data_dir=ko_en_dir, subsets="strategyqa")
    assert set(pools[0].source["counts"]) == {k for k in card.expected if k.startswith("strategyqa_")}
    assert pools[0].source["counts_match_card"] is False  # a 6-document fixture is not the real corpus


def test_query_language_and_subset_filters(ko_en_dir):
    pools = get_task("ko-en").pools(None, query_langs=["ko"], data_dir=ko_en_dir, subsets="strategyqa")
    assert [(p.query_lang, p.doc_langs) for p in pools] == [("ko", ("en",)), ("ko", ("ko",))]
    with pytest.raises(UnknownNameError, match="unknown subset"):
        get_task("ko-en").pools(None, data_dir=ko_en_dir, subsets="mkqa")
    with pytest.raises(UnknownNameError, match="unknown language"):
        get_task("ko-en").pools("en,zh", data_dir=ko_en_dir)


def test_missing_english_side_and_misaligned_ids(tmp_path, ko_en_dir):
    root = tmp_path / "only-ko"
    write_beir(root / "strategyqa" / "ko", "ko")
    with pytest.raises(DataNotFoundError, match="strategyqa/en") as err:
        get_task("ko-en").pools(None, data_dir=root, subsets="strategyqa")
    assert "\n" not in str(err.value)
    en = ko_en_dir / "strategyqa" / "en" / "corpus.jsonl"
    en.write_text(en.read_text("utf-8").replace('"d5"', '"x5"'), "utf-8")
    with pytest.raises(MalformedDataError, match="differ in ids"):
        get_task("ko-en").pools(None, data_dir=ko_en_dir, subsets="strategyqa")


def test_table_cross_and_mono_averages(ko_en_dir, tmp_path, bag_retriever):
    from clirbench.runner import run

    retriever, _ = bag_retriever()
    report = run(retriever, task="ko-en", langs=None, data_dir=ko_en_dir, output_dir=tmp_path / "out",
                 measures=["nDCG@10"], resamples=20, progress=False, task_options={"subsets": "strategyqa"})
    records = [o.record.to_dict() for o in report.pools]
    value = {(r["query_lang"], r["doc_langs"][0]): r["measures"]["nDCG@10"]["value"] for r in records}
    (row,) = table_rows(records)
    assert row["subset"] == "strategyqa"
    assert row["CROSS-AVG"] == pytest.approx((value[("en", "ko")] + value[("ko", "en")]) / 2)
    assert row["MONO-AVG"] == pytest.approx((value[("ko", "ko")] + value[("en", "en")]) / 2)
    text = summary_table(records)
    assert text.splitlines()[0].split()[:3] == ["ko-en", "nDCG@10", "x100"]
    assert f"{row['MONO-AVG'] * 100:.2f}" in text.splitlines()[2]
    partial = table_rows([r for r in records if (r["query_lang"], r["doc_langs"][0]) != ("ko", "en")])
    assert partial[0]["CROSS-AVG"] is None and partial[0]["MONO-AVG"] is not None


def test_cli_table_includes_cross_and_mono_averages(ko_en_dir, tmp_path, bag_retriever):
    from clirbench.display.report import format_outcomes
    from clirbench.runner import run

    retriever, _ = bag_retriever()
    report = run(retriever, task="ko-en", langs=None, data_dir=ko_en_dir, output_dir=tmp_path / "out",
                 measures=["nDCG@10"], resamples=20, progress=False, task_options={"subsets": "strategyqa"})
    text = format_outcomes(report)
    assert "CROSS-AVG" in text and "MONO-AVG" in text and "== retrieval" in text
