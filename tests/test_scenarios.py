"""Scenarios (docs/scenarios.md) on a hand-written parallel fixture and on real XQuAD."""

import pytest

from clirbench.collection import ParallelCollection, Text
from clirbench.util.errors import UnknownNameError
from clirbench.scenarios import build_pool, build_pools
from clirbench.tasks import get_task

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


@pytest.fixture
def tiny():
    passages = {"en": {"a": "cats purr", "b": "dogs bark"}, "fr": {"a": "les chats", "b": "les chiens"}}
    questions = {
        "en": (Text("q1", "what purrs", "en", "a"), Text("q2", "who barks", "en", "b"),
               Text("q3", "do cats purr", "en", "a")),
        "fr": (Text("q1", "qui ronronne", "fr", "a"), Text("q2", "qui aboie", "fr", "b"),
               Text("q3", "les chats ronronnent", "fr", "a")),
    }
    return ParallelCollection("tiny", ("en", "fr"), passages, questions)


def test_multi(tiny):
    pool = build_pool(tiny, ("en", "fr"), "multi", "fr")
    assert [d.id for d in pool.docs] == ["en/a", "en/b", "fr/a", "fr/b"]
    assert pool.doc_langs == ("en", "fr") and pool.query_lang == "fr"
    assert [q.text for q in pool.queries] == ["qui ronronne", "qui aboie", "les chats ronronnent"]
    assert pool.qrels == {"q1": {"fr/a": 1, "en/a": 1}, "q2": {"fr/b": 1, "en/b": 1}, "q3": {"fr/a": 1, "en/a": 1}}
    assert pool.exclusions == {}


def test_multi_minus_one_excludes_only_the_own_language_gold(tiny):
    pool = build_pool(tiny, ("en", "fr"), "multi-1", "en")
    assert len(pool.docs) == 4
    assert pool.qrels == {"q1": {"fr/a": 1}, "q2": {"fr/b": 1}, "q3": {"fr/a": 1}}
    assert pool.exclusions == {"q1": {"en/a"}, "q2": {"en/b"}, "q3": {"en/a"}}


def test_mono_same_and_cross(tiny):
    same = build_pool(tiny, ("en", "fr"), "mono-same", "en")
    assert [d.id for d in same.docs] == ["en/a", "en/b"] and same.doc_langs == ("en",)
    assert same.qrels["q2"] == {"en/b": 1}
    cross = build_pool(tiny, ("en", "fr"), "mono-cross", "en")
    assert [d.id for d in cross.docs] == ["fr/a", "fr/b"] and cross.doc_langs == ("fr",)
    assert cross.qrels["q2"] == {"fr/b": 1}


def test_per_query_pool_copies_passages(tiny):
    pool = build_pool(tiny, ("en", "fr"), "multi", "en", pool_mode="per-query")
    assert len(pool.docs) == 6
    copies = [d for d in pool.docs if d.lang == "en" and d.item == "a"]
    assert [d.id for d in copies] == ["en/a/q1", "en/a/q3"]
    assert copies[0].text == copies[1].text == "cats purr"
    assert pool.qrels["q3"] == {"en/a/q3": 1, "fr/a/q3": 1}  # the q1 copies are not relevant to q3
    m1 = build_pool(tiny, ("en", "fr"), "multi-1", "en", pool_mode="per-query")
    assert m1.exclusions["q3"] == {"en/a/q3"} and m1.qrels["q3"] == {"fr/a/q3": 1}


def test_inputs_are_not_mutated(tiny):
    before = (dict(tiny.passages["en"]), tiny.questions["en"])
    build_pools(tiny, [("en", "fr")], pool_mode="per-query")
    assert (dict(tiny.passages["en"]), tiny.questions["en"]) == before


def test_sweep_shares_mono_pools(tiny):
    passages = dict(tiny.passages, de={"a": "Katzen", "b": "Hunde"})
    questions = dict(tiny.questions, de=tuple(Text(q.id, q.text, "de", q.item) for q in tiny.questions["en"]))
    c = ParallelCollection("tiny", ("en", "fr", "de"), passages, questions)
    pools = build_pools(c, [("en", "fr"), ("en", "de")])
    names = [p.name for p in pools]
    assert len(names) == len(set(names)) == 15  # 2 pairs x 8, minus the shared mono-same q-en
    assert names.count("tiny/mono-same/en/q-en") == 1


def test_errors(tiny):
    with pytest.raises(UnknownNameError, match="unknown scenario"):
        build_pool(tiny, ("en", "fr"), "multi-2", "en")
    with pytest.raises(UnknownNameError, match="query language"):
        build_pool(tiny, ("en", "fr"), "multi", "de")
    with pytest.raises(UnknownNameError, match="pool mode"):
        build_pool(tiny, ("en", "fr"), "multi", "en", pool_mode="shared")


@pytest.fixture(scope="module")
def en_zh():
    return get_task("xquad").load(["en", "zh"], data_dir=XQUAD)


@pytest.mark.parametrize("query_lang", ["en", "zh"])
def test_real_xquad_unique_pools(en_zh, query_lang):
    multi = build_pool(en_zh, ("en", "zh"), "multi", query_lang)
    assert len(multi.docs) == 480 and len(multi.queries) == 1190
    assert all(len(rel) == 2 for rel in multi.qrels.values())
    other = "zh" if query_lang == "en" else "en"
    m1 = build_pool(en_zh, ("en", "zh"), "multi-1", query_lang)
    for q in m1.queries:
        assert m1.exclusions[q.id] == {f"{query_lang}/{q.item}"}
        assert m1.qrels[q.id] == {f"{other}/{q.item}": 1}
    assert len(build_pool(en_zh, ("en", "zh"), "mono-same", query_lang).docs) == 240
    cross = build_pool(en_zh, ("en", "zh"), "mono-cross", query_lang)
    assert {d.lang for d in cross.docs} == {other}


def test_real_xquad_per_query_pool(en_zh):
    pool = build_pool(en_zh, ("en", "zh"), "multi", "zh", pool_mode="per-query")
    assert len(pool.docs) == 2380 and len({d.id for d in pool.docs}) == 2380
    assert all(len(rel) == 2 for rel in pool.qrels.values())
    m1 = build_pool(en_zh, ("en", "zh"), "multi-1", "zh", pool_mode="per-query")
    assert all(len(x) == 1 for x in m1.exclusions.values())
