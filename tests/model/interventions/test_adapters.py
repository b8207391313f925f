"""Each registry entry's hooked-pass adapter runs the network's own forward pass (model/interventions/hooked.py):

* with no patches, the app's Transformer's hooked pass is its plain forward within 1e-6 (pre- and post-norm, every
  hook point captured or none), and a Hugging Face T5's, Marian's, BART's, mBART's, M2M100's and Pegasus's the
  library's forward within 1e-5;
* a sublayer of the model replaced (a feed-forward block giving zeros, or twice its output) changes what run_hooked
  captures and returns, the logit lens reads and patching measures, exactly as the plain forward changes: there is no
  second copy of the pass;
* the adapter comes from the family's registry entry; a pretrained layout without one (an mBART, were its adapter
  not declared) is declared without interventions, and every tool says so in one line.
"""

from __future__ import annotations

import pytest
import torch

from model.family import INTERVENTION_TOOLS, InterventionTool, families
from model.interventions.hooked import InterventionError, Patch, adapter_of, check_tool, hook_names, run_hooked
from model.interventions.logit_lens import logit_lens
from model.interventions.patching_setup import prepare_patching
from model.interventions.served_pass import served_tools
from tests.conftest import PRE_NORM_LAYOUTS
from tests.model.interventions.models import SOURCES, TARGETS, padded, tiny

LAYOUTS = ("t5", "marian", "bart")
LIBRARY_TOOLS = tuple(tool for tool in INTERVENTION_TOOLS if tool is not InterventionTool.CIRCUITS)  # circuits: own only
ADAPTERS = {"t5": "T5Pass", "marian": "MarianPass", "bart": "BartPass", **dict.fromkeys(PRE_NORM_LAYOUTS, "PreNormPass")}


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("every_hook", [False, True])
def test_the_transformer_s_hooked_pass_is_its_plain_forward(norm, every_hook):
    model = tiny(norm, tied=False)
    source, target = padded(SOURCES), padded(TARGETS)
    with torch.no_grad():
        expected = model(source, target)  # [B, T, d_model]
        run = run_hooked(model, source, target, capture=hook_names(model) if every_hook else ())
        memory, _, _ = model.encode(source)
    torch.testing.assert_close(run.hidden, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(run.logits(model), model.logits(expected), atol=1e-6, rtol=0)
    torch.testing.assert_close(run.memory, memory, atol=1e-6, rtol=0)
    assert torch.equal(run.hidden, expected)  # hooks that only read change nothing the model computes


def test_the_transformer_s_hook_points_are_the_ones_it_reads():
    model = tiny("pre")
    names = hook_names(model)
    assert names == list(model.hook_points()) and len(set(names)) == len(names)
    assert {"encoder.embed", "encoder.0.self.q", "decoder.1.cross.pattern", "decoder.1.mlp_in", "decoder.final"} <= set(names)
    source, target = padded(SOURCES), padded(TARGETS)
    with torch.no_grad():
        run = run_hooked(model, source, target, capture=names)
        _, weights = model.inspect(source, target)
    acts = run.activations
    assert set(acts) == set(names)
    real = padded(TARGETS) != 0  # [B, T]: inspect masks padded target keys, the teacher-forced pass need not
    torch.testing.assert_close(acts["decoder.1.cross.pattern"].transpose(1, 2)[real], weights.cross[1].transpose(1, 2)[real])
    torch.testing.assert_close(acts["encoder.0.self.pattern"], acts["encoder.0.self.scores"].softmax(-1), atol=0, rtol=0)
    torch.testing.assert_close(model.logits(acts["decoder.final"]), run.logits(model), atol=0, rtol=0)


@pytest.fixture(scope="module")
def library_bundles(tiny_bundles, pre_norm_bundles) -> dict:
    return {**{layout: tiny_bundles[layout] for layout in LAYOUTS}, **pre_norm_bundles}


@pytest.mark.parametrize("layout", ADAPTERS)
def test_each_layout_s_hooked_pass_is_the_library_s_forward(library_bundles, layout):
    bundle = library_bundles[layout]
    network = bundle.model
    source = torch.tensor([bundle.source_ids("le chat voit le chien .")[0]])  # [1, S]
    target = torch.tensor([[network.config.bos_id, 5, 6, 7]])  # [1, 4]
    mask = source.ne(network.config.pad_id).long()
    with torch.inference_mode():
        expected = network.hf_model(input_ids=source, attention_mask=mask, decoder_input_ids=target).logits  # [1, 4, V]
        plain = run_hooked(network, source, target)
        every = run_hooked(network, source, target, capture=hook_names(network))
    torch.testing.assert_close(plain.logits(network), expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(every.logits(network), expected, atol=1e-5, rtol=0)
    assert set(every.activations) == set(hook_names(network))
    adapter = adapter_of(network)
    assert type(adapter).__name__ == ADAPTERS[layout] and served_tools(network) == LIBRARY_TOOLS


def test_each_layout_has_its_own_adapter_declared_by_its_registry_entry(library_bundles):
    from model.pretrained import families as pretrained  # deferred: the hf extra may be absent (skipped by the fixture)

    adapters = {layout: adapter_of(library_bundles[layout].model) for layout in ADAPTERS}
    assert len({type(adapter) for adapter in adapters.values()}) == 4
    for layout, adapter in adapters.items():
        assert type(pretrained.hooked_pass(library_bundles[layout].model)) is type(adapter)  # bound to its network
    final_norms = {layout for layout, adapter in adapters.items() if adapter.has_final_norm()}
    assert final_norms == {"t5", *PRE_NORM_LAYOUTS}  # pre-norm: the lens reads through the decoder's last norm


class _Scaled(torch.nn.Module):
    """A feed-forward block's replacement: ``factor`` times the original's output (0: zeros)."""

    def __init__(self, original: torch.nn.Module, factor: float):
        super().__init__()
        self.original, self.factor = original, factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.original(x) * self.factor


@pytest.mark.parametrize("factor", [0.0, 2.0])
def test_a_replaced_sublayer_changes_every_tool_as_it_changes_the_forward_pass(factor):
    model = tiny("post")
    source, target = torch.tensor([SOURCES[0]]), torch.tensor([TARGETS[0]])
    chosen = TARGETS[0][1:] + [3]
    name = "decoder.1.mlp_out"
    with torch.no_grad():
        before = run_hooked(model, source, target, capture=[name])
        lens_before = logit_lens(model, SOURCES[0], chosen)
        model.decoder_layers[1].feed_forward = _Scaled(model.decoder_layers[1].feed_forward, factor)
        expected = model.logits(model(source, target))  # [1, T, V]: the plain forward of the changed model
        after = run_hooked(model, source, target, capture=[name])
        logits_before, logits_after = before.logits(model), after.logits(model)  # [1, T, V]
    torch.testing.assert_close(after.activations[name], before.activations[name] * factor, atol=1e-6, rtol=0)
    torch.testing.assert_close(logits_after, expected, atol=1e-6, rtol=0)
    assert float((logits_after - logits_before).abs().max()) > 1e-3
    lens = logit_lens(model, SOURCES[0], chosen)
    assert lens.candidate_ids[-1, :, 0].tolist() == expected[0].argmax(-1).tolist()  # the last reading: the model's own
    assert not (lens.chosen_probabilities[-1] == lens_before.chosen_probabilities[-1]).all()
    corrupted = [5, 6, 11, 8, 9, 3]
    setup = prepare_patching(model, SOURCES[0], corrupted, step=2, target_ids=chosen, compared_id=7)
    step_logits = expected[0, 2]  # [V]
    assert setup.clean_metric == pytest.approx(float(step_logits[chosen[2]] - step_logits[7]), abs=1e-5)


def test_a_patch_reaches_the_model_s_own_modules():
    """A patched memory is what the decoder's own cross-attention projects: its keys are the memory's."""
    model = tiny("pre")
    source, target = padded(SOURCES[:1]), padded(TARGETS[:1])
    with torch.no_grad():
        zero = run_hooked(model, source, target, capture=["decoder.0.cross.k"], patches=[Patch("encoder.memory", torch.zeros(1))])
    assert float(zero.activations["decoder.0.cross.k"].abs().max()) == 0.0  # projections without bias of a zero memory


def _tiny_mbart():
    transformers = pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.family import Architecture
    from model.pretrained.config import read_config
    from model.pretrained.networks import Seq2SeqNetwork

    sizes = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2)
    config = transformers.MBartConfig(vocab_size=40, max_position_embeddings=32, encoder_ffn_dim=32, decoder_ffn_dim=32, **sizes)
    torch.manual_seed(0)
    hf_model = transformers.MBartForConditionalGeneration(config).eval()
    return Seq2SeqNetwork(hf_model, read_config(config, Architecture.ENCODER_DECODER, "MBartForConditionalGeneration", 40, None))


def test_a_layout_without_an_adapter_is_declared_without_interventions(monkeypatch):
    from model.pretrained import families as pretrained

    network = _tiny_mbart()
    monkeypatch.delitem(pretrained.HOOKED_LAYOUTS, "mbart")  # a layout whose adapter is not declared
    assert pretrained.hooked_pass(network) is None
    for ask in (served_tools, lambda model: check_tool(model, "logit lens"), hook_names):
        with pytest.raises(InterventionError, match="interventions are not computed for this model") as error:
            ask(network)
        assert "\n" not in str(error.value) and "mbart" in str(error.value)
    with pytest.raises(InterventionError, match="no hooked pass"):
        run_hooked(network, torch.tensor([[5, 6, 2]]), torch.tensor([[2, 5]]))


def test_capabilities_are_derived_from_the_declared_hooked_pass():
    for family in families():
        assert family.capabilities.hooked == (family.capabilities.hooked_pass is not None), family.name
    by_name = {family.name: family for family in families()}
    assert not by_name["rnn"].capabilities.hooked
    assert by_name["transformer"].capabilities.hooked and by_name["classifier"].capabilities.hooked


@pytest.mark.parametrize("feed_forward", ["relu", "gated-gelu"])
def test_t5_v1_0_and_the_gated_feed_forward_of_v1_1_and_mt5_are_the_library_s_forward(feed_forward):
    """T5 v1.1 and mT5 replace the feed-forward by a gated one (``T5DenseGatedActDense``, still ``DenseReluDense``) and
    untie the output layer: the same adapter reads and patches them, equal to the library's forward."""
    transformers = pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.family import Architecture
    from model.pretrained.config import read_config
    from model.pretrained.networks import Seq2SeqNetwork

    gated = feed_forward != "relu"
    config = transformers.T5Config(
        vocab_size=40, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=4, feed_forward_proj=feed_forward,
        tie_word_embeddings=not gated, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )  # fmt: skip
    torch.manual_seed(0)
    hf_model = transformers.T5ForConditionalGeneration(config).eval()
    network = Seq2SeqNetwork(hf_model, read_config(config, Architecture.ENCODER_DECODER, "T5ForConditionalGeneration", 40, 32))
    assert type(hf_model.encoder.block[0].layer[-1].DenseReluDense).__name__ == (
        "T5DenseGatedActDense" if gated else "T5DenseActDense"
    )
    source, target = torch.tensor([[5, 6, 7, 8, 1]]), torch.tensor([[0, 9, 10]])
    with torch.inference_mode():
        expected = hf_model(input_ids=source, attention_mask=torch.ones_like(source), decoder_input_ids=target).logits
        every = run_hooked(network, source, target, capture=hook_names(network))
        zeroed = run_hooked(network, source, target, patches=[Patch("decoder.1.mlp_out", torch.zeros(1))]).logits(network)
    torch.testing.assert_close(every.logits(network), expected, atol=1e-5, rtol=0)
    assert type(adapter_of(network)).__name__ == "T5Pass" and every.activations["decoder.1.mlp_out"].abs().max() > 0
    assert float((zeroed - expected).abs().max()) > 1e-4  # the gated block's output patched: the logits follow
