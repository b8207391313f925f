"""The contribution measures on encoder-only models: Hugging Face BERT and DistilBERT (post-norm; through their measured
pass, model/attribution/stack_pass.py) and the app's own classifier (model/attribution/own_pass.py), against the
test's own reading of the models' modules:

* the norm-based measure equals ‖α_ij v_j W_O,h‖ from the library's ``output_attentions`` and the value projection's
  own output (the app's classifier: its layer's input through its own q/k/v projection, by hand);
* value zeroing equals the cosine distance of the layer's output when the test zeroes key j's values itself;
* ALTI's rows are distributions; with post-norm layers their parts go through the norm held at the sum's scale;
* the gradient methods explain the head's decisions (one row per piece); what reads cross-attention is refused with its
  reason.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.attribution.measures import compute_measure, unsupported
from model.kinds import AttentionKind
from model.nn.classifier import ClassifierConfig, EncoderClassifier

TEXT = "The house is small and the cat"
ENCODER = AttentionKind.ENCODER


@pytest.fixture(scope="module")
def encoders(tiny_bundles, tmp_path_factory) -> dict:
    """BERT (the session's tiny masked-LM) and a tiny DistilBERT, opened."""
    from model.pretrained.loading import load_pretrained
    from model.pretrained.tiny import build

    folder = build("distilbert", tmp_path_factory.mktemp("distilbert") / "distilbert")
    return {"bert": tiny_bundles["bert-mlm"], "distilbert": load_pretrained(str(folder))}


def _parts(network, layer: int) -> tuple[torch.nn.Module, torch.Tensor, torch.nn.Module]:
    """(the value projection, W^O [d_model, H * d_k], the layer) by the library's names."""
    hf_model = network.hf_model
    if network.config.model_type == "distilbert":
        block = hf_model.distilbert.transformer.layer[layer]
        return block.attention.v_lin, block.attention.out_lin.weight.detach(), block
    block = hf_model.bert.encoder.layer[layer]
    return block.attention.self.value, block.attention.output.dense.weight.detach(), block


def _library(network, ids: torch.Tensor, hooks: dict, attentions: bool = True):
    """The library's own pass with the test's forward hooks (with its attentions, DistilBERT's layers return them first)."""
    handles = [module.register_forward_hook(hook) for module, hook in hooks.items()]
    try:
        with torch.no_grad():
            return network.hf_model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=attentions)
    finally:
        for handle in handles:
            handle.remove()


def _expected_norms(weights: torch.Tensor, values: torch.Tensor, w_out: torch.Tensor, n_heads: int) -> np.ndarray:
    """‖α_ij v_j W_O,h‖ [H, Q, K] from weights [H, Q, K], values [K, H * d_k], W^O [d_model, H * d_k]."""
    d_k = w_out.shape[1] // n_heads
    heads = [
        weights[h] * (values[:, h * d_k : (h + 1) * d_k] @ w_out[:, h * d_k : (h + 1) * d_k].T).norm(dim=-1)[None]
        for h in range(n_heads)
    ]
    return torch.stack(heads).numpy()


@pytest.mark.parametrize("layout", ["bert", "distilbert"])
def test_norm_based_equals_the_library_s_weights_times_its_value_vectors(encoders, layout):
    bundle = encoders[layout]
    network = bundle.model
    ids = bundle.source_ids(TEXT)[0]
    kept: dict[int, torch.Tensor] = {}
    hooks = {_parts(network, layer)[0]: (lambda _m, _a, out, layer=layer: kept.__setitem__(layer, out)) for layer in range(2)}
    out = _library(network, torch.tensor([ids]), hooks)
    result = compute_measure(network, ids, [], "norm")
    assert set(result.values) == {ENCODER}
    for layer, weights in enumerate(out.attentions):  # [1, H, S, S]
        expected = _expected_norms(weights[0], kept[layer][0], _parts(network, layer)[1], network.config.n_heads)
        assert np.allclose(result.values[ENCODER][layer], expected, atol=1e-5)


@pytest.mark.parametrize("layout", ["bert", "distilbert"])
def test_value_zeroing_equals_the_layer_s_output_with_a_value_zeroed_by_hand(encoders, layout):
    bundle = encoders[layout]
    network = bundle.model
    ids = bundle.source_ids(TEXT)[0]
    result = compute_measure(network, ids, [], "value-zeroing")
    layer, key = 1, 2
    value, _, block = _parts(network, layer)
    outputs: list[torch.Tensor] = []
    keep = {block: lambda _m, _a, out: outputs.append(out[0] if isinstance(out, tuple) else out)}

    def zeroed(_module, _args, output):
        output = output.clone()
        output[:, key] = 0.0
        return output

    _library(network, torch.tensor([ids]), keep, attentions=False)
    _library(network, torch.tensor([ids]), {**keep, value: zeroed}, attentions=False)
    distance = 1.0 - F.cosine_similarity(outputs[1][0].double(), outputs[0][0].double(), dim=-1)  # [S]
    assert np.allclose(result.values[ENCODER][layer, 0, :, key], distance.clamp(min=0).numpy(), atol=1e-5)


@pytest.mark.parametrize("layout", ["bert", "distilbert"])
def test_alti_rows_are_distributions(encoders, layout):
    bundle = encoders[layout]
    ids = bundle.source_ids(TEXT)[0]
    shares = compute_measure(bundle.model, ids, [], "alti").shares[ENCODER]  # [L, 1, S, S]
    assert shares.shape[-1] == len(ids) and np.allclose(shares.sum(-1), 1.0, atol=1e-5) and (shares >= 0).all()


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_app_s_classifier_norm_based_is_its_own_weights_times_its_value_vectors(norm):
    torch.manual_seed(0)
    model = EncoderClassifier(ClassifierConfig(vocab_size=40, norm_placement=norm)).eval()
    ids = [5, 9, 12, 7, 3, 2]
    inputs: dict[int, torch.Tensor] = {}
    handles = [
        layer.self_attention.register_forward_pre_hook(lambda _m, args, layer=index: inputs.__setitem__(layer, args[0]))
        for index, layer in enumerate(model.layers)
    ]
    with torch.no_grad():
        _, weights = model.inspect(torch.tensor([ids]))
    for handle in handles:
        handle.remove()
    result = compute_measure(model, ids, [], "norm")
    d_model = model.config.d_model
    for index, layer in enumerate(model.layers):
        attention = layer.self_attention
        values = (inputs[index][0] @ attention.qkv_projection.weight.T)[:, 2 * d_model :].detach()  # [S, d_model]
        expected = _expected_norms(
            weights.encoder_self[index][0], values, attention.out_projection.weight.detach(), attention.n_heads
        )
        assert np.allclose(result.values[ENCODER][index], expected, atol=1e-5)
    alti = compute_measure(model, ids, [], "alti").shares[ENCODER]
    assert np.allclose(alti.sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", ["alti+", "shift-att"])
def test_what_reads_cross_attention_is_refused_with_its_reason(encoders, name):
    reason = unsupported(encoders["bert"].model, name)
    assert reason and "cross-attention" in reason, reason


@pytest.mark.parametrize("name", ["attn-grad", "grad-input", "ig"])
def test_the_gradient_methods_explain_the_head_s_decisions_as_encoder_rows(encoders, name):
    """Each row the prediction at that piece (tests/model/grading/test_encoder_only_card.py checks their values)."""
    ids = encoders["distilbert"].source_ids(TEXT)[0]
    result = compute_measure(encoders["distilbert"].model, ids, [], name, max_points=17)
    shares = result.shares[ENCODER]
    assert set(result.shares) == {ENCODER} and shares.shape[-2:] == (len(ids), len(ids))
    assert np.allclose(shares.sum(-1), 1.0, atol=1e-5) and (shares >= 0).all()
