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
