"""DecoderLens on Hugging Face encoder-decoders (T5, Marian, BART, mBART, M2M100, Pegasus), against the library alone:
each encoder layer's output is the library's own ``output_hidden_states`` (each through the encoder's final norm, as
the last one is), and each layer's translation is the library's ``generate`` (greedy) from that memory; the last
layer's is the model's own translation, as the Stepper decodes it. A model whose generation forces a first token (a
language code, as NLLB and mBART-50 do) has it forced in every layer's translation."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from model.decoding.stepper import Stepper
from model.interventions.decoder_lens import bundle_decoder_lens

TEXT = "The house is small ."
LAYOUTS = ("t5", "marian", "bart", "mbart", "m2m100", "pegasus")
FINAL_NORM = {"t5": "final_layer_norm", "mbart": "layer_norm", "m2m100": "layer_norm", "pegasus": "layer_norm"}


def _library_translations(bundle, layout: str, steps: int) -> list[list[int]]:
    """Each encoder layer's greedy translation by the library alone: its hidden states, its final norm, its generate."""
    # deferred: the hf extra (the fixtures skip without it)
    from transformers.modeling_outputs import BaseModelOutput

    hf_model, config = bundle.model.hf_model, bundle.model.config
    source = torch.tensor([bundle.source_ids(TEXT)[0]])  # [1, S]
    mask = source.ne(config.pad_id).long()
    norm = getattr(hf_model.get_encoder(), FINAL_NORM[layout]) if layout in FINAL_NORM else torch.nn.Identity()
    with torch.inference_mode():
        states = hf_model.get_encoder()(input_ids=source, attention_mask=mask, output_hidden_states=True).hidden_states
        memories = [norm(state) for state in states[1:-1]] + [states[-1]]  # the last is normed by the library itself
    translations = []
    for memory in memories:
        with torch.inference_mode():
            out = hf_model.generate(
                encoder_outputs=BaseModelOutput(last_hidden_state=memory),
                attention_mask=mask,
                do_sample=False,
                num_beams=1,
                max_new_tokens=steps,
                min_length=0,
                forced_bos_token_id=config.forced_bos_id,
                decoder_start_token_id=config.bos_id,
            )
        translations.append(out[0, 1:].tolist())  # without the decoder start
    return translations


def _until_eos(ids: list[int], eos_id: int, pad_id: int) -> list[int]:
    return ids[: ids.index(eos_id) + 1] if eos_id in ids else [token for token in ids if token != pad_id]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layer_s_translation_is_the_library_s_greedy_generate_from_that_layer(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    lens = bundle_decoder_lens(bundle, TEXT)
    config = bundle.model.config
    assert len(lens.token_ids) == config.n_encoder_layers and lens.final_norm == (layout in FINAL_NORM)
    steps = max(len(row) for row in lens.token_ids)
    expected = _library_translations(bundle, layout, steps)
    for layer, (ours, theirs) in enumerate(zip(lens.token_ids, expected)):
        assert ours == _until_eos(theirs, config.eos_id, config.pad_id)[: len(ours)], (layout, layer)
        assert len(ours) == steps or ours[-1] == config.eos_id, (layout, layer)
    stepper = Stepper(bundle, TEXT)
    stepper.run()
    assert lens.token_ids[-1] == stepper.target_ids()  # the last layer's is the model's own translation


def test_a_forced_language_code_opens_every_layer_s_translation(pre_norm_bundles, monkeypatch):
    """NLLB's and mBART-50's generation forces the target language's code first: so does every layer's reading."""
    bundle = pre_norm_bundles["m2m100"]
    forced = bundle.model.config.eos_id + 7  # any token: the tiny model's "language code"
    monkeypatch.setattr(bundle.model, "config", dataclasses.replace(bundle.model.config, forced_bos_id=forced))
    lens = bundle_decoder_lens(bundle, TEXT)
    assert all(row[0] == forced for row in lens.token_ids)
    expected = _library_translations(bundle, "m2m100", max(len(row) for row in lens.token_ids))
    assert all(theirs[0] == forced for theirs in expected)
    for ours, theirs in zip(lens.token_ids, expected):
        assert ours == _until_eos(theirs, bundle.model.config.eos_id, bundle.model.config.pad_id)[: len(ours)]
