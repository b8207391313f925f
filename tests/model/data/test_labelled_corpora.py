"""The labelled corpora generated from the toy-fr grammar (model/data/corpora/labelled.py): their labels are
right on sentences checked by hand, they cover every generated word, the translation corpus is unchanged by the
tagging, and users' tagging and labelled-sentence files are read (or refused with the line that is wrong)."""

from __future__ import annotations

import hashlib

import pytest

from model.data.corpora import CorpusError, CorpusSpec, generate_builtin, label_names, load_corpus
from model.data.corpora.labelled import TAGS
from model.data.corpora.toy_fr import generate as generate_toy_fr

# Sentences of toy-fr-tags (3,000 pairs, seed 7), tagged by hand: the grammar's ambiguous words among them.
HAND_TAGGED = {
    "Her dirty frog goes to the restaurant": "DET ADJ NOUN VERB ADP DET NOUN",  # "her" a determiner
    "I follow her": "PRON VERB PRON",  # ... and a pronoun
    "The yellow frog cooks them .": "DET ADJ NOUN VERB PRON PUNCT",  # "cooks" a verb
    "He draws the cook": "PRON VERB DET NOUN",  # ... "cook" a noun
    "the bird is clean .": "DET NOUN AUX ADJ PUNCT",  # "clean" an adjective, "is" the copula
    "The spider that cleans the glass finishes our hot tomato that I prepare .": (
        "DET NOUN PRON VERB DET NOUN VERB DET ADJ NOUN PRON PRON VERB PUNCT"  # two relative clauses
    ),
    "Their actor does not close the heavy book .": "DET NOUN AUX PART VERB DET ADJ NOUN PUNCT",
    "an elephant does not go to the school .": "DET NOUN AUX PART VERB ADP DET NOUN PUNCT",
}
# The first sentences of the sentence-class corpora (12 pairs, seed 7), classified by hand.
HAND_CLASSIFIED = [
    ("You swim in the quiet garden.", "affirmative", "plural", "plain"),  # toy-fr's "you" is "vous": plural
    ("The small woman sings in our market.", "affirmative", "singular", "plain"),
    ("some queens are quiet.", "affirmative", "plural", "plain"),
    ("You call a tired painter that she follows", "affirmative", "plural", "relative"),
    ("We are tired.", "affirmative", "plural", "plain"),
    ("the lawyers that open a door understand me.", "affirmative", "plural", "relative"),
    ("some beautiful dogs play", "affirmative", "plural", "plain"),
    ("Their actor does not close the heavy book.", "negated", "singular", "plain"),
]


def test_hand_tagged_sentences_have_their_tags():
    tagged = {pair.source: pair.target for pair in generate_builtin("toy-fr-tags", 3000, 7)}
    for sentence, tags in HAND_TAGGED.items():
        assert tagged[sentence] == tags, sentence


def test_hand_classified_sentences_have_their_classes():
    corpora = [generate_builtin(name, 12, 7) for name in ("toy-fr-negation", "toy-fr-number", "toy-fr-relative")]
    for index, (sentence, *classes) in enumerate(HAND_CLASSIFIED):
        assert [corpus[index].source for corpus in corpora] == [sentence] * 3
        assert [corpus[index].target for corpus in corpora] == classes, sentence


def test_every_word_gets_one_known_tag_and_the_classes_agree_with_the_words():
    for pair in generate_builtin("toy-fr-tags", 2000, 3):
        words, tags = pair.source.split(), pair.target.split()
        assert len(words) == len(tags) and set(tags) <= set(TAGS), pair
        assert ("PART" in tags) == ("not" in words)
        assert (tags[-1] == "PUNCT") == (words[-1] == ".")
    for name, rule in (
        ("toy-fr-negation", lambda text: "negated" if " not " in f" {text} " else "affirmative"),
        ("toy-fr-relative", lambda text: "relative" if " that " in f" {text} " else "plain"),
    ):
        for pair in generate_builtin(name, 2000, 3):
            assert pair.target == rule(pair.source.rstrip(".")), pair


def test_the_labelled_sentences_are_toy_fr_s_and_its_translations_did_not_change():
    translations = generate_toy_fr(300, 5)
    labelled = generate_builtin("toy-fr-negation", 300, 5)
    assert [p.source for p in translations] == [p.source for p in labelled]
    # The translation corpus the shipped models were trained on, pinned: tagging its words changed nothing.
    digest = hashlib.sha256("\n".join(f"{p.source}\t{p.target}\t{p.alignment}" for p in generate_toy_fr(500, 0)).encode())
    assert digest.hexdigest()[:16] == PINNED_TOY_FR


PINNED_TOY_FR = "d0b63b2927899d33"  # toy-fr's first 500 pairs of seed 0 before the grammar tagged its words


def test_built_in_corpora_know_their_task():
    assert CorpusSpec("toy-fr-tags").task == "tagging"
    assert CorpusSpec("toy-fr-number").task == "classification"
    assert CorpusSpec("toy-fr").task == "translation"
    with pytest.raises(CorpusError, match="unknown corpus task"):
        CorpusSpec("file.tsv", task="poetry")
    with pytest.raises(CorpusError, match="Moses pair"):
        CorpusSpec("a.en", target_path="a.fr", task="tagging")


def test_a_tagging_file_and_a_labelled_file_are_read(tmp_path):
    tagged = tmp_path / "tags.txt"
    tagged.write_text("The/DET cat/NOUN sleeps/VERB\n\nkm/h/NOUN is/AUX fast/ADJ\n" * 30, encoding="utf-8")
    splits = load_corpus(CorpusSpec(str(tagged), task="tagging"))
    pairs = splits.train + splits.valid + splits.test
    assert {(p.source, p.target) for p in pairs} == {("The cat sleeps", "DET NOUN VERB"), ("km/h is fast", "NOUN AUX ADJ")}
    assert label_names(pairs, "tagging") == ["ADJ", "AUX", "DET", "NOUN", "VERB"]
    labelled = tmp_path / "labels.tsv"
    labelled.write_text("".join(f"sentence {i}\t{'yes' if i % 3 else 'no'}\n" for i in range(60)), encoding="utf-8")
    splits = load_corpus(CorpusSpec(str(labelled), task="classification"))
    assert label_names(splits.train, "classification") == ["no", "yes"]


def test_bad_labelled_files_are_refused_with_the_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("The/DET cat/NOUN\nthe dog/NOUN\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"bad.txt:2: 'the' is not word/TAG"):
        load_corpus(CorpusSpec(str(bad), task="tagging"))
    splits = load_corpus(CorpusSpec(str(bad), task="tagging", skip_malformed=True))
    assert splits.skipped_lines == 1
    one_class = tmp_path / "one.tsv"
    one_class.write_text("a\tyes\nb\tyes\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="at least two classes"):
        label_names(load_corpus(CorpusSpec(str(one_class), task="classification")).train, "classification")
    translations = [type(p)(p.source, p.target) for p in generate_toy_fr(3000, 1)]
    with pytest.raises(CorpusError, match="is this a translation file"):
        label_names(translations, "classification")
