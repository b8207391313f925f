"""The corpus controller without a window (and without Qt): an index built in the background with progress, cancelled
and built again (resumed), then opened; the Explore tab's token searched for (itself first), another model refused in
one line; a head's sentences; a layer's joint query-key maps and their exports; a result opened in the Explore tab at
its token."""

from __future__ import annotations

import pytest

from explorer.controllers.corpus import MapRequest, suggested_predicate
from model.corpus.build import IndexOptions
from model.corpus.layout import Layer
from model.corpus.sources import IndexCorpus
from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.explorer.controllers.recording import WAIT_S, Recorder

EVENTS = ("index_changed", "building_changed", "progress", "message", "tokens_found", "sentences_found", "map_ready")
CORPUS = IndexCorpus("toy-fr", limit=24, seed=5)
OPTIONS = IndexOptions(heads="decoder:1", chunk_size=8, batch_size=8, pca_sentences=8, dims=8)


@pytest.fixture
def corpus(controllers, toy_fr_bundle):
    controllers.explore.set_model(toy_fr_bundle[0])
    return controllers.corpus, Recorder(controllers.corpus, *EVENTS)


def _wait(controllers, predicate) -> None:
    assert controllers.inbox.wait_until(predicate, WAIT_S)


def _said(events, text: str) -> bool:
    """Whether the last message holds ``text``."""
    messages = events.of("message")
    return bool(messages) and text in messages[-1][0]


def test_an_index_is_built_in_the_background_cancelled_resumed_and_opened(controllers, corpus, tmp_path):
    corpus_controller, events = corpus
    folder = str(tmp_path / "index")
    cancelled = []

    def cancel_after_the_first_chunk(text, done, total):
        if done >= 8 and not cancelled:
            cancelled.append(done)
            corpus_controller.cancel_build()

    corpus_controller.progress.connect(cancel_after_the_first_chunk)
    assert corpus_controller.build(CORPUS, folder, OPTIONS) and corpus_controller.building
    _wait(controllers, lambda: not corpus_controller.building)
    assert events.of("message")[-1] == ("Indexing cancelled; Build again resumes after the chunks finished.",)
    assert corpus_controller.index is not None and 8 <= corpus_controller.index.n_sentences < 24  # the part finished
    corpus_controller.progress.disconnect(cancel_after_the_first_chunk)
    assert corpus_controller.build(CORPUS, folder, OPTIONS)
    assert corpus_controller.index is None  # closed while it is written
    _wait(controllers, lambda: not corpus_controller.building)
    assert "24 sentences indexed, resumed after" in events.of("message")[-1][0]
    assert corpus_controller.index.manifest.complete and events.of("index_changed")[-1] == (corpus_controller.index,)
    assert [args[2] for args in events.of("progress")][-1] == 24 and events.of("building_changed")[-1] == (False,)


@pytest.fixture
def indexed(controllers, corpus, tmp_path):
    corpus_controller, events = corpus
    corpus_controller.build(CORPUS, str(tmp_path / "index"), OPTIONS)
    _wait(controllers, lambda: not corpus_controller.building)
    assert corpus_controller.index is not None and corpus_controller.index.manifest.complete
    return corpus_controller, events


def test_the_explore_token_finds_itself_and_another_model_is_refused(controllers, indexed, copy_bundle):
    corpus_controller, events = indexed
    index = corpus_controller.index
    source = index.sentences([3])[3][0]
    controllers.explore.translate(source)
    assert corpus_controller.find_similar("encoder", 1)
    _wait(controllers, lambda: events.of("tokens_found"))
    results = events.of("tokens_found")[-1][0]
    assert results.layer == Layer("encoder", 2) and (results.matches[0].sentence_id, results.matches[0].position) == (3, 1)
    assert results.matches[0].distance < 1e-3 and len(results.matches) == 10
    assert corpus_controller.find_similar("decoder", 2)
    _wait(controllers, lambda: len(events.of("tokens_found")) == 2)
    assert (events.of("tokens_found")[-1][0].matches[0].sentence_id, events.of("tokens_found")[-1][0].layer.side) == (3, "decoder")
    controllers.explore.set_model(copy_bundle[0])
    controllers.explore.translate("the cat")
    corpus_controller.find_similar("encoder", 0)
    _wait(controllers, lambda: _said(events, "was indexed with another model"))


def test_a_heads_sentences_its_maps_and_a_result_opened_in_explore(controllers, indexed, tmp_path):
    corpus_controller, events = indexed
    corpus_controller.choose_head(Head(AttentionKind.DECODER, 0, 1), "positional: previous")
    _wait(controllers, lambda: events.of("sentences_found"))
    result = events.of("sentences_found")[-1][0]
    assert result.predicate == "previous >= 0.5" and result.head == Head(AttentionKind.DECODER, 0, 1)
    assert suggested_predicate("sink: </s>") == "eos >= 0.5" and suggested_predicate("mixed") == "entropy < 0.3"
    corpus_controller.draw_map(MapRequest(AttentionKind.DECODER, 0, None, sentences=6))
    _wait(controllers, lambda: events.of("map_ready"))
    panels, request = events.of("map_ready")[-1]
    assert [panel.title for panel in panels] == [f"decoder L1 H{h}" for h in range(1, 5)] and request.head is None
    assert corpus_controller.export_map(tmp_path / "map.png").exists()
    assert corpus_controller.export_map(tmp_path / "map.csv").read_text(encoding="utf-8").startswith("head,method")
    # Never over one of the index's own files (issue 39): one message, the file as it was.
    manifest = corpus_controller.index.folder / "manifest.json"
    before = manifest.read_bytes()
    assert corpus_controller.export_map(manifest.with_suffix(".csv")) is None and manifest.read_bytes() == before
    assert corpus_controller.export_map(manifest) is None and manifest.read_bytes() == before
    assert _said(events, "is inside the corpus index")
    corpus_controller.draw_map(MapRequest(AttentionKind.CROSS, 0, 0))
    _wait(controllers, lambda: _said(events, "holds no queries and keys of head cross:1:1"))
    # A result opened in the Explore tab: decoded, pointing at the token.
    index = corpus_controller.index
    assert corpus_controller.open_result(5, "encoder", 2)
    explore = controllers.explore
    assert explore.text == index.sentences([5])[5][0] and explore.focused_source == 2 and explore.finished
    assert corpus_controller.open_result(5, "decoder", 3)
    assert explore.current_step == 4 and explore.focused_source is None
    assert explore.trace.decoder_input_tokens[3] == index.sentence_tokens("decoder", 5)[3]


def test_a_decoder_only_model_s_index_is_built_searched_and_opened_at_a_decoder_position(controllers, tiny_bundles, tmp_path):
    """A GPT-2 folder: built in the background on its one side; the Explore tab's decoder token finds itself; a head
    of its one kind is queried; a result opens in Explore at the step that reads the position (the trace's piece), or
    where its prompt ends for a position inside the prompt (read in one pass, never stepped through)."""
    controllers.explore.set_model(tiny_bundles["gpt2"])
    corpus_controller, events = controllers.corpus, Recorder(controllers.corpus, *EVENTS)
    options = IndexOptions(chunk_size=8, batch_size=8, pca_sentences=8, dims=8)
    assert corpus_controller.build(IndexCorpus("toy-fr", limit=12, seed=5), str(tmp_path / "index"), options)
    _wait(controllers, lambda: not corpus_controller.building)
    index = corpus_controller.index
    assert index is not None and index.manifest.sides() == ("decoder",) and index.manifest.kinds == ["decoder"]
    controllers.explore.translate(index.sentences([4])[4][0])
    assert corpus_controller.find_similar("decoder", 3)
    _wait(controllers, lambda: events.of("tokens_found"))
    best = events.of("tokens_found")[-1][0].matches[0]
    assert (best.sentence_id, best.position, best.side) == (4, 3, "decoder") and best.distance < 1e-3
    assert corpus_controller.query_head(Head(AttentionKind.DECODER, 1, 0), "entropy >= 0")
    _wait(controllers, lambda: events.of("sentences_found"))
    assert len(events.of("sentences_found")[-1][0].rows) == 12
    assert corpus_controller.open_result(7, "decoder", 5)
    explore = controllers.explore
    given = len(explore.stepper.given)  # a prompt is read in one pass: a position inside it opens where the prompt ends
    assert explore.current_step == max(6, given) and explore.trace.decoder_input_tokens[5] == index.sentence_tokens("decoder", 7)[5]
