"""Inputs that must be read exactly: byte-order marks, ASCII-only grades,
duplicate keys, Indonesian in parallel files, bounded JSON depth and YAML aliases.

The refusals themselves are cases of the malformed-input corpus (tests/malformed/cases.yaml);
here are the inputs that must be *accepted*, and accepted with the same meaning."""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from clirbench import cli
from clirbench.util.errors import MalformedDataError
from clirbench.util.strict import ascii_int, load_yaml, loads_json

BOM = "\ufeff"
PARALLEL = [
    {"item": "p1", "passages": {"en": "The cat sat on the mat.", "de": "Die Katze sass auf der Matte."},
     "questions": [{"id": "q1", "text": {"en": "Where did the cat sit?", "de": "Wo sass die Katze?"}}]},
    {"item": "p2", "passages": {"en": "Rain falls in spring.", "de": "Regen faellt im Fruehling."},
     "questions": [{"id": "q2", "text": {"en": "When does rain fall?", "de": "Wann faellt Regen?"}}]},
    {"item": "p3", "passages": {"en": "Bread is baked in ovens.", "de": "Brot wird in Oefen gebacken."}},
]


def _measures(out: Path) -> dict[str, dict]:
    """{relative result path: measures} of every result JSON under ``out``."""
    found = {}
    for path in sorted(out.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "measures" in data and "query_lang" in data:  # a pool's result, not a gap file
            found[str(path.relative_to(out))] = {k: v.get("value") for k, v in data["measures"].items()}
    return found


def _run(task: str, out: Path, *extra: str) -> dict[str, dict]:
    code = cli.main(["run", "--model", "bm25", "--task", task, "--output", str(out), "--cache-dir",
                     str(out / "cache"), "--no-progress", "--resamples", "10", *extra])
    assert code == 0
    return _measures(out)


def _jsonl(records) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


# ------------------------------------------------------------------ item 2: byte-order marks


def _beir(folder: Path, bom: str) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(bom + _jsonl([
        {"_id": "d1", "text": "The cat sat on the mat."}, {"_id": "d2", "text": "Rain falls in spring."},
        {"_id": "d3", "text": "Bread is baked in ovens."}]), encoding="utf-8")
    (folder / "queries.jsonl").write_text(bom + _jsonl([
        {"_id": "q1", "text": "where did the cat sit"}, {"_id": "q2", "text": "when does rain fall"}]), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(bom + "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n",
                                               encoding="utf-8")
    return folder


def test_a_bom_at_the_start_of_beir_files_is_ignored(tmp_path):
    plain = _run(f"beir:{_beir(tmp_path / 'plain' / 'b', '')}", tmp_path / "out-plain")
    marked = _run(f"beir:{_beir(tmp_path / 'bom' / 'b', BOM)}", tmp_path / "out-bom")
    assert plain and list(plain.values()) == list(marked.values())
    assert list(plain.values())[0]["nDCG@10"] == 1.0


@pytest.mark.parametrize("suffix", ["jsonl", "tsv"])
def test_a_bom_at_the_start_of_a_parallel_file_is_ignored(tmp_path, suffix):
    if suffix == "jsonl":
        text = _jsonl(PARALLEL)
    else:
        rows = ["item\tquestion_id\ten\tde"]
        rows += [f"{r['item']}\t\t{r['passages']['en']}\t{r['passages']['de']}" for r in PARALLEL]
        rows += [f"{r['item']}\t{q['id']}\t{q['text']['en']}\t{q['text']['de']}"
                 for r in PARALLEL for q in r.get("questions", [])]
        text = "\n".join(rows) + "\n"
    for name, bom in (("plain", ""), ("bom", BOM)):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"p.{suffix}").write_text(bom + text, encoding="utf-8")
    plain = _run(f"parallel:{tmp_path / 'plain' / f'p.{suffix}'}", tmp_path / "out-plain", "--scenario", "mono-cross")
    marked = _run(f"parallel:{tmp_path / 'bom' / f'p.{suffix}'}", tmp_path / "out-bom", "--scenario", "mono-cross")
    assert len(plain) == 2 and plain == marked


def test_a_bom_in_translation_bitext_and_lazretrieval_files_is_ignored(tmp_path):
    from clirbench.retrievers.psq.train import read_bitext
    from clirbench.tasks.lazretrieval import read_records
    from clirbench.translate.keyed import FileTranslator

    (tmp_path / "tr.jsonl").write_text(BOM + '{"id": "q1", "language": "de", "text": "Wo?"}\n', encoding="utf-8")
    assert FileTranslator(str(tmp_path / "tr.jsonl")).table == {("q1", "de"): "Wo?"}
    (tmp_path / "b.tsv").write_text(BOM + "das Haus\tthe house\n", encoding="utf-8")
    (tmp_path / "b.tsv.gz").write_bytes(gzip.compress((BOM + "das Haus\tthe house\n").encode()))
    for name in ("b.tsv", "b.tsv.gz"):
        assert read_bitext([tmp_path / name]) == (["das Haus"], ["the house"])
    (tmp_path / "query.json").write_text(BOM + '[{"ID": "q1"}]', encoding="utf-8")
    (tmp_path / "item.json").write_text(BOM + '{"item_id": "i1"}\n', encoding="utf-8")
    assert [r for _, r in read_records(tmp_path / "query.json")] == [{"ID": "q1"}]
    assert [r for _, r in read_records(tmp_path / "item.json")] == [{"item_id": "i1"}]


def test_a_bom_in_a_config_file_is_ignored_and_a_second_one_is_not():
    assert load_yaml(BOM + "models: [bm25]\n", "s.yaml") == {"models": ["bm25"]}
    assert loads_json((BOM + '{"a": 1}').encode(), "f.json") == {"a": 1}
    with pytest.raises(MalformedDataError, match=r"^f.json:1: not valid JSON"):
        loads_json(BOM + '{"a": 1}', "f.json:1")  # a line of a file: its reader drops the file's BOM


# ------------------------------------------------------------------ item 6: ASCII digits only


@pytest.mark.parametrize("text", ["\u0661", "\u0967", "\uff11", "1_0", " 1", "1 ", "", "+", "1.0", "\u00b9"])
def test_only_ascii_integers_are_grades(text):
    """Python's int() takes the first four and the two with spaces; trec_eval's atoi does not."""
    with pytest.raises(ValueError):
        ascii_int(text)


@pytest.mark.parametrize("text, value", [("0", 0), ("1", 1), ("-1", -1), ("+2", 2), ("007", 7)])
def test_ascii_integers_parse(text, value):
    assert ascii_int(text) == value


def test_lazretrieval_grades_as_strings_or_numbers(tmp_path):
    from clirbench.tasks.lazretrieval import _grade

    assert [_grade(v, "w") for v in (2, 2.0, "2", "2.0", " 1 ")] == [2, 2, 2, 2, 1]
    for bad in ("\u0662", "1_0", "inf", "nan", float("inf"), float("nan"), 1.5, True):
        with pytest.raises(MalformedDataError, match="^w: rscore must be an integer grade"):
            _grade(bad, "w")


# ------------------------------------------------------------------ item 5: duplicate keys


def test_duplicate_keys_are_refused_at_any_depth_with_file_line_and_key():
    with pytest.raises(MalformedDataError, match=r"^f:3: duplicate key 'b' in a JSON object$"):
        loads_json('{"a": {"b": 1, "b": 2}}', "f:3")
    with pytest.raises(MalformedDataError, match=r"^s.yaml:4: duplicate key 'x'$"):
        load_yaml("a:\n  x: 1\n  y: 2\n  x: 3\n", "s.yaml")
    assert load_yaml("a: {x: 1, y: 2}\nb: [1, 2]\n", "s.yaml") == {"a": {"x": 1, "y": 2}, "b": [1, 2]}


# ------------------------------------------------------------------ item 7: Indonesian parallel data


def _indonesian(records_form: str) -> list[dict]:
    texts = [("The cat sat on the mat.", "Kucing itu duduk di atas tikar."),
             ("Rain falls in spring.", "Hujan turun di musim semi."),
             ("Bread is baked in ovens.", "Roti dipanggang di dalam oven.")]
    questions = [("Where did the cat sit?", "Di mana kucing itu duduk?"), ("When does rain fall?", "Kapan hujan turun?")]
    out = []
    for i, (en, ind) in enumerate(texts):
        record = {"item": f"p{i + 1}", "passages": {"en": en, "id": ind}}
        if i < len(questions):
            record["questions"] = [{"id": f"q{i + 1}", "text": {"en": questions[i][0], "id": questions[i][1]}}]
        out.append(record)
    return out


def test_indonesian_runs_end_to_end_through_the_cli(tmp_path):
    path = tmp_path / "en-id.jsonl"
    path.write_text(_jsonl(_indonesian("new")), encoding="utf-8")
    measures = _run(f"parallel:{path}", tmp_path / "out")
    assert len(measures) == 8  # 4 scenarios x 2 query languages on the en+id pair
    results = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("*.json") if "query_lang" in p.read_text()]
    assert {r["query_lang"] for r in results} == {"en", "id"}
    assert all(r["num_queries"] == 2 for r in results)
    per_query = next((tmp_path / "out").rglob("*.perquery.tsv")).read_text().splitlines()
    assert sorted(line.split("\t")[0] for line in per_query[1:]) == ["q1", "q2"]  # ids, not Indonesian texts
    mono_same_id = next(r for r in results if r["scenario"] == "mono-same" and r["query_lang"] == "id")
    assert mono_same_id["measures"]["RR"]["value"] == 1.0


def test_the_older_question_form_is_still_read_and_means_the_same(tmp_path):
    old = [dict(r, questions=[{"id": q["id"], **q["text"]} for q in r["questions"]]) if "questions" in r else r
           for r in PARALLEL]
    assert old[0]["questions"][0] == {"id": "q1", "en": "Where did the cat sit?", "de": "Wo sass die Katze?"}
    for name, records in (("old", old), ("new", PARALLEL)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "p.jsonl").write_text(_jsonl(records), encoding="utf-8")
    assert _run(f"parallel:{tmp_path / 'old' / 'p.jsonl'}", tmp_path / "out-old") == \
        _run(f"parallel:{tmp_path / 'new' / 'p.jsonl'}", tmp_path / "out-new")


def test_a_tsv_with_an_indonesian_column_is_read(tmp_path):
    from clirbench.tasks.parallel_data import read_items

    path = tmp_path / "p.tsv"
    path.write_text("item\tquestion_id\ten\tid\np1\t\tThe cat.\tKucing itu.\np1\tq1\tCat?\tKucing?\n", encoding="utf-8")
    items = read_items(path)
    assert items.languages == ("en", "id")
    assert items.questions == [("q1", "p1", {"en": "Cat?", "id": "Kucing?"})]


# ------------------------------------------------------------------ item 8: bounded cost


def test_deep_json_is_refused_quickly_and_shallow_json_with_many_brackets_is_read():
    deep = '{"a": ' + "[" * 200_000 + "]" * 200_000 + "}"
    start = time.perf_counter()
    with pytest.raises(MalformedDataError, match=r"^f:1: JSON nested deeper than 64 levels$"):
        loads_json(deep, "f:1")
    assert time.perf_counter() - start < 2.0
    wide = json.dumps({"a": [[i] for i in range(1000)], "s": "[[[[[[" * 100})
    assert len(loads_json(wide, "f")["a"]) == 1000
    exactly = "[" * 64 + "]" * 64
    assert loads_json(exactly, "f") == json.loads(exactly)


def test_billion_laughs_yaml_is_refused_before_any_expansion(tmp_path):
    """Nine anchors, each a list of nine aliases of the previous: 9**9 strings once expanded (the
    error message's repr of it took 82 s and 3 GB); refused at the first anchor."""
    anchors = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        anchors.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    text = "tasks:\n  - task: xquad\n    options:\n" + "".join(f"      {a}\n" for a in anchors) + "models: [*i]\n"
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size < 700
    start = time.perf_counter()
    assert cli.main(["sweep", str(path), "--dry-run"]) == 2
    assert time.perf_counter() - start < 2.0


def test_corrupt_gzip_bitext_is_one_error_naming_the_file(tmp_path):
    from clirbench.retrievers.psq.train import read_bitext

    data = bytearray(gzip.compress(b"das Haus\tthe house\n" * 50, mtime=0))
    data[20:30] = b"\x00" * 10
    (tmp_path / "b.tsv.gz").write_bytes(bytes(data))
    with pytest.raises(MalformedDataError, match=r"b\.tsv\.gz: not a readable gzip file"):
        read_bitext([tmp_path / "b.tsv.gz"])


# ------------------------------------------------------------------ found while building the corpus


def test_leaderboard_submit_with_and_without_command_runs_the_subcommand(tmp_path, capsys):
    out = tmp_path / "out"
    _run("xquad", out, "--langs", "en,de", "--scenario", "mono-cross", "--query-lang", "de")
    result = next(p for p in out.rglob("*.json") if "measures" in p.read_text())
    assert cli.main(["leaderboard", "submit", str(result), "--dir", str(tmp_path / "lb")]) == 0
    assert cli.main(["leaderboard", "build", str(out), "--dir", str(tmp_path / "lb2"),
                     "--command", "clirbench run --model bm25"]) == 0
    assert "merged" in capsys.readouterr().out
    assert (tmp_path / "lb" / "xquad.json").is_file() and (tmp_path / "lb2" / "xquad.json").is_file()
    assert "clirbench run --model bm25" in (tmp_path / "lb2" / "xquad.json").read_text()


# ------------------------------------------------------------------ hostile inputs that must still be accepted
# (the refusals are cases of tests/malformed/cases.yaml; here, what must still be accepted)


@pytest.mark.parametrize("code, tag", [("en", "en"), ("EN", "en"), ("zh-cn", "zh-CN"), ("KOR_HANG", "kor_Hang"),
                                       ("sr-latn-rs", "sr-Latn-RS"), ("es-419", "es-419"), ("eng_Latn", "eng_Latn")])
def test_language_tags_are_put_in_bcp47_case(code, tag):
    from clirbench.util.strict import language_tag

    assert language_tag(code, "x") == tag


def test_en_and_EN_in_a_beir_folder_are_one_language(tmp_path):
    folder = _beir(tmp_path / "b", "")
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    tagged = [line.replace("{", '{"lang": "%s", ' % lang, 1) for line, lang in zip(lines, ("en", "EN"))]
    (folder / "corpus.jsonl").write_text("\n".join(tagged) + "\n", encoding="utf-8")
    results = _run(f"beir:{folder}", tmp_path / "out")
    assert len(results) == 1 and "/en.q-und.json" in next(iter(results)).replace("\\", "/")


def test_upper_case_language_keys_of_a_parallel_file_mean_the_same(tmp_path):
    upper = [json.loads(json.dumps(r).replace('"en"', '"EN"').replace('"de"', '"De"')) for r in PARALLEL]
    for name, records in (("lower", PARALLEL), ("upper", upper)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "p.jsonl").write_text(_jsonl(records), encoding="utf-8")
    lower = _run(f"parallel:{tmp_path / 'lower' / 'p.jsonl'}", tmp_path / "out-lower", "--scenario", "mono-cross")
    upper = _run(f"parallel:{tmp_path / 'upper' / 'p.jsonl'}", tmp_path / "out-upper", "--scenario", "mono-cross")
    assert len(lower) == 2 and lower == upper


def test_surrogate_pairs_and_escaped_backslashes_are_text_and_long_integers_within_the_bound():
    assert loads_json('"\\ud83d\\ude00 \\\\ud800"', "f") == "\U0001F600 \\ud800"
    assert loads_json("1" * 100, "f") == int("1" * 100)
    assert ascii_int("2147483647", -2**31 + 1, 2**31 - 1) == 2**31 - 1
    with pytest.raises(ValueError, match="out of range"):
        ascii_int("2147483648", -2**31 + 1, 2**31 - 1)


def test_a_line_separator_inside_a_json_string_is_text(tmp_path):
    """JSON Lines are split at \\n only: U+2028 in a passage is text (a TSV cell refuses it)."""
    records = json.loads(json.dumps(PARALLEL).replace("Rain falls", "Rain\u2028falls"))
    (tmp_path / "p.jsonl").write_text(_jsonl(records), encoding="utf-8")
    from clirbench.tasks.parallel_data import read_items

    assert read_items(tmp_path / "p.jsonl").passages["p2"]["en"] == "Rain\u2028falls in spring."


def test_specs_within_the_bounds_are_read():
    from clirbench.retrievers.fusion import MAX_DEPTH, parse_fusion
    from clirbench.retrievers.psq.retriever import parse_spec
    from clirbench.retrievers.spec import spec_params

    spec = "bm25"
    for _ in range(MAX_DEPTH - 1):
        spec = f"fusion:rrf({spec},bm25)"
    assert len(parse_fusion(spec[len("fusion:"):]).parts) == 2
    assert parse_spec("a.json.gz+b.json.gz?alpha=0.2&max-alternatives=8") == (
        ["a.json.gz", "b.json.gz"], {"alpha": 0.2, "max_alternatives": 8})
    assert spec_params("nprobe=8, efSearch=16", ",", "x") == {"nprobe": "8", "efSearch": "16"}


@pytest.mark.parametrize("option, value", [("--resamples", "\u0661\u0660"), ("--seed", "\uff11")])
def test_count_options_take_ascii_digits_only(option, value, capsys):
    """``int("١٠")`` is 10 in Python: such an argument was accepted as a count."""
    assert cli.main(["evaluate", "--qrels", "q", "--run", "r", option, value]) == 2
    assert f"argument {option}" in capsys.readouterr().err


def test_line_ends_are_lf_or_crlf_and_a_lone_carriage_return_names_its_line():
    """``raw_lines`` (under every TREC, JSON Lines, TSV and bitext reader) on random bytes with
    ``\\r``, ``\\n`` and ``\\r\\n``: the lines, ending at ``\\n``, of a file whose every ``\\r``
    ends a line as ``\\r\\n``; else one error naming the line of the first other ``\\r``."""
    import io
    import random
    import re

    from clirbench.formats.jsonl import raw_lines

    rng = random.Random(29)
    refused = 0
    for _ in range(3000):
        data = b"".join(rng.choice([b"a", b" ", b"\t", b"\n", b"\r\n", b"\r", b"\xc3\xa9"])
                        for _ in range(rng.randint(0, 12)))
        lone = re.search(rb"\r(?!\n)", data)
        if lone is None:
            lines = [line for _, line in raw_lines(io.BytesIO(data), "f")]
            assert b"".join(lines) == data and all(b"\n" not in line[:-1] for line in lines)
            continue
        refused += 1
        line = data[:lone.start()].count(b"\n") + 1
        with pytest.raises(MalformedDataError, match=rf"^f:{line}: a carriage return \(\\r\) not followed by a line"):
            list(raw_lines(io.BytesIO(data), "f"))
    assert 500 < refused < 2500
