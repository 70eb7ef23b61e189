"""``irds:<id>`` tasks on collections built here with ir_datasets' own classes (no mocks).

Datasets are ir_datasets ``Dataset`` objects over TSV / TREC files in ``tmp_path`` (``TsvDocs``,
``TsvQueries``, ``TrecQrels`` over ``LocalDownload``, what ``ir_datasets.create_dataset`` builds, with
their ``lang`` arguments), registered in ir_datasets' registry under a fresh id per test; the CLI
runs in this process, so it sees them. The last test runs the console script in a subprocess on a
*built-in* id (mMARCO v2) whose files are placed under ``$IR_DATASETS_HOME`` — ir_datasets' own way
of reading files it did not download.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import NamedTuple

import pytest

# ir_datasets makes its folders under $IR_DATASETS_HOME when imported: keep them out of ~/.ir_datasets
os.environ.setdefault("IR_DATASETS_HOME", os.path.join(tempfile.gettempdir(), "clirbench-tests-ir_datasets"))
import ir_datasets  # noqa: E402  (in the test extra, clirbench[irds])
from ir_datasets.datasets.base import Dataset  # noqa: E402
from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries  # noqa: E402
from ir_datasets.util import LocalDownload  # noqa: E402

from clirbench.cli import main  # noqa: E402
from clirbench.results import read_result  # noqa: E402
from clirbench.scenarios import SCENARIOS, build_pools  # noqa: E402
from clirbench.tasks import get_task  # noqa: E402
from cli_helpers import one_line_error  # noqa: E402
from test_optional_deps import block  # noqa: E402


class TitleDoc(NamedTuple):
    doc_id: str
    title: str
    text: str


class Topic(NamedTuple):  # like NeuCLIR's topics: English title and description, a human translation
    query_id: str
    title: str
    description: str
    ht_title: str
    translation_lang: str


PASSAGES = {
    "en": {"p1": "Paris is the capital of France.", "p2": "Berlin is the capital of Germany.",
           "p3": "Germany borders France.", "p4": "Tea is grown in Yunnan."},
    "zh": {"p1": "巴黎是法国的首都。", "p2": "柏林是德国的首都。", "p3": "德国与法国接壤。", "p4": "云南种植茶叶。"},
}
QUERIES = {"en": {"q1": "capital of France", "q2": "Germany", "q3": "tea"},
           "zh": {"q1": "法国的首都", "q2": "德国", "q3": "茶叶"}}
# q2 has two relevant passages (graded); q3 is judged but not relevant (grade 0): left out
QRELS = [("q1", "p1", 1), ("q1", "p4", 0), ("q2", "p2", 2), ("q2", "p3", 1), ("q3", "p4", 0)]


def _write(path: Path, rows) -> Path:
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def make_dataset(folder: Path, lang: str | None, docs=None, queries=None, qrels=QRELS, doc_cls=None,
                 query_cls=None, query_lang: str | None = "same") -> Dataset:
    """ir_datasets TsvDocs / TsvQueries / TrecQrels over files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = docs if docs is not None else [(k, v) for k, v in PASSAGES[lang or "en"].items()]
    queries = queries if queries is not None else [(k, v) for k, v in QUERIES[lang or "en"].items()]
    d = _write(folder / "docs.tsv", docs)
    q = _write(folder / "queries.tsv", queries)
    r = _write(folder / "qrels.txt", [(qid, "0", did, str(g)) for qid, did, g in qrels])
    kw = {"doc_cls": doc_cls} if doc_cls else {}
    qkw = {"query_cls": query_cls} if query_cls else {}
    return Dataset(TsvDocs(LocalDownload(d), lang=lang, **kw),
                   TsvQueries(LocalDownload(q), lang=lang if query_lang == "same" else query_lang, **qkw),
                   TrecQrels(LocalDownload(r), {0: "not relevant", 1: "relevant", 2: "highly relevant"}))


def register(dataset) -> str:
    name = f"clirbench-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(name, dataset)
    return name


def parallel(tmp_path, qrels=QRELS) -> str:
    """``<prefix>/{en,zh}/dev`` registered: two datasets with shared passage and query ids."""
    prefix = f"clirbench-test/{uuid.uuid4().hex[:8]}"
    for lang in ("en", "zh"):
        ir_datasets.registry.register(f"{prefix}/{lang}/dev", make_dataset(tmp_path / lang, lang, qrels=qrels))
    return prefix + "/{en,zh}/dev"


def run_args(tmp_path, task, *extra):
    return ["run", "--model", "bm25", "--task", task, "--output", str(tmp_path / "out"), "--cache-dir",
            str(tmp_path / "cache"), "--resamples", "10", "--no-progress", *extra]


def results(folder: Path) -> list[dict]:
    return [read_result(p).to_dict() for p in sorted(folder.rglob("*.json")) if "per_query" not in p.name
            and read_result_ok(p)]


def read_result_ok(path: Path) -> bool:
    try:
        read_result(path)
        return True
    except ValueError:
        return False


def test_create_dataset_end_to_end_through_the_cli(tmp_path):
    folder = tmp_path / "mono"
    make_dataset(folder, "en")  # writes the files
    name = register(ir_datasets.create_dataset(docs_tsv=str(folder / "docs.tsv"),
                                               queries_tsv=str(folder / "queries.tsv"),
                                               qrels_trec=str(folder / "qrels.txt")))
    assert main(run_args(tmp_path, f"irds:{name}", "--measures", "nDCG@10,RR,R@100")) == 0
    (record,) = results(tmp_path / "out")
    assert record["scenario"] == "retrieval" and record["pool_size"] == 4
    assert record["doc_langs"] == ["und"] and record["query_lang"] == "und"  # create_dataset declares no language
    assert record["num_queries"] == 2  # q3 has no relevant passage
    assert set(record["measures"]) >= {"nDCG@10", "RR", "R@100"}
    assert record["measures"]["R@100"]["value"] == 1.0  # 4 passages: all relevant ones are in the top 100
    assert sorted(p.name for p in folder.iterdir()) == ["docs.tsv", "qrels.txt", "queries.tsv"]  # nothing written
    task = record["task"]
    assert task["source"] == f"ir_datasets:{name}" and task["revision"] == f"ir_datasets=={ir_datasets.__version__}"
    hashes = task["files_sha256"]
    assert set(hashes) == {str(folder / f) for f in ("docs.tsv", "queries.tsv", "qrels.txt")}
    import hashlib

    assert hashes[str(folder / "qrels.txt")] == hashlib.sha256((folder / "qrels.txt").read_bytes()).hexdigest()


def test_languages_titles_query_fields_and_grades(tmp_path):
    docs = [("d1", "Paris", "capital of France"), ("d2", "", "Berlin"), ("d3", "Tea", "grown in Yunnan")]
    topics = [("q1", "paris", "Where is the French capital?", "paris", "fr"),
              ("q2", "tea", "Where is tea grown?", "thé", "fr")]
    qrels = [("q1", "d1", 3), ("q1", "d2", 0), ("q2", "d3", 1), ("q2", "d3", 2)]
    name = register(make_dataset(tmp_path / "t", "fr", docs=docs, queries=topics, qrels=qrels, doc_cls=TitleDoc,
                                 query_cls=Topic, query_lang="en"))
    task = get_task(f"irds:{name}")
    assert task.card.kind == "retrieval" and task.card.languages == ("en", "fr")
    (pool,) = task.pools()
    assert [d.text for d in pool.docs] == ["Paris capital of France", "Berlin", "Tea grown in Yunnan"]
    assert pool.doc_langs == ("fr",) and pool.query_lang == "en"
    assert [q.text for q in pool.queries] == ["paris", "tea"]  # TREC-style topics: the title
    assert dict(pool.qrels) == {"q1": {"d1": 3}, "q2": {"d3": 2}}  # grade > 0; a pair judged twice: highest
    (pool,) = task.pools(query_field="description")
    assert [q.text for q in pool.queries] == ["Where is the French capital?", "Where is tea grown?"]
    (pool,) = task.pools(query_field="ht_title")  # a human translation: in the record's translation_lang
    assert [(q.text, q.lang) for q in pool.queries] == [("paris", "fr"), ("thé", "fr")] and pool.query_lang == "fr"
    with pytest.raises(ValueError, match="queries have no field 'narrative'; query_field is one of title, description, "
                                         "ht_title, translation_lang"):
        task.pools(query_field="narrative")
    with pytest.raises(ValueError, match="takes no option"):
        task.pools(split="test")


def test_neuclir_style_records_with_ir_datasets_own_classes(tmp_path):
    """NeuCLIR's real record types (ExctractedCCDocs / ExctractedCCQueries, which declare no query
    language): English titles by default, ``ht_title`` in the documents' language, title + text."""
    from ir_datasets.formats import ExctractedCCDocs, ExctractedCCNoReportQuery, ExctractedCCQueries

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "title": title, "text": text, "url": "u", "time": "t",
                                        "cc_file": "f"}, ensure_ascii=False) + "\n"
                            for i, (title, text) in enumerate([("巴黎", "法国的首都"), ("", "柏林")], 1)), "utf-8")

    def topic(lang, source, title):
        return {"lang": lang, "source": source, "topic_title": title, "topic_description": f"{title}?",
                "topic_narrative": f"{title}."}

    topics = tmp_path / "topics.jsonl"
    topics.write_text("".join(json.dumps({"topic_id": qid, "languages_with_qrels": ["zho"], "topics": [
        topic("eng", "original", en), topic("zho", "human translation", zh), topic("zho", "machine translation", zh)]},
        ensure_ascii=False) + "\n" for qid, en, zh in [("101", "capital of France", "法国首都")]), "utf-8")
    qrels = _write(tmp_path / "qrels", [("101", "zho", "d1", "3"), ("101", "zho", "d2", "0")])
    name = register(Dataset(ExctractedCCDocs(LocalDownload(docs), subset_lang="zh"),
                            ExctractedCCQueries(LocalDownload(topics), subset_lang="zh", filter_lwq=False,
                                                cls=ExctractedCCNoReportQuery),
                            TrecQrels(LocalDownload(qrels), {})))
    task = get_task(f"irds:{name}")
    assert task.card.languages == ("en", "zh")
    (pool,) = task.pools()
    assert [(d.id, d.text, d.lang) for d in pool.docs] == [("d1", "巴黎 法国的首都", "zh"), ("d2", "柏林", "zh")]
    assert [(q.text, q.lang) for q in pool.queries] == [("capital of France", "en")] and dict(pool.qrels) == {
        "101": {"d1": 3}}
    (pool,) = task.pools(query_field="ht_title")
    assert [(q.text, q.lang) for q in pool.queries] == [("法国首都", "zh")]
    assert main(run_args(tmp_path, f"irds:{name}", "--task-option", "query_field=ht_description")) == 0
    (record,) = results(tmp_path / "out")
    assert (record["query_lang"], record["doc_langs"], record["pool_size"]) == ("zh", ["zh"], 2)


class LangDoc(NamedTuple):
    doc_id: str
    text: str
    lang: str


class LangQuery(NamedTuple):
    query_id: str
    text: str
    lang: str


def test_mixed_languages_get_a_pool_per_query_language_and_same_lang_first(tmp_path):
    """No declared language, records with a ``lang`` field: languages from the records, as beir: does."""
    docs = [(f"{l}-{p}", t, l) for l in ("en", "zh") for p, t in PASSAGES[l].items()]
    queries = [(f"{l}-{q}", t, l) for l in ("en", "zh") for q, t in QUERIES[l].items()]
    qrels = [(f"{ql}-{q}", f"{dl}-{p}", g) for q, p, g in QRELS for ql in ("en", "zh") for dl in ("en", "zh")]
    name = register(make_dataset(tmp_path / "mixed", None, docs=docs, queries=queries, qrels=qrels,
                                 doc_cls=LangDoc, query_cls=LangQuery))
    task = get_task(f"irds:{name}")
    assert task.card.languages == ("en", "zh") and "SameLangFirst" in task.card.main_measures["retrieval"]
    en, zh = task.pools()
    assert en.doc_langs == zh.doc_langs == ("en", "zh") and en.num_docs == 8
    assert (en.query_lang, [q.id for q in en.queries]) == ("en", ["en-q1", "en-q2"])
    assert dict(zh.qrels)["zh-q1"] == {"en-p1": 1, "zh-p1": 1}
    assert main(run_args(tmp_path, f"irds:{name}", "--query-lang", "zh")) == 0
    (record,) = results(tmp_path / "out")
    assert record["query_lang"] == "zh" and record["measures"]["SameLangFirst"]["n"] == 2


def test_parallel_four_scenarios(tmp_path):
    spec = parallel(tmp_path)
    task = get_task(f"irds:{spec}")
    assert task.card.kind == "parallel" and task.card.languages == ("en", "zh") and task.card.pivot == "en"
    pools = {f"{p.scenario}/{p.query_lang}": p for p in task.pools()}
    assert len(pools) == 8
    multi = pools["multi/en"]
    assert multi.num_docs == 8 and len({d.id for d in multi.docs}) == 8
    assert {d.id for d in multi.docs} == {f"{l}/p{i}" for l in ("en", "zh") for i in range(1, 5)}
    assert [q.id for q in multi.queries] == ["q1", "q2"] and multi.queries[0].text == "capital of France"
    assert dict(multi.qrels) == {"q1": {"en/p1": 1, "zh/p1": 1}, "q2": {"en/p2": 2, "en/p3": 1, "zh/p2": 2, "zh/p3": 1}}
    assert not multi.exclusions
    m1 = pools["multi-1/zh"]
    assert m1.num_docs == 8 and m1.queries[0].text == "法国的首都"
    assert dict(m1.qrels) == {"q1": {"en/p1": 1}, "q2": {"en/p2": 2, "en/p3": 1}}
    assert dict(m1.exclusions) == {"q1": frozenset({"zh/p1"}), "q2": frozenset({"zh/p2", "zh/p3"})}
    same, cross = pools["mono-same/zh"], pools["mono-cross/zh"]
    assert same.doc_langs == ("zh",) and {d.lang for d in same.docs} == {"zh"} and same.num_docs == 4
    assert dict(same.qrels)["q2"] == {"zh/p2": 2, "zh/p3": 1}
    assert cross.doc_langs == ("en",) and dict(cross.qrels)["q1"] == {"en/p1": 1}
    assert [d.text for d in cross.docs if d.id == "en/p4"] == ["Tea is grown in Yunnan."]
    # options of the sweep
    assert [p.scenario for p in task.pools(scenarios="multi", query_langs=["zh"])] == ["multi"]
    with pytest.raises(ValueError, match="no pool mode 'per-query'"):
        task.pools(pool_mode="per-query")


def test_parallel_pools_equal_scenarios_build_pools_with_one_gold_passage(tmp_path):
    one_gold = [("q1", "p1", 1), ("q2", "p2", 1), ("q3", "p4", 1)]
    task = get_task(f"irds:{parallel(tmp_path, qrels=one_gold)}")
    collection = task.load(["en", "zh"])
    reference = {p.name: p for p in build_pools(collection, [("en", "zh")], SCENARIOS)}
    ours = {p.name: p for p in task.pools("en,zh")}
    assert set(ours) == set(reference) and len(ours) == 8
    for name, pool in ours.items():
        ref = reference[name]
        assert sorted((d.id, d.text, d.lang, d.item) for d in pool.docs) == \
            sorted((d.id, d.text, d.lang, d.item) for d in ref.docs), name
        assert [(q.id, q.text, q.lang) for q in pool.queries] == [(q.id, q.text, q.lang) for q in ref.queries]
        assert {k: dict(v) for k, v in pool.qrels.items()} == {k: dict(v) for k, v in ref.qrels.items()}, name
        assert dict(pool.exclusions) == dict(ref.exclusions) and pool.qrels_hash() == ref.qrels_hash()
    with pytest.raises(ValueError, match="query 'q2' has 2 relevant passages"):
        get_task(f"irds:{parallel(tmp_path / 'multi')}").load(["en", "zh"])


def test_parallel_run_through_the_cli(tmp_path):
    spec = parallel(tmp_path)
    assert main(run_args(tmp_path, f"irds:{spec}", "--langs", "en,zh")) == 0
    records = results(tmp_path / "out")
    assert sorted((r["scenario"], r["query_lang"]) for r in records) == \
        sorted((s, l) for s in SCENARIOS for l in ("en", "zh"))
    sizes = {(r["scenario"], r["query_lang"]): r["pool_size"] for r in records}
    assert sizes[("multi", "en")] == 8 and sizes[("mono-cross", "zh")] == 4
    multi = next(r for r in records if r["scenario"] == "multi" and r["query_lang"] == "en")
    assert "MaxR" in multi["measures"] and multi["num_queries"] == 2
    # the Python API on the same data reuses every result (the data record matches) ...
    from clirbench.runner import run

    again = run("bm25", task=f"irds:{spec}", langs="en,zh", output_dir=tmp_path / "out",
                cache_dir=tmp_path / "cache", resamples=10, progress=False)
    assert len(again.pools) == 8 and all(o.reused for o in again.pools)
    # ... and refuses to mix them with changed data (each file's SHA-256 is in the record)
    qrels = tmp_path / "zh" / "qrels.txt"
    qrels.write_text(qrels.read_text(encoding="utf-8") + "q3 0 p4 0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"exists with different data \\(SHA-256 of {qrels}\\)"):
        run("bm25", task=f"irds:{spec}", langs="en,zh", scenarios="mono-same", query_langs=["zh"],
            output_dir=tmp_path / "out", cache_dir=tmp_path / "cache", resamples=10, progress=False)


def test_neumarco_style_translated_passages_with_english_queries(capsys, tmp_path):
    """A dataset whose passages are translated but whose queries stay English (neuMARCO) pairs with
    the English one: pools with English queries only, the four scenarios."""
    prefix = f"clirbench-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(f"{prefix}/en", make_dataset(tmp_path / "en", "en"))
    queries = list(QUERIES["en"].items())
    for lang in ("zh", "fr"):
        docs = list(PASSAGES["zh"].items()) if lang == "zh" else [(p, f"[fr] {t}") for p, t in PASSAGES["en"].items()]
        ir_datasets.registry.register(f"{prefix}/{lang}", make_dataset(tmp_path / lang, lang, docs=docs,
                                                                       queries=queries, query_lang="en"))
    task = get_task(f"irds:{prefix}/{{en,zh,fr}}")
    assert task.card.languages == ("en", "zh", "fr") and task.card.source["queries"] == {"en": f"{prefix}/en"}
    pools = task.pools()
    assert sorted((p.scenario, p.doc_langs) for p in pools) == sorted(
        [("multi", ("en", o)) for o in ("zh", "fr")] + [("multi-1", ("en", o)) for o in ("zh", "fr")]
        + [("mono-same", ("en",)), ("mono-cross", ("zh",)), ("mono-cross", ("fr",))])
    assert {p.query_lang for p in pools} == {"en"}
    cross = next(p for p in pools if p.scenario == "mono-cross" and p.doc_langs == ("fr",))
    assert dict(cross.qrels)["q1"] == {"fr/p1": 1} and cross.docs[0].text == "[fr] Paris is the capital of France."
    with pytest.raises(ValueError, match="has no queries in zh; queries: en"):
        task.pools(query_langs=["zh"])
    with pytest.raises(ValueError, match="has queries in en only; the pair zh,fr has none"):
        task.pools("zh,fr")
    line = one_line_error(capsys, run_args(tmp_path, f"irds:{prefix}/{{zh,fr}}"))
    assert "the queries are in en, none of the document languages (zh, fr)" in line


@pytest.mark.parametrize("task, message", [
    ("irds:clirbench-test/no-such-id", "unknown ir_datasets id 'clirbench-test/no-such-id'"),
    ("irds:mmarco/v2/zh/dve", "unknown ir_datasets id 'mmarco/v2/zh/dve'; close: mmarco/v2/zh/dev"),
    ("irds:mmarco/v2/{zh}/dev", "one brace group of two or more different alternatives"),
    ("irds:mmarco/v2/zh", "has no queries and no qrels (it provides docs)"),
    ("irds:", "irds: needs an ir_datasets id"),
    ("irds:mmarco/v2/zh/dev --data-dir .",
     "reads its files through ir_datasets ($IR_DATASETS_HOME); --data-dir is not used"),
])
def test_unknown_ids_and_incomplete_datasets_are_one_line(capsys, tmp_path, task, message):
    line = one_line_error(capsys, run_args(tmp_path, *task.split(" ")))
    assert message in line


def test_parallel_needs_one_language_per_dataset_and_shared_ids(capsys, tmp_path):
    prefix = f"clirbench-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(f"{prefix}/a", make_dataset(tmp_path / "a", "en"))
    ir_datasets.registry.register(f"{prefix}/b", make_dataset(tmp_path / "b", "en"))
    line = one_line_error(capsys, run_args(tmp_path, f"irds:{prefix}/{{a,b}}"))
    assert "two datasets are in en" in line
    ir_datasets.registry.register(f"{prefix}/c", make_dataset(tmp_path / "c", "zh", docs=[("p1", "巴黎")],
                                                                    qrels=[("q1", "p1", 1)]))
    line = one_line_error(capsys, run_args(tmp_path, f"irds:{prefix}/{{a,c}}"))
    assert "judges passage 'p2', which" in line and "a parallel collection needs shared document ids" in line


def test_missing_files_are_one_line(capsys, tmp_path):
    name = register(make_dataset(tmp_path / "gone", "en"))
    (tmp_path / "gone" / "docs.tsv").unlink()
    line = one_line_error(capsys, run_args(tmp_path, f"irds:{name}"))
    assert "ir_datasets could not provide its docs" in line and line.endswith(f"place {tmp_path / 'gone' / 'docs.tsv'}")


def test_without_ir_datasets(monkeypatch, capsys, tmp_path):
    block(monkeypatch, "ir_datasets")
    line = one_line_error(capsys, run_args(tmp_path, "irds:mmarco/v2/zh/dev"))
    assert "task irds: needs the Python package 'ir_datasets'" in line and "pip install 'clirbench[irds]'" in line


def write_mmarco_home(home: Path) -> Path:
    """Tiny stand-ins for mMARCO v2 zh and fr dev (passages p1-p4, queries q1-q3, QRELS) placed where
    ir_datasets keeps their downloads under ``$IR_DATASETS_HOME`` (it reads such files as they are)."""
    base = home / "mmarco" / "v2"
    base.mkdir(parents=True, exist_ok=True)
    texts = {"zh": PASSAGES["zh"], "fr": {"p1": "Paris est la capitale de la France.", "p2": "Berlin est la "
             "capitale de l'Allemagne.", "p3": "L'Allemagne borde la France.", "p4": "Le thé pousse au Yunnan."}}
    qtexts = {"zh": QUERIES["zh"], "fr": {"q1": "capitale de la France", "q2": "Allemagne", "q3": "thé"}}
    for lang, name in {"zh": "chinese", "fr": "french"}.items():
        _write(base / f"{name}_collection.tsv", texts[lang].items())
        _write(base / f"{name}.queries.dev.tsv", qtexts[lang].items())
    _write(home / "mmarco" / "qrels.dev.tsv", [(q, "0", d, str(g)) for q, d, g in QRELS])
    return home


def test_builtin_id_from_files_under_ir_datasets_home(tmp_path):
    """Across processes: the console script on ``irds:mmarco/v2/{zh,fr}/dev`` reads files a user placed
    where ir_datasets keeps its downloads (here tiny stand-ins, not the real mMARCO)."""
    home = write_mmarco_home(tmp_path / "irds-home")
    script = Path(sys.executable).with_name("clirbench")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "clirbench"]
    env = {**os.environ, "IR_DATASETS_HOME": str(home)}
    done = subprocess.run(command + run_args(tmp_path, "irds:mmarco/v2/{zh,fr}/dev", "--scenario", "multi-1",
                                             "--query-lang", "fr"), env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = results(tmp_path / "out")
    assert record["scenario"] == "multi-1" and record["pool_size"] == 8 and record["num_queries"] == 2
    assert record["doc_langs"] == ["zh", "fr"]
    assert record["task"]["source"] == "ir_datasets:mmarco/v2/fr/dev,mmarco/v2/zh/dev"  # by language
    assert record["task"]["revision"] == f"ir_datasets=={ir_datasets.__version__}"
    assert "files_sha256" not in record["task"]  # downloads are pinned by the ir_datasets version
    assert not [p for p in home.rglob("*") if p.is_file() and p.suffix not in (".tsv",)]  # nothing written there


def test_three_language_parallel_pools_equal_scenarios_build_pools(tmp_path):
    """``{en,zh,fr}``: one pool of three languages per query language, as ``scenarios.build_pools``
    builds it from the same collection; the CLI runs it and writes the preference row."""
    one_gold = [("q1", "p1", 1), ("q2", "p2", 1), ("q3", "p4", 1)]
    fr = {"p1": "Paris est la capitale de la France.", "p2": "Berlin est la capitale de l'Allemagne.",
          "p3": "L'Allemagne borde la France.", "p4": "Le thé pousse au Yunnan."}
    prefix = f"clirbench-test/{uuid.uuid4().hex[:8]}"
    for lang in ("en", "zh", "fr"):
        docs = list(fr.items()) if lang == "fr" else None
        queries = [("q1", "capitale de la France"), ("q2", "Allemagne"), ("q3", "thé")] if lang == "fr" else None
        ir_datasets.registry.register(f"{prefix}/{lang}/dev", make_dataset(tmp_path / lang, lang, docs, queries,
                                                                          qrels=one_gold))
    spec = prefix + "/{en,zh,fr}/dev"
    task = get_task(f"irds:{spec}")
    reference = {p.name: p for p in build_pools(task.load(["en", "zh", "fr"]), [("en", "zh", "fr")], SCENARIOS)}
    ours = {p.name: p for p in task.pools("en,zh,fr")}
    assert set(ours) == set(reference) and len(ours) == 3 + 3 + 3 + 6
    for name, pool in ours.items():
        ref = reference[name]
        assert sorted(d.id for d in pool.docs) == sorted(d.id for d in ref.docs), name
        assert {k: dict(v) for k, v in pool.qrels.items()} == {k: dict(v) for k, v in ref.qrels.items()}, name
        assert dict(pool.exclusions) == dict(ref.exclusions) and pool.qrels_hash() == ref.qrels_hash()
    assert set(ours) == {p.name for p in task.pools("all")}
    assert main(run_args(tmp_path, f"irds:{spec}", "--langs", "en,zh,fr", "--scenario", "multi")) == 0
    records = results(tmp_path / "out")
    assert sorted(r["query_lang"] for r in records) == ["en", "fr", "zh"]
    assert all(r["pool_size"] == 12 and set(r["preference"]["best_share"]) == {"en", "zh", "fr"} for r in records)
