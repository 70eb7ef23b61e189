"""Files in, numbers out, as users run it: `clirbench evaluate` vs a pytrec_eval script vs ranx, and
`clirbench trec_eval` vs NIST's trec_eval (C).

    python benchmarks/evaluate_files.py --queries 5000 --reps 3 --out /tmp/eval5k.json
    python benchmarks/evaluate_files.py --queries 50000 --reps 2 --tools clirbench,pytrec_eval --out /tmp/eval50k.json
    python benchmarks/evaluate_files.py --queries 50000 --reps 3 --tools clirbench-trec_eval,trec_eval \
        --trec-eval-args "-q -c -m all_trec" --baselines none

`trec_eval` is the C program: ``--trec-eval PATH`` names a binary; without it the script uses the one
it built before (``~/.cache/clirbench/trec_eval/trec_eval``, or ``$CLIRBENCH_BENCH_CACHE``) or builds
it there with trec_eval's own Makefile (``make``: needs gcc and make) from ``--trec-eval-src`` (a
source folder holding trec_eval.c, or a git repository of it: its HEAD) or, without that, from a
``git clone --depth 1 https://github.com/usnistgov/trec_eval`` (needs git and the network).
`clirbench-trec_eval` runs ``python -m clirbench.cli trec_eval`` with the same ``--trec-eval-args``
(default ``-m all_trec``); the two outputs must be identical, line for line (``trec_eval_output``).

Writes a synthetic run (queries x depth, scores in steps of 1/8: heavy ties; 1-3 judged docs per
query with grades 0-3, one relevant doc never retrieved) and its qrels under a temp folder, then
runs each tool as its own process, one at a time, repetitions interleaved. Reports, per run, wall
time, peak RSS (ru_maxrss of the child), user and system CPU time and the load average after it;
the medians and the fastest wall time; the time to read the file's bytes (`cat run > /dev/null`);
a bare multi-threaded pyarrow parse of the whole run (`parse`: ``pyarrow.csv.read_csv``, the same
column types, nothing else: its 3 GB table at 50,000 queries makes its system time, and so its wall
time, swing with the kernel's page handling, 1 to 7 s of system time between consecutive runs);
and the values of each tool side by side (they must agree to 1e-9).
``--baselines`` picks which of cat, parse and reader run beside the tools (default all three; ``none``).
``--base-commit REV`` adds the tool ``clirbench-base``: the same ``evaluate`` command run on the
``clirbench`` package of commit REV of this repository (``git archive``, on ``PYTHONPATH``), so a
change is timed before and after in one run; its values must equal clirbench's.
The clirbench packages it times (this environment's and ``clirbench-base``'s) are byte-compiled
first (``compileall``), as an installed package is: where PYTHONDONTWRITEBYTECODE is set, a source
newer than its ``.pyc`` was compiled again in every run (0.08 s of CPU at 5,000 queries for 17
changed modules, the whole package for ``clirbench-base``'s fresh copy), a cost users do not pay.
The temp folder is deleted at the end (``--data DIR`` keeps the files there, and reuses them).
"""
from __future__ import annotations

import argparse
import compileall
import importlib.util
import itertools
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# the same measures for all three tools: (clirbench name, pytrec_eval name, ranx name)
MEASURES = [("nDCG@10", "ndcg_cut_10", "ndcg@10"), ("RR", "recip_rank", "mrr"), ("AP@1000", "map_cut_1000", "map@1000"),
            ("R@100", "recall_100", "recall@100"), ("P@10", "P_10", "precision@10")]

PYTREC = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as f: qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank", "map_cut.1000", "recall.100", "P.10"}).evaluate(run)
names = %r
print(json.dumps({ours: sum(v[theirs] for v in res.values()) / len(res) for ours, theirs, _ in names}))
""" % MEASURES

RANX = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
names = %r
got = evaluate(qrels, run, [r for _, _, r in names])
print(json.dumps({ours: float(got[r]) for ours, _, r in names}))
""" % MEASURES


BARE_PARSE = """
import sys, pyarrow as pa, pyarrow.csv as pcsv
s = pa.string()
t = pcsv.read_csv(sys.argv[1], read_options=pcsv.ReadOptions(column_names=["q", "q0", "d", "rank", "s", "tag"]),
                  parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False),
                  convert_options=pcsv.ConvertOptions(column_types={"q": s, "q0": s, "d": s, "rank": s, "s": pa.float64(), "tag": s}))
assert t.num_rows
"""


def generate(folder: Path, queries: int, depth: int, n_docs: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with open(folder / "run.txt", "w") as run, open(folder / "qrels.txt", "w") as qrels:
        for q in range(queries):
            docs = rng.choice(n_docs, depth, replace=False)
            scores = rng.integers(0, 200, depth) / 8
            run.write("".join(f"q{q} Q0 doc{d} {i} {s} clirbench\n" for i, (d, s) in enumerate(zip(docs, scores), 1)))
            judged = rng.choice(docs, int(rng.integers(1, 4)), replace=False)
            qrels.write("".join(f"q{q} 0 doc{d} {rng.integers(0, 4)}\n" for d in judged))
            qrels.write(f"q{q} 0 doc{n_docs + q} {rng.integers(1, 4)}\n")  # relevant, never retrieved


TREC_EVAL_GIT = "https://github.com/usnistgov/trec_eval"


def trec_eval_binary(path: str | None, source: str | None) -> str:
    """The C trec_eval to time: ``path``, else the cached build, else a fresh build into the cache
    (from ``source``: a folder with trec_eval.c or a git repository; else a clone of TREC_EVAL_GIT)."""
    if path:
        if not os.access(path, os.X_OK):
            raise SystemExit(f"--trec-eval {path}: not an executable file")
        return path
    cache = Path(os.environ.get("CLIRBENCH_BENCH_CACHE", Path.home() / ".cache" / "clirbench")) / "trec_eval"
    binary = cache / "trec_eval"
    if binary.is_file():
        return str(binary)
    src = cache / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    if source and (Path(source) / "trec_eval.c").is_file():
        shutil.copytree(source, src, dirs_exist_ok=True)
    elif source:  # a git repository (a bare mirror or a clone): its HEAD
        tree = subprocess.run(["git", f"--git-dir={source}", "archive", "HEAD"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=tree, check=True)
    else:
        subprocess.run(["git", "clone", "--depth", "1", TREC_EVAL_GIT, str(src)], check=True)
    subprocess.run(["make"], cwd=src, check=True, capture_output=True)  # trec_eval's Makefile, its own flags
    shutil.copy2(src / "trec_eval", binary)
    return str(binary)


TIME = "/usr/bin/time"


def run_child(cmd: list[str], folder: Path, stdout: Path, env: dict | None = None) -> tuple[float, float, float, float]:
    """(wall seconds, peak RSS in GB of this child alone, its user and system CPU seconds); its output
    goes to ``stdout``. Peak RSS, user and system time come from GNU time (``/usr/bin/time``) where
    there is one: a child's own ru_maxrss counts the RSS of the process it was forked from (this
    script's, which grows with the outputs it has read), time's child is forked from time."""
    timed = os.access(TIME, os.X_OK)
    report = folder / "time.txt"
    full = [TIME, "-f", "%M %U %S", "-o", str(report), *cmd] if timed else cmd
    with open(stdout, "w") as out, open(folder / "stderr", "w+") as err:
        t = time.perf_counter()
        # in the data folder: ``python -m`` puts the working directory first on sys.path, ahead of
        # PYTHONPATH, so run from a checkout, clirbench-base imported the checkout's package
        proc = subprocess.Popen(full, stdout=out, stderr=err, env=env, cwd=folder)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd[:4])} failed: {err.read().strip()[-500:]}")
    if timed:
        kb, user, system = report.read_text().split()[-3:]
        return wall, int(kb) * 1024 / 1e9, float(user), float(system)
    return wall, usage.ru_maxrss * 1024 / 1e9, usage.ru_utime, usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tools", default="clirbench,pytrec_eval,ranx")
    ap.add_argument("--out", default=None)
    ap.add_argument("--data", default=None, help="folder for run.txt/qrels.txt: generated there if missing, and kept")
    ap.add_argument("--trec-eval", default=None, metavar="PATH", help="the C trec_eval binary (else built, see above)")
    ap.add_argument("--trec-eval-src", default=None, metavar="DIR", help="trec_eval's sources or git repository")
    ap.add_argument("--trec-eval-args", default="-m all_trec", help="options of both trec_evals (default -m all_trec)")
    ap.add_argument("--baselines", default="cat,parse,reader", help="which of cat, parse, reader run too (or none)")
    ap.add_argument("--base-commit", default=None, metavar="REV",
                    help="also time clirbench evaluate at commit REV of this repository (tool clirbench-base)")
    args = ap.parse_args()
    tools = args.tools.split(",")
    baselines = [] if args.baselines in ("", "none") else args.baselines.split(",")
    te_args = shlex.split(args.trec_eval_args)
    te_binary = trec_eval_binary(args.trec_eval, args.trec_eval_src) if "trec_eval" in tools else None
    folder = Path(args.data).resolve() if args.data else Path(tempfile.mkdtemp(prefix="clirbench-eval-bench-"))
    try:
        if not (folder / "run.txt").is_file():
            folder.mkdir(parents=True, exist_ok=True)
            generate(folder, args.queries, args.depth, args.docs)
        qrels, run = str(folder / "qrels.txt"), str(folder / "run.txt")
        (folder / "pytrec.py").write_text(PYTREC)
        (folder / "ranx_eval.py").write_text(RANX)
        evaluate = ["-m", "clirbench.cli", "evaluate", "--qrels", qrels, "--run", run,
                    "--measures", ",".join(m for m, _, _ in MEASURES), "--output"]
        envs = {"clirbench-base": _base_env(args.base_commit, folder)} if args.base_commit else {}
        _compile_packages(folder / "base-src" / "clirbench" if args.base_commit else None)
        commands = {
            "clirbench": [sys.executable, *evaluate, str(folder / "out.json")],
            "clirbench-base": [sys.executable, *evaluate, str(folder / "out-base.json")],
            "pytrec_eval": [sys.executable, str(folder / "pytrec.py"), qrels, run],
            "ranx": [sys.executable, str(folder / "ranx_eval.py"), qrels, run],
            "reader": [sys.executable, "-c", "import sys; from clirbench.formats.trec import read_qrels; "
                       "from clirbench.rank.run_file import rank_run_file; assert rank_run_file(sys.argv[2], read_qrels(sys.argv[1]))",
                       qrels, run],
            "cat": ["sh", "-c", f"cat {run} > /dev/null"],
            "parse": [sys.executable, "-c", BARE_PARSE, run],
            "clirbench-trec_eval": [sys.executable, "-m", "clirbench.cli", "trec_eval", *te_args, qrels, run],
            "trec_eval": [str(te_binary), *te_args, qrels, run],
        }
        rows: dict[str, list[dict]] = {t: [] for t in tools + baselines}
        values: dict[str, dict] = {}
        outputs: dict[str, Path] = {}
        for rep in range(args.reps):
            for tool in baselines + tools:  # one at a time, interleaved
                out_path = folder / f"stdout.{tool}"
                wall, peak, user, system = run_child(commands[tool], folder, out_path, envs.get(tool))
                rows[tool].append({"wall_s": round(wall, 3), "peak_rss_gb": round(peak, 3), "cpu_s": round(user + system, 3),
                                   "user_s": round(user, 3), "sys_s": round(system, 3),
                                   "load_avg_1min": round(os.getloadavg()[0], 2)})
                if tool in ("clirbench", "clirbench-base"):
                    report = json.loads((folder / ("out.json" if tool == "clirbench" else "out-base.json")).read_text())
                    values[tool] = {m: report["measures"][m]["value"] for m, _, _ in MEASURES}
                elif tool in ("pytrec_eval", "ranx"):
                    values[tool] = json.loads(out_path.read_text())
                elif tool in ("clirbench-trec_eval", "trec_eval"):
                    outputs[tool] = out_path
                print(tool, rep, rows[tool][-1], flush=True)
        summary = {
            "queries": args.queries, "depth": args.depth, "run_bytes": os.path.getsize(run),
            "median_wall_s": {t: statistics.median(r["wall_s"] for r in rs) for t, rs in rows.items()},
            "min_wall_s": {t: min(r["wall_s"] for r in rs) for t, rs in rows.items()},
            "median_user_s": {t: statistics.median(r["user_s"] for r in rs) for t, rs in rows.items()},
            "median_sys_s": {t: statistics.median(r["sys_s"] for r in rs) for t, rs in rows.items()},
            "median_cpu_s": {t: statistics.median(r["cpu_s"] for r in rs) for t, rs in rows.items()},
            "median_peak_rss_gb": {t: statistics.median(r["peak_rss_gb"] for r in rs) for t, rs in rows.items()},
            "runs": rows, "values": values,
            "max_abs_diff_vs_pytrec_eval": {t: max(abs(v[m] - values["pytrec_eval"][m]) for m in v)
                                            for t, v in values.items() if "pytrec_eval" in values},
            "python": sys.version.split()[0], "cores": os.cpu_count(), "bytecode": "compiled before timing",
        }
        if "trec_eval" in tools:
            summary["trec_eval"] = {"binary": te_binary, "args": te_args}
        if {"clirbench", "clirbench-base"} <= set(values):
            summary["base_commit"] = args.base_commit
            summary["base_reports_identical"] = (folder / "out.json").read_bytes() == (folder / "out-base.json").read_bytes()
        if len(outputs) == 2:
            summary["trec_eval_output"] = _compare_outputs(outputs["clirbench-trec_eval"], outputs["trec_eval"])
            for key in ("median_wall_s", "median_cpu_s", "median_peak_rss_gb"):
                ours, theirs = summary[key]["clirbench-trec_eval"], summary[key]["trec_eval"]
                summary.setdefault("trec_eval_over_clirbench", {})[key] = round(theirs / ours, 2) if ours else None
        print(json.dumps(summary, indent=2))
        if args.out:
            Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    finally:
        if not args.data:
            shutil.rmtree(folder, ignore_errors=True)


def _base_env(rev: str, folder: Path) -> dict:
    """The environment of ``clirbench-base``: the clirbench package of commit ``rev`` of this
    repository, extracted under ``folder``, first on PYTHONPATH."""
    repo = Path(__file__).resolve().parent.parent
    base = folder / "base-src"
    base.mkdir(exist_ok=True)
    tree = subprocess.run(["git", "-C", str(repo), "archive", rev, "clirbench"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=tree, check=True)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(base), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _compile_packages(base: Path | None) -> None:
    """Byte-compile the clirbench package the tools import (and ``base``, clirbench-base's copy), as
    installing it does: the children then load ``.pyc`` files instead of compiling changed sources
    (every run where PYTHONDONTWRITEBYTECODE is set)."""
    spec = importlib.util.find_spec("clirbench")
    for folder in [*(spec.submodule_search_locations or [] if spec else []), *([str(base)] if base else [])]:
        compileall.compile_dir(folder, quiet=1)


def _compare_outputs(ours: Path, theirs: Path) -> dict:
    """Whether two trec_eval outputs are identical, line for line; else the first differing line."""
    with open(ours) as a, open(theirs) as b:
        n = 0
        for n, (x, y) in enumerate(itertools.zip_longest(a, b), start=1):
            if x != y:
                return {"identical": False, "first_difference": n, "clirbench": x, "trec_eval": y}
    return {"identical": True, "lines": n}


if __name__ == "__main__":
    main()
