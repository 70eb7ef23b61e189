"""An entry as ``ir_metadata`` (Breuer et al., SIGIR 2022; schema-version 0.1, https://www.ir-metadata.org):
the PRIMAD sections ``platform``, ``research goal``, ``implementation``, ``method`` and ``data``
built from the record, plus ``resources`` (clirbench's addition: time, memory, device from the
record's ``cost`` and ``hardware``). In a TREC run file the YAML sits in the header as comment lines,
between ``# ir_metadata.start`` and ``# ir_metadata.end``. The mapping is in docs/results.md#exports.
"""
from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

import yaml

from ..measures import parse
from ..results.saved_run import run_id_of
from ..tasks import get_task
from .entries import Entry, pool_langs

__all__ = ["SCHEMA_VERSION", "metadata", "dump", "header", "read_header", "equivalent_command", "trec_name"]

SCHEMA_VERSION = 0.1  # written as the schema's example writes it (a YAML number)
START, END = "ir_metadata.start", "ir_metadata.end"
TIE_RULE = ("score descending as float32, equal scores by document id descending, compared byte-wise "
            "(trec_eval's rule)")
_ARCH = re.compile(r"(x86_64|amd64|aarch64|arm64|armv7l|i[3-6]86|ppc64le|s390x)", re.I)
_SCALAR = (str, int, float, bool)


def trec_name(name: str) -> str:
    """A measure's trec_eval name where it has one (``nDCG@10`` -> ``ndcg_cut_10``, ``RR`` ->
    ``recip_rank``, ``AP@1000`` -> ``map_cut_1000``), else clirbench's (``MaxR``)."""
    try:
        m = parse(name)
    except ValueError:
        return name
    trec = m.record.trec
    if trec is None:
        return name
    if m.cutoff is not None and trec.cut and trec.cut != trec.plain:
        return f"{trec.cut}_{m.cutoff}"
    return trec.plain if m.cutoff is None and trec.plain else name


def equivalent_command(entry: Entry) -> str:
    """The ``clirbench run`` command that makes the entry's pool with its recorded settings."""
    parts = ["clirbench", "run", "--model", entry.retriever["spec"], "--task", entry.pool.task]
    langs = pool_langs(entry)
    if langs:
        parts += ["--langs", langs]
    parts += ["--scenario", entry.pool.scenario, "--query-lang", entry.pool.query_lang, "--pool", entry.pool.pool_mode]
    if entry.translation:
        parts += ["--translate", str(entry.translation["direction"]), "--translator", str(entry.translation["translator"])]
    if entry.system.ranking:
        parts += ["--index", "faiss:" + entry.system.ranking.split(":", 1)[1]]
    if entry.run_depth is not None:
        parts += ["--save-run", "--depth", str(entry.run_depth)]
    bootstrap = entry.bootstrap or {}
    parts += ["--resamples", str(bootstrap.get("resamples", 1000)), "--seed", str(bootstrap.get("seed", 42))]
    return shlex.join(parts)


def _libraries(entry: Entry) -> list[str]:
    hw = entry.hardware or {}
    out = [f"python=={hw['python']}"] if hw.get("python") else []
    if entry.clirbench_version:
        out.append(f"clirbench=={entry.clirbench_version}")
    versions = entry.retriever.get("library_versions")
    if isinstance(versions, Mapping):
        out += [f"{k}=={v}" for k, v in sorted(versions.items())]
    library = entry.retriever.get("library")
    if isinstance(library, str) and len(library.split()) == 2:
        out.append("==".join(library.split()))
    return out


def _platform(entry: Entry) -> dict:
    hw = entry.hardware or {}
    cpu = {"model": hw.get("cpu")}
    arch = _ARCH.search(str(hw.get("platform", "")))
    if arch:
        cpu["architecture"] = arch.group(1)
    cpu["number of cores"] = hw.get("cores")
    hardware: dict[str, Any] = {"cpu": cpu}
    if hw.get("gpu"):
        hardware["gpu"] = {"architecture": hw["gpu"]}
    return {"hardware": hardware, "operating system": {"kernel": hw.get("platform")},
            "software": {"libraries": {"python": _libraries(entry)},
                         "retrieval toolkit": [f"clirbench=={entry.clirbench_version}" if entry.clirbench_version
                                               else "clirbench"]}}


def _research_goal(entry: Entry) -> dict:
    bootstrap = entry.bootstrap or {}
    return {"evaluation": {
        "reported measures": [trec_name(m) for m in entry.measures],
        "significance test": [{"name": "paired randomisation test (clirbench compare, leaderboard --baseline)",
                               "correction method": "holm"}],
        "confidence intervals": f"{100 * float(bootstrap.get('confidence', 0.95)):g}% percentile bootstrap over "
                                f"queries, {bootstrap.get('resamples', 1000)} resamples, seed {bootstrap.get('seed', 42)}",
    }}


def _implementation(entry: Entry) -> dict:
    cmd = "; ".join(entry.commands) if entry.commands else equivalent_command(entry)
    return {"executable": {"cmd": cmd}, "source": {"lang": ["python"]}}


def _params(retriever: Mapping) -> dict:
    """The retriever's settings that are values (model, revision, prompts, k1, b, ...), in order."""
    skip = {"spec", "family", "analyzers", "analysis", "library_versions", "library"}
    out = {}
    for key, value in retriever.items():
        if key in skip or value is None or value == {}:
            continue
        if isinstance(value, _SCALAR) or (isinstance(value, Mapping) and all(isinstance(v, _SCALAR) for v in value.values())):
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out


def _indexing(entry: Entry) -> dict | None:
    """Tokenizer, stemmer and stop words of each language of the pool (a retriever with analyzers: BM25, PSQ)."""
    analyzers = entry.retriever.get("analyzers")
    if not isinstance(analyzers, Mapping):
        return None
    langs = list(dict.fromkeys([*entry.pool.doc_langs, entry.pool.query_lang]))
    stemmers, stops = [], []
    for lang in langs:
        text = str(analyzers.get(lang, analyzers.get("*", "")))
        stem, _, stop = text.partition(";")
        stemmers.append(f"{lang}: {stem.strip()}")
        stops.append(f"{lang}: {stop.strip().removeprefix('stop words:').strip() or 'none'}")
    out = {"stemmer": "; ".join(stemmers), "stopwords": "; ".join(stops)}
    if isinstance(entry.retriever.get("analysis"), str):
        out = {"tokenizer": entry.retriever["analysis"], **out}
    return out


def _method(entry: Entry) -> dict:
    stages = []
    if entry.translation:
        tr = entry.translation
        stages.append({"name": "translation", "method": str(tr.get("translator")),
                       "params": {"direction": tr.get("direction"),
                                  "source languages": list(tr.get("source_langs") or []),
                                  "target language": tr.get("target_lang")}})
    stage = {"name": entry.system.label, "method": entry.retriever.get("spec")}
    if entry.retriever.get("family"):
        stage["family"] = entry.retriever["family"]
    params = _params(entry.retriever)
    if params:
        stage["params"] = params
    stages.append(stage)
    out: dict[str, Any] = {"automatic": True, "score ties": TIE_RULE}
    indexing = _indexing(entry)
    if indexing:
        out["indexing"] = indexing
    out["retrieval"] = stages
    return out


def _data(entry: Entry) -> dict:
    card = get_task(entry.pool.task).card
    pool = entry.pool
    collection = {"name": card.name, "source": entry.data.get("source"),
                  "qrels": f"clirbench pool {pool.name} (qrels SHA-256 {pool.qrels_sha256})",
                  "topics": f"{card.name} questions in {pool.query_lang} ({entry.num_queries} judged)"}
    if entry.data.get("revision"):
        collection["revision"] = entry.data["revision"]
    if entry.data.get("files_sha256"):
        collection["files sha256"] = dict(entry.data["files_sha256"])
    if pool.task.startswith("irds:"):
        collection["ir_datasets"] = pool.task.split(":", 1)[1]
    out: dict[str, Any] = {"test collection": collection}
    if entry.translation and str(entry.translation.get("translator")) == "gold":
        out["other"] = [{"name": "gold translations", "source": f"{card.name}'s parallel text"}]
    return out


def _resources(entry: Entry) -> dict:
    """clirbench's ``resources`` section: the device, the seconds and the bytes the record's ``cost``
    and ``hardware`` give (a value the record does not hold is left out)."""
    hw = entry.hardware or {}
    cost = entry.cost or {}
    time = {"total seconds": entry.seconds, "cold seconds": cost.get("cold_seconds"),
            "search ms per query": cost.get("search_ms_per_query"), "documents per second": cost.get("docs_per_second"),
            "queries per second": cost.get("queries_per_second"), "translation seconds": cost.get("translation_seconds")}
    out = {"device": hw.get("gpu") or (f"cpu ({hw['cpu']}, {hw.get('cores')} cores)" if hw.get("cpu") else "cpu"),
           "time": {k: v for k, v in time.items() if v is not None}}
    if cost.get("index_bytes") is not None:
        out["memory"] = {"index bytes": cost["index_bytes"]}
    if "cold" in cost:
        out["measured cold"] = cost["cold"]
    return out


def metadata(entry: Entry, tag: str | None = None) -> dict:
    """The entry's ir_metadata (a plain dict, in the schema's order); ``tag``: the run's tag (default:
    the system's label as a TREC run tag)."""
    return {"schema-version": SCHEMA_VERSION, "run-version": 1.0, "tag": tag or run_id_of(entry.system.label),
            "platform": _platform(entry), "research goal": _research_goal(entry),
            "implementation": _implementation(entry), "method": _method(entry), "data": _data(entry),
            "resources": _resources(entry)}


def dump(meta: Mapping) -> str:
    """The YAML text of ``meta`` (keys in their order, Unicode kept)."""
    return yaml.safe_dump(dict(meta), sort_keys=False, allow_unicode=True, width=100)


def header(meta: Mapping) -> str:
    """The run-file header: ``# ir_metadata.start``, the YAML as ``# `` comment lines, ``# ir_metadata.end``."""
    lines = [f"# {START}", *(f"# {line}" if line else "#" for line in dump(meta).splitlines()), f"# {END}"]
    return "\n".join(lines) + "\n"


def read_header(text: str) -> dict | None:
    """The ir_metadata of a run file's header (None when it has none): the comment lines between the
    markers, ``# `` removed, parsed as YAML."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == f"# {START}")
        end = next(i for i in range(start, len(lines)) if lines[i].strip() == f"# {END}")
    except StopIteration:
        return None
    body = [line[2:] if line.startswith("# ") else line[1:] for line in lines[start + 1:end]]
    return yaml.safe_load("\n".join(body))
