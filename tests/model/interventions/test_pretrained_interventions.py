"""Hugging Face T5, Marian and the pre-norm mBART, M2M100 and Pegasus through the interventions
(model/interventions/library.py): the hooked pass is the library's own, a patch equals the same activation replaced by
hand, and the logit lens's last reading is the model's."""

from __future__ import annotations

import pytest
import torch

from model.family import INTERVENTION_TOOLS, InterventionTool
from model.interventions.hooked import Patch, hook_names, translated
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import activation_patching, patch_grids
from model.interventions.patching_setup import prepare_bundle_patching
from model.interventions.served_pass import lens_logits, run_hooked, served_tools


def hook_sites(network) -> dict:
    """Every hook point of a library network -> its site, from the adapter its registry entry's factory binds to it."""
    from model.pretrained.families import hooked_pass  # deferred: the hf extra may be absent (skipped by the fixtures)

    return hooked_pass(network).hook_sites()


CLEAN = "The house is small ."
CORRUPTIONS = ("The cat is small .", "The dog is small .", "The house is big .", "The man is small .")
LAYOUTS = ("t5", "marian", "mbart", "m2m100", "pegasus")
PRE_NORM = ("mbart", "m2m100", "pegasus")  # their sublayers' streams after the add: no module returns them
FINAL_NORM = ("t5", "mbart", "m2m100", "pegasus")  # the lens reads through the decoder's last norm (not linear)


@pytest.fixture(scope="module")
def bundles(tiny_bundles, pre_norm_bundles) -> dict:
    """Tiny models of each layout (model/pretrained/tiny.py: random weights, built here)."""
    return {"t5": tiny_bundles["t5"], "marian": tiny_bundles["marian"], **pre_norm_bundles}


def corrupted_text(bundle) -> str:
    """The first of CORRUPTIONS with as many pieces as CLEAN in ``bundle``'s tokenizer (patching needs equal counts)."""
    pieces = len(bundle.source_ids(CLEAN)[0])
    return next(text for text in CORRUPTIONS if len(bundle.source_ids(text)[0]) == pieces)


def _inputs(bundle) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(clean source [1, S], corrupted source [1, S], decoder inputs [1, 4])."""
    clean, corrupted = (torch.tensor([bundle.source_ids(text)[0]]) for text in (CLEAN, corrupted_text(bundle)))
    return clean, corrupted, torch.tensor([[bundle.config.bos_id, 5, 6, 7]])


def _library_logits(network, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    mask = source.ne(network.config.pad_id).long()
    with torch.inference_mode():
        return network.hf_model(input_ids=source, attention_mask=mask, decoder_input_ids=target).logits  # [1, T, V]


def _by_hand(network, source, target, module, replace) -> torch.Tensor:
    """The library's logits with one forward hook of the test's own on ``module`` (``replace(args, output)``)."""
    handle = module.register_forward_hook(lambda _module, args, output: replace(args, output))
    try:
        return _library_logits(network, source, target)
    finally:
        handle.remove()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_hooked_pass_is_the_library_s_own(bundles, layout):
    network = bundles[layout].model
    clean, _, target = _inputs(bundles[layout])
    expected = _library_logits(network, clean, target)
    with torch.inference_mode():
        untouched = run_hooked(network, clean, target).logits(network)
        captured = run_hooked(network, clean, target, capture=hook_names(network))
    assert torch.allclose(untouched, expected, atol=1e-5, rtol=0)
    assert torch.allclose(captured.logits(network), expected, atol=1e-5, rtol=0)
    patterns = set(hook_names(network)) - set(hook_sites(network))  # read from the library's own output_attentions
    assert set(captured.activations) == set(hook_names(network)) and all(name.endswith(".pattern") for name in patterns)
    with torch.inference_mode():
        library = network.hf_model(input_ids=clean, decoder_input_ids=target, output_attentions=True, use_cache=False)
    assert torch.equal(captured.activations["decoder.1.cross.pattern"], library.cross_attentions[1])
    assert torch.equal(captured.activations["encoder.0.self.pattern"], library.encoder_attentions[0])
    with torch.inference_mode():  # for its hook points only: the head reads no position, the points are the same
        points_only = run_hooked(network, clean, target, capture=["decoder.1.resid_post"], output=False)
    assert points_only.hidden.shape[1] == 0
    assert torch.equal(points_only.activations["decoder.1.resid_post"], captured.activations["decoder.1.resid_post"])
    heads = captured.activations["decoder.1.cross.head_out"]  # [1, H, T, d_model]
    assert heads.shape == (1, network.config.n_heads, target.shape[1], network.config.d_model)
    assert torch.allclose(heads.sum(1), captured.activations["decoder.1.cross.out"] - _bias(network, "decoder.1.cross"), atol=1e-5)


def _bias(network, prefix: str) -> torch.Tensor | float:
    bias = hook_sites(network)[f"{prefix}.out"].module.bias
    return 0.0 if bias is None else bias


def _patched_both_ways(bundle, name: str, selection: dict, module, read, write) -> None:
    """The clean run with the corrupted run's ``name`` patched where ``selection`` says (the adapter), against the
    library's clean run whose ``module`` output is rewritten by ``write(args, output, donor)``, donor = what
    ``read(args, output)`` took from the corrupted run (the test's own forward hooks): equal, and not the clean run."""
    network = bundle.model
    clean, corrupted, target = _inputs(bundle)
    with torch.inference_mode():
        donor = run_hooked(network, corrupted, target, capture=[name]).activations[name]
        patched = run_hooked(network, clean, target, patches=[Patch(name, donor, **selection)]).logits(network)
    taken = []
    _by_hand(network, corrupted, target, module, lambda args, output: taken.append(read(args, output)))
    expected = _by_hand(network, clean, target, module, lambda args, output: write(args, output, taken[0]))
    assert not torch.allclose(patched, _library_logits(network, clean, target), atol=1e-3)  # the patch does something
    assert torch.allclose(patched, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_patched_head_is_that_head_s_input_replaced_by_hand(bundles, layout):
    """Head 3 of decoder layer 2's cross-attention: the adapter patches its output; by hand, the corrupted run's
    context of that head replaces the clean run's in the output projection's input (the library's own slices)."""
    name, head = "decoder.1.cross.head_out", 2
    projection = hook_sites(bundles[layout].model)[name].module
    width = projection.in_features // bundles[layout].config.n_heads
    heads = slice(head * width, (head + 1) * width)

    def swap_head(args, output, donor):
        context = args[0].clone()
        context[..., heads] = donor[..., heads]
        return torch.nn.functional.linear(context, projection.weight, projection.bias)

    _patched_both_ways(bundles[layout], name, {"heads": (head,)}, projection, lambda args, output: args[0].clone(), swap_head)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_patched_position_is_that_residual_replaced_by_hand(bundles, layout):
    """Source position 1 after encoder layer 1 (where the two sources differ): the adapter's patch, and by hand the
    corrupted run's layer output at that position written into the clean run's."""
    name, position = "encoder.0.resid_post", 1

    def swap_position(args, output, donor):
        hidden = output[0].clone()
        hidden[:, position] = donor[:, position]
        return (hidden, *output[1:])

    layer = hook_sites(bundles[layout].model)[name].module
    selection = {"positions": (position,)}
    _patched_both_ways(bundles[layout], name, selection, layer, lambda args, output: output[0].clone(), swap_position)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_stream_after_the_last_cross_attention_patched_whole_restores_the_clean_run(bundles, layout):
    """The last decoder layer's feed-forward reads only the stream after its cross-attention: that stream patched with
    the clean run's gives the clean logits (the pre-norm layouts' ``resid``, which no module returns, included), and
    read, it is what the feed-forward's norm is given (the test's own hook)."""
    network = bundles[layout].model
    clean, corrupted, target = _inputs(bundles[layout])
    name = f"decoder.{network.config.n_decoder_layers - 1}.cross.resid"
    with torch.inference_mode():
        clean_run = run_hooked(network, clean, target, capture=[name])
        patched = run_hooked(network, corrupted, target, patches=[Patch(name, clean_run.activations[name])]).logits(network)
    torch.testing.assert_close(patched, clean_run.logits(network), atol=1e-5, rtol=0)
    if layout in PRE_NORM:
        layer = network.hf_model.get_decoder().layers[-1]
        given: list[torch.Tensor] = []
        handle = layer.final_layer_norm.register_forward_pre_hook(lambda _module, args: given.append(args[0].clone()))
        try:
            _library_logits(network, clean, target)
        finally:
            handle.remove()
        torch.testing.assert_close(clean_run.activations[name], given[0], atol=1e-6, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_patching_every_component_is_the_clean_run_and_none_the_corrupted(bundles, layout):
    network = bundles[layout].model
    clean, corrupted, target = _inputs(bundles[layout])
    components = [n for n in hook_names(network) if n.endswith((".head_out", ".mlp_out")) or n.endswith("0.resid_pre")]
    with torch.inference_mode():
        clean_run = run_hooked(network, clean, target, capture=components)
        every = [Patch(name, clean_run.activations[name]) for name in components]
        restored = run_hooked(network, corrupted, target, patches=every).logits(network)
        untouched = run_hooked(network, corrupted, target).logits(network)
    assert torch.allclose(restored, clean_run.logits(network), atol=1e-4, rtol=0)
    assert torch.allclose(untouched, _library_logits(network, corrupted, target), atol=1e-5, rtol=0)
    assert not torch.allclose(untouched, clean_run.logits(network), atol=1e-3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_patching_grids_of_a_pretrained_model(bundles, layout):
    """The same grids as the app's Transformer's; the decoder's last residual at the step restores all (1), its
    embeddings (the same in both runs) nothing (0); the preview (attribution patching) is exact where the metric is
    linear in the activation: the embeddings, and Marian's last residual (its head is linear; T5's final norm is not)."""
    bundle = bundles[layout]
    first = translated(bundle, CLEAN, InterventionTool.PATCHING)[1][0]
    setup = prepare_bundle_patching(bundle, CLEAN, corrupted_text(bundle), step=0, compared_id=5 if first != 5 else 6)
    exact, preview = patch_grids(setup, "exact"), patch_grids(setup, "attribution")
    config = bundle.config
    assert exact.grids["cross heads"].values.shape == (config.n_decoder_layers, config.n_heads)
    assert exact.grids["encoder residual"].values.shape == (config.n_encoder_layers + 1, len(setup.labels.clean))
    residual = exact.grids["decoder residual"].values  # [layers + 1, step + 1]
    assert residual[-1, -1] == pytest.approx(1.0, abs=1e-4) and residual[0, -1] == pytest.approx(0.0, abs=1e-4)
    estimated = preview.grids["decoder residual"].values
    assert estimated[0, -1] == pytest.approx(0.0, abs=1e-4)
    assert layout in FINAL_NORM or estimated[-1, -1] == pytest.approx(1.0, abs=1e-3)
    if layout == "t5":  # its tiny model's two sources are translated differently: the default step and token
        assert activation_patching(bundle, CLEAN, corrupted_text(bundle)).grids.keys() == exact.grids.keys()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_logit_lens_s_last_reading_is_the_model_s_own(bundles, layout):
    bundle = bundles[layout]
    network = bundle.model
    lens = bundle_logit_lens(bundle, CLEAN, k=3)
    source, chosen = translated(bundle, CLEAN, InterventionTool.PATCHING)
    target = torch.tensor([[network.config.bos_id, *chosen[:-1]]])
    expected = _library_logits(network, torch.tensor([source]), target)[0]  # [T, V]
    with torch.inference_mode():
        last = run_hooked(network, torch.tensor([source]), target, capture=[lens.hooks[-1]]).activations[lens.hooks[-1]]
        read = lens_logits(network, last)[0]  # [T, V]
    assert torch.allclose(read, expected, atol=1e-5, rtol=0)
    probabilities = torch.softmax(expected, -1)
    assert lens.candidate_ids[-1, :, 0].tolist() == expected.argmax(-1).tolist()
    assert torch.allclose(torch.from_numpy(lens.candidate_probabilities[-1]), probabilities.topk(3).values, atol=1e-5)
    assert len(lens.readings) == 1 + 3 * network.config.n_decoder_layers
    assert lens.final_norm == (layout in FINAL_NORM)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_pretrained_encoder_decoder_serves_every_intervention(bundles, layout):
    bundle = bundles[layout]
    assert served_tools(bundle.model) == tuple(tool for tool in INTERVENTION_TOOLS if tool is not InterventionTool.CIRCUITS)
    parts = bundle_logit_attribution(bundle, CLEAN)  # the greedy translation's, decomposed (the tests beside check it)
    assert parts.values.shape == (len(parts.target_tokens), len(parts.parts)) and abs(parts.remainder).max() < 1e-4
