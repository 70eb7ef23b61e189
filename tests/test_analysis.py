"""Language analyzers: normalisation, stop words, Snowball stemming, CJK bigrams, Thai segmentation."""
import pytest
import Stemmer

from clirbench.retrievers.analyzers import analyze, base_lang, get_analyzer, normalise


def test_german_is_stemmed_after_stop_words_are_removed():
    assert analyze("Die Häuser und das Haus", "de") == ["haus", "haus"]  # die, und, das: stop words
    words = ["Katzen", "liefen", "Straßen"]
    assert analyze(" ".join(words), "de") == Stemmer.Stemmer("german").stemWords([w.lower() for w in words])
    assert "über" not in analyze("über Berge", "de") and analyze("über Berge", "de") == ["berg"]


def test_english_uses_porter_lucene_stop_words_and_drops_possessives():
    assert analyze("The cat's houses of Paris were running", "en") == ["cat", "hous", "pari", "were", "run"]
    assert analyze("running", "en") == Stemmer.Stemmer("porter").stemWords(["running"])
    # Lucene's 33 English stop words, not a long list: "were" stays, "the", "of" go
    assert get_analyzer("en").describe()["num_stopwords"] == 33


def test_chinese_japanese_korean_get_overlapping_bigrams():
    assert analyze("北京大学", "zh") == ["北京", "京大", "大学"]
    assert analyze("中。文", "zh") == ["中", "文"]  # runs of one character stay unigrams
    assert analyze("GPT模型在2008年", "zh") == ["gpt", "模型", "型在", "2008", "年"]
    assert analyze("東京はニッポン", "ja") == ["東京", "京は", "はニ", "ニッ", "ッポ", "ポン"]
    assert analyze("서울은 수도", "ko") == ["서울", "울은", "수도"]
    assert analyze("the 北京", "zh") == ["北京"]  # English stop words of Lucene's CJK analyzer


def test_thai_is_segmented_into_words_and_stop_words_removed():
    tokens = analyze("ผมรักภาษาไทยมากครับ การประชุมสหประชาชาติ", "th")
    assert "ภาษาไทย" in tokens and "สหประชาชาติ" in tokens and "รัก" in tokens
    assert "มาก" not in tokens and "ครับ" not in tokens  # pythainlp stop words
    assert analyze("iPhone 12 ราคา", "th")[:2] == ["iphone", "12"]
    assert not any(t.isspace() or not t for t in tokens)


def test_normalisation_and_word_splitting_keep_combining_marks():
    assert normalise("ＡＢＣ ﬁne") == "abc fine"  # NFKC folds full-width letters and ligatures
    assert analyze("ＡＢＣ", "vi") == ["abc"]
    assert analyze("Hà Nội là thủ đô", "vi") == ["hà", "nội", "là", "thủ", "đô"]  # no Snowball: words only
    # Devanagari vowel signs are combining marks: one word, then the Snowball Hindi stemmer
    assert len(analyze("हिन्दी", "hi")) == 1
    assert analyze("3.14 and 1,000", "xx") == ["3.14", "and", "1,000"]
    # non-CJK analyzers split Han into single characters, as Lucene's StandardTokenizer
    assert analyze("Beijing 北京", "en") == ["beij", "北", "京"]


def test_language_tags_map_to_analyzers():
    assert base_lang("zh-CN") == "zh" and base_lang("kor_Hang") == "ko" and base_lang("eng_Latn") == "en"
    assert get_analyzer("zh-TW").kind == "cjk"
    assert get_analyzer("tha_Thai").kind == "thai"
    assert (get_analyzer("de").kind, get_analyzer("de").stemmer) == ("snowball", "german")
    assert get_analyzer("ar").stemmer == "arabic" and get_analyzer("ar").stopwords == frozenset()
    assert get_analyzer("vi").kind == "plain" and get_analyzer("qqq").kind == "plain"
    assert get_analyzer("de").describe()["stopwords"] == "bm25s STOPWORDS_GERMAN"


@pytest.mark.parametrize("lang", ["en", "de", "zh", "th", "ar", "vi"])
def test_analysis_is_deterministic_and_empty_text_gives_no_terms(lang):
    text = "Text 文本 ข้อความ نص 12"
    assert analyze(text, lang) == analyze(text, lang)
    assert analyze("", lang) == [] and analyze(" ,. ", lang) == []
