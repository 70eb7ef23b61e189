"""Issue 31: ``PoolKey.parse`` is the inverse of ``PoolKey.name`` and ``PoolKey.board_id``."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from clirbench.identity import PoolKey

LANG = st.from_regex(r"[a-z]{2,3}(_[A-Z][a-z]{3})?", fullmatch=True)
WORD = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:=-]{0,12}", fullmatch=True)
SCENARIO = st.sampled_from(["multi", "multi-1", "mono-same", "mono-cross", "retrieval"])
MODE = st.sampled_from(["unique", "per-query"])


@st.composite
def pool_keys(draw) -> PoolKey:
    scenario = draw(SCENARIO)
    one = scenario.startswith("mono") or scenario == "retrieval"  # a mono pool's name holds one document language
    doc_langs = draw(st.lists(LANG, min_size=1, max_size=1 if one else 40, unique=True))
    subset = draw(st.one_of(st.just(""), WORD, st.lists(WORD, min_size=2, max_size=3).map("/".join)))
    return PoolKey(draw(WORD), subset, scenario, draw(MODE), tuple(doc_langs),
                   draw(st.one_of(st.sampled_from(doc_langs), LANG)), draw(st.sampled_from(["", "0" * 64])))


@settings(max_examples=300, deadline=None)
@given(pool_keys())
def test_parse_inverts_name_and_board_id(key):
    assert PoolKey.parse(key.name) == key.without_qrels
    assert PoolKey.parse(key.board_id, task=key.task) == key.without_qrels
    assert PoolKey.parse(key.name).name == key.name


def test_parse_examples():
    assert PoolKey.parse("xquad/multi/en-zh/q-zh") == PoolKey("xquad", "", "multi", "unique", ("en", "zh"), "zh")
    assert PoolKey.parse("belebele/multi+per-query/en-ko/q-ko", task=None).pool_mode == "per-query"
    assert PoolKey.parse("belebele/multi+per-query/en-ko/q-ko", task="ko-en") == \
        PoolKey("ko-en", "belebele", "multi", "per-query", ("en", "ko"), "ko")
    assert PoolKey.parse("xquad/mono-cross/en/q-de").doc_langs == ("en",)
    # the documents of a pool (no query language) name themselves too
    docs = PoolKey("xquad", "", "multi", "unique", ("en", "zh"), "zh").documents
    assert PoolKey.parse(docs.name) == docs
    # codes that hold "-": the caller splits the languages
    key = PoolKey("t", "", "multi", "unique", ("zh-Hant", "en"), "en")
    assert PoolKey.parse(key.name, langs=lambda text: text.rsplit("-", 1)) == key


@pytest.mark.parametrize("text", ["", "xquad", "xquad/multi/en-zh", "xquad/multi/en-zh/zh", "multi/en/q-en",
                                  "xquad//multi/en/q-en", "xquad//en/q-en"])
def test_parse_refuses_what_is_not_a_pool_id(text):
    with pytest.raises(ValueError, match="is not a pool id"):
        PoolKey.parse(text)


def test_parse_board_id_refusal_names_the_task():
    with pytest.raises(ValueError, match="of task 'xquad'"):
        PoolKey.parse("multi/en-zh", task="xquad")


@settings(max_examples=200, deadline=None)
@given(st.lists(LANG, min_size=1, max_size=20, unique=True), LANG)
def test_mteb_subset_name_round_trip(doc_langs, query_lang):
    from clirbench.mteb.names import parse_subset_name, subset_name

    assert parse_subset_name(subset_name(doc_langs, query_lang)) == (tuple(doc_langs), query_lang)


def test_mteb_subset_name_refuses_other_names():
    from clirbench.mteb.names import parse_subset_name

    assert parse_subset_name("en-zh.q-zh") == (("en", "zh"), "zh")
    for bad in ("en-zh", ".q-zh", "default"):
        with pytest.raises(ValueError, match="is not a clirbench MTEB subset"):
            parse_subset_name(bad)

