"""The Hugging Face encoder-decoders' modules as the tests find them, by the library's own names written here (never
through the app's layout table, model/pretrained/layouts.py, whose answers the tests check), and one sentence's case."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.kinds import AttentionKind

SOURCE = "The house is small ."


@dataclass
class ByHand:
    """One attention of a library model: the module and its projections."""

    module: torch.nn.Module
    queries: torch.nn.Linear
    keys: torch.nn.Linear
    values: torch.nn.Linear
    output: torch.nn.Linear
    head_width: int


def attention_by_hand(network, kind: AttentionKind, layer: int) -> ByHand:
    """The attention of ``kind`` in ``layer`` (from 0) of a library encoder-decoder, found by the library's names."""
    hf_model = network.hf_model
    stack = hf_model.get_encoder() if kind is AttentionKind.ENCODER else hf_model.get_decoder()
    if network.config.model_type == "t5":
        block = stack.block[layer]
        t5 = block.layer[1].EncDecAttention if kind is AttentionKind.CROSS else block.layer[0].SelfAttention
        return ByHand(t5, t5.q, t5.k, t5.v, t5.o, t5.key_value_proj_dim)
    bart = stack.layers[layer].encoder_attn if kind is AttentionKind.CROSS else stack.layers[layer].self_attn
    return ByHand(bart, bart.q_proj, bart.k_proj, bart.v_proj, bart.out_proj, bart.head_dim)


def sentence_case(bundle) -> tuple[list[int], list[int], torch.Tensor, torch.Tensor]:
    """(source ids, chosen ids, source [1, S], decoder inputs [1, T]) of SOURCE and four decoded tokens."""
    source_ids = bundle.source_ids(SOURCE)[0]
    chosen = [5, 7, 9, bundle.config.eos_id]
    return source_ids, chosen, torch.tensor([source_ids]), torch.tensor([[bundle.config.bos_id, *chosen[:-1]]])


def library_pass(network, source: torch.Tensor, inputs: torch.Tensor, hooks: dict | None = None) -> tuple[object, dict]:
    """The library's own teacher-forced pass (attentions and hidden states out) with forward hooks of the test's own
    (module -> hook; a hook returning a tensor replaces the module's output); what each hooked module returned, kept."""
    hooks = hooks or {}
    kept: dict = {}
    handles = [module.register_forward_hook(hook) for module, hook in hooks.items()]
    handles += [module.register_forward_hook(lambda m, _a, out: kept.setdefault(m, out)) for module in hooks]
    try:
        out = network.hf_model(
            input_ids=source, decoder_input_ids=inputs, output_attentions=True, output_hidden_states=True, use_cache=False
        )
    finally:
        for handle in handles:
            handle.remove()
    return out, kept


def read_only(modules) -> dict:
    """Hooks that only read: each module's output is kept by ``library_pass`` and passed on unchanged."""
    return {module: (lambda *_: None) for module in modules}


def decoder_library_pass(network, inputs: torch.Tensor, hooks: dict | None = None):
    """A decoder-only model's own pass over ``inputs`` [1, T] (attentions and hidden states out, no gradients) with
    forward hooks of the test's own (module -> hook; a hook returning a tensor replaces the module's output)."""
    handles = [module.register_forward_hook(hook) for module, hook in (hooks or {}).items()]
    try:
        with torch.no_grad():
            return network.hf_model(input_ids=inputs, output_hidden_states=True, output_attentions=True, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
