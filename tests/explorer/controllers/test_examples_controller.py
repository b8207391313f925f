"""Which sentence a new model gets, without a window: the Explore controller decodes the sentence being explored
through the new model, or, when the model cannot read it, an example it can (from its kind, its training history's
samples or its corpus), and says why; and whether the active model is one trained here and never saved.
(The Explore tab showing it: tests/explorer/test_positional_and_models.py.)"""

from __future__ import annotations

from model.data.corpora import generate_builtin
from tests.conftest import tiny_bundle
from tests.explorer.controllers.recording import Recorder

ENGLISH = "the black cat sees the small dog"  # the Explore tab's example sentence (explorer/tabs/explore/tab.py)


def opened(controllers, bundle, text: str = ENGLISH) -> Recorder:
    """``text`` being explored (as the Explore tab sets it) when ``bundle`` opens; what the controller said."""
    explore = controllers.explore
    explore.set_source(text)
    said = Recorder(explore, "text_replaced", "message")
    explore.set_model(bundle)
    return said


def unknown(text: str = ENGLISH) -> str:
    return f"100% of the pieces of “{text}” are unknown (<unk>) to this model's source vocabulary"


def test_an_unreadable_sentence_is_replaced_by_an_example_the_model_reads(controllers, toy_fr_bundle):
    explore = controllers.explore
    replaced = Recorder(explore, "text_replaced")
    explore.set_source("абв где жзи")
    explore.set_model(toy_fr_bundle[0])
    [(sentence, why)] = replaced.of("text_replaced")
    assert explore.text == sentence and explore.can_read(sentence) and "unknown (<unk>)" in why and "instead" in why


def test_a_model_of_another_language_gets_a_sentence_of_its_corpus(controllers, russian_bundle):
    """Was test_positional_and_models.py's test of the same name (the sentence, the reason, the message)."""
    bundle, corpus, lines = russian_bundle
    explore = controllers.explore
    said = opened(controllers, bundle)
    assert explore.unknown_share(ENGLISH) == 1.0
    first = lines[0][0]
    origin = f"its corpus ({corpus})"
    assert said.seen == [
        ("text_replaced", first, f"{unknown()}: showing “{first}”, from {origin}, instead."),
        ("message", f"Example sentence replaced by one this model can read, from {origin}."),
    ]
    assert explore.text == first and explore.trace is not None
    assert "<unk>" not in explore.trace.source_tokens and explore.unknown_share(first) == 0.0


def test_the_history_samples_serve_when_the_corpus_file_is_gone(controllers, russian_bundle):
    """Was test_positional_and_models.py's test of the same name (the sentence, the reason)."""
    bundle, corpus, _lines = russian_bundle
    corpus.unlink()
    bundle.history["validations"] = [{"epoch": 1, "samples": [["дом и сад", "s t", "s t"]]}]
    said = opened(controllers, bundle)
    origin = "its training history's sample translations"
    assert said.of("text_replaced") == [("дом и сад", f"{unknown()}: showing “дом и сад”, from {origin}, instead.")]
    assert controllers.explore.text == "дом и сад" and controllers.explore.trace is not None
    assert "<unk>" not in controllers.explore.trace.source_tokens


def test_with_nothing_to_read_the_sentence_stays_and_the_reason_is_given(controllers, russian_bundle):
    """Was test_positional_and_models.py's test_with_nothing_to_read_a_clear_hint_and_no_crash (the reason, the trace)."""
    bundle, corpus, _lines = russian_bundle
    corpus.unlink()
    said = opened(controllers, bundle)
    why = f"{unknown()}, and no example sentence was found for it: type a sentence in the language (or symbols) it was trained on."
    assert said.seen == [("text_replaced", ENGLISH, why)]  # kept: nothing better was found; nothing says "replaced"
    explore = controllers.explore
    assert explore.text == ENGLISH and explore.trace is not None and "<unk>" in explore.trace.source_tokens


def test_a_builtin_symbol_model_gets_a_generated_example_and_a_readable_sentence_stays(controllers, toy_fr_bundle):
    """Was test_positional_and_models.py's test of the same name (the sentences, the reason)."""
    bundle, _ = tiny_bundle("copy", size=200)
    said = opened(controllers, bundle)
    expected = generate_builtin("copy", 20, bundle.corpus.seed)[0].source
    assert said.seen == [
        ("text_replaced", expected, f"{unknown()}: showing “{expected}”, from its corpus (copy), instead."),
        ("message", "Example sentence replaced by one this model can read, from its corpus (copy)."),
    ]
    assert controllers.explore.text == expected and "<unk>" not in controllers.explore.trace.source_tokens
    said = Recorder(controllers.explore, "text_replaced", "message")
    controllers.explore.set_model(toy_fr_bundle[0])  # toy-fr reads the copy example: it stays
    assert said.seen == [] and controllers.explore.text == expected and controllers.explore.trace is not None
    said = opened(controllers, toy_fr_bundle[0])  # and English: nothing is replaced
    assert said.seen == [] and controllers.explore.text == ENGLISH and controllers.explore.trace is not None


def test_a_model_trained_here_is_unsaved_until_it_has_a_file(controllers, tmp_path):
    """What the window asks about before a model replaces it (test_positional_and_models.py's trained_window tests)."""
    explore = controllers.explore
    trained, _ = tiny_bundle("copy", size=200)
    other, _ = tiny_bundle("reverse", size=200)
    assert not explore.has_unsaved_training()  # no model
    explore.set_model(trained, trained=True)
    assert explore.has_unsaved_training()
    explore.set_model(other)  # opened from elsewhere: replacing it loses nothing trained here
    assert not explore.has_unsaved_training()
    explore.set_model(trained)  # the trained model again, not as just trained: it is no longer this session's
    assert not explore.has_unsaved_training()
    explore.set_model(trained, trained=True)
    trained.path = str(tmp_path / "kept.safetensors")  # saved
    assert not explore.has_unsaved_training()
