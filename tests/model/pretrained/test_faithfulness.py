"""For every family (GPT-2 and the Llama layout among the decoder-only ones): the stepper's incremental trace equals
one full forward pass with output_attentions over
the final sequence (<= 1e-5 in float32), and greedy decoding gives the tokens of the library's own generate."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.decoding.stepper import DecodingOptions, Stepper, full_pass_trace
from model.kinds import AttentionKind

SENTENCE = {
    "encoder-decoder": "the small cat sees the big dog .",
    "decoder-only": "the small cat sees",
    "encoder-only": "the small cat",
}
KINDS = {
    "t5": ("encoder", "decoder", "cross"),
    "marian": ("encoder", "decoder", "cross"),
    "bart": ("encoder", "decoder", "cross"),
    "gpt2": ("decoder",),
    "llama": ("decoder",),  # rotary positions, grouped-query attention: every query head's weights
    "bert-mlm": ("encoder",),
    "bert-classifier": ("encoder",),
}


@pytest.mark.parametrize("family", sorted(KINDS))
def test_incremental_trace_equals_one_full_pass(tiny_bundles, family):
    bundle = tiny_bundles[family]
    stepper = Stepper(bundle, SENTENCE[bundle.family.capabilities.architecture.value], DecodingOptions(max_steps=10))
    stepper.run()
    trace = stepper.trace()
    assert tuple(str(kind) for kind in trace.kinds) == KINDS[family]
    full = full_pass_trace(bundle, stepper.source_ids, stepper.target_ids(), stepper.first_input)
    for kind in AttentionKind:
        incremental, reference = getattr(trace, kind.field), getattr(full, kind.field)
        assert (incremental is None) == (reference is None), kind
        if incremental is not None:
            assert incremental.shape == reference.shape
            assert incremental.size > 0
            np.testing.assert_allclose(incremental, reference, atol=1e-5, rtol=0)
            rows = incremental.sum(-1)
            np.testing.assert_allclose(rows, 1.0, atol=1e-5)  # every row a distribution
    assert trace.decoder_input_tokens == full.decoder_input_tokens


@pytest.mark.parametrize("family", ["t5", "marian", "bart"])
def test_greedy_equals_generate_encoder_decoder(tiny_bundles, family):
    bundle = tiny_bundles[family]
    stepper = Stepper(bundle, SENTENCE["encoder-decoder"], DecodingOptions(max_steps=12))
    stepper.run()
    with torch.inference_mode():
        output = bundle.model.hf_model.generate(
            input_ids=stepper.source,
            attention_mask=torch.ones_like(stepper.source),
            max_new_tokens=12,
            do_sample=False,
            num_beams=1,
        )
    generated = output[0, 1:].tolist()  # after the decoder start token
    produced = stepper.target_ids()
    assert produced[: len(generated)] == generated
    assert len(generated) == len(produced) or generated[-1] == bundle.config.eos_id


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_greedy_equals_generate_decoder_only(tiny_bundles, family):
    bundle = tiny_bundles[family]
    stepper = Stepper(bundle, SENTENCE["decoder-only"], DecodingOptions(max_steps=12))
    stepper.run()
    prompt = stepper.source_ids
    with torch.inference_mode():
        output = bundle.model.hf_model.generate(
            input_ids=stepper.source, max_new_tokens=12, do_sample=False, num_beams=1, pad_token_id=bundle.config.pad_id
        )
    generated = output[0, len(prompt) :].tolist()
    assert stepper.target_ids()[: len(prompt) - 1] == prompt[1:]  # the prompt's tokens are given
    assert stepper.target_ids()[len(prompt) - 1 :] == generated
    trace = stepper.trace()
    assert trace.n_given == len(prompt) - 1 and trace.forced[: len(prompt) - 1].all() and not trace.forced[len(prompt) - 1 :].any()
    assert trace.source_tokens == [] and trace.encoder_self is None and trace.cross is None


def test_beam_search_and_back_and_forcing_through_the_library_cache(tiny_bundles):
    bundle = tiny_bundles["t5"]
    beam = Stepper(bundle, SENTENCE["encoder-decoder"], DecodingOptions(strategy="beam", beam_width=3, max_steps=8))
    beam.run()
    assert beam.beam is not None and beam.beam.hypotheses
    assert beam.target_ids() == beam.beam.best[: len(beam.target_ids())]
    stepper = Stepper(bundle, SENTENCE["encoder-decoder"], DecodingOptions(max_steps=8))
    stepper.run()
    first = stepper.trace()
    stepper.jump(3)  # back through the cache (crop), then forward again: the same steps
    stepper.run()
    np.testing.assert_allclose(stepper.trace().cross, first.cross, atol=1e-6)
    assert stepper.target_ids() == first.chosen_ids.tolist()
    other = int(first.candidate_ids[1][1])
    stepper.force(1, other)
    stepper.run()
    assert stepper.target_ids()[1] == other and stepper.trace().forced[1]
    full = full_pass_trace(bundle, stepper.source_ids, stepper.target_ids())
    np.testing.assert_allclose(stepper.trace().decoder_self, full.decoder_self, atol=1e-5)


def test_sampling_is_reproducible(tiny_bundles):
    options = DecodingOptions(strategy="sample", seed=3, temperature=1.5, max_steps=8)
    first = Stepper(tiny_bundles["gpt2"], "the cat", options)
    first.run()
    second = Stepper(tiny_bundles["gpt2"], "the cat", DecodingOptions(strategy="sample", seed=3, temperature=1.5, max_steps=8))
    second.run()
    assert first.target_ids() == second.target_ids()


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_beam_search_on_a_decoder_only_model_starts_from_its_prompt(tiny_bundles, family):
    """The prompt's given tokens are the tree's trunk (the trace's first steps), and a beam one wide is greedy decoding
    (a known answer: the one hypothesis kept is the best token at every step)."""
    bundle = tiny_bundles[family]
    prompt = bundle.source_ids("the cat sees")[0]
    stepper = Stepper(bundle, "the cat sees", DecodingOptions(strategy="beam", beam_width=3))
    stepper.run()
    tree = stepper.beam
    assert tree is not None and [node.token_id for node in tree.nodes[: len(prompt) - 1]] == prompt[1:]
    assert list(stepper.trace().chosen_ids[: len(prompt) - 1]) == prompt[1:] and tree.best[: len(prompt) - 1] == prompt[1:]
    one_wide = Stepper(bundle, "the cat sees", DecodingOptions(strategy="beam", beam_width=1, max_steps=6))
    one_wide.run()
    greedy = Stepper(bundle, "the cat sees", DecodingOptions(max_steps=6))
    greedy.run()
    assert list(one_wide.trace().chosen_ids) == list(greedy.trace().chosen_ids)


def test_encoder_only_heads(tiny_bundles):
    mlm = tiny_bundles["bert-mlm"]
    trace = Stepper(mlm, "the small [MASK] sees the [MASK] .").trace()
    assert trace.n_steps == 0 and trace.kinds == (AttentionKind.ENCODER,)
    masks = [i for i, piece in enumerate(trace.source_tokens) if piece == "[MASK]"]
    assert trace.mask_positions.tolist() == masks and len(masks) == 2
    assert trace.mask_candidate_ids.shape == (2, 10)
    assert np.all(np.diff(trace.mask_candidate_probabilities, axis=1) <= 0)  # best first
    logits = mlm.model.hf_model(torch.tensor([Stepper(mlm, "the small [MASK] sees the [MASK] .").source_ids])).logits[0]
    expected = torch.softmax(logits[masks[0]], -1).topk(10)
    assert trace.mask_candidate_ids[0].tolist() == expected.indices.tolist()
    classifier = tiny_bundles["bert-classifier"]
    trace = Stepper(classifier, "the small cat").trace()
    assert trace.class_names == ["negative", "neutral", "positive"]
    assert trace.class_probabilities.shape == (3,) and abs(float(trace.class_probabilities.sum()) - 1) < 1e-5
