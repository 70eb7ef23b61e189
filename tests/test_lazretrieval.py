"""LazRetrieval: local files in the documented schema (JSON arrays and JSON Lines), one pool per locale."""
from __future__ import annotations

import json

import pytest

from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task
from clirbench.tasks.lazretrieval import FILES, LOCALES, summary_table

QUERIES = [{"ID": "q1", "nation": "TH", "text": "รองเท้า วิ่ง"}, {"ID": "q2", "nation": "TH", "text": "กระเป๋า"},
           {"ID": "q1", "nation": "VN", "text": "giày chạy bộ"}, {"ID": "q9", "nation": "VN", "text": "không có"}]
ITEMS = [{"nation": "TH", "item_id": "i1", "text": "รองเท้า วิ่ง ผู้ชาย"}, {"nation": "TH", "item_id": "i2", "text": "กระเป๋า หนัง"},
         {"nation": "TH", "item_id": "i3", "text": "หมวก"}, {"nation": "VN", "item_id": "i1", "text": "giày thể thao"},
         {"nation": "VN", "item_id": "i2", "text": "áo"}]
PAIRS = [{"nation": "TH", "query_id": "q1", "query": "รองเท้า วิ่ง", "item_id": "i1", "item": "…", "rscore": 2},
         {"nation": "TH", "query_id": "q1", "query": "รองเท้า วิ่ง", "item_id": "i3", "item": "…", "rscore": 0},
         {"nation": "TH", "query_id": "q2", "query": "กระเป๋า", "item_id": "i2", "item": "…", "rscore": 1},
         {"nation": "VN", "query_id": "q1", "query": "giày chạy bộ", "item_id": "i1", "item": "…", "rscore": 3}]


def write_laz(folder, jsonl: bool = False, pairs=PAIRS):
    folder.mkdir(parents=True)
    for name, rows in zip(FILES, (QUERIES, ITEMS, pairs)):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) if jsonl else \
            json.dumps(rows, ensure_ascii=False, indent=1)
        (folder / name).write_text(text, "utf-8")
    return folder


@pytest.mark.parametrize("jsonl", [False, True])
def test_one_pool_per_locale_with_graded_qrels(tmp_path, jsonl):
    write_laz(tmp_path / "laz" / "test", jsonl=jsonl)
    pools = get_task("lazretrieval").pools(None, data_dir=tmp_path / "laz")
    assert [(p.subset, p.query_lang, p.doc_langs) for p in pools] == [("TH", "th", ("th",)), ("VN", "vi", ("vi",))]
    th, vn = pools
    assert [d.id for d in th.docs] == ["i1", "i2", "i3"] and th.docs[1].text == "กระเป๋า หนัง"
    assert dict(th.qrels) == {"q1": {"i1": 2, "i3": 0}, "q2": {"i2": 1}}
    assert [q.id for q in vn.queries] == ["q1"]  # q9 has no judgement
    assert th.name == "lazretrieval/TH/retrieval/th/q-th"
    assert set(th.source["files_sha256"]) == {f"test/{n}" for n in FILES}
    assert th.source["counts"]["TH"] == {"queries": 2, "items": 3, "pairs": 3}


def test_card_agrees_with_locales_and_fixture(tmp_path):
    card = get_task("lazretrieval").card
    assert card.languages == tuple(LOCALES.values()) and card.source["locales"] == LOCALES
    assert card.main_measures == {"retrieval": ("nDCG@10",)} and card.kind == "retrieval"
    write_laz(tmp_path / "laz")  # files directly in the folder are accepted too
    pools = get_task("lazretrieval").pools(None, data_dir=tmp_path / "laz")
    assert {p.query_lang for p in pools} <= set(card.languages)


def test_locale_selection_by_code_or_language(tmp_path):
    write_laz(tmp_path / "laz" / "test")
    task = get_task("lazretrieval")
    assert [p.subset for p in task.pools("vi", data_dir=tmp_path / "laz")] == ["VN"]
    assert [p.subset for p in task.pools("TH", data_dir=tmp_path / "laz")] == ["TH"]
    assert [p.subset for p in task.pools(None, query_langs=["vi"], data_dir=tmp_path / "laz")] == ["VN"]
    with pytest.raises(UnknownNameError, match="unknown locale"):
        task.pools("de", data_dir=tmp_path / "laz")


def test_missing_files_message_names_all_three(tmp_path, monkeypatch):
    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError) as err:
        get_task("lazretrieval").pools(None, data_dir=tmp_path / "nothing")
    message = str(err.value)
    assert all(name in message for name in FILES) and "\n" not in message
    assert "not found" in get_task("lazretrieval").locate(tmp_path / "nothing")


def test_malformed_records_name_the_place(tmp_path):
    bad = PAIRS + [{"nation": "TH", "query_id": "q7", "query": "x", "item_id": "i1", "item": "…", "rscore": 1}]
    write_laz(tmp_path / "a" / "test", jsonl=True, pairs=bad)
    with pytest.raises(MalformedDataError, match=r"pairs_info.json:5: query_id 'q7'"):
        get_task("lazretrieval").pools(None, data_dir=tmp_path / "a")
    bad = PAIRS[:1] + [{**PAIRS[1], "rscore": 0.5}]
    write_laz(tmp_path / "b" / "test", pairs=bad)
    with pytest.raises(MalformedDataError, match=r"pairs_info.json\[1\]: rscore must be an integer"):
        get_task("lazretrieval").pools(None, data_dir=tmp_path / "b")


def test_run_and_average_table(tmp_path, bag_retriever):
    from clirbench.runner import run

    write_laz(tmp_path / "laz" / "test")
    retriever, _ = bag_retriever()
    report = run(retriever, task="lazretrieval", langs=None, data_dir=tmp_path / "laz", output_dir=tmp_path / "o",
                 measures=["nDCG@10"], resamples=20, progress=False)
    records = [o.record.to_dict() for o in report.pools]
    values = {r["subset"]: r["measures"]["nDCG@10"]["value"] for r in records}
    assert set(values) == {"TH", "VN"} and values["VN"] == 1.0  # its relevant item shares "giày" with the query
    line = summary_table(records)
    assert line.startswith("lazretrieval nDCG@10: TH ")
    assert line.endswith(f"average over 2 locales {(values['TH'] + values['VN']) / 2:.4f}")


def test_data_dir_holding_a_lazretrieval_folder_like_other_tasks(tmp_path, monkeypatch, capsys):
    """`--data-dir D` finds D/lazretrieval/test/ (as D/<task>/ for the other tasks), and
    `clirbench tasks --data-dir D` points there when it is missing."""
    from clirbench.cli import main

    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    assert main(["tasks", "--data-dir", str(tmp_path), "--json"]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out) if r["id"] == "lazretrieval"]
    assert str(tmp_path / "lazretrieval" / "test") + "/" in row["data"]
    write_laz(tmp_path / "lazretrieval" / "test")
    pools = get_task("lazretrieval").pools(None, data_dir=tmp_path)
    assert [p.subset for p in pools] == ["TH", "VN"]
    assert get_task("lazretrieval").locate(tmp_path) == str(tmp_path / "lazretrieval" / "test")
