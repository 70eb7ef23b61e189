"""Tasks as declared objects: the TaskLoader protocol, register_task, the ``clirbench.tasks``
entry-point group (a real installed distribution) and hierarchical pool ids."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

import clirbench.tasks as tasks_module
from clirbench.cli import main
from clirbench.util.errors import ClirbenchError, UnknownNameError
from clirbench.tasks import BaseLoader, ParallelLoader, RetrievalLoader, TaskLoader, get_task, list_tasks, register_task
from clirbench.tasks.card import load_cards

from xquad_files import DATA  # noqa: E402  (a data folder holding xquad/, from the package's copy)

PLUGIN = textwrap.dedent('''
    """A third-party task: three English documents, two queries, registered by entry point."""
    from clirbench.collection import Pool, Text
    from clirbench.tasks import BaseLoader, Task, TaskCard

    CARD = TaskCard(id="toy-clir", name="Toy CLIR", description="A task from an installed plugin.",
                    kind="retrieval", source={"plugin": "toy_clir_plugin"}, languages=("en",),
                    scenarios=("retrieval",), main_measures={"retrieval": ("nDCG@10",)},
                    license="CC0", citation="none")

    class ToyLoader(BaseLoader):
        def locate(self, card, data_dir=None):
            return "in the toy_clir_plugin package"

        def pools(self, card, langs=None, scenarios="all", query_langs=None, data_dir=None, **options):
            docs = (Text("d1", "the cat sat on the mat", "en"), Text("d2", "paris is the capital of france", "en"),
                    Text("d3", "rain falls in spring", "en"))
            queries = (Text("q1", "where did the cat sit", "en"), Text("q2", "capital of france", "en"))
            qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
            return [Pool(card.id, "retrieval", "unique", ("en",), "en", docs, queries, qrels,
                         source={"origin": "toy", "revision": "1"})]

    def tasks():
        return [Task(CARD, ToyLoader())]
''')


@pytest.fixture
def fresh_registry(monkeypatch):
    """A registry that re-reads the entry points and forgets tasks registered by other tests."""
    monkeypatch.setattr(tasks_module, "_REGISTERED", {})
    monkeypatch.setattr(tasks_module, "_PLUGINS_LOADED", False)


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch, fresh_registry):
    """A distribution ``toy-clir-plugin`` installed into a folder on sys.path: its package and its
    ``*.dist-info`` with an ``entry_points.txt``, as pip would leave them."""
    site = tmp_path / "site"
    (site / "toy_clir_plugin").mkdir(parents=True)
    (site / "toy_clir_plugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "toy_clir_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-clir-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[clirbench.tasks]\ntoy = toy_clir_plugin:tasks\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("toy_clir_plugin", None)


def test_importlib_metadata_finds_the_plugin(installed_plugin):
    from importlib.metadata import entry_points

    assert [ep.value for ep in entry_points(group=tasks_module.ENTRY_POINT_GROUP) if ep.name == "toy"] == [
        "toy_clir_plugin:tasks"]


def test_plugin_task_is_listed_and_runs_through_the_cli(installed_plugin, tmp_path, capsys):
    assert main(["tasks", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["toy-clir"]["data"] == "in the toy_clir_plugin package"
    assert {"xquad", "belebele", "clirudit", "ko-en", "lazretrieval"} <= set(rows)
    out = tmp_path / "results"
    assert main(["run", "--model", "bm25", "--task", "toy-clir", "--output", str(out), "--no-progress"]) == 0
    files = [p for p in out.rglob("*.json") if "toy-clir" in p.read_text(encoding="utf-8")]
    assert files, list(out.rglob("*"))
    record = json.loads(files[0].read_text(encoding="utf-8"))
    assert record["task"]["id"] == "toy-clir"
    assert record["measures"]["nDCG@10"]["value"] == pytest.approx(1.0)  # bm25 puts each answer first


def test_a_broken_plugin_is_one_warning_and_the_rest_still_lists(installed_plugin, capsys):
    (installed_plugin / "toy_clir_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[clirbench.tasks]\ntoy = toy_clir_plugin:nothing_here\n", encoding="utf-8")
    ids = [t.id for t in list_tasks()]
    assert "toy-clir" not in ids and "xquad" in ids
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clirbench: warning: task plugin toy")


def test_register_task_in_process(fresh_registry):
    class Loader(BaseLoader):
        def load(self, card, languages, data_dir=None):
            return get_task("xquad").load(languages, data_dir=DATA)

    card = dict(id="my-xquad", name="Mine", description="XQuAD under another id", kind="parallel",
                source={"hf": "none"}, languages=["en", "zh"], scenarios=["multi"], pivot="en",
                main_measures={"multi": ["MaxR"]}, license="CC-BY-SA-4.0", citation="none")
    task = register_task(card, Loader())
    assert get_task("my-xquad") is task and "my-xquad" in [t.id for t in list_tasks()]
    assert [p.name for p in get_task("my-xquad/multi/en-zh/q-zh").pools()] == ["xquad/multi/en-zh/q-zh"]
    with pytest.raises(ClirbenchError, match="already registered"):
        register_task(card, Loader())
    with pytest.raises(UnknownNameError, match="lacks pools"):
        register_task({**card, "id": "other", "kind": "retrieval", "scenarios": ["retrieval"],
                       "main_measures": {"retrieval": ["nDCG@10"]}, "pivot": None}, Loader())


def test_every_built_in_loader_conforms():
    for card in load_cards().values():
        loader = get_task(card.id).loader()
        assert isinstance(loader, TaskLoader)
        assert isinstance(loader, ParallelLoader if card.kind == "parallel" else RetrievalLoader), card.id
    assert get_task("xquad").loader().takes_options and not get_task("belebele").loader().takes_options
    assert get_task("clirudit").breakdown_groups is not None


@pytest.mark.parametrize("address, names", [
    ("xquad/multi/en-zh", ["xquad/multi/en-zh/q-en", "xquad/multi/en-zh/q-zh"]),
    ("xquad/mono-cross+per-query/en-de/q-de", ["xquad/mono-cross+per-query/en/q-de"]),
    ("xquad/mono-cross/en-de", ["xquad/mono-cross/de/q-en", "xquad/mono-cross/en/q-de"]),
    ("xquad/multi-1/zh-en/q-zh", ["xquad/multi-1/zh-en/q-zh"]),
])
def test_pool_ids_address_their_pools(address, names):
    task = get_task(address)
    assert task.address == address and task.id == "xquad"
    assert [p.name for p in task.pools(data_dir=DATA)] == names


def test_every_pool_name_is_an_id_of_that_pool():
    """``get_task(pool.name)`` gives back exactly that pool (the form results and leaderboards store)."""
    pools = get_task("xquad").pools("en,zh", pool_mode="unique", data_dir=DATA)
    pools += get_task("xquad").pools("de,zh", scenarios="mono-same,mono-cross", pool_mode="per-query",
                                     data_dir=DATA)
    assert len(pools) == 8 + 4
    for pool in pools:
        task = get_task(pool.name)
        assert task.address == pool.name
        assert task.pools(data_dir=DATA) == [pool], pool.name


def test_mono_pool_ids_need_consistent_languages():
    with pytest.raises(UnknownNameError, match="names its query language too"):
        get_task("xquad/mono-same/de")
    with pytest.raises(UnknownNameError, match="must be the document language"):
        get_task("xquad/mono-same/de/q-en")
    with pytest.raises(UnknownNameError, match="must differ from the document language"):
        get_task("xquad/mono-cross/de/q-de")


def test_belebele_pool_id_takes_iso_codes():
    task = get_task("belebele/multi-1/en-ko/q-ko")
    assert (task.pair, task.query_lang, task.address) == (("eng_Latn", "kor_Hang"), "kor_Hang",
                                                          "belebele/multi-1/eng_Latn-kor_Hang/q-kor_Hang")


@pytest.mark.parametrize("address, message", [
    ("xquad/both", "unknown scenario 'both'; available: multi, multi-1, mono-same, mono-cross"),
    ("xquad/multi+pooled", "unknown pool mode 'pooled'; available: unique, per-query"),
    ("xquad/multi/en-xx", "'en-xx' is not a pair <L1>-<L2> of two languages of xquad; available: ar, de"),
    ("xquad/multi/en-zh/q-de", "unknown query language 'de'; available: en, zh"),
    ("xquad/mono-cross/en/q-xx", "unknown language 'xx'; available: ar, de"),
    ("xquad/multi/en-zh/zh", "the last part must be q-<query language>, one of q-en, q-zh"),
    ("clirudit/retrieval", "only parallel tasks take pool ids"),
    ("nosuch/multi", "unknown task 'nosuch'; available: belebele, clirudit"),
])
def test_bad_pool_ids_are_one_line_naming_the_valid_parts(address, message, capsys):
    with pytest.raises(UnknownNameError, match="^.*" + message.replace("(", r"\(").replace("+", r"\+")):
        get_task(address)
    assert main(["run", "--model", "bm25", "--task", address, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clirbench: error:") and message in err[0]


def test_an_address_conflicts_with_other_arguments():
    with pytest.raises(UnknownNameError, match="fixes the scenario multi"):
        get_task("xquad/multi").pools(scenarios="multi-1", data_dir=DATA)
    assert len(get_task("xquad/multi").pools(scenarios="multi", langs="en,zh", data_dir=DATA)) == 2


def test_run_with_a_pool_id_through_the_cli(tmp_path):
    out = tmp_path / "r"
    assert main(["run", "--model", "bm25", "--task", "xquad/multi/en-zh/q-zh", "--data-dir", str(DATA / "xquad"),
                 "--output", str(out), "--no-progress"]) == 0
    records = [json.loads(p.read_text(encoding="utf-8")) for p in out.rglob("*.json")]
    pools = {(r["task"]["id"], r["scenario"], tuple(r["doc_langs"]), r["query_lang"]) for r in records if "scenario" in r}
    assert pools == {("xquad", "multi", ("en", "zh"), "zh")}


def test_language_tags_in_any_case_name_the_same_pools(tmp_path, capsys):
    """``--langs EN,ZH --query-lang EN`` is ``en,zh`` / ``en`` (docs/commands.md: tags in BCP-47 case),
    ``ALL`` is ``all``; an unknown tag is still one line."""
    task = get_task("xquad")
    assert task.canonical_languages("EN,Zh") == "en,zh" and task.canonical_languages(["EN", "ALL"]) == ["en", "all"]
    lower = [p.name for p in task.pools(langs="en+all", scenarios="mono-cross", query_langs=["en"])]
    upper = [p.name for p in task.pools(langs="EN+ALL", scenarios="mono-cross", query_langs=["EN"])]
    assert upper == lower and len(lower) == 11
    args = ["run", "--model", "bm25", "--task", "xquad", "--scenario", "mono-cross", "--no-progress",
            "--resamples", "10", "--output", str(tmp_path / "out")]
    assert main(args + ["--langs", "EN,ZH", "--query-lang", "EN"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.json")) == ["zh.q-en.json"]  # mono-cross: English queries, Chinese passages
    capsys.readouterr()
    assert main(args + ["--langs", "EN,XX"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
