"""Language analyzers for lexical retrieval: language tag -> function from text to index terms.

Every analyzer first applies NFKC and lower-casing, then splits text into words the way Lucene's
StandardTokenizer roughly does (letters, marks and digits; each Han or Hiragana character is a
word of its own; Thai, Hangul and Katakana runs stay together), then by kind:

- ``snowball``: stop words removed, then the Snowball stemmer of the language (PyStemmer).
  English uses ``porter`` (the original Porter stemmer, as Lucene's and Pyserini's English
  analyzer), drops possessive ``'s`` first and Lucene's 33 English stop words.
- ``thai``: dictionary word segmentation (pythainlp ``newmm``) and pythainlp's Thai stop words.
- ``cjk`` (zh, ja, ko): overlapping character bigrams of each run of Han, Hiragana, Katakana and
  Hangul characters (a run of one character gives a unigram), as Lucene's CJKAnalyzer; other
  words are kept whole; the English stop words of Lucene's CJK analyzer are dropped.
- ``plain`` (any other language, e.g. vi): words only.

Stop word lists come from bm25s (NLTK's Snowball-derived lists; Lucene's for English) where it has
the language, pythainlp for Thai; other languages get none (``describe()`` says which).

:func:`fingerprint` identifies the analyzers by what they do, not by library versions: a hash of
the terms of :data:`PROBE` (sentences in XQuAD's 12 languages, each analysed with its language's
analyzer) and of every stop word list. A patch release of regex or PyStemmer that analyses the
same way gives the same fingerprint; one that splits or stems a probe word differently does not.
"""
from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from ..util.optional import require

__all__ = ["Analyzer", "get_analyzer", "analyze", "normalise", "base_lang", "SNOWBALL", "CJK_LANGS",
           "analyzer_table", "require_backends", "PROBE", "probe_terms", "fingerprint"]

# ISO 639-1 -> Snowball algorithm (PyStemmer names); English uses Porter, as Lucene does
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
    "nl": "dutch", "en": "porter", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french",
    "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
    "nn": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish",
}
CJK_LANGS = frozenset({"zh", "ja", "ko"})
# bm25s stop word tables by language (names of its constants)
_BM25S_STOPWORDS = {
    "en": "STOPWORDS_EN", "de": "STOPWORDS_GERMAN", "nl": "STOPWORDS_DUTCH", "fr": "STOPWORDS_FRENCH",
    "es": "STOPWORDS_SPANISH", "pt": "STOPWORDS_PORTUGUESE", "it": "STOPWORDS_ITALIAN",
    "ru": "STOPWORDS_RUSSIAN", "sv": "STOPWORDS_SWEDISH", "no": "STOPWORDS_NORWEGIAN",
    "nb": "STOPWORDS_NORWEGIAN", "nn": "STOPWORDS_NORWEGIAN", "tr": "STOPWORDS_TURKISH",
    "da": "STOPWORDS_DANISH",
}
# three-letter codes (ISO 639-2/3, e.g. from Belebele's kor_Hang) of the languages handled specially
_THREE = {
    "ara": "ar", "arb": "ar", "hye": "hy", "eus": "eu", "cat": "ca", "ces": "cs", "dan": "da", "nld": "nl",
    "eng": "en", "epo": "eo", "est": "et", "ekk": "et", "fin": "fi", "fra": "fr", "deu": "de", "ell": "el",
    "hin": "hi", "hun": "hu", "ind": "id", "gle": "ga", "ita": "it", "lit": "lt", "npi": "ne", "nep": "ne",
    "nor": "no", "nob": "nb", "nno": "nn", "fas": "fa", "pes": "fa", "pol": "pl", "por": "pt", "ron": "ro",
    "rus": "ru", "srp": "sr", "sot": "st", "spa": "es", "swe": "sv", "tam": "ta", "tur": "tr", "yid": "yi",
    "tha": "th", "zho": "zh", "cmn": "zh", "jpn": "ja", "kor": "ko", "vie": "vi",
}
_CJK_SCRIPTS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
_POSSESSIVE = r"(?<=[\p{L}\p{N}])['\u2019]s\b"


def normalise(text: str) -> str:
    """NFKC, then lower-case: applied to every text before any other step."""
    return unicodedata.normalize("NFKC", text).lower()


def base_lang(lang: str) -> str:
    """``"zh-CN"`` -> ``"zh"``, ``"kor_Hang"`` -> ``"ko"``: the language part, ISO 639-1 where known."""
    code = lang.strip().lower().replace("_", "-").split("-", 1)[0]
    return _THREE.get(code, code)


def require_backends(purpose: str) -> None:
    """Fail now, in one line naming the ``bm25`` extra, when a library the analyzers use is missing."""

    for module in ("regex", "Stemmer", "bm25s"):
        require(module, extra="bm25", purpose=purpose)


@lru_cache(maxsize=None)
def _patterns():
    regex = require("regex", purpose="text analysis (bm25, psq)")

    word = r"[\p{L}\p{M}\p{N}]"
    not_cjk = rf"(?![{_CJK_SCRIPTS}])"
    return {
        # CJK runs, numbers like 3.14 or 1,000, other words (letters, marks, digits)
        "cjk": regex.compile(rf"([{_CJK_SCRIPTS}]+)|(\p{{N}}+(?:[.,]\p{{N}}+)*|(?:{not_cjk}{word})+)"),
        # Han and Hiragana one character each (as UAX#29), Katakana and Hangul runs, other words
        "words": regex.compile(rf"[\p{{Han}}\p{{Hiragana}}]|\p{{Katakana}}+|\p{{Hangul}}+"
                               rf"|\p{{N}}+(?:[.,]\p{{N}}+)*|(?:{not_cjk}{word})+"),
        "possessive": regex.compile(_POSSESSIVE),
        "has_word": regex.compile(rf"{word}"),
    }


@lru_cache(maxsize=None)
def _stemmer(algorithm: str):
    Stemmer = require("Stemmer", purpose="text analysis (bm25, psq)")

    return Stemmer.Stemmer(algorithm)


def _bm25s_stopwords(lang: str) -> frozenset[str]:
    stopwords = require("bm25s.stopwords", purpose="text analysis (bm25, psq)")
    return frozenset(normalise(w) for w in getattr(stopwords, _BM25S_STOPWORDS[lang]))


def _thai():
    corpus = require("pythainlp.corpus", purpose="analysing Thai")
    tokenize = require("pythainlp.tokenize", purpose="analysing Thai")
    return tokenize.word_tokenize, corpus.thai_stopwords


@dataclass(frozen=True)
class Analyzer:
    """Text -> index terms for one language; ``kind`` is snowball, thai, cjk or plain."""

    lang: str
    kind: str
    stemmer: str | None = None  # Snowball algorithm
    stopwords: frozenset[str] = field(default=frozenset(), repr=False)
    stopword_source: str | None = None

    def __call__(self, text: str) -> list[str]:
        text = normalise(text)
        pats = _patterns()
        if self.kind == "cjk":
            tokens = []
            for m in pats["cjk"].finditer(text):
                run = m.group(1)
                if run is None:
                    tokens.append(m.group(2))
                elif len(run) == 1:
                    tokens.append(run)
                else:
                    tokens.extend(run[i:i + 2] for i in range(len(run) - 1))
        elif self.kind == "thai":
            word_tokenize, _ = _thai()
            tokens = []
            for t in word_tokenize(text, engine="newmm", keep_whitespace=False):
                t = t.strip()
                if t and pats["has_word"].search(t):
                    # a segment may still hold punctuation or non-Thai words: split as elsewhere
                    tokens.extend(pats["words"].findall(t))
        else:
            if self.lang == "en":
                text = pats["possessive"].sub("", text)
            tokens = pats["words"].findall(text)
        if self.stopwords:
            tokens = [t for t in tokens if t not in self.stopwords]
        if self.stemmer:
            tokens = _stemmer(self.stemmer).stemWords(tokens)
        return tokens

    def describe(self) -> dict:
        return {"lang": self.lang, "kind": self.kind, "stemmer": self.stemmer,
                "stopwords": self.stopword_source, "num_stopwords": len(self.stopwords),
                "normalisation": "NFKC + lowercase"}

    def summary(self) -> str:
        """One line, e.g. ``snowball german; stop words: bm25s STOPWORDS_GERMAN (231)``."""
        kind = {"snowball": f"snowball {self.stemmer}", "cjk": "cjk bigrams", "thai": "thai newmm words",
                "plain": "words"}[self.kind]
        stop = f"{self.stopword_source} ({len(self.stopwords)})" if self.stopwords else "none"
        return f"{kind}; stop words: {stop}"


@lru_cache(maxsize=None)
def get_analyzer(lang: str) -> Analyzer:
    """The analyzer for a language tag (ISO 639-1, or e.g. ``zh-CN``, ``kor_Hang``); ``plain`` if unknown."""
    code = base_lang(lang)
    if code in CJK_LANGS:
        return Analyzer(code, "cjk", None, _bm25s_stopwords("en"), "bm25s STOPWORDS_EN (Lucene English)")
    if code == "th":
        _, thai_stopwords = _thai()
        return Analyzer(code, "thai", None, frozenset(normalise(w) for w in thai_stopwords()),
                        "pythainlp thai_stopwords")
    stop, source = frozenset(), None
    if code in _BM25S_STOPWORDS:
        stop, source = _bm25s_stopwords(code), f"bm25s {_BM25S_STOPWORDS[code]}"
    if code in SNOWBALL:
        return Analyzer(code, "snowball", SNOWBALL[code], stop, source)
    return Analyzer(code, "plain", None, stop, source)


def analyzer_table() -> dict[str, str]:
    """Summary of every language with its own analyzer (``*``: any other language), for result records."""
    out = {}
    for code in sorted(set(SNOWBALL) | CJK_LANGS | {"th"}):
        try:
            out[code] = get_analyzer(code).summary()
        except ValueError as exc:  # e.g. pythainlp missing
            out[code] = f"unavailable: {exc}"
    out["*"] = "words; stop words: none"
    return out


def analyze(text: str, lang: str) -> list[str]:
    """Index terms of ``text`` analysed as language ``lang``."""
    return get_analyzer(lang)(text)


# Two sentences per XQuAD language (inflections, stop words, numbers, possessives, mixed scripts,
# full-width forms): the fixed text whose analysis identifies the analyzers. Never edit it: a
# change gives every analyzer a new fingerprint (and every BM25 result a new revision).
PROBE = {
    "ar": ("تقع القاهرة على ضفاف نهر النيل، وهي عاصمة جمهورية مصر العربية منذ عام 969.",
           "درس الطلاب في المكتبات الكبيرة والمدارس القديمة."),
    "de": ("Die Häuser an der Straße wurden 1.000 Jahre später von den Bürgern wieder aufgebaut.",
           "Der Hund des Briefträgers bellte GROSS über die schönsten Bäume."),
    "el": ("Η Αθήνα είναι η πρωτεύουσα και η μεγαλύτερη πόλη της Ελλάδας από το 1834.",
           "Οι φοιτητές μελετούσαν τα αρχαία κείμενα στις βιβλιοθήκες."),
    "en": ("The Quick brown FOXES aren't jumping over 3.14 lazy dogs' houses in the city's naïve café.",
           "Denver's Broncos defeated the Carolina Panthers 24–10 to earn their third Super Bowl title."),
    "es": ("Los estudiantes estudiaban en las bibliotecas más antiguas de la ciudad en 1.999.",
           "¿Qué pasó con los edificios históricos después del terremoto? Señor, ¡está lloviendo!"),
    "hi": ("दिल्ली भारत की राजधानी है और यह यमुना नदी के किनारे बसी हुई है।",
           "विद्यार्थियों ने पुस्तकालयों में पुरानी किताबें पढ़ीं, 2019 में।"),
    "ro": ("Studenții au citit cărțile vechi în bibliotecile orașului București în anul 1990.",
           "Râurile și munții României sunt frumoși; ţara are şi păduri."),
    "ru": ("Москва — столица России, крупнейший по численности населения город страны с 1918 года.",
           "Студенты читали старые книги в библиотеках университетов."),
    "th": ("กรุงเทพมหานครเป็นเมืองหลวงและนครที่มีประชากรมากที่สุดของประเทศไทย",
           "นักเรียนอ่านหนังสือเก่าในห้องสมุด ๒๕๖๒ ปี 2019"),
    "tr": ("İstanbul'da yaşayan öğrenciler kütüphanelerde eski kitapları okudular.",
           "Türkiye'nin başkenti Ankara'dır ve 1923'ten beri cumhuriyettir."),
    "vi": ("Hà Nội là thủ đô của nước Cộng hòa xã hội chủ nghĩa Việt Nam từ năm 1976.",
           "Các sinh viên đã đọc những cuốn sách cũ trong thư viện."),
    "zh": ("北京是中华人民共和国的首都，也是全国的政治中心和文化中心。",
           "学生们在图书馆里阅读了1,000本旧书。Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and e-mail: x_y@z.org"),
}


def probe_terms() -> dict[str, list[list[str]]]:
    """The terms of each :data:`PROBE` sentence, analysed with its own language's analyzer (Thai:
    ``["unavailable"]`` when pythainlp is not installed)."""
    out = {}
    for lang, sentences in PROBE.items():
        try:
            analyzer = get_analyzer(lang)
        except ValueError:  # pythainlp missing: Thai cannot be analysed, which is a difference too
            out[lang] = [["unavailable"]]
            continue
        out[lang] = [analyzer(text) for text in sentences]
    return out


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """16 hex digits of SHA-256 over :func:`probe_terms` and the stop word list of every language
    with its own analyzer: equal when the analyzers analyse alike, whatever the library versions."""

    stop = {}
    for code in sorted(set(SNOWBALL) | CJK_LANGS | {"th"}):
        try:
            stop[code] = sorted(get_analyzer(code).stopwords)
        except ValueError:
            stop[code] = ["unavailable"]
    text = json.dumps({"terms": probe_terms(), "stopwords": stop}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
