"""The layouts laid out as another's (RoBERTa and DistilBERT beside BERT; Mistral and Qwen2 beside Llama), each a tiny
random model built here, against the library's own modules found by the test's own names:

* a head knocked out is its slice of the attention's output projection zeroed in the library's pass (the test's own
  pre-hook), and the trace's attention is the library's ``output_attentions``;
* Mistral's and Qwen2's hooked pass is the library's forward, the logit lens's last reading is the model's own
  prediction, and the neuron view's weights are the library's.
"""

from __future__ import annotations

import pytest
import torch

from model.decoding.greedy import decoder_inputs
from model.decoding.stepper import Stepper
from model.family import InterventionTool
from model.interventions.hooked import translated
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.served_pass import run_hooked
from model.kinds import AttentionKind
from model.neuron.vectors import sentence_vectors
from model.nn.masking import Head, masked_model

ENCODERS, DECODERS = ("roberta", "distilbert"), ("mistral", "qwen2")
TEXT = "The house is small and the cat"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict:
    """One tiny model of each layout (model/pretrained/tiny.py), opened."""
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.loading import load_pretrained
    from model.pretrained.tiny import build

    root = tmp_path_factory.mktemp("more-layouts")
    return {layout: load_pretrained(str(build(layout, root / layout))) for layout in ENCODERS + DECODERS}


def _projection(network, layer: int) -> torch.nn.Linear:
    """The output projection W^O of ``layer``'s attention, by the library's own names."""
    hf_model = network.hf_model
    if network.config.model_type == "distilbert":
        return hf_model.distilbert.transformer.layer[layer].attention.out_lin
    if network.config.model_type == "roberta":
        return hf_model.roberta.encoder.layer[layer].attention.output.dense
    return hf_model.model.layers[layer].self_attn.o_proj


def _library(network, ids: torch.Tensor, pre_hook=None):
    handle = _projection(network, 1).register_forward_pre_hook(pre_hook) if pre_hook else None
    try:
        with torch.inference_mode():
            return network.hf_model(input_ids=ids, output_attentions=True)
    finally:
        if handle is not None:
            handle.remove()


@pytest.mark.parametrize("layout", ENCODERS + DECODERS)
def test_a_knocked_out_head_is_its_slice_zeroed_and_the_trace_is_the_library_s(bundles, layout):
    bundle = bundles[layout]
    network = bundle.model
    ids = torch.tensor([bundle.source_ids(TEXT)[0]])  # [1, S]
    kind = AttentionKind.ENCODER if layout in ENCODERS else AttentionKind.DECODER
    width = network.config.d_model // network.config.n_heads

    def zero_second(_module, args):
        context = args[0].clone()
        context[..., width : 2 * width] = 0.0
        return (context,)

    knocked = masked_model(network, (Head(kind, 1, 1),))
    assert torch.allclose(_library(knocked, ids).logits, _library(network, ids, zero_second).logits, atol=1e-5, rtol=0)
    stepper = Stepper(bundle, TEXT)
    trace = stepper.trace()
    library = _library(network, ids).attentions[0][0].numpy()  # [H, S, S]: the first layer's
    if kind is AttentionKind.ENCODER:
        assert abs(trace.encoder_self[0] - library).max() < 1e-5
    else:  # the prompt's given steps: each row the library's row of that position
        n = len(stepper.given)
        assert abs(trace.decoder_self[0][:, :n, :n] - library[:, :n, :n]).max() < 1e-5


@pytest.mark.parametrize("layout", DECODERS)
def test_the_decoder_tools_read_the_library_s_pass(bundles, layout):
    bundle = bundles[layout]
    network = bundle.model
    prompt, steps = translated(bundle, TEXT, InterventionTool.LOGIT_LENS)
    inputs = torch.tensor([decoder_inputs(network, prompt, steps)])  # [1, T]
    library = _library(network, inputs)
    with torch.inference_mode():
        hooked = run_hooked(network, torch.tensor([prompt]), inputs).logits(network)
    assert torch.allclose(hooked, library.logits, atol=1e-5, rtol=0)
    lens = bundle_logit_lens(bundle, TEXT)
    rows = torch.arange(len(steps))
    final = torch.softmax(library.logits[0], -1)[rows, torch.tensor(steps)].numpy()
    assert abs(lens.chosen_probabilities[-1] - final).max() < 1e-5
    vectors = sentence_vectors(network, prompt, steps, first_input=prompt[0])
    weights = vectors.of(AttentionKind.DECODER).weights  # [L, H, T, T]
    assert abs(weights[1] - library.attentions[1][0].numpy()).max() < 1e-5
