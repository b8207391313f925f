"""Labelled corpora generated from the toy-fr grammar, for seed 004's encoder-only classifier.

Every English sentence of toy-fr (model/data/corpora/toy_fr.py) is built word by word by the grammar, which
gives each word its part of speech as it makes it (``toy_fr.Word``) and knows what the sentence is (negated
or not, a plural subject or not, how many relative clauses). The labels are read from there, never guessed
from the text, so they are exact:

- ``toy-fr-tags``: a part-of-speech tag for every word, Universal Dependencies tags (DET, PRON, NOUN, ADJ,
  VERB, AUX, PART, ADP, PUNCT). Pair(source = the words, space-separated with the final period split off,
  target = the tags, one per word). The grammar's ambiguous words get the tag of the role they play: "her"
  is DET in "her cat" and PRON in "sees her", "cook" NOUN or VERB, "that" PRON (a relative pronoun),
  "to"/"for" ADP (after "go" or in "listen to", "look for"), "is"/"do"/"does" AUX, "have" VERB.
- ``toy-fr-negation``: "negated" or "affirmative" (the sentence has "not");
- ``toy-fr-number``: "singular" or "plural" subject ("you" is plural: the grammar's "you" is French "vous"
  and takes "are");
- ``toy-fr-relative``: "relative" (a relative clause, "that ...", somewhere in the sentence) or "plain".

Sentence classes are written as Pair(source = the sentence as toy-fr writes it, target = the class).
The sentences, their capitals and periods are drawn exactly as toy-fr's, from the same seed.
"""

from __future__ import annotations

from model.data.corpora.pairs import Pair
from model.data.corpora.toy_fr import ToyFrenchGenerator, Word, english_articles

TAGS = ("DET", "PRON", "NOUN", "ADJ", "VERB", "AUX", "PART", "ADP", "PUNCT")
SENTENCE_CLASSES = {
    "toy-fr-negation": ("affirmative", "negated"),
    "toy-fr-number": ("plural", "singular"),
    "toy-fr-relative": ("plain", "relative"),
}
LABELLED_CORPORA = ("toy-fr-tags", *SENTENCE_CLASSES)


def _tagged_sentence(generator: ToyFrenchGenerator) -> tuple[list[str], list[str]]:
    """(words, tags) of one toy-fr English sentence, capitalised and finished as toy-fr's pairs are."""
    english, _ = generator.accepted_sentence()
    english = english_articles(english)
    capitalize, period = generator.rng.random() < 0.7, generator.rng.random() < 0.7
    words = [str(word) for word, _ in english]
    tags = [word.pos if isinstance(word, Word) else "X" for word, _ in english]
    if capitalize or words[0] == "I":
        words[0] = words[0][0].upper() + words[0][1:]
    if period:
        words.append(".")
        tags.append("PUNCT")
    return words, tags


def _sentence_class(name: str, generator: ToyFrenchGenerator) -> str:
    """The class of the sentence the generator has just made, as it made it."""
    if name == "toy-fr-negation":
        return "negated" if generator.negated else "affirmative"
    if name == "toy-fr-number":
        return "plural" if generator.subject_plural else "singular"
    return "relative" if generator.relative_clauses else "plain"


def generate(name: str, n: int, seed: int) -> list[Pair]:
    """``n`` labelled pairs of the corpus ``name`` (one of LABELLED_CORPORA); the same seed gives the same pairs."""
    generator = ToyFrenchGenerator(seed)
    pairs = []
    for _ in range(n):
        words, tags = _tagged_sentence(generator)
        if name == "toy-fr-tags":
            pairs.append(Pair(" ".join(words), " ".join(tags)))
            continue
        text = " ".join(words[:-1]) + "." if words[-1] == "." else " ".join(words)
        pairs.append(Pair(text, _sentence_class(name, generator)))
    return pairs


def task_of(name: str) -> str:
    """What a built-in corpus teaches: "tagging", "classification" or "translation"."""
    if name == "toy-fr-tags":
        return "tagging"
    return "classification" if name in SENTENCE_CLASSES else "translation"
