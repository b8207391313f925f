"""A Hugging Face encoder-only model's queries and keys of one text (BERT, RoBERTa, ELECTRA, XLM-R, DistilBERT), read by
forward hooks on its attention projections during the library's own forward pass, and its scores split by position.

Per layer, the hooks keep the query and key projections' outputs (biases included) and what each post-norm LayerNorm
is given (the stream plus the sublayer's output: after the attention, ``attention.output.LayerNorm`` /
``sa_layer_norm``; after the feed-forward block, ``output.LayerNorm`` / ``output_layer_norm``); the weights are the
library's own ``output_attentions``. The scores q·kᵀ/√d_k formed here are checked against the library's weights
(model/neuron/library_vectors.py's ``check_weights``), so a layout that forms them otherwise is refused in one line.

The split is the paper's four terms (model/neuron/splits.py), as for the app's own post-norm Transformer: the
positional part of the stream starts as the position table's rows the model added to its embeddings (the positions
module's own output: RoBERTa's offset position ids included; the token-type embedding, one row for a single text, is
content), goes through the embedding LayerNorm and, after each sublayer, through its LayerNorm with the sum's own
statistics (γ⊙(part − mean)/σ; β is content); each attention reads the stream as it is (post-norm), so its queries'
and keys' positional parts are that part through the projections' weights alone (their biases are content).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch

from model.kinds import AttentionKind
from model.neuron.library_vectors import check_weights
from model.neuron.records import KindVectors, SentenceVectors, normalised_part
from model.neuron.splits import ABSOLUTE_TERMS, term_tables
from model.nn.attention import split_heads
from model.pretrained.layouts import hidden_input
from model.pretrained.networks import EncoderNetwork
from model.pretrained.offload import tensor_of

ENCODER = AttentionKind.ENCODER


def _keep(network: EncoderNetwork, read: dict[str, torch.Tensor]) -> list:
    """Hooks keeping the positions added, the embedding norm's input, and per layer its queries, keys and the inputs of
    its two LayerNorms, in ``read`` ("positions", "embedded", "q.3", "k.3", "attended.3", "fed.3")."""
    modules, base = network.modules, network.hf_model.base_model

    def output(name: str):
        return lambda _module, _args, value: read.__setitem__(name, value)

    def given(name: str):
        return lambda _module, args, kwargs: read.__setitem__(name, hidden_input(args, kwargs))

    handles = [
        base.get_submodule(modules.positions).register_forward_hook(output("positions")),
        base.get_submodule(modules.embedding_norm).register_forward_pre_hook(given("embedded"), with_kwargs=True),
    ]
    for index, layer in enumerate(network.layers()):
        handles.append(layer.get_submodule(modules.queries).register_forward_hook(output(f"q.{index}")))
        handles.append(layer.get_submodule(modules.keys).register_forward_hook(output(f"k.{index}")))
        post_norm = cast(str, modules.post_norm)  # every encoder layout served is post-norm
        handles.append(layer.get_submodule(post_norm).register_forward_pre_hook(given(f"attended.{index}"), with_kwargs=True))
        handles.append(layer.get_submodule(modules.mlp_norm).register_forward_pre_hook(given(f"fed.{index}"), with_kwargs=True))
    return handles


def _positional_parts(network: EncoderNetwork, read: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """The positional part [1, S, d_model] of the stream each layer's attention reads, carried from the positions added
    through the embedding norm and, after each sublayer, through its LayerNorm with the sum's statistics."""
    modules, base = network.modules, network.hf_model.base_model
    norm = cast(torch.nn.LayerNorm, base.get_submodule(modules.embedding_norm))
    embedded = read["embedded"]  # [1, S, d_model]
    position = normalised_part(norm, embedded, read["positions"].reshape(embedded.shape).to(embedded.dtype))
    parts = []
    for index, layer in enumerate(network.layers()):
        parts.append(position)
        attention_norm = cast(torch.nn.LayerNorm, layer.get_submodule(cast(str, modules.post_norm)))
        position = normalised_part(attention_norm, read[f"attended.{index}"], position)
        position = normalised_part(cast(torch.nn.LayerNorm, layer.get_submodule(modules.mlp_norm)), read[f"fed.{index}"], position)
    return parts


def _layer_tables(network: EncoderNetwork, index: int, read: dict[str, Any], position: torch.Tensor, weights: torch.Tensor):
    """(q [H, S, d], k [H, S, d], scores [H, S, S], weights [H, S, S], terms [4, H, S, S]) of one layer, in float64."""
    n_heads, layer = network.config.n_heads, network.layers()[index]
    q = split_heads(read[f"q.{index}"], n_heads)[0].double()  # [H, S, d]
    k = split_heads(read[f"k.{index}"], n_heads)[0].double()
    q_weight = cast(torch.Tensor, tensor_of(layer.get_submodule(network.modules.queries), "weight"))  # [H·d, d_model]
    k_weight = cast(torch.Tensor, tensor_of(layer.get_submodule(network.modules.keys), "weight"))
    q_position = split_heads(position @ q_weight.T, n_heads)[0].double()  # [H, S, d]: the weights alone
    k_position = split_heads(position @ k_weight.T, n_heads)[0].double()
    terms = term_tables(*(value.cpu().numpy() for value in (q, k, q_position, k_position)))  # [4, H, S, S]
    scores = torch.from_numpy(terms.sum(0))  # [H, S, S]
    check_weights(scores, weights[0].double().cpu(), ENCODER, index)
    return q.cpu().numpy(), k.cpu().numpy(), scores.numpy(), weights[0].double().cpu().numpy(), terms


@torch.inference_mode()
def encoder_vectors(
    network: EncoderNetwork, source_ids: Sequence[int], target_ids: Sequence[int], first_input: int | None, private: bool
) -> SentenceVectors:
    """A Hugging Face encoder-only model's vectors of one text (``sentence_vectors``, the inputs checked; it has no
    target): see the module's docstring."""
    if private:
        network.hf_model.double()
    device = next(network.parameters()).device
    ids = torch.tensor([list(source_ids)], device=device)  # [1, S]
    read: dict[str, torch.Tensor] = {}
    handles = _keep(network, read)
    try:
        out = network.hf_model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True, return_dict=True)
    finally:
        for handle in handles:
            handle.remove()
    tables: dict[str, list[np.ndarray]] = {name: [] for name in ("q", "k", "scores", "weights", "terms")}
    for index, position in enumerate(_positional_parts(network, read)):
        for label, value in zip(tables, _layer_tables(network, index, read, position, out.attentions[index])):
            tables[label].append(value)
    stacked = {label: np.stack(values) for label, values in tables.items()}
    terms = np.moveaxis(stacked["terms"], 1, 0)  # [4, layers, H, S, S]
    vectors = KindVectors(ENCODER, stacked["q"], stacked["k"], stacked["scores"], stacked["weights"], terms, ABSOLUTE_TERMS)
    return SentenceVectors({ENCODER: vectors}, list(source_ids), [], str(network.config.positional_encoding))
