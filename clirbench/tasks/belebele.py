"""Belebele loader: one JSONL file per FLORES-200 variant, aligned by (link, question_number).

Items are keyed by a hash of the passage's ``link`` (``b<10 hex>``), questions by
``<item>-q<question_number>``: stable across variants, file order and releases.
"""
from __future__ import annotations

import datetime
import hashlib
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..collection import ParallelCollection, Text
from ..formats.jsonl import json_objects
from ..util.errors import MalformedDataError, UnknownNameError
from ..util.strict import check_id
from .card import TaskCard
from .hub import check_counts, find_local_dir, hub_rows, plain_value, require_file, sha256_file, source_record
from .loader import BaseLoader

FIELDS = ("link", "question_number", "flores_passage", "question", "mc_answer1", "mc_answer2",
          "mc_answer3", "mc_answer4", "correct_answer_num", "dialect", "ds")

# ISO 639-1 code of each variant that has one. Romanised variants (ben_Latn, hin_Latn, …) and the
# Arabic dialects have none; ``zh`` names two variants and is refused as ambiguous.
ISO_639_1 = {
    "afr_Latn": "af", "als_Latn": "sq", "amh_Ethi": "am", "arb_Arab": "ar", "asm_Beng": "as",
    "azj_Latn": "az", "bam_Latn": "bm", "ben_Beng": "bn", "bod_Tibt": "bo", "bul_Cyrl": "bg",
    "cat_Latn": "ca", "ces_Latn": "cs", "dan_Latn": "da", "deu_Latn": "de", "ell_Grek": "el",
    "eng_Latn": "en", "est_Latn": "et", "eus_Latn": "eu", "fin_Latn": "fi", "fra_Latn": "fr",
    "fuv_Latn": "ff", "gaz_Latn": "om", "grn_Latn": "gn", "guj_Gujr": "gu", "hat_Latn": "ht",
    "hau_Latn": "ha", "heb_Hebr": "he", "hin_Deva": "hi", "hrv_Latn": "hr", "hun_Latn": "hu",
    "hye_Armn": "hy", "ibo_Latn": "ig", "ind_Latn": "id", "isl_Latn": "is", "ita_Latn": "it",
    "jav_Latn": "jv", "jpn_Jpan": "ja", "kan_Knda": "kn", "kat_Geor": "ka", "kaz_Cyrl": "kk",
    "khk_Cyrl": "mn", "khm_Khmr": "km", "kin_Latn": "rw", "kir_Cyrl": "ky", "kor_Hang": "ko",
    "lao_Laoo": "lo", "lin_Latn": "ln", "lit_Latn": "lt", "lug_Latn": "lg", "lvs_Latn": "lv",
    "mal_Mlym": "ml", "mar_Deva": "mr", "mkd_Cyrl": "mk", "mlt_Latn": "mt", "mri_Latn": "mi",
    "mya_Mymr": "my", "nld_Latn": "nl", "nob_Latn": "nb", "npi_Deva": "ne", "nya_Latn": "ny",
    "ory_Orya": "or", "pan_Guru": "pa", "pbt_Arab": "ps", "pes_Arab": "fa", "plt_Latn": "mg",
    "pol_Latn": "pl", "por_Latn": "pt", "ron_Latn": "ro", "rus_Cyrl": "ru", "sin_Sinh": "si",
    "slk_Latn": "sk", "slv_Latn": "sl", "sna_Latn": "sn", "snd_Arab": "sd", "som_Latn": "so",
    "sot_Latn": "st", "spa_Latn": "es", "srp_Cyrl": "sr", "ssw_Latn": "ss", "sun_Latn": "su",
    "swe_Latn": "sv", "swh_Latn": "sw", "tam_Taml": "ta", "tel_Telu": "te", "tgk_Cyrl": "tg",
    "tgl_Latn": "tl", "tha_Thai": "th", "tir_Ethi": "ti", "tsn_Latn": "tn", "tso_Latn": "ts",
    "tur_Latn": "tr", "ukr_Cyrl": "uk", "urd_Arab": "ur", "uzn_Latn": "uz", "vie_Latn": "vi",
    "wol_Latn": "wo", "xho_Latn": "xh", "yor_Latn": "yo", "zho_Hans": "zh", "zho_Hant": "zh",
    "zsm_Latn": "ms", "zul_Latn": "zu",
}


def canonical_language(card: TaskCard, code: str) -> str:
    """The card's FLORES code for ``kor_Hang``, ``kor_hang`` or ``ko``; one-line error otherwise."""
    by_lower = {lang.lower(): lang for lang in card.languages}
    if code.lower() in by_lower:
        return by_lower[code.lower()]
    matches = [lang for lang in card.languages if ISO_639_1.get(lang) == code.lower()]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownNameError(f"language {code!r} is ambiguous for task {card.id}: use one of {', '.join(matches)}")
    raise UnknownNameError(f"unknown language {code!r} for task {card.id}; use a FLORES-200 code such as "
                           f"kor_Hang (available: {', '.join(card.languages)}) or its ISO 639-1 code")


def item_id(link: str) -> str:
    """``b`` + the first 10 hex digits of SHA-1(link): the passage's id in every variant."""
    return "b" + hashlib.sha1(link.encode("utf-8")).hexdigest()[:10]


def question_id(link: str, number: int) -> str:
    return f"{item_id(link)}-q{number}"


def _parse_row(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    missing = [f for f in FIELDS if f not in row]
    if missing:
        raise MalformedDataError(f"{where}: missing field(s) {', '.join(missing)}")
    number = row["question_number"]
    if isinstance(number, bool) or number not in (1, 2, "1", "2"):
        raise MalformedDataError(f"{where}: question_number must be 1 or 2, got {number!r}")
    row = {**row, "ds": _date(row["ds"], where)}
    for field in FIELDS:
        if field != "question_number" and not isinstance(row[field], str):
            raise MalformedDataError(f"{where}: {field} must be a string, got {type(row[field]).__name__}")
    if row["correct_answer_num"] not in ("1", "2", "3", "4"):
        raise MalformedDataError(f"{where}: correct_answer_num must be '1'..'4', got {row['correct_answer_num']!r}")
    for field in ("link", "flores_passage", "question"):
        if not row[field].strip():
            raise MalformedDataError(f"{where}: empty {field}")
    check_id(row["link"], where, "link")  # the items' and questions' ids are made from it
    return {**{f: row[f] for f in FIELDS}, "question_number": int(number)}


def _date(value: Any, where: str) -> Any:
    """``ds`` as the upstream files write it (``2023-05-03``).

    Read through ``datasets`` it is a timestamp (made a string by ``hub.plain_value``); written back
    with ``Dataset.to_json`` it is milliseconds since the epoch (pandas' default) or an ISO date-time:
    both are turned back into the ISO date (with the time only when it is not midnight).
    """

    if isinstance(value, int) and not isinstance(value, bool):
        try:
            stamp = datetime.datetime.fromtimestamp(value / 1000, tz=datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise MalformedDataError(f"{where}: ds {value} is not a date") from None
        return plain_value(stamp.replace(tzinfo=None))
    if isinstance(value, str):  # 2023-05-03, or 2023-05-03T00:00:00.000Z (to_json with date_format="iso")
        try:
            stamp = datetime.datetime.fromisoformat(value)
        except ValueError:
            return value
        if stamp.tzinfo is not None:
            stamp = stamp.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return plain_value(stamp)
    return plain_value(value)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [_parse_row(row, f"{path}:{n}") for n, row in json_objects(path)]


def _read_hub(card: TaskCard, lang: str) -> list[dict[str, Any]]:
    return [_parse_row(row, f"hub {card.source.get('hub')} {lang} row {n}")
            for n, row in enumerate(hub_rows(card, lang, card.source.get("hub_split", "test"), "Belebele"))]


def _index(rows: list[dict[str, Any]], lang: str) -> tuple[dict[tuple[str, int], dict], dict[str, str]]:
    """Questions by (link, question_number) and passages by link; duplicates are errors."""
    questions: dict[tuple[str, int], dict] = {}
    passages: dict[str, str] = {}
    for row in rows:
        key = (row["link"], row["question_number"])
        if key in questions:
            raise MalformedDataError(f"Belebele {lang}: question {row['question_number']} of {row['link']} appears twice")
        questions[key] = row
        passage = row["flores_passage"].strip()
        if passages.setdefault(row["link"], passage) != passage:
            raise MalformedDataError(f"Belebele {lang}: {row['link']} has two different passages")
    return questions, passages


def load(card: TaskCard, languages: Sequence[str], data_dir=None) -> ParallelCollection:
    """Load ``languages`` (FLORES codes) and check that they align question by question."""
    folder = find_local_dir(card, data_dir)
    indexed, hashes = {}, {}
    for lang in languages:
        if folder is not None:
            path = require_file(card, folder, lang, "Belebele")
            rows = _read_jsonl(path)
            hashes[lang] = sha256_file(path)
        else:
            rows = _read_hub(card, lang)
        indexed[lang] = _index(rows, lang)
        check_counts(card, "Belebele", lang, {"passages_per_language": len(indexed[lang][1]),
                                              "questions_per_language": len(indexed[lang][0])})
    _check_alignment(indexed)
    reference = next(iter(indexed.values()))
    keys = list(reference[0])  # question order of the first variant, for every variant
    links = list(reference[1])
    ids = {link: item_id(link) for link in links}
    if len(set(ids.values())) != len(ids):
        raise MalformedDataError("Belebele: two links hash to the same item id")
    passages, questions = {}, {}
    for lang, (by_key, by_link) in indexed.items():
        passages[lang] = {ids[link]: by_link[link] for link in links}
        questions[lang] = tuple(_question(by_key[key], lang, ids[key[0]]) for key in keys)
    return ParallelCollection(task=card.id, languages=tuple(languages), passages=passages,
                              questions=questions, source=source_record(card, folder, hashes))


def _question(row: dict[str, Any], lang: str, item: str) -> Text:
    meta = {"link": row["link"], "question_number": row["question_number"],
            "mc_answers": tuple(row[f"mc_answer{i}"] for i in range(1, 5)),
            "correct_answer_num": row["correct_answer_num"], "dialect": row["dialect"], "ds": row["ds"]}
    return Text(id=f"{item}-q{row['question_number']}", text=row["question"].strip(), lang=lang,
                item=item, meta=MappingProxyType(meta))


def _check_alignment(indexed: Mapping[str, tuple[dict, dict]]) -> None:
    reference_lang, (reference, _) = next(iter(indexed.items()))
    for lang, (by_key, _) in indexed.items():
        if by_key.keys() == reference.keys():
            continue
        only_here = sorted(set(by_key) - set(reference))
        only_there = sorted(set(reference) - set(by_key))
        first = (only_here or only_there)[0]
        raise MalformedDataError(
            f"Belebele {lang} and {reference_lang} do not align: {len(only_here)} question(s) only in {lang}, "
            f"{len(only_there)} only in {reference_lang} (first: question {first[1]} of {first[0]})")


class BelebeleLoader(BaseLoader):
    """Belebele: FLORES passages and questions; ISO codes map to FLORES variants."""

    load = staticmethod(load)
    canonical_language = staticmethod(canonical_language)


LOADER = BelebeleLoader()
