"""Every loader's hub path on rows that real ``datasets`` produces, compared with its local-files path.

Only the network step is replaced: ``datasets.load_dataset(<hub id>, <config>, split=…)`` is served
by the real ``datasets.load_dataset("json" | "parquet", data_files=<local file>)`` on files in the
upstream schema (with the upstream's declared features where its card declares them). The rows
then carry the types ``datasets`` really gives: timestamps, int64/float64, nested sequences.
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

import datasets  # noqa: E402  (the test extra installs it)

from clirbench.tasks import get_task  # noqa: E402
from test_belebele import FIXTURE_DIR, fixture_task  # noqa: E402,F401  (fixture)
from test_clirudit import write_clirudit  # noqa: E402
from test_ko_en import write_beir  # noqa: E402

LOAD_DATASET = datasets.load_dataset  # the real one, for building files while the fake hub is in place
from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """``served[(hub id, config, split)] = (builder, files, features)``: what the fake hub answers."""
    served: dict = {}
    calls: list = []
    cache = tmp_path / "hf-cache"

    def load_dataset(path, name=None, split=None, revision=None, **kwargs):
        calls.append((path, name, split, revision))
        builder, files, features = served[(path, name, split)]
        return LOAD_DATASET(builder, data_files=[str(f) for f in files], split="train", features=features,
                    cache_dir=str(cache))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr("clirbench.tasks.hub.hub_reachable", lambda timeout=5.0: True)
    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    served["calls"] = calls
    return served


# -- Belebele (facebook/belebele: JSONL per variant, no declared features; ds is inferred as timestamp[s])

BELEBELE_FEATURES = {"link": "string", "question_number": "int64", "flores_passage": "string",
                     "question": "string", **{f"mc_answer{i}": "string" for i in range(1, 5)},
                     "correct_answer_num": "string", "dialect": "string", "ds": "timestamp[s]"}


def _features(spec):
    return datasets.Features({k: datasets.Value(v) for k, v in spec.items()})


def _metas(collection):
    return {lang: [dict(q.meta) for q in qs] for lang, qs in collection.questions.items()}


def test_datasets_really_gives_belebele_ds_as_a_datetime():
    """The premise of the tests below: what ``datasets`` makes of the upstream JSONL."""
    ds = datasets.load_dataset("json", data_files=str(FIXTURE_DIR / "data" / "eng_Latn.jsonl"), split="train")
    assert ds.features["ds"] == datasets.Value("timestamp[s]")
    assert type(ds[0]["ds"]) is datetime.datetime and type(ds[0]["question_number"]) is int


@pytest.mark.parametrize("builder", ["json", "parquet"])
def test_belebele_hub_rows_give_the_local_collection(hub, fixture_task, tmp_path, builder):
    langs = ["eng_Latn", "kor_Hang"]
    for lang in langs:
        src = FIXTURE_DIR / "data" / f"{lang}.jsonl"
        if builder == "json":  # the repository's own files, types inferred
            hub[("facebook/belebele", lang, "test")] = ("json", [src], None)
        else:  # a parquet conversion with the declared features (ds timestamp[s])
            table = LOAD_DATASET("json", data_files=str(src), split="train",
                                          cache_dir=str(tmp_path / "c"))
            table = table.cast(_features(BELEBELE_FEATURES))
            path = tmp_path / f"{lang}.parquet"
            table.to_parquet(str(path))
            hub[("facebook/belebele", lang, "test")] = ("parquet", [path], None)
    from_hub = fixture_task.load(langs)
    local = fixture_task.load(langs, data_dir=FIXTURE_DIR)
    assert hub["calls"] == [("facebook/belebele", lang, "test", None) for lang in langs]
    assert from_hub.passages == local.passages and from_hub.questions == local.questions
    assert _metas(from_hub) == _metas(local)  # Text equality leaves meta out
    assert from_hub.questions["eng_Latn"][0].meta["ds"] == "2023-05-03"
    assert from_hub.source == {"origin": "hub:facebook/belebele", "revision": None, "files_sha256": {},
                               "files_match_card": None}


@pytest.mark.filterwarnings("ignore:The default formatting of datetime")
@pytest.mark.parametrize("date_format,written", [("epoch", 1683072000000), ("iso", "2023-05-03T00:00:00.000")])
def test_belebele_local_files_written_by_dataset_to_json(fixture_task, tmp_path, date_format, written):
    """Rows loaded through ``datasets`` and saved with ``Dataset.to_json`` (pandas' two date formats)."""
    langs = ["eng_Latn", "kor_Hang"]
    for lang in langs:
        ds = datasets.load_dataset("json", data_files=str(FIXTURE_DIR / "data" / f"{lang}.jsonl"), split="train",
                                   cache_dir=str(tmp_path / "c"))
        (tmp_path / "bb" / "data").mkdir(parents=True, exist_ok=True)
        kwargs = {} if date_format == "epoch" else {"date_format": "iso"}
        ds.to_json(str(tmp_path / "bb" / "data" / f"{lang}.jsonl"), force_ascii=False, **kwargs)
    first = json.loads((tmp_path / "bb" / "data" / "eng_Latn.jsonl").read_text("utf-8").splitlines()[0])
    assert first["ds"] == written  # what pandas writes for the timestamp
    resaved = fixture_task.load(langs, data_dir=tmp_path / "bb")
    local = fixture_task.load(langs, data_dir=FIXTURE_DIR)
    assert resaved.passages == local.passages and resaved.questions == local.questions
    assert _metas(resaved) == _metas(local)


# -- XQuAD (google/xquad: parquet, config xquad.<lang>, split validation; answers a nested sequence)

XQUAD_FEATURES = datasets.Features({
    "id": datasets.Value("string"), "context": datasets.Value("string"), "question": datasets.Value("string"),
    "answers": datasets.Sequence({"text": datasets.Value("string"), "answer_start": datasets.Value("int32")})})


def _xquad_rows(path: Path) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [{"id": qa["id"], "context": p["context"], "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for article in data["data"] for p in article["paragraphs"] for qa in p["qas"]]


def test_xquad_hub_rows_give_the_local_paragraphs(hub, tmp_path):
    from clirbench.tasks import xquad

    card = get_task("xquad").card
    for lang in ("en", "zh"):
        path = tmp_path / f"xquad.{lang}.parquet"
        datasets.Dataset.from_list(_xquad_rows(XQUAD / f"xquad.{lang}.json"), features=XQUAD_FEATURES).to_parquet(str(path))
        hub[("google/xquad", f"xquad.{lang}", "validation")] = ("parquet", [path], None)
        assert xquad._read_hub(card, lang) == xquad._read_squad_file(XQUAD / f"xquad.{lang}.json", (XQUAD / f"xquad.{lang}.json").read_bytes())
    assert [c[:3] for c in hub["calls"]] == [("google/xquad", "xquad.en", "validation"),
                                             ("google/xquad", "xquad.zh", "validation")]


# -- CLIRudit (ftvalentini/clirudit: parquet; configs docs, queries, qrels; qid int64)

def test_clirudit_hub_tables_give_the_local_pools(hub, tmp_path):
    from clirbench.tasks.clirudit import LAYOUT

    folder = write_clirudit(tmp_path / "c")
    for config, split in LAYOUT.values():
        hub[("ftvalentini/clirudit", config, split)] = ("parquet", [folder / config / f"{split}.parquet"], None)
    task = get_task("clirudit")
    with pytest.warns(UserWarning):
        from_hub = task.pools("all")
    with pytest.warns(UserWarning):
        local = task.pools("all", data_dir=folder)
    assert len(from_hub) == len(local) == 2
    for a, b in zip(from_hub, local):
        assert (a.docs, a.queries, dict(a.qrels)) == (b.docs, b.queries, dict(b.qrels))
        assert a.source["origin"] == "hub:ftvalentini/clirudit"


# -- ko-en StrategyQA (taeminlee/Ko-StrategyQA: JSONL, declared features: score float64)

def test_ko_strategyqa_hub_rows_give_the_local_pools(hub, tmp_path):
    local_root = tmp_path / "local"
    write_beir(local_root / "strategyqa" / "ko", "ko")
    write_beir(local_root / "strategyqa" / "en", "en", qrels=False)
    hub_root = tmp_path / "hub-en"  # the English side only: the Korean side comes from the hub
    write_beir(hub_root / "strategyqa" / "en", "en", qrels=False)
    ko = local_root / "strategyqa" / "ko"
    lines = ko.joinpath("qrels", "dev.tsv").read_text("utf-8").splitlines()[1:]
    qrels_jsonl = tmp_path / "dev.jsonl"
    qrels_jsonl.write_text("".join(json.dumps({"query-id": q, "corpus-id": d, "score": float(s)}) + "\n"
                                   for q, d, s in (line.split("\t") for line in lines)), "utf-8")
    repo = "taeminlee/Ko-StrategyQA"
    hub[(repo, "corpus", "corpus")] = ("json", [ko / "corpus.jsonl"],
                                       _features({"_id": "string", "title": "string", "text": "string"}))
    hub[(repo, "queries", "queries")] = ("json", [ko / "queries.jsonl"], _features({"_id": "string", "text": "string"}))
    hub[(repo, "default", "dev")] = ("json", [qrels_jsonl], _features({"query-id": "string", "corpus-id": "string",
                                                                        "score": "float64"}))
    task = get_task("ko-en")
    from_hub = task.pools(None, data_dir=hub_root, subsets="strategyqa")
    local = task.pools(None, data_dir=local_root, subsets="strategyqa")
    assert len(from_hub) == len(local) == 4
    for a, b in zip(from_hub, local):
        assert (a.query_lang, a.doc_langs, a.docs, a.queries, dict(a.qrels)) == \
            (b.query_lang, b.doc_langs, b.docs, b.queries, dict(b.qrels))
        assert a.source["origin"].startswith("hub:taeminlee/Ko-StrategyQA")
    assert {c[:3] for c in hub["calls"]} == {(repo, "corpus", "corpus"), (repo, "queries", "queries"),
                                            (repo, "default", "dev")}


# -- the conversion itself

def test_plain_value_turns_datasets_types_into_json_values():
    import numpy as np

    from clirbench.tasks.hub import plain_value

    assert plain_value(datetime.datetime(2023, 5, 3)) == "2023-05-03"
    assert plain_value(datetime.datetime(2023, 5, 3, 12, 30)) == "2023-05-03T12:30:00"
    assert plain_value(np.datetime64("2023-05-03T00:00:00")) == "2023-05-03"
    assert plain_value(np.int64(2)) == 2 and type(plain_value(np.int64(2))) is int
    assert plain_value({"text": np.array(["a", "b"]), "answer_start": np.array([1, 2], dtype=np.int32)}) == \
        {"text": ["a", "b"], "answer_start": [1, 2]}
    assert plain_value(None) is None and plain_value("x") == "x"
