"""XQuAD loader on the real files (the copy the package ships): counts, alignment, spot checks."""
import json
import shutil
from pathlib import Path

import pytest

from clirbench.results.files import is_record_file
from clirbench.util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from clirbench.tasks import get_task, list_tasks

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


@pytest.fixture(scope="module")
def xquad():
    return get_task("xquad").load(data_dir=XQUAD)


def test_card_and_registry_agree():
    task = get_task("xquad")
    assert "xquad" in [t.id for t in list_tasks()]
    assert task.card.languages == ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
    assert set(task.card.files_sha256) == set(task.card.languages)


def test_counts_per_language(xquad):
    for lang in xquad.languages:
        assert len(xquad.passages[lang]) == 240
        assert len(xquad.questions[lang]) == 1190
        assert len({q.id for q in xquad.questions[lang]}) == 1190


def test_files_match_the_card_hashes(xquad):
    assert xquad.source["files_match_card"] is True
    assert xquad.source["files_sha256"]["en"] == get_task("xquad").card.files_sha256["en"]


def test_spot_checks_first_middle_last(xquad):
    en, zh = xquad.questions["en"], xquad.questions["zh"]
    assert en[0].id == zh[0].id == "56beb4343aeaaa14008c925b"
    assert en[0].text == "How many points did the Panthers defense surrender?"
    assert zh[0].text == "黑豹队的防守丢了多少分？"
    assert en[0].item == "p000"
    assert xquad.passages["en"]["p000"].startswith("The Panthers defense gave up just 308 points")
    assert xquad.passages["zh"]["p000"].startswith("黑豹队的防守只丢了 308分")
    # the last question belongs to the last paragraph in every language
    assert en[-1].item == zh[-1].item == "p239"
    assert en[-1].id == zh[-1].id
    middle = en[595]
    assert xquad.questions["ar"][595].id == middle.id and xquad.questions["ar"][595].item == middle.item


def test_items_align_across_languages(xquad):
    reference = [(q.id, q.item) for q in xquad.questions["en"]]
    for lang in xquad.languages:
        assert [(q.id, q.item) for q in xquad.questions[lang]] == reference
        assert [q.lang for q in xquad.questions[lang]] == [lang] * 1190


def test_texts_are_stripped(xquad):
    for lang in xquad.languages:
        assert all(t == t.strip() for t in xquad.passages[lang].values())
        assert all(q.text == q.text.strip() for q in xquad.questions[lang])


def test_env_var_location(tmp_path, monkeypatch):
    (tmp_path / "xquad").mkdir()
    for lang in ("en", "de"):
        shutil.copy(XQUAD / f"xquad.{lang}.json", tmp_path / "xquad")
    monkeypatch.setenv("CLIRBENCH_DATA_DIR", str(tmp_path))
    collection = get_task("xquad").load(["en", "de"])
    assert collection.source["origin"] == str(tmp_path / "xquad")
    assert len(collection.questions["de"]) == 1190


def test_misaligned_files_fail_with_a_clear_message(tmp_path):
    for lang in ("en", "de"):
        shutil.copy(XQUAD / f"xquad.{lang}.json", tmp_path)
    data = json.loads((tmp_path / "xquad.de.json").read_text())
    data["data"][3]["paragraphs"][1]["qas"][0]["id"] = "not-the-same-id"
    (tmp_path / "xquad.de.json").write_text(json.dumps(data))
    with pytest.raises(MalformedDataError, match="do not align"):
        get_task("xquad").load(["en", "de"], data_dir=tmp_path)


def test_malformed_file(tmp_path):
    (tmp_path / "xquad.en.json").write_text("{not json")
    with pytest.raises(MalformedDataError, match="xquad.en.json"):
        get_task("xquad").load(["en"], data_dir=tmp_path)


def test_missing_language_file(tmp_path):
    shutil.copy(XQUAD / "xquad.en.json", tmp_path)
    with pytest.raises(DataNotFoundError, match="xquad.zh.json"):
        get_task("xquad").load(["en", "zh"], data_dir=tmp_path)


def test_unknown_task_and_language():
    with pytest.raises(UnknownNameError, match="unknown task 'nope'"):
        get_task("nope")
    with pytest.raises(UnknownNameError, match="unknown language"):
        get_task("xquad").load(["en", "fr"], data_dir=XQUAD)


# --- the copy embedded in the package (clirbench/data/xquad) -------------------------------------

EMBEDDED = Path(__file__).resolve().parents[1] / "clirbench" / "data" / "xquad"


def _with_embedded(card, folder):
    """The card with its embedded copy moved to ``folder`` (an absolute path replaces the package's)."""
    import dataclasses

    return dataclasses.replace(card, source={**card.source, "embedded": str(folder)})


def test_embedded_copy_equals_the_original_files_in_all_12_languages(monkeypatch, xquad):
    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    embedded = get_task("xquad").load()  # no data_dir, no environment: the package's copy
    assert embedded.source["origin"] == "embedded:clirbench/data/xquad"
    assert xquad.source["origin"] == str(XQUAD)
    assert embedded.languages == xquad.languages and len(embedded.languages) == 12
    assert embedded.passages == xquad.passages
    assert embedded.questions == xquad.questions
    # the same file hashes, so results from either copy record the same dataset
    assert embedded.source["files_sha256"] == xquad.source["files_sha256"] == dict(get_task("xquad").card.files_sha256)
    assert embedded.source["files_match_card"] is True


def test_embedded_copy_ships_its_licence_and_attribution():
    names = sorted(p.name for p in EMBEDDED.iterdir())
    assert names == sorted(["ATTRIBUTION.md", "CC-BY-SA4.0.txt"] + [f"xquad.{l}.json.xz" for l in get_task("xquad").card.languages])
    assert "Attribution-ShareAlike 4.0 International" in (EMBEDDED / "CC-BY-SA4.0.txt").read_text()
    attribution = (EMBEDDED / "ATTRIBUTION.md").read_text()
    for needle in ("Artetxe", "Ruder", "Yogatama", "On the Cross-lingual Transferability of Monolingual Representations",
                   "github.com/google-deepmind/xquad", "CC BY-SA 4.0", "Changes:"):
        assert needle in attribution
    assert sum(p.stat().st_size for p in EMBEDDED.iterdir()) < 2_000_000


def test_lookup_order_data_dir_then_environment_then_embedded(tmp_path, monkeypatch):
    from clirbench.tasks import hub

    card = get_task("xquad").card
    (tmp_path / "env" / "xquad").mkdir(parents=True)
    shutil.copy(XQUAD / "xquad.en.json", tmp_path / "env" / "xquad")
    monkeypatch.setenv("CLIRBENCH_DATA_DIR", str(tmp_path / "env"))
    assert hub.find_local_dir(card, XQUAD) == XQUAD
    assert hub.find_local_dir(card, None) == tmp_path / "env" / "xquad"
    monkeypatch.setenv("CLIRBENCH_DATA_DIR", str(tmp_path / "nothing-here"))
    assert hub.find_local_dir(card, None) == EMBEDDED
    with pytest.raises(DataNotFoundError, match="no xquad.<lang>.json files"):  # explicit: no fall-back
        hub.find_local_dir(card, tmp_path / "nothing-here")


def test_tampered_embedded_file_is_refused_by_hash(tmp_path, monkeypatch):
    import lzma

    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    shutil.copytree(EMBEDDED, tmp_path / "xquad")
    data = json.loads(lzma.decompress((tmp_path / "xquad" / "xquad.zh.json.xz").read_bytes()))
    data["data"][0]["paragraphs"][0]["context"] += " (altered)"
    (tmp_path / "xquad" / "xquad.zh.json.xz").write_bytes(lzma.compress(json.dumps(data).encode()))
    card = _with_embedded(get_task("xquad").card, tmp_path / "xquad")
    from clirbench.tasks import xquad as loader

    assert loader.load(card, ["en"]).source["files_match_card"] is True  # untouched files still load
    with pytest.raises(MalformedDataError, match="embedded xquad file for zh does not match the SHA-256"):
        loader.load(card, ["en", "zh"])
    (tmp_path / "xquad" / "xquad.en.json.xz").write_bytes(b"\xfd7zXZ\x00 truncated")
    with pytest.raises(MalformedDataError, match="xquad.en.json.xz: cannot be read"):
        loader.load(card, ["en"])


def test_tampered_package_copy_is_one_line_from_the_cli(tmp_path):
    """A copy of the package whose embedded zh file was altered: `clirbench run` refuses it in one line."""
    import lzma
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    shutil.copytree(root / "clirbench", tmp_path / "site" / "clirbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site" / "clirbench" / "data" / "xquad" / "xquad.zh.json.xz"
    target.write_bytes(lzma.compress(lzma.decompress(target.read_bytes()).replace(b"308", b"309", 1)))
    env = {k: v for k, v in os.environ.items() if k not in ("CLIRBENCH_DATA_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    code = "import sys, clirbench.cli; sys.exit(clirbench.cli.main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "run", "--model", "bm25", "--task", "xquad", "--langs",
                           "en,zh", "--output", str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("clirbench: error:") and "does not match the SHA-256 pinned in the task card" in line
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.json"))


def test_run_without_data_dir_uses_the_embedded_copy_and_records_it(tmp_path, monkeypatch, capsys):
    from clirbench.cli import main
    from clirbench.results import read_result

    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross",
                 "--query-lang", "zh", "--resamples", "20", "--output", "results"]) == 0
    (path,) = [p for p in (tmp_path / "results").rglob("*.json") if is_record_file(p)]
    result = read_result(path)
    assert result.task.source == "embedded:clirbench/data/xquad"
    assert dict(result.task.files_sha256) == {l: get_task("xquad").card.files_sha256[l] for l in ("en", "zh")}


def test_tasks_reports_the_embedded_copy_and_its_licence(monkeypatch, capsys):
    from clirbench.cli import main

    monkeypatch.delenv("CLIRBENCH_DATA_DIR", raising=False)
    assert main(["tasks", "--json"]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out) if r["id"] == "xquad"]
    assert row["data"] == f"embedded (CC-BY-SA-4.0): {EMBEDDED}"
    assert main(["tasks"]) == 0
    assert f"data: embedded (CC-BY-SA-4.0): {EMBEDDED}" in capsys.readouterr().out


def test_card_schema_checks_the_embedded_field():
    import yaml

    from clirbench.tasks.card import cards_dir, parse_card

    data = yaml.safe_load((cards_dir() / "xquad.yaml").read_text())
    assert parse_card(data, "xquad.yaml").source["embedded"] == "data/xquad"
    for bad in ("../elsewhere", "/abs/path", ""):
        with pytest.raises(MalformedDataError, match="source.embedded must be a folder inside"):
            parse_card({**data, "source": {**data["source"], "embedded": bad}}, "x.yaml")
    sha = dict(data["files_sha256"])
    del sha["th"]
    with pytest.raises(MalformedDataError, match="files_sha256 for every language .missing: th"):
        parse_card({**data, "files_sha256": sha}, "x.yaml")


def test_the_wheel_ships_the_embedded_copy_and_reads_it(tmp_path):
    """Build the wheel (hatchling, no network), unpack it as an installation, read XQuAD from it."""
    import os
    import subprocess
    import sys
    import zipfile

    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    str(root), "-w", str(tmp_path / "wheel")], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "wheel").glob("clirbench-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    for name in ("ATTRIBUTION.md", "CC-BY-SA4.0.txt", "xquad.en.json.xz", "xquad.zh.json.xz"):
        assert f"clirbench/data/xquad/{name}" in names
    env = {k: v for k, v in os.environ.items() if k not in ("CLIRBENCH_DATA_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    code = ("import clirbench, json; from clirbench.tasks import get_task; c = get_task('xquad').load(['en', 'zh']); "
            "print(json.dumps([clirbench.__file__, c.source['origin'], c.source['files_match_card'], "
            "get_task('xquad').locate()]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    init, origin, match, where = json.loads(proc.stdout)
    assert init == str(tmp_path / "site" / "clirbench" / "__init__.py")
    assert origin == "embedded:clirbench/data/xquad" and match is True
    assert where == f"embedded (CC-BY-SA-4.0): {tmp_path / 'site' / 'clirbench' / 'data' / 'xquad'}"


def test_the_readme_says_the_embedded_data_is_cc_by_sa_not_apache():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Licence and data"):]
    assert "The XQuAD data shipped in `clirbench/data/xquad` is not: it is\nCC-BY-SA 4.0" in section
    assert "clirbench/data/xquad/CC-BY-SA4.0.txt" in section and "clirbench/data/xquad/ATTRIBUTION.md" in section
