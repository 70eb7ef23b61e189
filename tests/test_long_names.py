"""File and folder names built from long ids stay under the file system's limit.

Pools of many languages, long model paths, long ``parallel:<file>`` task ids: every name clirbench
builds fits in ``identity.NAME_LIMIT`` bytes of UTF-8 (a readable prefix, ``~`` and a hash of the
whole), the full value stays in the record, and a second run finds the same file and reuses it.
Short names do not change.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path


from clirbench.results.files import is_record_file
from clirbench import cli
from clirbench.util.atomic import write_text_atomic
from clirbench.identity import NAME_LIMIT, NAME_MAX, PoolKey, SystemKey, fit_name, slug
from clirbench.mteb.names import parse_task_name, task_name
from clirbench.results import result_path

# 30 FLORES codes, as belebele --langs all names them
LANGS = ["eng_Latn", "akp_Latn", "deu_Latn", "fra_Latn", "spa_Latn", "ita_Latn", "por_Latn", "nld_Latn", "swe_Latn",
         "dan_Latn", "fin_Latn", "est_Latn", "lav_Latn", "lit_Latn", "pol_Latn", "ces_Latn", "slk_Latn", "slv_Latn",
         "hrv_Latn", "ron_Latn", "hun_Latn", "tur_Latn", "ind_Latn", "vie_Latn", "tgl_Latn", "swh_Latn", "yor_Latn",
         "ibo_Latn", "hau_Latn", "zul_Latn"]


def _parallel(path: Path, langs) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(3):
            f.write(json.dumps({"item": f"p{i}", "passages": {l: f"passage {i} about w{i} in {l}" for l in langs},
                                "questions": [{"id": f"q{i}", "text": {l: f"about w{i}" for l in langs}}]}) + "\n")
    return path


def _names(root: Path) -> list[str]:
    return [name for _, dirs, files in os.walk(root) for name in dirs + files]


def test_fit_name_keeps_short_names_and_bounds_long_ones():
    assert fit_name("en-zh") == "en-zh"
    assert fit_name("a" * NAME_LIMIT) == "a" * NAME_LIMIT
    long = fit_name("a" * (NAME_LIMIT + 1))
    assert len(long.encode()) <= NAME_LIMIT and long.startswith("aaaa") and "~" in long
    assert fit_name("a" * (NAME_LIMIT + 1)) == long  # deterministic: a rerun finds the same file
    assert fit_name("a" * (NAME_LIMIT + 2)) != long  # a different name, a different file
    wide = fit_name("語" * 300)  # bytes of UTF-8, not characters; whole characters kept
    assert len(wide.encode("utf-8")) <= NAME_LIMIT and wide.split("~")[0] == "語" * len(wide.split("~")[0])
    assert NAME_LIMIT < NAME_MAX


def test_short_names_do_not_change():
    assert slug("dense:intfloat/multilingual-e5-large") == "dense__intfloat__multilingual-e5-large"
    assert SystemKey("bm25", translation=("query", "gold")).slug == "bm25+qt-gold"
    pool = PoolKey("belebele", "", "multi", "unique", ("eng_Latn", "kor_Hang"), "kor_Hang")
    assert pool.path_parts() == ("belebele", "multi", "unique", "eng_Latn-kor_Hang.q-kor_Hang.json")
    assert str(result_path("out", "bm25", pool)) == "out/bm25/belebele/multi/unique/eng_Latn-kor_Hang.q-kor_Hang.json"
    assert task_name("xquad", "multi", "unique") == "clirbench.xquad.multi.unique"


def test_long_names_keep_the_query_language_and_fit():
    pool = PoolKey("belebele", "", "multi", "per-query", tuple(LANGS), "akp_Latn")
    name = pool.path_parts()[-1]
    assert name.endswith("~" + name.split("~")[1]) and name.endswith(".q-akp_Latn.json")
    assert len((name[:-5] + ".perquery.tsv").encode()) <= NAME_LIMIT
    assert name.startswith("eng_Latn-akp_Latn-")
    other = PoolKey("belebele", "", "multi", "per-query", tuple(LANGS[:-1]) + ("xho_Latn",), "akp_Latn")
    assert other.path_parts()[-1] != name
    system = SystemKey("dense:" + "m" * 400, translation=("docs", "file:/" + "t" * 300))
    assert len(system.slug.encode()) <= NAME_LIMIT and system.slug.startswith("dense__mmm")
    mteb = task_name("parallel:" + "p" * 300, "multi", "per-query", "s" * 300)
    assert len(mteb.encode()) + len(".json") <= NAME_LIMIT
    assert parse_task_name(mteb)[1:3] == ("multi", "per-query")


def test_temp_files_of_a_long_user_name_fit(tmp_path):
    target = tmp_path / ("r" * 250 + ".json")  # the name fits; its temp name would not
    write_text_atomic(target, "{}\n")
    assert target.read_text() == "{}\n" and os.listdir(tmp_path) == [target.name]


def test_thirty_language_pool_runs_writes_and_is_reused(tmp_path, capsys):
    data = _parallel(tmp_path / "flores30.jsonl", LANGS)
    argv = ["run", "--model", "bm25", "--task", f"parallel:{data}", "--langs", ",".join(LANGS),
            "--scenario", "multi", "--pool", "per-query", "--query-lang", "akp_Latn,zul_Latn",
            "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
            "--resamples", "10"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    first = capsys.readouterr().out
    assert "2 pools (0 reused)" in first
    results = sorted(p for p in (tmp_path / "out").rglob("*.json") if is_record_file(p))
    assert len(results) == 2 and len(list((tmp_path / "out").rglob("*.consistency.json"))) == 1
    assert all(len(n.encode()) <= NAME_LIMIT for n in _names(tmp_path / "out"))
    record = json.loads(results[0].read_text(encoding="utf-8"))
    assert record["doc_langs"] == LANGS and record["query_lang"] == "akp_Latn"  # the full list, in the record
    for path in results:
        assert (path.parent / (path.name[:-5] + ".perquery.tsv")).is_file()
    stamps = [p.stat().st_mtime_ns for p in results]
    assert cli.main(argv) == 0
    assert "2 pools (2 reused)" in capsys.readouterr().out
    assert [p.stat().st_mtime_ns for p in results] == stamps
    assert sorted(p for p in (tmp_path / "out").rglob("*.json") if is_record_file(p)) == results


def test_long_task_file_and_long_model_folder(tmp_path, capsys, tiny_bert_dir):
    data = _parallel(tmp_path / ("p" * 240 + ".jsonl"), ["en", "de"])
    model = tmp_path / ("m" * 250)
    shutil.copytree(tiny_bert_dir, model)
    argv = ["run", "--model", f"dense:{model}", "--task", f"parallel:{data}", "--scenario", "mono-cross",
            "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
            "--resamples", "10"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "2 pools (0 reused)" in capsys.readouterr().out
    results = sorted((tmp_path / "out").rglob("*.json"))
    assert len(results) == 2 and all(len(n.encode()) <= NAME_LIMIT for n in _names(tmp_path / "out"))
    record = json.loads(results[0].read_text(encoding="utf-8"))
    assert record["task"]["id"] == "parallel:" + "p" * 240  # the full id in the record
    assert cli.main(argv) == 0
    assert "2 pools (2 reused)" in capsys.readouterr().out


def test_an_output_folder_name_over_the_limit_is_refused_before_any_work(tmp_path, capsys):
    data = _parallel(tmp_path / "mini.jsonl", ["en", "de"])
    out = tmp_path / ("o" * 300)
    code = cli.main(["run", "--model", "bm25", "--task", f"parallel:{data}", "--scenario", "mono-cross",
                     "--output", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                     "--resamples", "10"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("clirbench: ") and "'ooooo" in err[0] and "300 bytes" in err[0] and "255" in err[0]
