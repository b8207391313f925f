"""Minimal pairs from the toy-fr grammar (model/data/corpora/toy_fr.py): two English sentences that differ in one
feature, each with the French the grammar makes of it, so the change a model's translation should show is known.

Features (``FEATURES``), with the sentence shapes used:

* ``number``: the subject singular or plural, "the cat sees the dog" / "the cats see the dog" (le chat voit → les
  chats voient);
* ``gender``: a masculine or feminine person, "the boy is happy" / "the girl is happy" (le garçon est heureux → la
  fille est heureuse: the article and the adjective agree);
* ``negation``: "the cat sees the dog" / "the cat does not see the dog" (ne … pas around the verb);
* ``noun``: the object swapped for another noun of its gender, "the cat sees the dog" / "the cat sees the horse".

Every sentence is built by the grammar's own generator (its noun phrases, verb groups, contractions and elisions), with
no modifiers and definite articles. Activation patching needs the two sources to have the same number of pieces:
given a tokenizer, pairs whose counts differ are left out, except negation pairs, whose English adds "does not" and so
never has equal counts (they are kept, marked ``same_pieces=False``, for the lenses and the comparison views).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from model.data.corpora.lexicon_fr import ADJECTIVE_LIST, NOUN_LIST, VERB_LIST, Adjective, Noun, Verb
from model.data.corpora.pairs import Pair
from model.data.corpora.toy_fr import Token, ToyFrenchGenerator, assemble, finish_french
from model.interventions.hooked import InterventionError
from model.network import TextTokenizer

FEATURES = ("number", "gender", "negation", "noun")

# The words the pairs are made of (lexicon entries, by their English).
SUBJECTS = ("cat", "dog", "bird", "horse", "boy", "girl", "teacher", "cow", "duck", "rabbit", "student", "king")
VERBS = ("see", "watch", "love", "follow", "help", "call")
OBJECTS = ("dog", "cat", "horse", "bird", "rabbit", "duck", "lion", "pig")
PEOPLE_BY_GENDER = (("boy", "girl"), ("man", "woman"), ("father", "mother"), ("brother", "sister"), ("king", "queen"))
AGREEING_ADJECTIVES = ("happy", "tired", "angry", "hungry")  # an adjective whose feminine form differs


@dataclass(frozen=True)
class MinimalPair:
    """Two English sentences differing in ``feature``, with the grammar's French of each."""

    feature: str  # one of FEATURES
    clean: Pair  # English source, French target
    corrupted: Pair
    expected_changes: tuple[tuple[str, str], ...]  # the French spans that change: (clean words, corrupted words)
    same_pieces: bool | None  # equal piece counts under the tokenizer given; None without one

    def describe(self) -> str:
        changes = "; ".join(f"{before or '∅'} → {after or '∅'}" for before, after in self.expected_changes)
        return f"{self.feature}: {self.clean.source!r} / {self.corrupted.source!r} ({changes})"


def _entry(items: list, english: str) -> Any:
    return next(item for item in items if item.english == english)


def sentence(
    subject: Noun, plural: bool, verb: Verb, negated: bool = False, obj: Noun | None = None, adjective: Adjective | None = None
) -> Pair:
    """'the SUBJECT VERB [the OBJECT | ADJECTIVE]' and its French, by the grammar's own pieces (no capital, no period)."""
    generator = ToyFrenchGenerator(0)  # its noun phrases without modifiers draw nothing at random
    english, french = generator.noun_phrase(subject, "the", plural, modifiers=False)
    person = 5 if plural else 2
    verb_id, negation_id = generator.concepts.new(), generator.concepts.new()
    english = english + generator.verb_words(verb, person, negated, verb_id, negation_id)
    ne: list[Token] = [("ne", negation_id)] if negated else []
    pas: list[Token] = [("pas", negation_id)] if negated else []
    french = french + ne + [(verb.forms[person], verb_id)] + pas
    if obj is not None:
        object_english, object_french = generator.noun_phrase(obj, "the", False, negated=negated, modifiers=False)
        english, french = english + object_english, french + object_french
    if adjective is not None:
        adjective_id = generator.concepts.new()
        english.append((adjective.english, adjective_id))
        french.append((adjective.form(subject.gender, plural), adjective_id))
    return assemble(english, finish_french(french), capitalize=False, period=False)


def _changes(clean: str, corrupted: str) -> tuple[tuple[str, str], ...]:
    """The word spans of ``clean`` that ``corrupted`` replaces, inserts or deletes."""
    before, after = clean.split(), corrupted.split()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return tuple(
        (" ".join(before[i1:i2]), " ".join(after[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    )


def _candidates(feature: str) -> list[tuple[Pair, Pair]]:
    """Every pair of a feature, in a fixed order."""
    verbs = [_entry(VERB_LIST, name) for name in VERBS]
    see = _entry(VERB_LIST, "see")
    nouns = {noun.english: noun for noun in NOUN_LIST}
    if feature == "number":
        return [
            (sentence(nouns[s], False, verb, obj=nouns[o]), sentence(nouns[s], True, verb, obj=nouns[o]))
            for s in SUBJECTS
            for verb in verbs
            for o in OBJECTS[:2]
            if o != s
        ]
    if feature == "gender":
        be = _entry(VERB_LIST, "be")
        adjectives = [_entry(ADJECTIVE_LIST, name) for name in AGREEING_ADJECTIVES]
        return [
            (sentence(nouns[m], False, be, adjective=adjective), sentence(nouns[f], False, be, adjective=adjective))
            for m, f in PEOPLE_BY_GENDER
            for adjective in adjectives
        ]
    if feature == "negation":
        return [
            (sentence(nouns[s], False, verb, obj=nouns[o]), sentence(nouns[s], False, verb, True, obj=nouns[o]))
            for s in SUBJECTS
            for verb in verbs
            for o in OBJECTS[:2]
            if o != s
        ]
    if feature == "noun":
        return [
            (sentence(nouns[s], False, see, obj=nouns[a]), sentence(nouns[s], False, see, obj=nouns[b]))
            for s in SUBJECTS
            for a in OBJECTS
            for b in OBJECTS
            if len({s, a, b}) == 3 and nouns[a].gender == nouns[b].gender
        ]
    raise InterventionError(f"a minimal pair's feature is one of {', '.join(FEATURES)}, not {feature!r}")


def minimal_pairs(feature: str, tokenizer: TextTokenizer | None = None, limit: int | None = None) -> list[MinimalPair]:
    """The minimal pairs of ``feature``; with a ``tokenizer`` (its ``encode``), only those of equal piece counts
    (negation pairs, which never have them, are all kept and marked); at most ``limit`` of them."""
    pairs = []
    for clean, corrupted in _candidates(feature):
        same = None if tokenizer is None else len(tokenizer.encode(clean.source)) == len(tokenizer.encode(corrupted.source))
        if same is False and feature != "negation":
            continue
        pairs.append(MinimalPair(feature, clean, corrupted, _changes(clean.target, corrupted.target), same))
        if limit is not None and len(pairs) >= limit:
            break
    return pairs
