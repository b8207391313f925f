"""A decoder-only model's prompt is read in one pass of the model (``decode_steps``), as ``generate`` reads it, and
gives what feeding it one token at a time gives (each given step's probabilities and attention rows, the cache the
steps after it read), for GPT-2 and the Llama layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.decoding.options import DecodingOptions
from model.decoding.stepper import Stepper

PROMPT = "le chat voit le chien et la maison"


def _one_token_at_a_time(stepper: Stepper) -> None:
    stepper.jump(len(stepper.given))


@pytest.mark.parametrize("layout", ["gpt2", "llama"])
def test_the_prompt_in_one_pass_is_the_prompt_token_by_token(tiny_bundles, layout, monkeypatch):
    bundle = tiny_bundles[layout]
    calls: list[int] = []
    handle = bundle.model.hf_model.register_forward_pre_hook(
        lambda _m, _a, kwargs: calls.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        at_once = Stepper(bundle, PROMPT, DecodingOptions(max_steps=4))
    finally:
        handle.remove()
    assert calls == [len(at_once.given)]  # one pass over the prompt's inputs
    at_once.run()
    monkeypatch.setattr(Stepper, "_decode_given", _one_token_at_a_time)
    stepwise = Stepper(bundle, PROMPT, DecodingOptions(max_steps=4))
    stepwise.run()
    assert [step.token_id for step in at_once.steps] == [step.token_id for step in stepwise.steps]
    for mine, theirs in zip(at_once.steps, stepwise.steps):
        assert np.allclose(mine.probabilities, theirs.probabilities, atol=1e-5)
    first, second = at_once.trace(), stepwise.trace()
    assert first.decoder_self is not None and second.decoder_self is not None
    assert np.allclose(first.decoder_self, second.decoder_self, atol=1e-5)
    with torch.no_grad():  # and the attention is the library's own over the whole text
        whole = torch.tensor([[at_once.first_input, *[step.token_id for step in at_once.steps[:-1]]]])
        library = bundle.model.hf_model(input_ids=whole, output_attentions=True).attentions
    expected = torch.stack(library)[:, 0].numpy()  # [layers, heads, T, T]
    assert np.allclose(first.decoder_self, expected, atol=1e-5)
