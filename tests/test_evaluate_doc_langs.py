"""``clirbench evaluate --doc-langs / --query-lang / --preset neuclir`` (docs/commands.md): the
document-language map's reader, NeuCLIR's set on an MLIR-shaped run against ir_measures (nDCG@20,
AP, R@100, R@1000, Judged@20; nDCG@20 per language on files restricted to that language, written
and read back here) and pyndeval (alpha-nDCG@20 with the language as subtopic, on the run with its
ties broken in trec_eval's order), the exposure measures on a run, and the one-line errors
(malformed map lines, documents missing from the map)."""
from __future__ import annotations

import gzip
import json
import math
import random

import numpy as np
import pytest

from clirbench.cli import main
from clirbench.formats.doc_langs import read_doc_langs
from clirbench.trec_files import evaluate_trec_files, run_tag_parts
from tests.cli_helpers import one_line_error

LANGS = ("zh", "fa", "ru")
TAG = "hltcoe-plaid_mt-td"
NEUCLIR = ("nDCG@20", "AP", "R@100", "R@1000", "Judged@20")


def mlir_fixture(seed: int = 7, queries: int = 9, docs_per_lang: int = 40):
    """(doc langs, qrels, run): three languages, grades 0/1/3, scores on a coarse grid (many ties,
    some across the 20th place), ids that do not sort by language; a judged query outside the run, a
    run query outside the qrels, a query judged in one language only, one judged all 0."""
    rng = random.Random(seed)
    langs = {}
    for lang in LANGS:
        for _ in range(docs_per_lang):
            langs[f"d{rng.randrange(16 ** 6):06x}"] = lang
    docs = sorted(langs)
    qrels, run = {}, {}
    for i in range(queries):
        qid = f"q{i + 1}"
        pool = [d for d in docs if langs[d] == "fa"] if i == 2 else docs
        judged = rng.sample(pool, 14)
        grades = [0] * 14 if i == 3 else [rng.choice((0, 1, 1, 3)) for _ in judged]
        qrels[qid] = dict(zip(judged, grades))
        if i == queries - 1:
            continue  # judged, not in the run
        retrieved = rng.sample(docs, 60) + [d for d in judged if rng.random() < 0.5]
        run[qid] = {d: rng.randrange(0, 12) / 4.0 for d in dict.fromkeys(retrieved)}
    run["q_unjudged"] = {docs[0]: 1.0, docs[1]: 1.0}
    return langs, qrels, run


def write_run(path, run, tag=TAG):
    lines = []
    for qid, hits in run.items():
        for rank, (d, s) in enumerate(sorted(hits.items(), key=lambda x: -x[1]), 1):
            lines.append(f"{qid} Q0 {d} {rank} {s!r} {tag}\n")
    path.write_text("".join(lines))


def trec_order(run):
    """The run with distinct scores in trec_eval's order (float32 score descending, then document id
    descending): n, n-1, ..., 1."""
    out = {}
    for qid, hits in run.items():
        ranked = sorted(hits, key=lambda d: (float(np.float32(hits[d])), d), reverse=True)
        out[qid] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    return out


def write_files(tmp_path, langs, qrels, run, tag=TAG, gz=False):
    q = tmp_path / "qrels.txt"
    q.write_text("".join(f"{qid} 0 {d} {g}\n" for qid, js in qrels.items() for d, g in js.items()))
    r = tmp_path / "run.txt"
    write_run(r, run, tag)
    m = tmp_path / ("langs.tsv.gz" if gz else "langs.tsv")
    text = "# docid lang\n" + "".join(f"{d}\t{lang}\n" for d, lang in langs.items())
    m.write_bytes(gzip.compress(text.encode())) if gz else m.write_text(text)
    return str(q), str(r), str(m)


def evaluate_json(capsys, argv) -> dict:
    assert main(["evaluate", "--format", "json", "--resamples", "10"] + argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def ir_measures_values(qrels_path, run_path, names) -> dict[str, float]:
    import ir_measures

    measures = [ir_measures.parse_measure(n) for n in names]
    qrels = list(ir_measures.read_trec_qrels(qrels_path))
    run = list(ir_measures.read_trec_run(run_path))
    return {str(m): v for m, v in ir_measures.calc_aggregate(measures, qrels, run).items()}


def pyndeval_alpha(langs, qrels, run, k=20, untie=True) -> dict[str, float]:
    """pyndeval's alpha-nDCG@k, the language as subtopic, on ``run`` with its ties broken in
    trec_eval's order (``trec_order``: clirbench's tie rule), or as it is (``untie=False``: ndeval
    orders a tie by document id ascending)."""
    import pyndeval

    subtopic_qrels = [(q, langs[d], d, g) for q, js in qrels.items() for d, g in js.items()]
    scored = [(q, d, s) for q, hits in (trec_order(run) if untie else run).items() for d, s in hits.items()]
    out = pyndeval.RelevanceEvaluator(subtopic_qrels, measures=[f"alpha-nDCG@{k}"]).evaluate(scored)
    return {q: v[f"alpha-nDCG@{k}"] for q, v in out.items()}


def restricted_files(tmp_path, qrels_path, run_path, keep_doc, name):
    """The qrels and run files with the lines whose document ``keep_doc`` accepts, the qrels also cut
    to the run's queries: ir_measures scores a judged query missing from a run 0, clirbench leaves
    it out (the documented difference, test_ir_measures_agreement); a query of the run that
    retrieved none of the kept documents is thus 0 on both sides."""
    in_run = {line.split()[0] for line in open(run_path)}
    out = []
    for path, kind in ((qrels_path, "qrels"), (run_path, "run")):
        kept = [line for line in open(path) if keep_doc(line.split()[2]) and line.split()[0] in in_run]
        dest = tmp_path / f"{name}.{kind}"
        dest.write_text("".join(kept))
        out.append(str(dest))
    return out


# --- the map's reader ---------------------------------------------------------------------------


def test_read_pairs_plain_gzip_and_beir(tmp_path):
    (tmp_path / "m.tsv").write_text("\ufeffd1 ZH\n\n# comment\nd2\tfa  \r\nd1 zh\n")
    assert read_doc_langs(tmp_path / "m.tsv") == {"d1": "zh", "d2": "fa"}
    (tmp_path / "m.gz").write_bytes(gzip.compress(b"d1 zh\nd2 fa\n"))
    assert read_doc_langs(tmp_path / "m.gz") == {"d1": "zh", "d2": "fa"}
    corpus = tmp_path / "beir"
    corpus.mkdir()
    (corpus / "corpus.jsonl").write_text('{"_id": "d1", "text": "x", "lang": "zh"}\n\n{"_id": 7, "lang": "RU"}\n')
    assert read_doc_langs(corpus) == {"d1": "zh", "7": "ru"}
    assert read_doc_langs(corpus / "corpus.jsonl") == {"d1": "zh", "7": "ru"}


@pytest.mark.parametrize("text, expected", [
    ("d1 zh\nd2 fa extra\n", "m.tsv:2: expected 2 fields 'docid lang', got 3"),
    ("d1\n", "m.tsv:1: expected 2 fields 'docid lang', got 1"),
    ("d1 zh\nd2 not/a/lang\n", "m.tsv:2:"),
    ("d1 zh\nd1 fa\n", "m.tsv:2: document 'd1' has language fa, zh on line 1"),
    ("# only a comment\n", "no document in the document-language map"),
    ("d1 zh\rd2 fa\n", "m.tsv:1: a carriage return"),
])
def test_malformed_map_is_one_line_exit_2(tmp_path, capsys, text, expected):
    langs, qrels, run = mlir_fixture()
    q, r, _ = write_files(tmp_path, langs, qrels, run)
    (tmp_path / "m.tsv").write_text(text)
    line = one_line_error(capsys, ["evaluate", "--qrels", q, "--run", r, "--doc-langs", str(tmp_path / "m.tsv"),
                                   "--preset", "neuclir"])
    assert expected in line


def test_malformed_beir_map(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    q, r, _ = write_files(tmp_path, langs, qrels, run)
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "lang": "zh"}\n{"_id": "d2", "text": "no lang"}\n')
    line = one_line_error(capsys, ["evaluate", "--qrels", q, "--run", r, "--doc-langs", str(tmp_path / "corpus.jsonl")])
    assert "corpus.jsonl:2: document 'd2' has no 'lang' field" in line
    line = one_line_error(capsys, ["evaluate", "--qrels", q, "--run", r, "--doc-langs", str(tmp_path / "none.tsv")])
    assert "none.tsv: no such file" in line


def test_documents_missing_from_the_map(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    retrieved = sorted({d for hits in run.values() for d in hits})
    missing = retrieved[3:10]
    (tmp_path / "m.tsv").write_text("".join(f"{d} {lang}\n" for d, lang in langs.items() if d not in missing))
    line = one_line_error(capsys, ["evaluate", "--qrels", q, "--run", r, "--doc-langs", str(tmp_path / "m.tsv")])
    assert f"{r}: 7 document(s) of the run are not in the document-language map" in line
    assert ", ".join(repr(d) for d in missing[:5]) + ", ..." in line


def test_exposure_measure_without_map_is_one_line(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, _ = write_files(tmp_path, langs, qrels, run)
    line = one_line_error(capsys, ["evaluate", "--qrels", q, "--run", r, "--measures", "Share@10"])
    assert "Share@10" in line and "--doc-langs" in line


def test_run_tag_parts():
    assert run_tag_parts("hltcoe-plaid_mt-td") == {"tag": "hltcoe-plaid_mt-td", "team": "hltcoe",
                                                   "flags": ["plaid", "mt", "td"]}
    assert run_tag_parts("bm25") == {"tag": "bm25", "team": "bm25", "flags": []}
    assert run_tag_parts("a--b_") == {"tag": "a--b_", "team": "a", "flags": ["b"]}


# --- NeuCLIR's preset against the oracles ------------------------------------------------------


@pytest.mark.parametrize("seed", [7, 11, 23])
def test_neuclir_preset_equals_ir_measures_and_pyndeval(tmp_path, capsys, seed):
    langs, qrels, run = mlir_fixture(seed)
    q, r, m = write_files(tmp_path, langs, qrels, run, gz=seed == 11)
    per_query = tmp_path / "pq.jsonl"
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--preset", "neuclir",
                                    "--per-query", str(per_query)])
    names = list(report["measures"])
    assert names == list(NEUCLIR) + ["alpha_nDCG@20"] + [f"nDCG@20[{lang}]" for lang in sorted(LANGS)]
    assert report["run_tag"] == {"tag": TAG, "team": "hltcoe", "flags": ["plaid", "mt", "td"]}
    assert report["doc_langs"]["documents"] == {"fa": 40, "ru": 40, "zh": 40} and report["doc_langs"]["mlir"]

    expected = ir_measures_values(*restricted_files(tmp_path, q, r, lambda d: True, "all"), NEUCLIR)
    for name in NEUCLIR[:-1]:
        assert report["measures"][name]["value"] == pytest.approx(expected[name], abs=1e-12), name
    # Judged@k: ir_measures breaks a tie by document id ascending, clirbench by trec_eval's rule
    # (docs/commands.md, "Differences from ir_measures"): ir_measures on the run with its ties broken
    # by that rule (distinct scores, same order) gives clirbench's value
    untied = tmp_path / "untied.run"
    write_run(untied, trec_order(run))
    judged = ir_measures_values(*restricted_files(tmp_path, q, str(untied), lambda d: True, "untied"), ["Judged@20"])
    assert report["measures"]["Judged@20"]["value"] == pytest.approx(judged["Judged@20"], abs=1e-12)

    alpha = pyndeval_alpha(langs, qrels, run)
    assert report["measures"]["alpha_nDCG@20"]["n"] == len(alpha) == report["num_queries"]
    assert report["measures"]["alpha_nDCG@20"]["value"] == pytest.approx(sum(alpha.values()) / len(alpha), abs=1e-12)
    rows = [json.loads(line) for line in per_query.read_text().splitlines()]
    mine = {row["query_id"]: row["value"] for row in rows if row["measure"] == "alpha_nDCG@20"}
    assert mine == pytest.approx(alpha, abs=1e-12)
    # ties across the 20th place: ndeval's own order (ids ascending) gives other values (docs/commands.md)
    assert pyndeval_alpha(langs, qrels, run, untie=False) != pytest.approx(alpha, abs=1e-12)

    for lang in LANGS:
        q_l, r_l = restricted_files(tmp_path, q, r, lambda d, lang=lang: langs[d] == lang, lang)
        oracle = ir_measures_values(q_l, r_l, ["nDCG@20"])["nDCG@20"]
        entry = report["measures"][f"nDCG@20[{lang}]"]
        assert entry["value"] == pytest.approx(oracle, abs=1e-12), lang
        import ir_measures

        by_query = {m.query_id: m.value for m in ir_measures.iter_calc(
            [ir_measures.nDCG @ 20], ir_measures.read_trec_qrels(q_l), ir_measures.read_trec_run(r_l))}
        column = {row["query_id"]: row["value"] for row in rows if row["measure"] == f"nDCG@20[{lang}]"}
        assert {k: v for k, v in column.items() if v is not None} == pytest.approx(by_query, abs=1e-12)
        assert entry["n"] == len(by_query)


def test_neuclir_preset_one_language_has_no_mlir_measures(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, {d: "zh" for d in langs}, qrels, run, tag="team_run1")
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--preset", "neuclir",
                                    "--measures", "nDCG@10,AP"])
    assert list(report["measures"]) == list(NEUCLIR) + ["nDCG@10"]
    assert report["run_tag"] == {"tag": "team_run1", "team": "team", "flags": ["run1"]}
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--preset", "neuclir"])  # no map: not MLIR
    assert list(report["measures"]) == list(NEUCLIR) and "doc_langs" not in report


def test_a_language_without_judgements_is_nan_with_a_note(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    langs["zzz_de1"] = "de"  # in the map only
    q, r, m = write_files(tmp_path, langs, qrels, run)
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--preset", "neuclir"])
    entry = report["measures"]["nDCG@20[de]"]
    assert (entry["value"] is None or math.isnan(entry["value"])) and entry["n"] == 0
    assert entry["note"] == "NaN: no query of the run is judged in de"
    assert report["doc_langs"]["documents"]["de"] == 1


def test_library_level_equals_cli(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    evaluation, extras = evaluate_trec_files(q, r, None, 10, 42, doc_langs=m, preset="neuclir")
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--preset", "neuclir"])
    assert extras["run_tag"] == report["run_tag"] and extras["doc_langs"] == report["doc_langs"]
    for name, entry in report["measures"].items():
        assert evaluation[name] == pytest.approx(entry["value"], abs=0, nan_ok=True)


def test_table_output_names_tag_and_languages(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    assert main(["evaluate", "--qrels", q, "--run", r, "--doc-langs", m, "--preset", "neuclir",
                 "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "nDCG@20[zh]" in out and "alpha_nDCG@20" in out
    assert f"run tag: {TAG} (team hltcoe; flags plaid, mt, td)" in out
    assert "document languages (MLIR): fa 40, ru 40, zh 40; query language: not given" in out


# --- the exposure measures on a run -------------------------------------------------------------


def brute_share(langs, run, qrels, query_lang, k):
    """Share@k under uniformly random tie-breaking, by a direct loop: the expected share of the
    query language among the top k (a tie group reaching k contributes pro rata)."""
    out = {}
    for qid, hits in run.items():
        if not qrels.get(qid):
            continue
        scores = {d: float(np.float32(s)) for d, s in hits.items()}
        ranked = sorted(scores, key=lambda d: -scores[d])
        expected, place = 0.0, 0
        groups = {}
        for d in ranked:
            groups.setdefault(scores[d], []).append(d)
        for s in sorted(groups, reverse=True):
            group = groups[s]
            take = min(len(group), k - place)
            if take <= 0:
                break
            expected += take * sum(langs[d] == query_lang for d in group) / len(group)
            place += take
        out[qid] = 100.0 * expected / k
    return out


def test_share_on_a_run_equals_a_direct_loop(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    per_query = tmp_path / "pq.jsonl"
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--query-lang", "zh",
                                    "--measures", "Share@10,alpha_nDCG@20", "--per-query", str(per_query)])
    rows = [json.loads(line) for line in per_query.read_text().splitlines()]
    mine = {row["query_id"]: row["value"] for row in rows if row["measure"] == "Share@10"}
    assert mine == pytest.approx(brute_share(langs, run, qrels, "zh", 10), abs=1e-9)
    assert report["query_lang"] == "zh"
    alpha = pyndeval_alpha(langs, qrels, run)
    assert {row["query_id"]: row["value"] for row in rows if row["measure"] == "alpha_nDCG@20"} == \
        pytest.approx(alpha, abs=1e-12)


def test_share_without_query_lang_is_nan_with_a_note(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--measures", "Share@10"])
    entry = report["measures"]["Share@10"]
    assert entry["value"] is None or math.isnan(entry["value"])
    assert "--query-lang" in entry["note"]


def test_top1_split_sums_to_100_and_is_nan_without_query_lang(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    parts = ["Top1_rel_qlang", "Top1_rel_other", "Top1_nonrel_qlang", "Top1_nonrel_other"]
    per_query = tmp_path / "pq.jsonl"
    evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--query-lang", "fa",
                           "--measures", ",".join(parts), "--per-query", str(per_query)])
    rows = [json.loads(line) for line in per_query.read_text().splitlines()]
    total = {}
    for row in rows:
        total[row["query_id"]] = total.get(row["query_id"], 0.0) + row["value"]
    assert total == pytest.approx({qid: 100.0 for qid in total}, abs=1e-9) and len(total) == 8
    report = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--measures", ",".join(parts)])
    for name in parts:
        entry = report["measures"][name]
        assert (entry["value"] is None or math.isnan(entry["value"])) and "--query-lang" in entry["note"]


def test_beir_corpus_as_the_map(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    corpus = tmp_path / "beir"
    corpus.mkdir()
    (corpus / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": "t", "lang": lang}) + "\n"
                                                 for d, lang in langs.items()))
    from_pairs = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--preset", "neuclir"])
    from_beir = evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", str(corpus), "--preset", "neuclir"])
    assert from_beir["measures"] == from_pairs["measures"]


def test_relevant_documents_missing_from_the_map(tmp_path, capsys):
    langs, qrels, run = mlir_fixture()
    qrels["q1"].update({"zzz1": 1, "zzz2": 0})  # a relevant document the map lacks (and an unjudged one)
    q, r, m = write_files(tmp_path, langs, qrels, run)
    line = one_line_error(capsys, ["evaluate", "--qrels", q, "--run", r, "--doc-langs", m])
    assert line.endswith(f"{q}: 1 document(s) judged relevant for an evaluated query are not in the "
                         f"document-language map {m}: 'zzz1'")
    qrels["q9"] = {"zzz3": 1}  # a judged query outside the run: not evaluated, not checked
    del qrels["q1"]["zzz1"]
    q, r, m = write_files(tmp_path, langs, qrels, run)
    assert main(["evaluate", "--qrels", q, "--run", r, "--doc-langs", m, "--resamples", "10"]) == 0


# --- clirbench trec_eval --doc-langs ------------------------------------------------------------


def trec_eval_lines(capsys, argv) -> dict[tuple[str, str], float]:
    assert main(["trec_eval"] + argv) == 0, capsys.readouterr().err
    out = {}
    for line in capsys.readouterr().out.splitlines():
        name, qid, value = line.split("\t")[:3]
        out[(name.strip(), qid)] = float(value) if value.strip() not in ("nan", "-nan") else float("nan")
    return out


def test_trec_eval_exposure_columns_equal_evaluate(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    names = ["alpha_nDCG@20", "Share@10", "AWRF@10"]
    got = trec_eval_lines(capsys, ["-q", "-m", "ndcg_cut.20", *[x for n in names for x in ("-m", n)],
                                   "--doc-langs", m, "--query-lang", "zh", q, r])
    per_query = tmp_path / "pq.jsonl"
    evaluate_json(capsys, ["--qrels", q, "--run", r, "--doc-langs", m, "--query-lang", "zh",
                           "--measures", ",".join(["nDCG@20"] + names), "--per-query", str(per_query)])
    rows = [json.loads(line) for line in per_query.read_text().splitlines()]
    for row in rows:
        name = "ndcg_cut_20" if row["measure"] == "nDCG@20" else row["measure"]
        expected = float("nan") if row["value"] is None else row["value"]  # AWRF of a query without relevant documents
        assert got[(name, row["query_id"])] == pytest.approx(expected, abs=5e-5, nan_ok=True)  # %6.4f
    alpha = pyndeval_alpha(langs, qrels, run)
    assert got[("alpha_nDCG@20", "all")] == pytest.approx(sum(alpha.values()) / len(alpha), abs=5e-5)


def test_trec_eval_max_retrieved_cuts_the_exposure_run_too(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    # the top 7 of each query under trec_eval's rule, with their own (tied) scores
    cut = {qid: {d: run[qid][d] for d in list(ranked)[:7]} for qid, ranked in trec_order(run).items()}
    short = tmp_path / "short.run"
    write_run(short, cut)
    argv = ["-q", "-m", "Share@10", "-m", "alpha_nDCG@20", "--doc-langs", m, "--query-lang", "ru", q]
    assert trec_eval_lines(capsys, ["-M", "7"] + argv + [r]) == pytest.approx(
        trec_eval_lines(capsys, argv + [str(short)]), nan_ok=True)



def test_trec_eval_complete_gives_a_missing_query_an_empty_ranking(tmp_path, capsys):
    pytest.importorskip("clirbench.measures.exposure")
    langs, qrels, run = mlir_fixture()
    q, r, m = write_files(tmp_path, langs, qrels, run)
    argv = ["-q", "-m", "map", "-m", "alpha_nDCG@20", "-m", "Share@10", "--doc-langs", m, "--query-lang", "ru"]
    plain, complete = trec_eval_lines(capsys, argv + [q, r]), trec_eval_lines(capsys, ["-c"] + argv + [q, r])
    assert ("alpha_nDCG@20", "q9") not in plain and complete[("alpha_nDCG@20", "q9")] == 0.0
    assert math.isnan(complete[("Share@10", "q9")])  # no document ranked
    assert complete[("alpha_nDCG@20", "all")] == pytest.approx(plain[("alpha_nDCG@20", "all")] * 8 / 9, abs=1e-4)
    line = one_line_error(capsys, ["trec_eval", "-m", "Share@10", q, r])
    assert "Share@10" in line and "--doc-langs" in line
