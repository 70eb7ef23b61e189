"""Names shared by both directions of the plugin (mteb loaded only inside functions): scores, tasks, languages."""
from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files

from ..identity import join_langs, pool_stem, split_langs, split_pool_stem
from ..util.filenames import NAME_LIMIT, fit_name

__all__ = ["score_key", "task_name", "parse_task_name", "subset_name", "parse_subset_name", "mteb_language"]

_PREFIX = "clirbench"


def score_key(measure) -> str:
    """MTEB score key of a measure: its family record's ``mteb_key`` (``_at_<k>`` for a cutoff).

    clirbench's rank-set measures keep plain names; trec_eval measures get a prefix so that they
    sit beside MTEB's own (which follow MTEB's ranking) without replacing them.
    """
    from ..measures import parse  # lazy: numpy

    m = parse(str(measure))
    base = m.record.mteb_key
    return base if m.cutoff is None else f"{base}_at_{m.cutoff}"


def task_name(task: str, scenario: str, pool_mode: str, subset: str = "") -> str:
    """``clirbench.xquad.multi.unique`` (``.<subset>`` appended when the task has subsets).

    MTEB names its result file after it (``<name>.json``): a long task id or subset (``parallel:<file>``)
    is shortened with a hash (``identity.fit_name``), the scenario and pool mode kept.
    """

    tail = [scenario, pool_mode] + ([fit_name(subset, NAME_LIMIT // 4)] if subset else [])
    room = NAME_LIMIT - len(".json") - len(".".join([_PREFIX, "", *tail]).encode("utf-8"))
    return ".".join([_PREFIX, fit_name(task, room), *tail])


def parse_task_name(name: str) -> tuple[str, str, str, str] | None:
    """(task, scenario, pool mode, subset) from ``task_name``'s output; None for other tasks."""
    parts = name.split(".", 4)
    if len(parts) < 4 or parts[0] != _PREFIX:
        return None
    return parts[1], parts[2], parts[3], parts[4] if len(parts) == 5 else ""


def subset_name(doc_langs, query_lang: str) -> str:
    """MTEB subset of one pool: ``en-zh.q-zh`` (as clirbench names result files)."""
    return pool_stem(join_langs(doc_langs), query_lang)


def parse_subset_name(name: str) -> tuple[tuple[str, ...], str]:
    """(document languages, query language) of ``subset_name``'s output (``en-zh.q-zh``); ValueError otherwise."""
    parts = split_pool_stem(name)
    if parts is None or not parts[0]:
        raise ValueError(f"{name!r} is not a clirbench MTEB subset (L1-L2.q-Lq)")
    return tuple(split_langs(parts[0])), parts[1]


@lru_cache(maxsize=None)
def _iso_tables() -> tuple[dict, dict]:
    root = files("mteb") / "languages"
    return (json.loads((root / "iso_639_1_to_3.json").read_text(encoding="utf-8")),
            json.loads((root / "iso_639_3_to_default_script.json").read_text(encoding="utf-8")))


def mteb_language(lang: str) -> str:
    """clirbench language tag -> MTEB's ``xxx-Xxxx``: ``zh`` -> ``zho-Hans``, ``kor_Hang`` -> ``kor-Hang``.

    BCP 47 tags keep their script (``zh-Hant`` -> ``zho-Hant``) and drop their region (``pt-BR`` ->
    ``por-Latn``); ``und`` (records without a language) is ``und-Zzzz``. ValueError when MTEB knows
    no such language.
    """
    from mteb.languages import check_language_code

    parts = lang.replace("_", "-").split("-")
    code = parts[0].lower()
    script = next((p for p in parts[1:] if len(p) == 4 and p.isalpha()), None)
    iso1, scripts = _iso_tables()
    code = iso1.get(code, code)
    script = script.title() if script else scripts.get(code) or ("Zzzz" if code == "und" else None)
    if script is None:
        raise ValueError(f"no MTEB language code for {lang!r}")
    out = f"{code}-{script}"
    try:
        check_language_code(out)
    except ValueError:
        raise ValueError(f"no MTEB language code for {lang!r} ({out} is not an ISO 639-3/15924 code)") from None
    return out
