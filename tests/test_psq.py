"""PSQ: pruning, the weight formula against a hand computation, sidecar checks, IBM Model 1
against a naive implementation, and train-on-XQuAD / retrieve-on-held-out-XQuAD end to end."""
import argparse
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from clirbench.retrievers.analyzers import analyze
from clirbench.cli.psq import add_psq_parser
from clirbench.collection import Text
from clirbench.util.errors import ClirbenchError, DataNotFoundError
from clirbench.retrievers.psq.train import train_ibm1
from clirbench.retrievers import make_retriever
from clirbench.retrievers.psq import (PSQRetriever, from_spec, load_table, meta_path, prune_translations,
                                      write_table)
from clirbench.runner import run

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
NO_PRUNING = dict(min_prob=0.0, max_cdf=1.0, max_alternatives=0)


def _scores(retriever, queries, docs) -> np.ndarray:
    blocks = list(retriever.score(queries, docs))
    assert [s for s, _ in blocks] == sorted(s for s, _ in blocks) and blocks[0][0] == 0
    return np.concatenate([b for _, b in blocks])


# ------------------------------------------------------------------------------------------ pruning
def test_pruning_follows_fast_psq_order_and_keeps_the_crossing_translation():
    t = {"a": 0.5, "b": 0.3, "c": 0.15, "d": 0.05}
    assert prune_translations(t) == t
    assert prune_translations(t, min_prob=0.1) == {"a": 0.5, "b": 0.3, "c": 0.15}  # not renormalised
    # cumulative 0.5, 0.8, 0.95: the cut-off 0.8 keeps a and b (b reaches it), renormalised
    got = prune_translations(t, max_cdf=0.8)
    assert got.keys() == {"a", "b"} and math.isclose(got["a"], 0.5 / 0.8) and math.isclose(got["b"], 0.3 / 0.8)
    # a term whose best translation alone reaches the cut-off keeps it (fast_psq would drop the term)
    assert prune_translations({"x": 0.995, "y": 0.005}, max_cdf=0.99) == {"x": 1.0}
    assert prune_translations(t, max_alternatives=2) == {"a": 0.5, "b": 0.3}
    assert prune_translations(t, min_prob=0.6) == {}


# ------------------------------------------------------------------------------------------ weights
def _toy_table(tmp_path, counts=True):
    # analysed forms (German Snowball stems, English Porter stems) are what the table holds
    table = {"hund": {"dog": 0.7, "hound": 0.3}, "katz": {"cat": 1.0}, "haus": {"hous": 0.6, "home": 0.4}}
    qc = {"dog": 3, "cat": 1, "hous": 5, "home": 1, "the": 40} if counts else None
    path, side = write_table(tmp_path / "de-en.json.gz", table, doc_lang="de", query_lang="en", query_counts=qc,
                             query_counts_source="test")
    return path, qc


def _expected(query_tokens, doc_tokens_by_table, alpha, pc):
    """sum_e c(e,q) log(1 + (1-a) p(e|d) / (a P_C(e))) by hand."""
    p = Counter()
    for e, prob in doc_tokens_by_table:
        p[e] += prob
    return sum(c * math.log(1 + (1 - alpha) * p[e] / (alpha * pc(e))) for e, c in Counter(query_tokens).items()
               if p[e] > 0)


def test_scores_match_the_formula_by_hand(tmp_path):
    path, qc = _toy_table(tmp_path)
    retriever = PSQRetriever([load_table(path, **NO_PRUNING)], alpha=0.1, oov="drop")
    docs = [Text("d1", "Der Hund und die Katze.", "de"), Text("d2", "Ein Haus, ein Hund, noch ein Hund!", "de"),
            Text("d3", "Nichts davon hier.", "de"), Text("e1", "The dog is at home", "en")]
    queries = [Text("q1", "dog dog house", "en"), Text("q2", "cat home bird", "en")]
    S = _scores(retriever, queries, docs)
    N = sum(qc.values())
    pc = lambda e: (1 + qc.get(e, 0)) / (1 + N)  # noqa: E731  (fast_psq: add one to count and total)
    table = {"hund": {"dog": 0.7, "hound": 0.3}, "katz": {"cat": 1.0}, "haus": {"hous": 0.6, "home": 0.4}}
    for j, d in enumerate(docs):
        toks = analyze(d.text, d.lang)
        if d.lang == "de":
            mapped = [(e, p / len(toks)) for f in toks for e, p in table.get(f, {}).items()]
        else:  # identity for query-language documents
            mapped = [(e, 1 / len(toks)) for e in toks]
        for i, q in enumerate(queries):
            want = _expected(analyze(q.text, "en"), mapped, 0.1, pc)
            assert S[i, j] == pytest.approx(want, rel=1e-6), (q.id, d.id)
    assert S[0, 2] == 0.0 and S[0, 1] > S[0, 0] > 0  # two dogs in a shorter-share doc beat one
    assert S.dtype == np.float32 and S.shape == (2, 4)


def test_without_counts_collection_probability_comes_from_the_pool(tmp_path):
    path, _ = _toy_table(tmp_path, counts=False)
    retriever = PSQRetriever([load_table(path, **NO_PRUNING)], oov="drop")
    docs = [Text("d1", "Hund Katze", "de"), Text("d2", "Hund Haus Haus", "de")]
    S = _scores(retriever, [Text("q", "dog", "en")], docs)
    # expected counts of "dog": 2 docs x |d| x p(dog|d) = 0.7 + 0.7; N = 2 + 3 tokens
    pc = (1 + 1.4) / (1 + 5)
    assert S[0, 0] == pytest.approx(math.log(1 + 0.9 * (0.7 / 2) / (0.1 * pc)), rel=1e-6)
    assert S[0, 1] == pytest.approx(math.log(1 + 0.9 * (0.7 / 3) / (0.1 * pc)), rel=1e-6)


def test_terms_missing_from_the_table_pass_through_unless_dropped(tmp_path):
    path, qc = _toy_table(tmp_path)
    docs = [Text("d1", "Hund Zebra", "de"), Text("d2", "Hund", "de")]
    keep = _scores(PSQRetriever([load_table(path, **NO_PRUNING)]), [Text("q", "zebra", "en")], docs)
    drop = _scores(PSQRetriever([load_table(path, **NO_PRUNING)], oov="drop"), [Text("q", "zebra", "en")], docs)
    pc = 1 / (1 + sum(qc.values()))  # "zebra" is not among the counts
    assert keep[0, 0] == pytest.approx(math.log(1 + 0.9 * 0.5 / (0.1 * pc)), rel=1e-6) and keep[0, 1] == 0
    assert (drop == 0).all()


def test_copies_of_a_document_get_identical_scores_and_rows_come_in_blocks(tmp_path):
    path, _ = _toy_table(tmp_path)
    retriever = PSQRetriever([load_table(path)], max_block_bytes=4 * 5)  # one row per block
    docs = [Text(f"d{i}", "Ein Hund im Haus" if i % 2 else "Die Katze", "de") for i in range(5)]
    queries = [Text(f"q{i}", t, "en") for i, t in enumerate(["dog", "cat house", "home dog cat"])]
    blocks = list(retriever.score(queries, docs))
    assert [s for s, _ in blocks] == [0, 1, 2]
    S = np.concatenate([b for _, b in blocks])
    assert (S[:, 1] == S[:, 3]).all() and (S[:, 0] == S[:, 2]).all() and (S[:, 0] == S[:, 4]).all()


# ------------------------------------------------------------------------------------------ files
def test_sidecar_is_required_and_a_different_analysis_is_refused(tmp_path):
    path, _ = _toy_table(tmp_path)
    side = meta_path(path)
    meta = json.loads(side.read_text())
    assert meta["analyzer"]["name"] == "clirbench.retrievers.analyzers" and set(meta["analyzer"]["languages"]) == {"de", "en"}
    meta["analyzer"]["languages"]["de"]["fingerprint"] = "0" * 16
    side.write_text(json.dumps(meta))
    with pytest.raises(ClirbenchError, match="analysing de text differently"):
        load_table(path)
    side.unlink()
    with pytest.raises(DataNotFoundError, match="no sidecar"):
        load_table(path)


def test_spec_options_languages_and_errors(tmp_path):
    path, _ = _toy_table(tmp_path)
    r = make_retriever(f"psq:{path}?alpha=0.2&max_cdf=1")
    assert r.spec == f"psq:{path}?alpha=0.2&max_cdf=1" and r.alpha == 0.2 and r.pruning["max_cdf"] == 1.0
    assert from_spec(f"{path}?alpha=0.1", {}).spec == f"psq:{path}"  # defaults are left out
    d = r.describe()
    assert d["family"] == "psq" and len(d["revision"]) == 16 and d["tables"][0]["doc_lang"] == "de"
    with pytest.raises(ClirbenchError, match="unknown option"):
        from_spec(f"{path}?beta=1", {})
    with pytest.raises(ClirbenchError, match="two tables map de"):
        from_spec(f"{path}+{path}", {})
    with pytest.raises(ClirbenchError, match="no table maps zh documents to en queries"):
        _scores(r, [Text("q", "dog", "en")], [Text("z", "狗", "zh")])
    with pytest.raises(ClirbenchError, match="no table maps de documents to fr queries"):
        _scores(r, [Text("q", "chien", "fr")], [Text("d", "Hund", "de")])


# ------------------------------------------------------------------------------------------ IBM 1
def _naive_ibm1(src, tgt, iterations):
    """Textbook IBM Model 1 with loops over positions (NULL source word, uniform start)."""
    e_vocab = {e for s in tgt for e in s}
    t = {}
    for _ in range(iterations):
        count, total = Counter(), Counter()
        for fs, es in zip(src, tgt):
            fs = ["<null>"] + list(fs)
            for e in es:
                z = sum(t.get((e, f), 1 / len(e_vocab)) for f in fs)
                for f in fs:
                    c = t.get((e, f), 1 / len(e_vocab)) / z
                    count[(e, f)] += c
                    total[f] += c
        t = {(e, f): c / total[f] for (e, f), c in count.items()}
    return t


def test_ibm1_agrees_with_a_naive_implementation_and_learns_a_toy_lexicon():
    rng = np.random.default_rng(3)
    lexicon = {"maison": "house", "chat": "cat", "chien": "dog", "bleu": "blue", "grand": "big", "la": "the"}
    src, tgt = [], []
    for _ in range(60):
        words = list(rng.choice(list(lexicon), size=int(rng.integers(2, 5)), replace=True))
        src.append(words)
        tgt.append([lexicon[w] for w in rng.permutation(words)])
    result = train_ibm1(src, tgt, iterations=6, min_prob=0.0)
    naive = _naive_ibm1(src, tgt, 6)
    for (e, f), p in naive.items():
        if f != "<null>":
            assert result.table[f].get(e, 0.0) == pytest.approx(p, rel=1e-9, abs=1e-12)
    assert all(result.log_likelihood[i] <= result.log_likelihood[i + 1] + 1e-9 for i in range(5))
    for f, e in lexicon.items():
        assert max(result.table[f], key=result.table[f].get) == e
    assert result.target_counts["house"] == sum(s.count("house") for s in tgt)


# ------------------------------------------------------------------------------------------ end to end
def _paragraphs(lang):
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))
    return [(p["context"].strip(), [(qa["id"], qa["question"].strip()) for qa in p["qas"]])
            for article in data["data"] for p in article["paragraphs"]]


def _beir(folder: Path, docs, queries):
    folder.mkdir()
    (folder / "qrels").mkdir()
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"_id": d.id, "title": "", "text": d.text, "lang": d.lang}, ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps({"_id": q.id, "text": q.text, "lang": q.lang}, ensure_ascii=False) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q in queries:
            fh.write(f"{q.id}\t{q.item}\t1\n")
    return folder


def test_train_on_xquad_items_0_179_and_retrieve_held_out_items(tmp_path, capsys):
    en, de = _paragraphs("en"), _paragraphs("de")
    bitext = tmp_path / "de-en.tsv"
    one_line = lambda t: " ".join(t.split())  # noqa: E731
    bitext.write_text("".join(f"{one_line(de[i][0])}\t{one_line(en[i][0])}\n" for i in range(180)), encoding="utf-8")
    parser = argparse.ArgumentParser()
    add_psq_parser(parser.add_subparsers(dest="command"))
    table = tmp_path / "de-en.json.gz"
    args = parser.parse_args(["psq", "train", "--bitext", str(bitext), "--src", "de", "--tgt", "en",
                              "--out", str(table)])
    assert args.handler(args) == 0
    assert "180 segment pairs" in capsys.readouterr().out
    meta = json.loads(meta_path(table).read_text())
    assert meta["doc_lang"] == "de" and meta["query_tokens"] == sum(meta["query_counts"].values()) > 10000

    # held-out items 180..239: German passages, English questions (a mono-cross pool)
    docs = [Text(f"de-p{i:03d}", de[i][0], "de") for i in range(180, 240)]
    queries = [Text(qid, q, "en", item=f"de-p{i:03d}") for i in range(180, 240) for qid, q in en[i][1]]
    task = f"beir:{_beir(tmp_path / 'heldout', docs, queries)}"
    psq = run(f"psq:{table}", task=task, output_dir=tmp_path / "out", resamples=100, progress=False,
              measures=["RR", "nDCG@1"])
    # no translation at all: the German text read as if it were English (identity table)
    identity = tmp_path / "identity.json.gz"
    vocab = {t for d in docs for t in analyze(d.text, "de")}
    write_table(identity, {t: {t: 1.0} for t in vocab}, doc_lang="de", query_lang="en",
                query_counts=meta["query_counts"])
    base = run(f"psq:{identity}", task=task, output_dir=tmp_path / "out", resamples=100, progress=False,
               measures=["RR", "nDCG@1"])
    rr = psq.pools[0].record.to_dict()["measures"]["RR"]["value"]
    rr_base = base.pools[0].record.to_dict()["measures"]["RR"]["value"]
    chance = sum(1 / k for k in range(1, 61)) / 60
    assert len(queries) == psq.pools[0].record.to_dict()["num_queries"]
    assert rr > 0.6 > 4 * chance
    assert rr > rr_base + 0.1
    dropped = run(f"psq:{table}?oov=drop", task=task, output_dir=tmp_path / "out", resamples=100, progress=False,
                  measures=["RR"])  # fast_psq's handling of untranslatable terms: still far above chance
    assert dropped.pools[0].record.to_dict()["measures"]["RR"]["value"] > 4 * chance
    assert psq.pools[0].record.to_dict()["measures"]["nDCG@1"]["value"] > 0.3


def test_runs_every_xquad_scenario_with_a_table_per_direction(tmp_path):
    en, de = _paragraphs("en"), _paragraphs("de")
    from clirbench.retrievers.psq.train import train_table

    t1, t2 = tmp_path / "de-en.json.gz", tmp_path / "en-de.json.gz"
    train_table([p[0] for p in de[:120]], [p[0] for p in en[:120]], "de", "en", t1, iterations=5)
    train_table([p[0] for p in en[:120]], [p[0] for p in de[:120]], "en", "de", t2, iterations=5)
    report = run(f"psq:{t1}+{t2}", task="xquad", langs="en,de", data_dir=XQUAD, output_dir=tmp_path / "out",
                 resamples=20, progress=False)
    got = {(o.record.to_dict()["scenario"], o.record.to_dict()["query_lang"]) for o in report.pools}
    assert got == {(s, q) for s in ("multi", "multi-1", "mono-same", "mono-cross") for q in ("en", "de")}
    cross = next(o.record.to_dict() for o in report.pools if o.record.to_dict()["scenario"] == "mono-cross"
                 and o.record.to_dict()["query_lang"] == "en")
    assert cross["doc_langs"] == ["de"]
    assert cross["retriever"]["spec"] == f"psq:{t1}+{t2}"
    assert cross["measures"]["RR"]["value"] > 0.4
