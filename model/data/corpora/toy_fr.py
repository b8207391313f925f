"""toy-fr: English->French sentence pairs generated from a grammar, each with gold word alignments.

Every token is built with the ids of the concepts it expresses ("the" and "le" share one id, "not"
and both "ne" and "pas" share another); two words are aligned when they share a concept. French
contractions (à le -> au, de les -> des) and elisions (le arbre -> l'arbre, je aime -> j'aime)
are applied at the end and merge the concepts of the words they join.

Covered: article gender and number, preposed and postposed adjectives with agreement (bel/vieil/
nouvel before a vowel), subject pronouns with present-tense agreement, negation (ne ... pas, de
after a negated indefinite), object pronouns before the verb, possessives (mon before a vowel),
partitives for mass nouns, prepositions with contractions, and relative clauses with qui/que.
"""

from __future__ import annotations

import functools
import random

from model.data.corpora.lexicon_fr import ADJECTIVE_LIST, NOUN_LIST, VERB_LIST, Noun, Verb, starts_with_vowel_sound
from model.data.corpora.pairs import Pair

Token = tuple[str, frozenset]


class Word(str):
    """An English word that knows its part of speech (a Universal Dependencies tag), given where the grammar
    makes it: the labelled corpora (model/data/corpora/labelled.py) read tags from here, so they are exact.
    It is an ordinary string everywhere else, so the translation pairs are what they always were."""

    pos: str

    def __new__(cls, text: str, pos: str) -> Word:
        word = super().__new__(cls, text)
        word.pos = pos
        return word


# (english, french, person index into the verb forms, gender, plural)
SUBJECT_PRONOUNS = [
    ("I", "je", 0, "m", False),
    ("you", "vous", 4, "m", True),
    ("he", "il", 2, "m", False),
    ("she", "elle", 2, "f", False),
    ("we", "nous", 3, "m", True),
    ("they", "ils", 5, "m", True),
]
# (english, french, person, needs a person/animal object)
OBJECT_PRONOUNS = [
    ("me", "me", 0, True),
    ("you", "vous", 4, True),
    ("him", "le", 2, True),
    ("her", "la", 2, True),
    ("it", "le", 2, False),
    ("us", "nous", 3, True),
    ("them", "les", 5, False),
]
POSSESSIVES = {
    "my": ("mon", "ma", "mes"),
    "your": ("votre", "votre", "vos"),
    "his": ("son", "sa", "ses"),
    "her": ("son", "sa", "ses"),
    "our": ("notre", "notre", "nos"),
    "their": ("leur", "leur", "leurs"),
}
ELIDABLE = {"le", "la", "je", "me", "ne", "de", "que"}
ANIMATE = "pa"


class _Concepts:
    def __init__(self) -> None:
        self.count = 0

    def new(self) -> frozenset:
        self.count += 1
        return frozenset([self.count])


@functools.cache
def _fits(tags: str, wanted: str) -> bool:
    return any(tag in wanted for tag in tags if tag != "m")


@functools.cache
def _nouns_fitting(wanted: str) -> tuple:
    """The nouns that fit ``wanted``, in lexicon order (computed once per tag set: generation is 10x faster)."""
    return tuple(noun for noun in NOUN_LIST if _fits(noun.tags, wanted))


@functools.cache
def _adjectives_fitting(noun_tags: str, before_noun: bool) -> tuple:
    """The adjectives placed before (or after) a noun with these tags, in lexicon order, or (None,)."""
    return tuple(a for a in ADJECTIVE_LIST if a.before_noun == before_noun and _fits(noun_tags, a.tags)) or (None,)


@functools.cache
def _verbs_of_kind(kind: str) -> tuple:
    """The verbs a sentence of this kind can take, in lexicon order (the same choices as ever, built once)."""
    objects = {"intransitive": "-", "be": "be", "go": "go"}.get(kind)
    if objects is not None:
        return tuple(v for v in VERB_LIST if v.objects == objects)
    return tuple(v for v in VERB_LIST if v.objects not in ("-", "be", "go"))


class ToyFrenchGenerator:
    """Deterministic sentence-pair generator: the same seed gives the same pairs."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.concepts = _Concepts()
        # What the last sentence was, for the labelled corpora (set as it is generated; no random draw).
        self.subject_plural = False
        self.negated = False
        self.relative_clauses = 0

    # --- noun phrases -------------------------------------------------------------------------
    def noun(self, wanted: str) -> Noun:
        return self.rng.choice(_nouns_fitting(wanted))

    def noun_phrase(
        self, noun: Noun, determiner: str, plural: bool, negated: bool = False, modifiers: bool = True, depth: int = 0
    ) -> tuple[list[Token], list[Token]]:
        """English and French tokens of [det] [adjectives] noun [of the N] [that ...]."""
        rng, concepts = self.rng, self.concepts
        if noun.is_mass:
            plural = False
            determiner = "partitive" if determiner == "a" else determiner
        gender = noun.gender
        noun_id = concepts.new()
        en_noun = (Word(noun.english_plural if plural else noun.english, "NOUN"), noun_id)
        fr_noun = (noun.french_plural if plural else noun.french, noun_id)
        before = after = None
        if modifiers and rng.random() < 0.25:
            before = rng.choice(_adjectives_fitting(noun.tags, True))
        if modifiers and rng.random() < 0.35:
            after = rng.choice(_adjectives_fitting(noun.tags, False))
        english: list[Token] = []
        french: list[Token] = []
        if before:
            before_id = concepts.new()
            english.append((Word(before.english, "ADJ"), before_id))
            french.append((before.form(gender, plural, fr_noun[0]), before_id))
        french.append(fr_noun)
        if after:
            after_id = concepts.new()
            english.append((Word(after.english, "ADJ"), after_id))
            french.append((after.form(gender, plural), after_id))
        english.append(en_noun)
        en_det, fr_det = self._determiner(determiner, gender, plural, negated, french[0][0], before is not None)
        det_id = concepts.new() if en_det else noun_id  # a French-only determiner aligns with the noun
        english = [(Word(w, "DET"), det_id) for w in en_det] + english
        french = [(w, det_id) for w in fr_det] + french
        if modifiers and depth == 0 and "t" in noun.tags and rng.random() < 0.15:
            owner = self.noun("pb")
            of_id, the_id = concepts.new(), concepts.new()
            owner_plural = rng.random() < 0.25
            en_owner, fr_owner = self.noun_phrase(owner, "the", owner_plural, modifiers=False, depth=1)
            english += [(Word("of", "ADP"), of_id)] + en_owner
            french += [("de", of_id)] + fr_owner
            del the_id
        elif modifiers and depth == 0 and rng.random() < 0.15:
            en_rel, fr_rel = self.relative_clause(noun, plural)
            english += en_rel
            french += fr_rel
        return english, french

    def _determiner(
        self, kind: str, gender: str, plural: bool, negated: bool, next_french: str, preposed_adjective: bool
    ) -> tuple[list[str], list[str]]:
        feminine = gender == "f"
        if kind in ("a", "partitive") and negated:
            english = [] if kind == "partitive" else (["any"] if plural else ["a"])
            return english, ["de"]
        if kind == "the":
            return ["the"], ["les" if plural else ("la" if feminine else "le")]
        if kind == "a":
            if plural:
                return ["some"], ["de" if preposed_adjective else "des"]
            return ["a"], ["une" if feminine else "un"]
        if kind == "partitive":
            return [], ["de", "la" if feminine else "le"]
        masculine, feminine_form, plural_form = POSSESSIVES[kind]
        if plural:
            return [kind], [plural_form]
        if feminine and not starts_with_vowel_sound(next_french):
            return [kind], [feminine_form]
        return [kind], [masculine]

    def random_determiner(self, allow_indefinite: bool = True) -> str:
        roll = self.rng.random()
        if roll < 0.5:
            return "the"
        if roll < 0.8 and allow_indefinite:
            return "a"
        return self.rng.choice(list(POSSESSIVES))

    # --- clauses ------------------------------------------------------------------------------
    def subject(self, wanted: str = ANIMATE):
        """(english, french, person, gender, plural) of a pronoun or an animate noun phrase."""
        if self.rng.random() < 0.4:
            english, french, person, gender, plural = self.rng.choice(SUBJECT_PRONOUNS)
            subject_id = self.concepts.new()
            self.subject_plural = plural
            return [(Word(english, "PRON"), subject_id)], [(french, subject_id)], person, gender, plural
        noun = self.noun(wanted)
        plural = self.rng.random() < 0.3
        self.subject_plural = plural
        english_phrase, french_phrase = self.noun_phrase(noun, self.random_determiner(), plural)
        return english_phrase, french_phrase, 5 if plural else 2, noun.gender, plural

    def verb_words(self, verb: Verb, person: int, negated: bool, verb_id, negation_id) -> list[Token]:
        """English verb group: 'eats', 'does not eat', 'is not', 'listens to'."""
        if verb.objects == "be":
            form = {0: "am", 2: "is"}.get(person, "are")
            words: list[Token] = [(Word(form, "AUX"), verb_id)] + ([(Word("not", "PART"), negation_id)] if negated else [])
        elif negated:
            auxiliary = Word("does" if person == 2 else "do", "AUX")
            words = [(auxiliary, frozenset()), (Word("not", "PART"), negation_id), (Word(verb.english, "VERB"), verb_id)]
        else:
            words = [(Word(verb.english_third if person == 2 else verb.english, "VERB"), verb_id)]
        if verb.particle:
            words.append((Word(verb.particle, "ADP"), verb_id))
        return words

    def relative_clause(self, head: Noun, plural: bool) -> tuple[list[Token], list[Token]]:
        rel_id, verb_id = self.concepts.new(), self.concepts.new()
        self.relative_clauses += 1
        that = Word("that", "PRON")  # a relative pronoun
        head_person = 5 if plural else 2
        object_verbs = [v for v in VERB_LIST if v.objects not in ("-", "be", "go") and _fits(head.tags, v.objects)]
        if object_verbs and self.rng.random() < 0.5:  # the apple that the boy eats -> que
            verb = self.rng.choice(object_verbs)
            subject_en, subject_fr, person, _, _ = self._simple_subject()
            english = [(that, rel_id)] + subject_en + self.verb_words(verb, person, False, verb_id, None)
            return english, [("que", rel_id)] + subject_fr + [(verb.forms[person], verb_id)]
        if head.tags.strip("m") and not _fits(head.tags, ANIMATE):
            verb = next(v for v in VERB_LIST if v.objects == "be")
            adjective = self.rng.choice([a for a in ADJECTIVE_LIST if _fits(head.tags, a.tags)])
            adj_id = self.concepts.new()
            english = [(that, rel_id)] + self.verb_words(verb, head_person, False, verb_id, None)
            french = [("qui", rel_id), (verb.forms[head_person], verb_id), (adjective.form(head.gender, plural), adj_id)]
            return english + [(Word(adjective.english, "ADJ"), adj_id)], french
        verb = self.rng.choice([v for v in VERB_LIST if v.objects not in ("be", "go")])  # the cat that sleeps -> qui
        english = [(that, rel_id)] + self.verb_words(verb, head_person, False, verb_id, None)
        french = [("qui", rel_id), (verb.forms[head_person], verb_id)]
        if verb.objects != "-":
            obj_en, obj_fr = self.noun_phrase(
                self.noun(verb.objects), self.random_determiner(), self.rng.random() < 0.3, modifiers=False, depth=1
            )
            english, french = english + obj_en, french + obj_fr
        return english, french

    def _simple_subject(self):
        if self.rng.random() < 0.5:
            pronoun_en, pronoun_fr, person, gender, plural = self.rng.choice(SUBJECT_PRONOUNS)
            subject_id = self.concepts.new()
            return [(Word(pronoun_en, "PRON"), subject_id)], [(pronoun_fr, subject_id)], person, gender, plural
        noun = self.noun(ANIMATE)
        plural = self.rng.random() < 0.3
        english, french = self.noun_phrase(noun, "the", plural, modifiers=False, depth=1)
        return english, french, 5 if plural else 2, noun.gender, plural

    def sentence(self) -> tuple[list[Token], list[Token]]:
        rng = self.rng
        self.relative_clauses = 0  # what the labelled corpora read of the sentence, besides its words' tags
        subject_en, subject_fr, person, gender, plural = self.subject()
        negated = self.negated = rng.random() < 0.25
        verb_id, negation_id = self.concepts.new(), self.concepts.new()
        kind = rng.choices(["intransitive", "transitive", "pronoun", "be", "go"], [2, 5, 1.5, 1.5, 1])[0]
        verb = rng.choice(_verbs_of_kind(kind))
        ne = [("ne", negation_id)] if negated else []
        pas = [("pas", negation_id)] if negated else []
        english = subject_en + self.verb_words(verb, person, negated, verb_id, negation_id)
        french_verb = [(verb.forms[person], verb_id)]
        if kind == "pronoun":
            choices = [p for p in OBJECT_PRONOUNS if p[2] != person and (not p[3] or _fits("pa", verb.objects))]
            pronoun_en, pronoun_fr, _, _ = rng.choice(choices)
            pronoun_id = self.concepts.new()
            english.append((Word(pronoun_en, "PRON"), pronoun_id))
            french = subject_fr + ne + [(pronoun_fr, pronoun_id)] + french_verb + pas
        else:
            french = subject_fr + ne + french_verb + pas
        if kind == "transitive":
            obj_en, obj_fr = self.noun_phrase(
                self.noun(verb.objects), self.random_determiner(), rng.random() < 0.3, negated=negated
            )
            english, french = english + obj_en, french + obj_fr
        elif kind == "be":
            wanted = "p" if len(subject_en) == 1 else "".join({t for t in "pa" if t in _subject_tags(subject_en)})
            adjective = rng.choice([a for a in ADJECTIVE_LIST if _fits(wanted or "p", a.tags)])
            adj_id = self.concepts.new()
            english.append((Word(adjective.english, "ADJ"), adj_id))
            french.append((adjective.form(gender, plural), adj_id))
        elif kind == "go":
            to_id = self.concepts.new()
            place_en, place_fr = self.noun_phrase(self.noun("bn"), "the", rng.random() < 0.2, depth=1)
            english += [(Word("to", "ADP"), to_id)] + place_en
            french += [("à", to_id)] + place_fr
        elif kind == "intransitive" and rng.random() < 0.3:
            in_id = self.concepts.new()
            place_en, place_fr = self.noun_phrase(self.noun("bn"), self.random_determiner(False), False, depth=1)
            english += [(Word("in", "ADP"), in_id)] + place_en
            french += [("dans", in_id)] + place_fr
        return english, french

    def accepted_sentence(self) -> tuple[list[Token], list[Token]]:
        """A sentence of 3 to 25 English words (longer or shorter ones are drawn again)."""
        while True:
            english, french = self.sentence()
            if 3 <= len(english) <= 25:
                return english, french

    def pair(self) -> Pair:
        english, french = self.accepted_sentence()
        return assemble(english, finish_french(french), capitalize=self.rng.random() < 0.7, period=self.rng.random() < 0.7)


def _subject_tags(subject_en: list[Token]) -> str:
    words = {w for w, _ in subject_en}
    return "".join(n.tags for n in NOUN_LIST if n.english in words or n.english_plural in words)


def finish_french(tokens: list[Token]) -> list[Token]:
    """Apply contractions (au, aux, du, des) and elisions (l', j', n', d', qu', m'), merging concepts."""
    contracted: list[Token] = []
    index = 0
    while index < len(tokens):
        word, ids = tokens[index]
        following = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        after_that = tokens[index + 2][0] if index + 2 < len(tokens) else ""
        if word in ("à", "de") and (following == "les" or (following == "le" and not starts_with_vowel_sound(after_that))):
            merged = {("à", "les"): "aux", ("de", "les"): "des", ("à", "le"): "au", ("de", "le"): "du"}[(word, following)]
            contracted.append((merged, ids | tokens[index + 1][1]))
            index += 2
            continue
        contracted.append((word, ids))
        index += 1
    merged_tokens: list[Token] = []
    pending: Token | None = None
    for index, (word, ids) in enumerate(contracted):
        following = contracted[index + 1][0] if index + 1 < len(contracted) else ""
        if word in ELIDABLE and starts_with_vowel_sound(following):
            pending = (word[:-1] + "'", ids if pending is None else pending[1] | ids)
            continue
        if pending is not None:
            word, ids = pending[0] + word, pending[1] | ids
            pending = None
        merged_tokens.append((word, ids))
    return merged_tokens


def english_articles(tokens: list[Token]) -> list[Token]:
    return [
        (Word("an", "DET") if word == "a" and index + 1 < len(tokens) and tokens[index + 1][0][0] in "aeiou" else word, ids)
        for index, (word, ids) in enumerate(tokens)
    ]


def assemble(english: list[Token], french: list[Token], capitalize: bool, period: bool) -> Pair:
    english = english_articles(english)
    en_words = [w for w, _ in english]
    fr_words = [w for w, _ in french]
    alignment = tuple(sorted((i, j) for i, (_, a) in enumerate(english) for j, (_, b) in enumerate(french) if a & b))
    # English "I" is a capital wherever it stands, so a sentence that starts with it looks capitalised: the
    # French is then capitalised too (otherwise "je" or "Je" would be a coin toss no model could learn).
    if capitalize or en_words[0] == "I":
        en_words[0] = en_words[0][0].upper() + en_words[0][1:]
        fr_words[0] = fr_words[0][0].upper() + fr_words[0][1:]
    if period:
        en_words[-1] += "."
        fr_words[-1] += "."
    return Pair(" ".join(en_words), " ".join(fr_words), alignment)


def generate(n: int, seed: int) -> list[Pair]:
    generator = ToyFrenchGenerator(seed)
    return [generator.pair() for _ in range(n)]
