"""Minimal pairs from the toy-fr grammar (model/interventions/minimal_pairs.py):

* the first pair of each feature is the sentence pair written out by hand, with the French change expected;
* every pair differs where its feature says, in the English and in the French: number changes the subject noun and the
  verb (same length), gender the person noun, noun the object, negation inserts "does not" (and ne … pas);
* on the default model's tokenizer every number, gender and noun pair has equal piece counts (counted here again), and
  every negation pair is marked as not having them;
* an unknown feature is refused.
"""

from __future__ import annotations

import pytest

from model.interventions.hooked import InterventionError
from model.interventions.minimal_pairs import FEATURES, minimal_pairs

FIRST = {
    "number": ("the cat sees the dog", "the cats see the dog", "le chat voit le chien", "les chats voient le chien"),
    "gender": ("the boy is happy", "the girl is happy", "le garçon est heureux", "la fille est heureuse"),
    "negation": ("the cat sees the dog", "the cat does not see the dog", "le chat voit le chien", "le chat ne voit pas le chien"),
    "noun": ("the cat sees the dog", "the cat sees the horse", "le chat voit le chien", "le chat voit le cheval"),
}
CHANGED_ENGLISH_WORDS = {"number": [1, 2], "gender": [1], "noun": [4]}


@pytest.mark.parametrize("feature", FEATURES)
def test_each_feature_changes_what_it_names(feature, default_bundle):
    tokenizer = default_bundle.source_tokenizer
    pairs = minimal_pairs(feature, tokenizer)
    assert len(pairs) >= 20 and len(pairs) == len(minimal_pairs(feature))  # none left out on this tokenizer
    first = pairs[0]
    assert (first.clean.source, first.corrupted.source, first.clean.target, first.corrupted.target) == FIRST[feature]
    for pair in pairs:
        before, after = pair.clean.source.split(), pair.corrupted.source.split()
        counts = len(tokenizer.encode(pair.clean.source)), len(tokenizer.encode(pair.corrupted.source))
        assert pair.expected_changes and pair.clean.target != pair.corrupted.target
        if feature == "negation":
            assert after[2:4] == ["does", "not"] and len(after) == len(before) + 2 and counts[1] > counts[0]
            assert pair.same_pieces is False and "pas" in pair.corrupted.target.split()
            continue
        assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == CHANGED_ENGLISH_WORDS[feature]
        assert pair.same_pieces is True and counts[0] == counts[1]
    assert minimal_pairs(feature, limit=3) == minimal_pairs(feature)[:3]


def test_the_expected_change_is_the_french_difference():
    number = minimal_pairs("number", limit=1)[0]
    assert number.expected_changes == (("le chat voit", "les chats voient"),)
    gender = minimal_pairs("gender", limit=1)[0]
    assert gender.expected_changes == (("le garçon", "la fille"), ("heureux", "heureuse"))
    assert "le garçon → la fille" in gender.describe()
    with pytest.raises(InterventionError, match="feature is one of number, gender, negation, noun"):
        minimal_pairs("tense")
