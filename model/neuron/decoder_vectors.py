"""A Hugging Face decoder-only model's queries and keys of one text (GPT-2, and the Llama family: Llama, Mistral, Qwen2),
read by forward hooks on its attention projections during the library's own forward pass, and its scores split by
position.

The decoder reads the prompt's first token, then the rest of the text but its last token (as the Stepper feeds it).
Per layer, the hooks keep the query and key projections' outputs (GPT-2: the fused ``c_attn``'s first two thirds), the
attention's rotary angles (the Llama family: the ``position_embeddings`` (cos, sin) it is given) and the layer's input;
the weights are the library's own ``output_attentions``. A grouped-query model's key heads are repeated to their query
heads with the library's ``repeat_kv``, and its queries and keys turned with the library's ``apply_rotary_pos_emb``.
The softmax of the scores formed here is checked against the library's weights (model/neuron/library_vectors.py).

The split (model/neuron/splits.py):

* rotary positions (the Llama family): two terms, the unrotated query·key/√d_k and what the rotation adds (the rotated
  score minus it): the position term *is* the rotation, which depends on the key's offset from the query only;
* GPT-2's learned table: the four terms of the paper's split, its positional part the table's rows (``wpe``) through
  each layer's ``ln_1`` with the stream's statistics (pre-norm: the stream's positional part stays the table's rows);
  the projection's bias counts as content.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch

from model.kinds import AttentionKind
from model.neuron.library_vectors import check_weights
from model.neuron.records import KindVectors, SentenceVectors, normalised_part
from model.neuron.splits import ABSOLUTE_TERMS, ROTARY_TERMS, term_tables
from model.nn.attention import split_heads
from model.pretrained.layouts import DECODER_LAYOUT_MODULES, DecoderModules, hidden_input
from model.pretrained.networks import DecoderNetwork
from model.pretrained.offload import tensor_of

DECODER = AttentionKind.DECODER


def _keep(read: dict[str, Any], modules: DecoderModules, layers: list[torch.nn.Module]) -> list:
    """Forward hooks keeping each layer's input stream, queries, keys and rotary angles in ``read`` ("x.3", "q.3", …)."""
    handles = []
    for index, layer in enumerate(layers):

        def stream(_module, args, kwargs, index=index) -> None:
            read[f"x.{index}"] = hidden_input(args, kwargs)  # [1, T, d_model]: the layer's input

        def angles(_module, _args, kwargs, index=index) -> None:
            if kwargs.get("position_embeddings") is not None:
                read[f"rotary.{index}"] = kwargs["position_embeddings"]  # (cos, sin), [1, T, d_head] each

        handles.append(layer.register_forward_pre_hook(stream, with_kwargs=True))
        handles.append(layer.get_submodule(modules.attention).register_forward_pre_hook(angles, with_kwargs=True))
        for name, path in _projections(modules):
            handles.append(layer.get_submodule(path).register_forward_hook(_keeper(read, name, index, modules.fused is not None)))
    return handles


def _projections(modules: DecoderModules) -> list[tuple[str, str]]:
    """(what, module path) of the projections read: the fused one, or the query and key projections."""
    if modules.fused is not None:
        return [("qk", modules.fused)]
    assert modules.queries is not None and modules.keys is not None
    return [("q", modules.queries), ("k", modules.keys)]


def _keeper(read: dict[str, Any], name: str, index: int, fused: bool):
    def keep(_module, _args, output: torch.Tensor) -> None:
        if fused:  # GPT-2's Conv1D: [1, T, 3 d_model], queries, keys, values
            read[f"q.{index}"], read[f"k.{index}"], _ = output.split(output.shape[-1] // 3, dim=-1)
        else:
            read[f"{name}.{index}"] = output  # [1, T, H·d_head] (keys: the key heads')

    return keep


def _rotary_terms(network: DecoderNetwork, q: torch.Tensor, k: torch.Tensor, angles: tuple) -> torch.Tensor:
    """The two terms [2, H, T, T] of rotary queries q [1, H, T, d] and keys k [1, H, T, d]: unrotated q·k/√d, and what
    the library's rotation adds to it."""
    rotary = _library_rotary(network)
    cos, sin = angles
    q_turned, k_turned = rotary(q, k, cos.to(q.dtype), sin.to(q.dtype))  # [1, H, T, d] each
    scale = q.shape[-1] ** -0.5
    plain = (q @ k.transpose(-1, -2))[0] * scale  # [H, T, T]
    turned = (q_turned @ k_turned.transpose(-1, -2))[0] * scale
    return torch.stack([plain, turned - plain])


def _library_rotary(network: DecoderNetwork):
    """The library's own ``apply_rotary_pos_emb`` of the network's model class."""
    return _library_module(network).apply_rotary_pos_emb


def _library_module(network: DecoderNetwork) -> Any:
    """The library's module of the network's model class (loaded with it): its own functions, by name."""
    return sys.modules[type(network.hf_model).__module__]


def _table_terms(
    network: DecoderNetwork, modules: DecoderModules, layer: torch.nn.Module, read: dict[str, Any], index: int, table: torch.Tensor
) -> tuple[np.ndarray, np.ndarray]:
    """GPT-2's four terms [4, H, T, T] (and the scores' sum of them): the table's rows through the layer's ``ln_1``
    with the stream's statistics, through the fused projection's query and key weights."""
    n_heads = network.config.n_heads
    norm = cast(torch.nn.LayerNorm, layer.get_submodule(modules.input_norm))
    position = normalised_part(norm, read[f"x.{index}"], table)  # [1, T, d_model]
    weight = cast(torch.Tensor, tensor_of(layer.get_submodule(cast(str, modules.fused)), "weight"))  # Conv1D: [d_model, 3 d_model]
    width = weight.shape[1] // 3
    q_position = split_heads(position @ weight[:, :width], n_heads)[0]  # [H, T, d]
    k_position = split_heads(position @ weight[:, width : 2 * width], n_heads)[0]
    q = split_heads(read[f"q.{index}"], n_heads)[0]
    k = split_heads(read[f"k.{index}"], n_heads)[0]
    arrays = (value.double().cpu().numpy() for value in (q, k, q_position, k_position))
    return term_tables(*arrays), q.double().cpu().numpy()


@torch.inference_mode()
def decoder_vectors(
    network: DecoderNetwork, source_ids: Sequence[int], target_ids: Sequence[int], first_input: int | None, private: bool
) -> SentenceVectors:
    """A decoder-only model's vectors of one text (``sentence_vectors``, the inputs checked; ``source_ids``: its prompt,
    whose first token the decoder reads first): see the module's docstring."""
    modules = DECODER_LAYOUT_MODULES[network.config.model_type]  # its family declares DECODER for these layouts only
    if private:
        network.hf_model.double()
    device = next(network.parameters()).device
    inputs = [source_ids[0] if first_input is None else first_input, *list(target_ids)[:-1]]
    ids = torch.tensor([inputs], device=device)  # [1, T]
    layers = list(cast(torch.nn.ModuleList, network.hf_model.get_submodule(modules.layers)))
    read: dict[str, Any] = {}
    handles = _keep(read, modules, layers)
    try:
        out = network.hf_model(input_ids=ids, output_attentions=True, use_cache=False, return_dict=True)
    finally:
        for handle in handles:
            handle.remove()
    table = None
    if modules.positions is not None:  # the rows the model added to its embeddings
        table = network.hf_model.get_submodule(modules.positions)(torch.arange(len(inputs), device=device))[None]
    vectors = _kind_vectors(network, modules, layers, read, out.attentions, table)
    positions = "rotary" if table is None else str(network.config.positional_encoding)
    return SentenceVectors({DECODER: vectors}, list(source_ids), inputs, positions)


def _kind_vectors(
    network: DecoderNetwork,
    modules: DecoderModules,
    layers: list[torch.nn.Module],
    read: dict[str, Any],
    attentions: Sequence[torch.Tensor],
    table: torch.Tensor | None,
) -> KindVectors:
    """Every layer's queries, keys, scores, weights and terms (see the module's docstring)."""
    n_heads = network.config.n_heads
    tables: dict[str, list[np.ndarray]] = {name: [] for name in ("q", "k", "scores", "weights", "terms")}
    for index, layer in enumerate(layers):
        q = split_heads(read[f"q.{index}"], n_heads)  # [1, H, T, d]
        k = split_heads(read[f"k.{index}"], read[f"k.{index}"].shape[-1] // q.shape[-1])  # [1, H_kv, T, d]
        k = _repeat_keys(network, k, n_heads // k.shape[1])  # [1, H, T, d]
        if table is None:
            terms = _rotary_terms(network, q, k, read[f"rotary.{index}"]).double().cpu().numpy()  # [2, H, T, T]
        else:
            terms, _ = _table_terms(network, modules, layer, read, index, table)  # [4, H, T, T]
        n = terms.shape[-1]
        scores = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, terms.sum(0))  # [H, T, T]: later keys masked
        weights = attentions[index][0].double()  # [H, T, T]: the library's own
        check_weights(torch.from_numpy(scores), weights, DECODER, index)
        for label, value in (("q", q[0]), ("k", k[0]), ("scores", scores), ("weights", weights), ("terms", terms)):
            tables[label].append(value if isinstance(value, np.ndarray) else value.double().cpu().numpy())
    stacked = {label: np.stack(values) for label, values in tables.items()}
    split = ROTARY_TERMS if table is None else ABSOLUTE_TERMS
    terms_by_term = np.moveaxis(stacked["terms"], 1, 0)  # [n, layers, H, T, T]
    return KindVectors(DECODER, stacked["q"], stacked["k"], stacked["scores"], stacked["weights"], terms_by_term, split)


def _repeat_keys(network: DecoderNetwork, keys: torch.Tensor, repeats: int) -> torch.Tensor:
    """A grouped-query model's key heads [1, H_kv, T, d] repeated to its query heads, by the library's ``repeat_kv``."""
    if repeats == 1:
        return keys
    return _library_module(network).repeat_kv(keys, repeats)
