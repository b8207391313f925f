"""SentencePiece tokenizers: fixed special ids, round trips, and no string that breaks them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.data.corpora import generate_builtin
from model.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer, TokenizerError


@pytest.fixture(scope="module")
def tokenizer():
    pairs = generate_builtin("toy-fr", 1500, 0)
    return Tokenizer.train([p.source for p in pairs] + [p.target for p in pairs], 600)


def test_special_ids_are_fixed(tokenizer):
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    assert tokenizer.pieces([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]


def test_known_text_round_trips(tokenizer):
    for text in ["The black cat does not eat the apple.", "Le chat noir ne mange pas la pomme.", "l'homme"]:
        ids = tokenizer.encode(text)
        assert all(4 <= i < tokenizer.vocab_size for i in ids)
        assert tokenizer.decode(ids) == text


def test_decode_drops_specials_and_stops_at_eos(tokenizer):
    ids = tokenizer.encode("the cat")
    assert tokenizer.decode([BOS_ID] + ids + [EOS_ID] + tokenizer.encode("dog") + [PAD_ID]) == "the cat"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_string_tokenizes(tokenizer, text):
    ids = tokenizer.encode(text)
    assert all(0 <= i < tokenizer.vocab_size for i in ids)
    tokenizer.decode(ids)


def test_unseen_scripts_emoji_and_control_characters(tokenizer):
    ids = tokenizer.encode("日本語 😀 \x00\x07 \u202e مرحبا")
    assert UNK_ID in ids


def test_bytes_round_trip_and_bad_bytes(tokenizer):
    again = Tokenizer(tokenizer.model_proto)
    assert again.encode("the red house") == tokenizer.encode("the red house")
    with pytest.raises(TokenizerError):
        Tokenizer(b"not a model")
    with pytest.raises(TokenizerError):
        Tokenizer.train(["   ", ""], 100)
