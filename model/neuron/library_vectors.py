"""A Hugging Face encoder-decoder's queries and keys of one sentence (T5, Marian, BART, mBART, M2M100/NLLB, Pegasus),
read at its hooked pass's points on the library's own forward pass, and its scores split into terms by position.

The pass (model/interventions/library.py) gives each attention's queries and keys per head as the library projected
them (``{name}.q``, ``{name}.k``: the query and key projections' outputs, biases included) and its weights
(``{name}.pattern``: the library's ``output_attentions``). The scores are formed from them as the layout forms them:
q·kᵀ/√d_k (BART's layouts), or q·kᵀ plus the relative position bias (T5: no √d_k; the bias computed by each stack's
first self-attention, ``compute_bias``, and added in every layer; cross-attention adds none); a causal decoder's later
keys masked. The softmax of these scores is checked against the library's own weights: a layout that forms them
otherwise is refused in one line rather than shown wrong.

The split (model/neuron/splits.py):

* T5: two terms, query·key and the relative position bias;
* the layouts that add a position table to their embeddings (Marian's and Pegasus' sinusoidal, M2M100's sinusoidal
  by position id, BART's and mBART's learned): the four terms of the app's own Transformer (model/neuron/own_vectors.py),
  the positional part carried from the positions module's output through the embedding norm (BART, mBART) and each
  layer's LayerNorms, read before each sublayer (pre-norm: mBART, M2M100, Pegasus) or after each residual add
  (post-norm: Marian, BART), and through the encoder's final norm to the memory; the query and key projections' biases
  count as content. The layout table (model/pretrained/layouts.py) names each module.

``private``: the model is the caller's own copy, turned to float64 in place (the terms then sum to the scores to
float64's rounding); otherwise the pass runs on the model as it is, in its own precision.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import torch

from model.interventions.hooked import run_hooked
from model.kinds import AttentionKind
from model.neuron.records import KindVectors, NeuronError, Read, SentenceVectors, attention_name, through_norm
from model.neuron.splits import ABSOLUTE_TERMS, RELATIVE_BIAS_TERMS, term_tables
from model.nn.attention import split_heads
from model.pretrained.layouts import LAYOUT_MODULES, LayoutModules, hidden_input
from model.pretrained.networks import Seq2SeqNetwork
from model.pretrained.offload import tensor_of

ENCODER, DECODER, CROSS = AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS
SIDES = {ENCODER: "encoder", DECODER: "decoder", CROSS: "decoder"}
WEIGHTS_AGREE = 1e-4  # the largest difference between softmax(scores) and the library's weights that is rounding


@contextmanager
def _positions_read(network: Seq2SeqNetwork, modules: LayoutModules) -> Iterator[dict[str, torch.Tensor]]:
    """While open, each stack's positions as its positions module returned them ("encoder", "decoder" -> [1, L, d]),
    and what its embedding norm was given ("encoder.embedded", …)."""
    read: dict[str, torch.Tensor] = {}
    handles = []
    for side, stack in (("encoder", network.hf_model.get_encoder()), ("decoder", network.hf_model.get_decoder())):
        if modules.positions is not None:
            positions = stack.get_submodule(modules.positions)

            def keep(_module, _args, output, side=side) -> None:
                read[side] = output.reshape(1, -1, output.shape[-1])  # [1, L, d_model] (some return [L, d_model])

            handles.append(positions.register_forward_hook(keep))
        if modules.embedding_norm is not None:
            norm = stack.get_submodule(modules.embedding_norm)

            def given(_module, args, kwargs, side=side) -> None:
                read[f"{side}.embedded"] = hidden_input(args, kwargs)

            handles.append(norm.register_forward_pre_hook(given, with_kwargs=True))
    try:
        yield read
    finally:
        for handle in handles:
            handle.remove()


def _captured(network: Seq2SeqNetwork, has_target: bool, split_absolute: bool) -> list[str]:
    """The hook points read: each attention's queries, keys and weights; with an absolute table, the streams too."""
    config = network.config
    layers = {ENCODER: config.n_encoder_layers, DECODER: config.n_decoder_layers if has_target else 0}
    layers[CROSS] = layers[DECODER]
    names = [f"{attention_name(kind, layer)}.{point}" for kind in layers for layer in range(layers[kind]) for point in "qk"]
    names += [f"{attention_name(kind, layer)}.pattern" for kind in layers for layer in range(layers[kind])]
    if split_absolute:
        names += [f"encoder.{layer}.{point}" for layer in range(layers[ENCODER]) for point in _STREAM_POINTS]
        names += [f"decoder.{layer}.{point}" for layer in range(layers[DECODER]) for point in (*_STREAM_POINTS, *_CROSS_POINTS)]
    return names


_STREAM_POINTS = ("resid_pre", "self.out", "self.resid", "mlp_out", "resid_post")
_CROSS_POINTS = ("cross.out", "cross.resid")


def _stack_reads(
    network: Seq2SeqNetwork, modules: LayoutModules, kind: AttentionKind, acts: dict[str, torch.Tensor], position: torch.Tensor
) -> tuple[list[Read], list[Read], torch.Tensor]:
    """Walk one stack's layers carrying the positional part ``position`` [1, L, d_model] of its stream: (each layer's
    self-attention read, each cross-attention read (a decoder's; its keys' part filled in by the caller), the part at the
    stack's end)."""
    pre_norm = not modules.post_norms
    self_reads, cross_reads = [], []
    for index, layer in enumerate(network.layers(kind)):
        prefix = f"{SIDES[kind]}.{index}"
        self_norm, cross_norm, mlp_norm = (layer.get_submodule(name) for name in _norm_names(modules, kind))
        read, position = through_norm(self_norm, pre_norm, acts[f"{prefix}.resid_pre"], position, acts[f"{prefix}.self.out"])
        self_reads.append(Read(read))
        stream = acts[f"{prefix}.self.resid"]
        if kind is DECODER:
            read, position = through_norm(cross_norm, pre_norm, stream, position, acts[f"{prefix}.cross.out"])
            cross_reads.append(Read(read))
            stream = acts[f"{prefix}.cross.resid"]
        _, position = through_norm(mlp_norm, pre_norm, stream, position, acts[f"{prefix}.mlp_out"])
    return self_reads, cross_reads, position


def _norm_names(modules: LayoutModules, kind: AttentionKind) -> tuple[str, str, str]:
    """A layer's norms of its self-attention, cross-attention and feed-forward (an encoder layer has no cross: its
    self-attention's name stands in)."""
    self_name, cross_name, mlp_name = modules.sublayer_norms
    return self_name, (cross_name if kind is DECODER else self_name), mlp_name


def _positional_reads(
    network: Seq2SeqNetwork, modules: LayoutModules, acts: dict[str, torch.Tensor], positions: dict[str, torch.Tensor]
) -> dict[AttentionKind, list[Read]]:
    """Every attention's read positional parts: the encoder's, then the decoder's with the memory's part as keys."""
    encoder = network.hf_model.get_encoder()
    start = _embedded_position(network, modules, "encoder", positions)
    encoder_reads, _, position = _stack_reads(network, modules, ENCODER, acts, start)
    if modules.final_norm is not None:  # pre-norm: the memory is the last stream through the encoder's final norm
        last = acts[f"encoder.{network.config.n_encoder_layers - 1}.resid_post"]
        position = through_norm(encoder.get_submodule(modules.final_norm), True, last, position, None)[0]
    reads = {ENCODER: encoder_reads}
    if "decoder" in positions:
        start = _embedded_position(network, modules, "decoder", positions)
        self_reads, cross_reads, _ = _stack_reads(network, modules, DECODER, acts, start)
        reads[DECODER] = self_reads
        reads[CROSS] = [Read(read.query_positions, position) for read in cross_reads]
    return reads


def _embedded_position(
    network: Seq2SeqNetwork, modules: LayoutModules, side: str, positions: dict[str, torch.Tensor]
) -> torch.Tensor:
    """The positional part of a stack's first stream: the positions added, through the embedding norm if any."""
    position = positions[side]  # [1, L, d_model]
    if modules.embedding_norm is None:
        return position
    stack = network.hf_model.get_encoder() if side == "encoder" else network.hf_model.get_decoder()
    norm = stack.get_submodule(modules.embedding_norm)
    return through_norm(norm, True, positions[f"{side}.embedded"], position, None)[0]


def _relative_bias(network: Seq2SeqNetwork, kind: AttentionKind, n_queries: int, n_keys: int) -> torch.Tensor:
    """T5's relative position bias [H, Q, K] of ``kind`` (zero for cross-attention), as its first layer computes it."""
    if kind is CROSS:
        return torch.zeros(network.head_count(kind), n_queries, n_keys, dtype=torch.float64)
    first: Any = network.layers(kind)[0].get_submodule("layer.0.SelfAttention")  # a T5Attention
    return first.compute_bias(n_queries, n_keys)[0].double()  # [H, Q, K]


def _kind_vectors(
    network: Seq2SeqNetwork, kind: AttentionKind, acts: dict[str, torch.Tensor], reads: list[Read] | None
) -> KindVectors:
    """Every layer's queries, keys, scores, weights and terms of ``kind`` (``reads``: the absolute split's parts)."""
    relative = reads is None
    bias: torch.Tensor | None = None
    tables: dict[str, list[np.ndarray]] = {name: [] for name in ("q", "k", "scores", "weights", "terms")}
    for layer in range(len(network.layers(kind))):
        name = attention_name(kind, layer)
        q, k = acts[f"{name}.q"][0].double(), acts[f"{name}.k"][0].double()  # [H, Q, d_k], [H, K, d_k]
        n_queries, n_keys = q.shape[1], k.shape[1]
        products = q @ k.transpose(-1, -2)  # [H, Q, K]
        if relative:
            if bias is None:  # the same in every layer: computed by the stack's first
                bias = _relative_bias(network, kind, n_queries, n_keys)  # [H, Q, K]
            terms = torch.stack([products, bias])  # [2, H, Q, K]
        else:
            assert reads is not None
            q_position, k_position = _projected(network, kind, layer, reads[layer])  # [H, Q, d_k], [H, K, d_k]
            terms = torch.from_numpy(term_tables(q.numpy(), k.numpy(), q_position.numpy(), k_position.numpy()))
        scores = terms.sum(0)  # [H, Q, K]
        if kind.causal:
            scores = scores.masked_fill(torch.ones(n_queries, n_keys, dtype=torch.bool).triu(1), float("-inf"))
        weights = acts[f"{name}.pattern"][0].double()  # [H, Q, K]: the library's own
        check_weights(scores, weights, kind, layer)
        for label, value in (("q", q), ("k", k), ("scores", scores), ("weights", weights), ("terms", terms)):
            tables[label].append(value.cpu().numpy())
    stacked = {label: np.stack(values) for label, values in tables.items()}
    split = RELATIVE_BIAS_TERMS if relative else ABSOLUTE_TERMS
    terms_by_term = np.moveaxis(stacked["terms"], 1, 0)  # [n, layers, H, Q, K]
    return KindVectors(kind, stacked["q"], stacked["k"], stacked["scores"], stacked["weights"], terms_by_term, split)


def _projected(network: Seq2SeqNetwork, kind: AttentionKind, layer: int, read: Read) -> tuple[torch.Tensor, torch.Tensor]:
    """The positional parts of an attention's queries [H, Q, d_k] and keys [H, K, d_k]: the read parts through the
    query and key projections' weights alone (their biases are content)."""
    n_heads = network.head_count(kind)
    keys_part = read.query_positions if read.memory_positions is None else read.memory_positions
    q_weight = cast(torch.Tensor, tensor_of(network.attention_part(kind, layer, "queries"), "weight"))  # [H·d_k, d_model]
    k_weight = cast(torch.Tensor, tensor_of(network.attention_part(kind, layer, "keys"), "weight"))
    q = split_heads(read.query_positions @ q_weight.T, n_heads)[0]  # [H, Q, d_k]
    k = split_heads(keys_part @ k_weight.T, n_heads)[0]  # [H, K, d_k]
    return q.double(), k.double()


def check_weights(scores: torch.Tensor, weights: torch.Tensor, kind: AttentionKind, layer: int) -> None:
    """A NeuronError when softmax(scores) is not the library's own weights (a layout that forms its scores otherwise)."""
    difference = float((torch.softmax(scores, dim=-1) - weights).abs().max())
    if not difference <= WEIGHTS_AGREE:
        raise NeuronError(
            f"the scores read for the {kind.label} of layer {layer + 1} do not give the model's own attention (they "
            f"differ by {difference:.2g}): this layout forms its scores in a way the neuron view does not know"
        )


@torch.inference_mode()
def library_vectors(
    network: Seq2SeqNetwork, source_ids: Sequence[int], target_ids: Sequence[int], first_input: int | None, private: bool
) -> SentenceVectors:
    """A Hugging Face encoder-decoder's vectors of one sentence (``sentence_vectors``, the inputs checked): see the
    module's docstring."""
    modules = LAYOUT_MODULES[network.config.model_type]  # its family declares HOOKED for these layouts only
    if private:
        network.hf_model.double()
    device = next(network.parameters()).device
    inputs = [network.config.bos_id if first_input is None else first_input, *list(target_ids)[:-1]]
    source = torch.tensor([list(source_ids)], device=device)  # [1, S]
    target = torch.tensor([inputs], device=device)  # [1, T]
    absolute = modules.positions is not None
    with _positions_read(network, modules) as positions:
        run = run_hooked(network, source, target, capture=_captured(network, bool(target_ids), absolute), output=False)
    if not target_ids:
        positions.pop("decoder", None)
    acts = run.activations
    reads = _positional_reads(network, modules, acts, positions) if absolute else None
    kinds = (ENCODER, DECODER, CROSS) if target_ids else (ENCODER,)
    vectors = {kind: _kind_vectors(network, kind, acts, None if reads is None else reads[kind]) for kind in kinds}
    scheme = "relative" if reads is None else str(network.config.positional_encoding)
    return SentenceVectors(vectors, list(source_ids), inputs if target_ids else [], scheme)
