"""The hooked pass (model/interventions/hooked.py) is the model's own, and its hooks read and patch what they name:

* its logits equal the model's fast teacher-forced pass (``model.forward``) within 1e-5, pre- and post-norm, tied and
  untied, one sentence or a padded batch;
* each head's output through its slice of W^O sums to the sublayer's output; the memory is the model's ``encode``;
* a patch replaces what it selects (rows, heads, positions) and nothing else; patching the memory with another
  sentence's gives that sentence's logits, and a replacement memory skips the encoder to the same effect;
* hooks the model does not have, and families that cannot be patched, are refused with a UserError.
"""

from __future__ import annotations

import pytest
import torch

from model.errors import UserError
from model.interventions.hooked import InterventionError, Patch, adapter_of, hook_names, run_hooked
from model.nn.rnn import RNNAttention
from model.nn.rnn_config import RNNConfig
from tests.model.interventions.models import SOURCES, TARGETS, padded, tiny


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("rows", [1, 2])
def test_the_hooked_logits_are_the_models_own(norm, tied, rows):
    model = tiny(norm, tied=tied)
    source, target = padded(SOURCES[:rows]), padded(TARGETS[:rows])
    with torch.no_grad():
        expected = model.logits(model.forward(source, target))  # [B, T, V]
        run = run_hooked(model, source, target, capture=hook_names(model))
        logits = run.logits(model)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(run.logits(model, 2), expected[:, 2], atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_heads_sum_to_their_sublayer_and_the_memory_is_the_encoders(norm):
    model = tiny(norm)
    source, target = padded(SOURCES), padded(TARGETS)
    with torch.no_grad():
        run = run_hooked(model, source, target, capture=hook_names(model))
        memory, _, _ = model.encode(source)
    acts = run.activations
    for prefix in ("encoder.0.self", "encoder.1.self", "decoder.0.self", "decoder.1.cross"):
        torch.testing.assert_close(acts[f"{prefix}.head_out"].sum(1), acts[f"{prefix}.out"], atol=1e-6, rtol=0)
    torch.testing.assert_close(acts["encoder.memory"], memory, atol=1e-5, rtol=0)
    torch.testing.assert_close(acts["encoder.1.resid_pre"], acts["encoder.0.resid_post"])
    if norm == "post":  # no final norm: the memory is the last layer's output
        torch.testing.assert_close(acts["encoder.memory"], acts["encoder.1.resid_post"])


def test_a_patch_replaces_what_it_selects_and_nothing_else():
    model = tiny("pre")
    source, target = padded(SOURCES), padded(TARGETS)
    name = "encoder.0.self.head_out"
    with torch.no_grad():
        before = run_hooked(model, source, target, capture=[name]).activations[name]  # [2, 2, 6, 16]
        value = torch.full_like(before, 7.0)
        patch = Patch(name, value, rows=(1,), heads=(0,), positions=(2, 4))
        after = run_hooked(model, source, target, capture=[name], patches=[patch]).activations[name]
    selected = torch.zeros(before.shape[:3], dtype=torch.bool)
    selected[1, 0, [2, 4]] = True
    assert bool((after[selected] == 7.0).all())
    torch.testing.assert_close(after[~selected], before[~selected], atol=0, rtol=0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_patching_the_memory_gives_the_other_sentences_logits(norm):
    model = tiny(norm)
    clean, corrupted = torch.tensor([[5, 6, 7, 8, 9, 3]]), torch.tensor([[5, 6, 11, 8, 9, 3]])
    target = torch.tensor([TARGETS[0]])
    with torch.no_grad():
        clean_run = run_hooked(model, clean, target, capture=["encoder.memory"])
        memory = clean_run.activations["encoder.memory"]
        clean_logits = clean_run.logits(model)
        patched = run_hooked(model, corrupted, target, patches=[Patch("encoder.memory", memory)]).logits(model)
        replaced = run_hooked(model, corrupted, target, memory=memory).logits(model)
        corrupted_run = run_hooked(model, corrupted, target).logits(model)
    torch.testing.assert_close(patched, clean_logits, atol=1e-6, rtol=0)
    torch.testing.assert_close(replaced, clean_logits, atol=1e-6, rtol=0)
    assert float((corrupted_run - clean_logits).abs().max()) > 1e-2  # the patch did something


def test_unknown_hooks_and_other_families_are_refused():
    model = tiny()
    source, target = padded(SOURCES[:1]), padded(TARGETS[:1])
    with pytest.raises(InterventionError, match="no hook point 'encoder.9.mlp_out'"):
        run_hooked(model, source, target, capture=["encoder.9.mlp_out"])
    with pytest.raises(InterventionError, match="only a head_out hook"):
        run_hooked(model, source, target, patches=[Patch("encoder.0.mlp_out", torch.zeros(1), heads=(0,))])
    assert type(adapter_of(model)).__name__ == "TransformerPass"  # the one its registry entry declares
    rnn = RNNAttention(RNNConfig(source_vocab_size=24, target_vocab_size=24, d_embed=8, d_hidden=8))
    with pytest.raises(UserError, match="has no residual stream of layers"):
        adapter_of(rnn)
