"""Belebele: card, loader on a fixture in the exact upstream schema, language codes, pools, a full run.

The fixture (3 variants × 6 passages, 11 questions) is written by ``fixture_rows`` below; the
committed copy in tests/fixtures/belebele/data/ must equal it (regenerate: python tests/test_belebele.py).
It goes through the same code path as the real files; only the card's expected counts and hashes
are replaced by the fixture's (the real card's counts reject it, see test_real_card_counts_reject_the_fixture).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

import clirbench.tasks as tasks_module
from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task
from clirbench.tasks.belebele import ISO_639_1, canonical_language, item_id

FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "belebele"
VARIANTS = ("eng_Latn", "kor_Hang", "zho_Hans")

# (link, {variant: passage}, [(question_number, correct, {variant: (question, [4 answers])})])
PASSAGES = [
    ("https://en.wikivoyage.org/wiki/Rail_travel_in_the_region", {
        "eng_Latn": "Most long-distance trains in the region leave from the central station before eight in the morning. Tickets are cheaper when bought a week in advance, and seats can be reserved at the counter or online.",
        "kor_Hang": "이 지역의 장거리 열차 대부분은 오전 8시 전에 중앙역에서 출발한다. 표는 일주일 전에 사면 더 저렴하며, 좌석은 창구나 온라인에서 예약할 수 있다.",
        "zho_Hans": "该地区的大多数长途列车在早上八点前从中央车站出发。提前一周购票更便宜，座位可以在柜台或网上预订。"}, [
        (1, "1", {"eng_Latn": ("When do most long-distance trains leave the central station?", ["Before eight in the morning", "At noon", "After eight in the evening", "Only on weekends"]),
                  "kor_Hang": ("대부분의 장거리 열차는 언제 중앙역을 출발하는가?", ["오전 8시 전", "정오", "저녁 8시 이후", "주말에만"]),
                  "zho_Hans": ("大多数长途列车什么时候从中央车站出发？", ["早上八点前", "中午", "晚上八点以后", "只在周末"])}),
        (2, "2", {"eng_Latn": ("According to the passage, how can travellers pay less for a ticket?", ["By travelling at night", "By buying it a week in advance", "By reserving a seat at the counter", "By showing a student card"]),
                  "kor_Hang": ("글에 따르면 여행자는 어떻게 표를 더 싸게 살 수 있는가?", ["밤에 여행함으로써", "일주일 전에 구매함으로써", "창구에서 좌석을 예약함으로써", "학생증을 보여 줌으로써"]),
                  "zho_Hans": ("根据这段文字，旅客怎样才能买到更便宜的票？", ["在夜间出行", "提前一周购买", "在柜台预订座位", "出示学生证"])})]),
    ("https://en.wikinews.org/wiki/Volcano_ash_cloud_cancels_island_flights", {
        "eng_Latn": "Scientists reported that the volcano released a large cloud of ash on Tuesday. No one was injured, but flights to the nearby island were cancelled for two days.",
        "kor_Hang": "과학자들은 화요일에 화산이 큰 화산재 구름을 뿜어냈다고 보고했다. 다친 사람은 없었지만 인근 섬으로 가는 항공편이 이틀 동안 취소되었다.",
        "zho_Hans": "科学家报告说，这座火山在星期二喷出了一大片火山灰云。没有人受伤，但飞往附近岛屿的航班被取消了两天。"}, [
        (1, "3", {"eng_Latn": ("What happened to flights to the nearby island?", ["They were delayed by one hour", "They were moved to another airport", "They were cancelled for two days", "They continued as usual"]),
                  "kor_Hang": ("인근 섬으로 가는 항공편은 어떻게 되었는가?", ["한 시간 지연되었다", "다른 공항으로 옮겨졌다", "이틀 동안 취소되었다", "평소대로 운항했다"]),
                  "zho_Hans": ("飞往附近岛屿的航班怎么样了？", ["延误了一个小时", "改到了另一个机场", "被取消了两天", "照常运行"])}),
        (2, "4", {"eng_Latn": ("On which day did the volcano release the ash cloud?", ["Monday", "Sunday", "Friday", "Tuesday"]),
                  "kor_Hang": ("화산은 무슨 요일에 화산재 구름을 뿜어냈는가?", ["월요일", "일요일", "금요일", "화요일"]),
                  "zho_Hans": ("火山在星期几喷出了火山灰云？", ["星期一", "星期日", "星期五", "星期二"])})]),
    ("https://en.wikibooks.org/wiki/Gardening/Tomatoes", {
        "eng_Latn": "Tomato plants need at least six hours of direct sunlight each day. Water them deeply twice a week rather than a little every day, so that the roots grow downwards.",
        "kor_Hang": "토마토 식물은 매일 최소 여섯 시간의 직사광선이 필요하다. 뿌리가 아래로 자라도록 매일 조금씩 주기보다는 일주일에 두 번 충분히 물을 주어라.",
        "zho_Hans": "番茄植株每天至少需要六个小时的直射阳光。每周浇两次透水，而不是每天浇一点，这样根系才会向下生长。"}, [
        (1, "2", {"eng_Latn": ("How often should tomato plants be watered?", ["A little every day", "Deeply twice a week", "Once a month", "Only when it rains"]),
                  "kor_Hang": ("토마토 식물에는 얼마나 자주 물을 주어야 하는가?", ["매일 조금씩", "일주일에 두 번 충분히", "한 달에 한 번", "비가 올 때만"]),
                  "zho_Hans": ("番茄植株应该多久浇一次水？", ["每天浇一点", "每周浇两次透水", "每月一次", "只在下雨时"])})]),
    ("https://en.wikinews.org/wiki/City_council_approves_riverside_library", {
        "eng_Latn": "The city council voted to build a new public library next to the river. Construction is expected to begin next spring and to last about eighteen months.",
        "kor_Hang": "시의회는 강 옆에 새 공공 도서관을 짓기로 의결했다. 공사는 내년 봄에 시작되어 약 18개월 동안 계속될 예정이다.",
        "zho_Hans": "市议会投票决定在河边建一座新的公共图书馆。工程预计明年春天开工，持续约十八个月。"}, [
        (1, "2", {"eng_Latn": ("What did the city council vote to build?", ["A bridge over the river", "A new public library", "A sports stadium", "A train station"]),
                  "kor_Hang": ("시의회는 무엇을 짓기로 의결했는가?", ["강을 건너는 다리", "새 공공 도서관", "스포츠 경기장", "기차역"]),
                  "zho_Hans": ("市议会投票决定建造什么？", ["一座跨河大桥", "一座新的公共图书馆", "一座体育场", "一个火车站"])}),
        (2, "1", {"eng_Latn": ("How long is the construction expected to last?", ["About eighteen months", "About six weeks", "Three years", "Until next spring"]),
                  "kor_Hang": ("공사는 얼마나 걸릴 것으로 예상되는가?", ["약 18개월", "약 6주", "3년", "내년 봄까지"]),
                  "zho_Hans": ("工程预计持续多长时间？", ["约十八个月", "约六周", "三年", "到明年春天"])})]),
    ("https://en.wikivoyage.org/wiki/Desert_hiking", {
        "eng_Latn": "Hikers crossing the desert should carry at least four litres of water per person. The safest time to walk is early in the morning, because temperatures rise quickly after ten o'clock.",
        "kor_Hang": "사막을 횡단하는 도보 여행자는 1인당 최소 4리터의 물을 가지고 다녀야 한다. 10시 이후에는 기온이 빠르게 오르므로 가장 안전하게 걸을 수 있는 시간은 이른 아침이다.",
        "zho_Hans": "穿越沙漠的徒步者每人至少应携带四升水。最安全的步行时间是清晨，因为十点以后气温会迅速上升。"}, [
        (1, "3", {"eng_Latn": ("How much water should each hiker carry at least?", ["One litre", "Two litres", "Four litres", "Ten litres"]),
                  "kor_Hang": ("도보 여행자 한 명은 최소 얼마의 물을 가지고 다녀야 하는가?", ["1리터", "2리터", "4리터", "10리터"]),
                  "zho_Hans": ("每位徒步者至少应携带多少水？", ["一升", "两升", "四升", "十升"])}),
        (2, "2", {"eng_Latn": ("Why is early morning the safest time to walk?", ["The paths are less crowded", "Temperatures rise quickly after ten o'clock", "The wind is stronger later", "Guides only work in the morning"]),
                  "kor_Hang": ("왜 이른 아침이 걷기에 가장 안전한 시간인가?", ["길이 덜 붐비기 때문에", "10시 이후에 기온이 빠르게 오르기 때문에", "나중에 바람이 더 강해지기 때문에", "안내인이 아침에만 일하기 때문에"]),
                  "zho_Hans": ("为什么清晨是最安全的步行时间？", ["道路不那么拥挤", "十点以后气温迅速上升", "之后风会更大", "向导只在早上工作"])})]),
    ("https://en.wikibooks.org/wiki/Chess/Bishop", {
        "eng_Latn": "In chess, the bishop moves any number of squares diagonally. Each player starts the game with two bishops, one on a light square and one on a dark square.",
        "kor_Hang": "체스에서 비숍은 대각선으로 원하는 만큼 칸을 이동한다. 각 선수는 두 개의 비숍을 가지고 게임을 시작하는데, 하나는 밝은 칸에, 하나는 어두운 칸에 놓인다.",
        "zho_Hans": "在国际象棋中，象可以沿斜线移动任意格数。每位棋手开局时有两个象，一个在浅色格上，一个在深色格上。"}, [
        (1, "4", {"eng_Latn": ("How does the bishop move?", ["One square in any direction", "In an L shape", "Only forwards", "Any number of squares diagonally"]),
                  "kor_Hang": ("비숍은 어떻게 이동하는가?", ["어느 방향으로든 한 칸", "L자 모양으로", "앞으로만", "대각선으로 원하는 만큼"]),
                  "zho_Hans": ("象怎样移动？", ["向任意方向移动一格", "走L形", "只能向前", "沿斜线移动任意格数"])}),
        (2, "2", {"eng_Latn": ("How many bishops does each player have at the start?", ["One", "Two", "Three", "Four"]),
                  "kor_Hang": ("각 선수는 시작할 때 비숍을 몇 개 가지고 있는가?", ["하나", "둘", "셋", "넷"]),
                  "zho_Hans": ("每位棋手开局时有几个象？", ["一个", "两个", "三个", "四个"])})]),
]
N_PASSAGES, N_QUESTIONS = 6, 11


def fixture_rows(variant: str) -> list[dict]:
    """The variant's rows in the upstream field order; kor_Hang's rows are in another order."""
    rows = []
    for link, passages, questions in PASSAGES:
        for number, correct, texts in questions:
            question, answers = texts[variant]
            rows.append({"link": link, "question_number": number, "flores_passage": passages[variant],
                         "question": question, **{f"mc_answer{i}": a for i, a in enumerate(answers, 1)},
                         "correct_answer_num": correct, "dialect": variant, "ds": "2023-05-03"})
    return rows[::-1] if variant == "kor_Hang" else rows


def to_jsonl(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_fixture(folder: Path, layout: str = "data/{lang}.jsonl", variants=VARIANTS) -> Path:
    for v in variants:
        path = folder / layout.format(lang=v)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_jsonl(fixture_rows(v)), encoding="utf-8")
    return folder


def fixture_card(folder: Path = FIXTURE_DIR):
    """The real card with the fixture's counts and hashes: the only thing the tests replace."""
    card = get_task("belebele").card
    sha = {v: hashlib.sha256((folder / "data" / f"{v}.jsonl").read_bytes()).hexdigest() for v in VARIANTS}
    return dataclasses.replace(card, expected={"passages_per_language": N_PASSAGES,
                                               "questions_per_language": N_QUESTIONS}, files_sha256=sha)


@pytest.fixture
def fixture_task(monkeypatch):
    """get_task('belebele') answers with the fixture card, so that run(task='belebele') uses it."""
    cards = dict(tasks_module._cards())
    cards["belebele"] = fixture_card()
    monkeypatch.setattr(tasks_module, "_cards", lambda: cards)
    return get_task("belebele")


def test_committed_fixture_is_what_the_generator_writes():
    for v in VARIANTS:
        assert (FIXTURE_DIR / "data" / f"{v}.jsonl").read_text(encoding="utf-8") == to_jsonl(fixture_rows(v))
    first = json.loads((FIXTURE_DIR / "data" / "eng_Latn.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert list(first) == ["link", "question_number", "flores_passage", "question", "mc_answer1", "mc_answer2",
                           "mc_answer3", "mc_answer4", "correct_answer_num", "dialect", "ds"]
    assert type(first["question_number"]) is int and type(first["correct_answer_num"]) is str


def test_card_lists_the_122_variants():
    card = get_task("belebele").card
    assert len(card.languages) == 122 == len(set(card.languages))
    assert list(card.languages) == sorted(card.languages)
    assert all(re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", l) for l in card.languages)
    for v in ("eng_Latn", "kor_Hang", "zho_Hans", "zho_Hant", "arb_Latn", "urd_Latn", "ary_Arab", "als_Latn"):
        assert v in card.languages
    assert card.pivot == "eng_Latn" and card.kind == "parallel"
    assert card.expected == {"passages_per_language": 488, "questions_per_language": 900}
    assert card.pool_modes == ("unique", "per-query")
    assert set(ISO_639_1) <= set(card.languages)
    assert card.source["local_files"] == ["data/{lang}.jsonl", "{lang}.jsonl"]


def test_counts_alignment_and_hashes(fixture_task):
    c = fixture_task.load(VARIANTS, data_dir=FIXTURE_DIR)
    assert c.languages == VARIANTS
    for v in VARIANTS:
        assert len(c.passages[v]) == N_PASSAGES and len(c.questions[v]) == N_QUESTIONS
        assert [(q.id, q.item) for q in c.questions[v]] == [(q.id, q.item) for q in c.questions["eng_Latn"]]
        assert list(c.passages[v]) == list(c.passages["eng_Latn"])
        assert {q.lang for q in c.questions[v]} == {v}
    assert c.source["files_match_card"] is True and set(c.source["files_sha256"]) == set(VARIANTS)
    assert c.source["origin"] == str(FIXTURE_DIR)


def test_exact_records(fixture_task):
    c = fixture_task.load(["eng_Latn", "kor_Hang"], data_dir=FIXTURE_DIR)
    link = "https://en.wikivoyage.org/wiki/Rail_travel_in_the_region"
    item = "b" + hashlib.sha1(link.encode()).hexdigest()[:10]
    assert item_id(link) == item
    first_en, first_ko = c.questions["eng_Latn"][0], c.questions["kor_Hang"][0]
    assert first_en.id == first_ko.id == f"{item}-q1" and first_en.item == item
    assert first_en.text == "When do most long-distance trains leave the central station?"
    assert first_ko.text == "대부분의 장거리 열차는 언제 중앙역을 출발하는가?"  # kor_Hang's file is in reverse order
    assert c.passages["kor_Hang"][item].startswith("이 지역의 장거리 열차 대부분은")
    assert dict(first_ko.meta) == {"link": link, "question_number": 1,
                                   "mc_answers": ("오전 8시 전", "정오", "저녁 8시 이후", "주말에만"),
                                   "correct_answer_num": "1", "dialect": "kor_Hang", "ds": "2023-05-03"}
    last = c.questions["eng_Latn"][-1]
    assert last.id == item_id("https://en.wikibooks.org/wiki/Chess/Bishop") + "-q2"
    assert last.text == "How many bishops does each player have at the start?"
    tomatoes = item_id("https://en.wikibooks.org/wiki/Gardening/Tomatoes")
    assert [q.id for q in c.questions["eng_Latn"] if q.item == tomatoes] == [f"{tomatoes}-q1"]


def test_real_card_counts_reject_the_fixture():
    with pytest.raises(MalformedDataError, match=r"^Belebele eng_Latn: 6 passages, expected 488$"):
        get_task("belebele").load(["eng_Latn"], data_dir=FIXTURE_DIR)


def test_alignment_failure_names_the_question(tmp_path, fixture_task):
    write_fixture(tmp_path)
    rows = fixture_rows("zho_Hans")
    tomato = next(r for r in rows if r["link"].endswith("Tomatoes"))
    tomato["question_number"] = 2  # same counts, different key
    (tmp_path / "data" / "zho_Hans.jsonl").write_text(to_jsonl(rows), encoding="utf-8")
    with pytest.raises(MalformedDataError) as err:
        fixture_task.load(VARIANTS, data_dir=tmp_path)
    assert str(err.value) == ("Belebele zho_Hans and eng_Latn do not align: 1 question(s) only in zho_Hans, "
                              "1 only in eng_Latn (first: question 2 of https://en.wikibooks.org/wiki/Gardening/Tomatoes)")


@pytest.mark.parametrize("edit,message", [
    (lambda rows: rows[3].pop("ds"), r"zho_Hans\.jsonl:4: missing field\(s\) ds$"),
    (lambda rows: rows[0].update(question_number=3), r"zho_Hans\.jsonl:1: question_number must be 1 or 2, got 3$"),
    (lambda rows: rows[1].update(correct_answer_num=2), r"zho_Hans\.jsonl:2: correct_answer_num must be a string, got int$"),
    (lambda rows: rows[2].update(question=""), r"zho_Hans\.jsonl:3: empty question$"),
    (lambda rows: rows.append(dict(rows[0])), r"^Belebele zho_Hans: question 1 of .*Rail_travel_in_the_region appears twice$"),
    (lambda rows: rows[1].update(flores_passage="Another passage."), r"^Belebele zho_Hans: .*Rail_travel_in_the_region has two different passages$"),
])
def test_malformed_rows(tmp_path, fixture_task, edit, message):
    write_fixture(tmp_path)
    rows = fixture_rows("zho_Hans")
    edit(rows)
    (tmp_path / "data" / "zho_Hans.jsonl").write_text(to_jsonl(rows), encoding="utf-8")
    with pytest.raises(MalformedDataError, match=message):
        fixture_task.load(VARIANTS, data_dir=tmp_path)


def test_not_json(tmp_path, fixture_task):
    write_fixture(tmp_path)
    with open(tmp_path / "data" / "kor_Hang.jsonl", "a", encoding="utf-8") as f:
        f.write("\n{broken\n")
    with pytest.raises(MalformedDataError, match=r"kor_Hang\.jsonl:13: not valid JSON"):
        fixture_task.load(VARIANTS, data_dir=tmp_path)


def test_language_codes_map_to_flores():
    card = get_task("belebele").card
    assert canonical_language(card, "ko") == "kor_Hang"
    assert canonical_language(card, "kor_Hang") == "kor_Hang"
    assert canonical_language(card, "KOR_HANG") == "kor_Hang"
    assert canonical_language(card, "en") == "eng_Latn"
    assert canonical_language(card, "hi") == "hin_Deva"  # the romanised hin_Latn has no ISO 639-1 code
    assert canonical_language(card, "ar") == "arb_Arab"
    with pytest.raises(UnknownNameError, match=r"'zh' is ambiguous for task belebele: use one of zho_Hans, zho_Hant"):
        canonical_language(card, "zh")
    with pytest.raises(UnknownNameError, match=r"unknown language 'xx' for task belebele"):
        canonical_language(card, "xx")
    codes = [c for v, c in ISO_639_1.items()]
    assert len(codes) - len(set(codes)) == 1  # only zh is shared


def test_iso_codes_reach_the_collection_and_pools(fixture_task):
    c = fixture_task.load(["en", "ko"], data_dir=FIXTURE_DIR)
    assert c.languages == ("eng_Latn", "kor_Hang")
    assert c.questions["kor_Hang"][0].lang == "kor_Hang"
    pools = fixture_task.pools("en,ko", scenarios="multi", query_langs=["ko"], data_dir=FIXTURE_DIR)
    assert [p.name for p in pools] == ["belebele/multi/eng_Latn-kor_Hang/q-kor_Hang"]
    assert [p.name for p in fixture_task.pools("en+ko", "mono-cross", ["en"], data_dir=FIXTURE_DIR)] == \
        ["belebele/mono-cross/kor_Hang/q-eng_Latn"]


@pytest.mark.parametrize("layout", ["data/{lang}.jsonl", "{lang}.jsonl"])
def test_both_layouts_load_the_same(tmp_path, fixture_task, layout):
    write_fixture(tmp_path, layout)
    a = fixture_task.load(VARIANTS, data_dir=tmp_path)
    b = fixture_task.load(VARIANTS, data_dir=FIXTURE_DIR)
    assert a.passages == b.passages and a.questions == b.questions
    assert a.source["files_sha256"] == b.source["files_sha256"]


def test_env_var_and_missing_variant(tmp_path, monkeypatch, fixture_task):
    write_fixture(tmp_path / "belebele", variants=("eng_Latn", "kor_Hang"))
    monkeypatch.setenv("CLIRBENCH_DATA_DIR", str(tmp_path))
    c = fixture_task.load(["eng_Latn", "kor_Hang"])
    assert c.source["origin"] == str(tmp_path / "belebele")
    with pytest.raises(DataNotFoundError) as err:
        fixture_task.load(["eng_Latn", "zho_Hans"])
    assert str(err.value) == (f"missing {tmp_path}/belebele/data/zho_Hans.jsonl or "
                              f"{tmp_path}/belebele/zho_Hans.jsonl (Belebele zho_Hans)")
    with pytest.raises(DataNotFoundError, match=r"^no data/<lang>\.jsonl or <lang>\.jsonl files for task belebele in "):
        fixture_task.load(["eng_Latn"], data_dir=tmp_path / "empty")


# The hub path on rows that real ``datasets`` produces (ds a timestamp): tests/test_hub_loaders.py.


def test_offline_hub_fails_at_once_with_one_line(monkeypatch, fixture_task):
    import datasets

    def must_not_be_called(*args, **kwargs):
        raise AssertionError("the hub was asked although HF_HUB_OFFLINE is set")

    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets, "load_dataset", must_not_be_called)
    with pytest.raises(DataNotFoundError, match=r"^Belebele not found locally and the hub \(facebook/belebele\) "
                                                r"is unreachable or HF_HUB_OFFLINE is set; pass --data-dir"):
        fixture_task.load(["eng_Latn", "kor_Hang"])


def test_hub_failure_is_one_line(monkeypatch, fixture_task):
    import datasets

    monkeypatch.setattr("clirbench.tasks.hub.hub_reachable", lambda timeout=5.0: True)

    def fail(*args, **kwargs):
        raise ConnectionError("offline")

    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "load_dataset", fail)
    with pytest.raises(DataNotFoundError, match=r"^Belebele not found locally and the hub failed \(ConnectionError\); "
                                                r"pass --data-dir with data/<lang>\.jsonl or <lang>\.jsonl files"):
        fixture_task.load(["eng_Latn"])


@pytest.mark.parametrize("mode,n_docs", [("unique", 2 * N_PASSAGES), ("per-query", 2 * N_QUESTIONS)])
def test_pool_modes(fixture_task, mode, n_docs):
    (pool,) = fixture_task.pools("eng_Latn,kor_Hang", "multi", ["kor_Hang"], pool_mode=mode, data_dir=FIXTURE_DIR)
    assert pool.num_docs == n_docs  # real data: 976 unique, 1800 per-query
    assert len(pool.queries) == N_QUESTIONS
    q = pool.queries[0]
    gold = {f"eng_Latn/{q.item}", f"kor_Hang/{q.item}"} if mode == "unique" else \
        {f"eng_Latn/{q.item}/{q.id}", f"kor_Hang/{q.item}/{q.id}"}
    assert set(pool.qrels[q.id]) == gold
    if mode == "per-query":  # copies of a passage made for its two questions share the text
        texts = {d.id: d.text for d in pool.docs}
        two = [x for x in pool.queries if x.item == q.item]
        assert len(two) == 2 and texts[f"eng_Latn/{q.item}/{two[0].id}"] == texts[f"eng_Latn/{q.item}/{two[1].id}"]


def _rr_by_hand(queries, docs, qrels, encoder):
    """Mean reciprocal rank with trec_eval's tie rule, computed directly from the test encoder."""
    qv, dv = encoder.vectors([q.text for q in queries]), encoder.vectors([d.text for d in docs])
    scores = qv @ dv.T
    out = []
    for i, q in enumerate(queries):
        order = sorted(range(len(docs)), key=lambda j: (-float(scores[i, j]), tuple(-b for b in docs[j].id.encode())))
        rank = next(r for r, j in enumerate(order, 1) if docs[j].id in qrels[q.id])
        out.append(1.0 / rank)
    return float(np.mean(out))


def test_full_run_on_the_fixture(tmp_path, bag_retriever, fixture_task):
    from clirbench.runner import run

    retriever, encoder = bag_retriever()
    report = run(retriever, task="belebele", langs="en,ko", data_dir=FIXTURE_DIR, output_dir=tmp_path / "out",
                 resamples=50, progress=False)
    names = [o.name for o in report.pools]
    assert len(names) == 8 and "belebele/multi-1/eng_Latn-kor_Hang/q-kor_Hang" in names
    assert all(o.record.to_dict()["num_queries"] == N_QUESTIONS for o in report.pools)
    mono = next(o for o in report.pools if o.name == "belebele/mono-same/kor_Hang/q-kor_Hang")
    assert mono.record.to_dict()["pool_size"] == N_PASSAGES
    assert mono.record.to_dict()["task"]["files_sha256"]["kor_Hang"] == fixture_task.card.files_sha256["kor_Hang"]
    (pool,) = fixture_task.pools("en,ko", "mono-same", ["ko"], data_dir=FIXTURE_DIR)
    assert mono.record.to_dict()["measures"]["RR"]["value"] == pytest.approx(
        _rr_by_hand(pool.queries, pool.docs, pool.qrels, encoder), abs=1e-12)
    per_query = run(retriever, task="belebele", langs="en,ko", scenarios="multi", query_langs=["ko"],
                    pool_mode="per-query", data_dir=FIXTURE_DIR, output_dir=tmp_path / "out", resamples=50,
                    progress=False)
    assert per_query.pools[0].record.to_dict()["pool_size"] == 2 * N_QUESTIONS


if __name__ == "__main__":  # regenerate the committed fixture
    write_fixture(FIXTURE_DIR)
