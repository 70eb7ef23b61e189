"""Every field of a submitted result is checked against the schema, every measure family has its
range, and leaderboard pages stay inside --out (item 13)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirbench.cli import main
from clirbench.leaderboard.validate import value_range
from clirbench.measures import DEFAULT_MEASURES, parse
from clirbench.measures import FAMILIES, Measure

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


@pytest.fixture(scope="module")
def result_file(tmp_path_factory) -> Path:
    """One real bm25 result (XQuAD multi en-de, German queries), PEER@10 among its measures."""
    from clirbench.runner import run

    out = tmp_path_factory.mktemp("results")
    report = run("bm25", task="xquad", langs="en,de", scenarios="multi", query_langs=["de"], data_dir=XQUAD,
                 output_dir=out, measures=[*map(str, DEFAULT_MEASURES), "PEER@10"], resamples=50, progress=False)
    return report.pools[0].path


def _copy(src: Path, dst_dir: Path, edit=None, edit_tsv=None) -> Path:
    data = json.loads(src.read_text())
    tsv = src.parent / data["per_query_file"]
    if edit:
        edit(data)
    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / src.name
    dst.write_text(json.dumps(data))
    text = tsv.read_text()
    (dst_dir / tsv.name).write_text(edit_tsv(text) if edit_tsv else text)
    return dst


def _submit(capsys, path: Path, lb: Path) -> tuple[int, str]:
    """(exit code, stderr) as the CLI gives them. Through the API: ``leaderboard submit`` on the
    command line loses its dispatch to the ``--command`` dest clash that another change fixes."""
    from clirbench.util.errors import ClirbenchError
    from clirbench.leaderboard import submit

    try:
        submit(path, lb, XQUAD)
    except ClirbenchError as exc:
        return 2, f"clirbench: error: {exc}\n"
    return 0, ""


def _set(path: str, value):
    def edit(data):
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return edit


BAD_FIELDS = [
    ("retriever.spec", "", "retriever.spec"),
    ("retriever.spec", "   ", "retriever.spec"),
    ("retriever.model_id", "", "retriever.model_id"),
    ("retriever.revision", " ", "retriever.revision"),
    ("retriever.prompts", {"evil": "x"}, "retriever.prompts"),
    ("bootstrap.resamples", -5, "bootstrap.resamples"),
    ("bootstrap.resamples", 0, "bootstrap.resamples"),
    ("bootstrap.resamples", 10**12, "bootstrap.resamples"),
    ("bootstrap.seed", -1, "bootstrap.seed"),
    ("bootstrap.seed", 2**64, "bootstrap.seed"),
    ("bootstrap.confidence", 1.5, "bootstrap.confidence"),
    ("bootstrap.confidence", 0, "bootstrap.confidence"),
    ("bootstrap.method", "bca", "bootstrap.method"),
    ("hardware.cores", 10**30, "hardware.cores"),
    ("hardware.cores", 0, "hardware.cores"),
    ("hardware.cpu", "", "hardware.cpu"),
    ("hardware.platform", " ", "hardware.platform"),
    ("hardware.python", "", "hardware.python"),
    ("timings_s.total", -1.0, "timings_s.total"),
    ("timings_s.encode", -0.5, "timings_s.encode"),
    ("clirbench_version", "", "clirbench_version"),
    ("clirbench_version", "latest!", "clirbench_version"),
    ("qrels_sha256", "abc", "qrels_sha256"),
    ("qrels_sha256", "A" * 64, "qrels_sha256"),
    ("task.source", "", "task.source"),
    ("task.revision", "", "task.revision"),
    ("task.files_sha256", {"xquad.de.json": "not-a-hash"}, "task.files_sha256"),
    ("doc_langs", ["en", "en"], "doc_langs"),
    ("doc_langs", [], "doc_langs"),
    ("query_lang", "", "query_lang"),
    ("pool_size", 0, "pool_size"),
    ("pool_size", 10**12, "pool_size"),
    ("num_queries", 0, "num_queries"),
    ("num_queries", -1, "num_queries"),
    ("measures", {}, "no measure"),
    ("measures.RR.n", -1, "measures.RR.n"),
    ("measures.RR.n", 10**6, "RR: n="),
    ("measures.RR.value", 1.5, "RR value"),
    ("measures.MaxR.value", 0.5, "MaxR value"),
    ("translation", {"direction": "sideways", "translator": "gold"}, "translation.direction"),
    ("translation", {"direction": "docs", "translator": ""}, "translation.translator"),
    ("created_at", "2999-01-01T00:00:00+00:00", "created_at"),
    ("created_at", "2024-01-01T00:00:00", "created_at"),
    ("created_at", "yesterday", "created_at"),
    ("per_query_file", "../x.perquery.tsv", "per_query_file"),
    ("schema_version", 2, "schema_version"),
    ("subset", 5, "subset"),
    ("scenario", "multi-9", "scenario"),
    ("pool_mode", "shared", "pool mode"),
    ("breakdown", {"discipline": {"a": {"n": -1, "RR": 0.5}}}, "breakdown"),
    ("breakdown", {"discipline": {"a": {"n": 1, "RR": 3.0}}}, "breakdown.discipline.a.RR"),
]


@pytest.mark.parametrize("field, value, needle", BAD_FIELDS, ids=[f"{f}={v!r}"[:60] for f, v, _ in BAD_FIELDS])
def test_a_bad_value_in_any_field_is_refused(result_file, tmp_path, capsys, field, value, needle):
    bad = _copy(result_file, tmp_path / "sub", _set(field, value))
    code, err = _submit(capsys, bad, tmp_path / "lb")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("clirbench: error:"), err
    assert needle in lines[0], lines[0]
    assert not (tmp_path / "lb" / "xquad.json").exists()


def test_the_unedited_result_is_accepted(result_file, tmp_path, capsys):
    code, err = _submit(capsys, _copy(result_file, tmp_path / "sub"), tmp_path / "lb")
    assert code == 0, err
    board = json.loads((tmp_path / "lb" / "xquad.json").read_text())
    assert "PEER@10" in board["systems"]["bm25"]["results"]["multi/en-de/q-de"]["measures"]


def test_a_peer_of_7_3_is_refused(result_file, tmp_path, capsys):
    """PEER was in neither of the leaderboard's own range tables, so its range was [0, pool size]."""
    def edit(data):
        data["measures"]["PEER@10"] = {"value": 7.3, "ci_low": 7.3, "ci_high": 7.3, "n": data["num_queries"]}

    def edit_tsv(text):
        rows = [line.split("\t") for line in text.splitlines()]
        j = rows[0].index("PEER@10")
        for row in rows[1:]:
            row[j] = "7.3"
        return "\n".join("\t".join(r) for r in rows) + "\n"

    code, err = _submit(capsys, _copy(result_file, tmp_path / "sub", edit, edit_tsv), tmp_path / "lb")
    assert code == 2 and "PEER@10 value 7.3" in err and "[0, 1]" in err


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_measure_family_has_its_range(family):
    cutoff = 10 if FAMILIES[family].cutoff == "required" else None
    low, high = value_range(Measure(family, cutoff), 480)
    assert 0 <= low < high <= 480
    assert value_range(parse("PEER@10"), 480) == (0.0, 1.0)
    assert value_range(parse("MaxR"), 480) == (1.0, 480.0)


# -- item 13: pages stay inside --out, links only from valid task ids -----------------------------


@pytest.mark.parametrize("file_stem, task", [
    ("evil", "../../x"),
    ("evil", "../../../tmp/clirbench-escape"),
    ("evil", "ABSOLUTE"),  # an absolute path (under tmp_path, so that no earlier run's file can interfere)
    ("xquad", "javascript:alert(1)"),
    ("xquad", "x/../../y"),
    ("xquad", ".hidden"),
    ("xquad", "belebele"),  # a valid id, but not the file's: the page would be named after another task
])
def test_html_refuses_a_leaderboard_naming_a_hostile_task(tmp_path, capsys, file_stem, task):
    from clirbench.leaderboard import store

    lb, out = tmp_path / "deep" / "er" / "lb", tmp_path / "deep" / "er" / "site"
    lb.mkdir(parents=True)
    data = store.empty("xquad")
    absolute = tmp_path / "outside" / "clirbench-absolute"
    data["task"] = str(absolute) if task == "ABSOLUTE" else task
    (lb / f"{file_stem}.json").write_text(json.dumps(data))
    before = {p for p in tmp_path.rglob("*")}
    assert main(["leaderboard", "html", "--dir", str(lb), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clirbench: error:") and f"{file_stem}.json" in err[0], err
    written = {p for p in tmp_path.rglob("*")} - before
    assert all(p == out or out in p.parents for p in written), written
    assert not any(p.suffix == ".html" for p in written)
    assert not absolute.with_suffix(".html").exists()
    assert not list(tmp_path.glob("**/clirbench-escape.html"))


def test_html_links_are_built_from_valid_task_ids(tmp_path, capsys):
    from clirbench.leaderboard import store

    lb, out = tmp_path / "lb", tmp_path / "site"
    store.save(store.empty("xquad"), lb / "xquad.json")
    assert main(["leaderboard", "html", "--dir", str(lb), "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert 'href="xquad.html"' in index and sorted(p.name for p in out.iterdir()) == ["index.html", "xquad.html"]
    assert main(["leaderboard", "html", "--dir", str(lb), "--out", str(out), "--task", "../xquad"]) == 2
    assert "cannot name a leaderboard file" in capsys.readouterr().err


def test_check_texts_refuses_exactly_what_check_text_refuses():
    """The one-pass check of many query ids agrees with checking each one (hostile characters among
    plain ids, non-ASCII ids, an overlong one)."""
    from hypothesis import given, settings, strategies as st

    from clirbench.util.errors import ClirbenchError
    from clirbench.leaderboard import store

    def refused(check) -> bool:
        try:
            check()
        except ClirbenchError:
            return True
        return False

    alphabet = st.sampled_from(list("abcXYZ019-_./: ") + ["<", "&", "`", '"', "\\", "\n", "\x00", "\u202e",
                                                           "é", "中", "\u200b", "\x7f", "\ud800"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.text(alphabet, max_size=8), max_size=6), st.booleans())
    def check(ids, overlong):
        if overlong:
            ids = ids + ["q" * (store.MAX_TEXT + 1)]
        one_by_one = any(refused(lambda v=v: store.check_text(v, "query id")) for v in ids)
        assert refused(lambda: store.check_texts(ids, "query id")) == one_by_one

    check()
