"""The app's own Transformers' queries and keys of one sentence, each split into its positional and its content part.

``sentence_vectors`` runs the model's own hooked teacher-forced pass (model/interventions/hooked.py: the app's
Transformer, or the encoder-only classifier's encoder) and keeps, for every attention sublayer, what it read: the
residual stream (through the sublayer's LayerNorm in a pre-norm model) for the queries, and the same for the keys
(cross-attention: the encoder's output, the memory), and the queries, keys and scores the pass computed from them, at the
attention's hook points (``q``, ``k``, ``scores``): the scores, and the softmax of them, are the model's own, so the
softmax rows equal the trace's attention.

The positional split. The residual stream is split additively into the positional encoding's direct path p (the
table's rows as the model adds them to the scaled token embeddings) and the rest, c = everything else (the token
embeddings and every sublayer's output). A LayerNorm is linear in its input once its mean and σ are fixed from the whole
input x = c + p: LN(x) = γ⊙(c − mean(c))/σ + γ⊙(p − mean(p))/σ + β. The positional part is the second term; β, and the
token and sublayer parts, are content. In a pre-norm model the stream's positional part stays p from layer to layer and
each attention reads LN(x); in a post-norm model every LayerNorm on the stream carries the positional part through in
the same way (p ← γ⊙(p − mean(p))/σ, σ from the full input), and the attention reads the stream itself. The memory is
split in the same way (through the encoder's final norm in a pre-norm model), over the source positions. The projections
have no bias here, so the positional parts go through the attention's own projection matrices alone; the queries and keys
are then q = q_content + q_position and k likewise, exactly. The pass runs in
float64 on a copy of the model, so the four terms sum to the scores to float64's rounding.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import cast

import numpy as np
import torch

from model.family import Positions, declared, family_of
from model.interventions.hooked import Hooks, hooked_encode
from model.kinds import AttentionKind
from model.network import Network, TableConfig
from model.neuron.records import KindVectors, Read, SentenceVectors, attention_name, normalised_part, through_norm
from model.neuron.splits import ABSOLUTE_TERMS, ROTARY_TERMS, TermSplit, bias_terms, term_tables
from model.nn.attention import MultiHeadAttention
from model.nn.classifier import OwnNetwork
from model.nn.positions import SCHEMES
from model.nn.transformer import DecoderLayer, EncoderLayer

# A network whose queries and keys are read here (its family's ``queries_keys`` is OWN): the app's Transformer, or the
# encoder-only classifier, whose layers are the Transformer's.


def _through(
    layer: EncoderLayer | DecoderLayer, index: int, x: torch.Tensor, position: torch.Tensor, output: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sublayer ``index`` of ``layer`` (``through_norm`` with its norm and placement)."""
    return through_norm(layer.norms[index], layer.pre_norm, x, position, output)


def _encoder_reads(model: OwnNetwork, acts: dict[str, torch.Tensor], position: torch.Tensor) -> tuple[list[Read], torch.Tensor]:
    """Each encoder layer's self-attention read, and the memory's positional part."""
    reads = []
    for index, layer in enumerate(cast("list[EncoderLayer]", list(model.encoder_layers))):
        x = acts[f"encoder.{index}.resid_pre"]
        h_position, position = _through(layer, 0, x, position, acts[f"encoder.{index}.self.out"])
        reads.append(Read(h_position))
        _, position = _through(layer, 1, acts[f"encoder.{index}.self.resid"], position, acts[f"encoder.{index}.mlp_out"])
    if layer.pre_norm:  # pre-norm: the memory is the last stream through the encoder's final norm
        final = cast(torch.nn.LayerNorm, model.encoder_norm)
        position = normalised_part(final, acts[f"encoder.{len(reads) - 1}.resid_post"], position)
    return reads, position


def _decoder_reads(
    layers: list[DecoderLayer], acts: dict[str, torch.Tensor], position: torch.Tensor, memory_position: torch.Tensor
) -> tuple[list[Read], list[Read]]:
    """Each decoder layer's masked self-attention read and cross-attention read."""
    self_reads, cross_reads = [], []
    for index, layer in enumerate(layers):
        prefix = f"decoder.{index}"
        x = acts[f"{prefix}.resid_pre"]
        h_position, position = _through(layer, 0, x, position, acts[f"{prefix}.self.out"])
        self_reads.append(Read(h_position))
        y = acts[f"{prefix}.self.resid"]
        h_position, position = _through(layer, 1, y, position, acts[f"{prefix}.cross.out"])
        cross_reads.append(Read(h_position, memory_position))
        _, position = _through(layer, 2, acts[f"{prefix}.cross.resid"], position, acts[f"{prefix}.mlp_out"])
    return self_reads, cross_reads


def _captured(n_encoder_layers: int, n_decoder_layers: int) -> list[str]:
    """The hook points read: each layer's streams and sublayer outputs, each attention's queries, keys and scores."""
    names = []
    attention = ("q", "k", "scores")
    for index in range(n_encoder_layers):
        names += [f"encoder.{index}.{point}" for point in ("resid_pre", "self.out", "self.resid", "mlp_out", "resid_post")]
        names += [f"encoder.{index}.self.{point}" for point in attention]
    for index in range(n_decoder_layers):
        points = ("resid_pre", "self.out", "self.resid", "cross.out", "cross.resid", "mlp_out")
        names += [f"decoder.{index}.{point}" for point in points]
        names += [f"decoder.{index}.{side}.{point}" for side in ("self", "cross") for point in attention]
    return names


def _positional_queries_keys(module: MultiHeadAttention, read: Read) -> tuple[torch.Tensor, torch.Tensor]:
    """The positional parts of an attention's queries [1, H, Q, d_k] and keys [1, H, K, d_k]: the read's positional
    parts through its projection matrices (no bias: the projections are linear)."""
    if module.is_self_attention:
        q, k, _ = module._split_projection(module.qkv_projection(read.query_positions), 3)  # 3 x [1, H, Q, d_k]
        return q, k
    (q,) = module._split_projection(module.q_projection(read.query_positions), 1)  # [1, H, Q, d_k]
    k, _ = module._split_projection(module.kv_projection(read.memory_positions), 2)  # 2 x [1, H, K, d_k]
    return q, k


def _kind_vectors(
    model: OwnNetwork, kind: AttentionKind, reads: list[Read], acts: dict[str, torch.Tensor], split: TermSplit | None
) -> KindVectors:
    """The queries, keys, scores and weights of every layer of ``kind``, as the pass's hook points saw them, and the
    terms of ``split`` (None: no split)."""
    tables: dict[str, list[np.ndarray]] = {name: [] for name in ("q", "k", "scores", "weights", "q_position", "k_position")}
    for layer, read in enumerate(reads):
        name = attention_name(kind, layer)
        q, k, scores = acts[f"{name}.q"], acts[f"{name}.k"], acts[f"{name}.scores"]  # [1, H, Q or K, d_k], [1, H, Q, K]
        q_position, k_position = _positional_queries_keys(model.attention_module(kind, layer), read)
        for label, value in (("q", q), ("k", k), ("scores", scores), ("weights", torch.softmax(scores, dim=-1))):
            tables[label].append(value[0].cpu().numpy())
        tables["q_position"].append(q_position[0].cpu().numpy())  # [H, Q, d_k]
        tables["k_position"].append(k_position[0].cpu().numpy())  # [H, K, d_k]
    stacked = {label: np.stack(values) for label, values in tables.items()}
    terms = None
    if split is ABSOLUTE_TERMS:
        terms = term_tables(stacked["q"], stacked["k"], stacked["q_position"], stacked["k_position"])
    elif split is not None:
        terms = _in_attention_terms(model, stacked["q"], stacked["k"], stacked["scores"])
    return KindVectors(kind, stacked["q"], stacked["k"], stacked["scores"], stacked["weights"], terms, split)


def _in_attention_terms(model: OwnNetwork, q: np.ndarray, k: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """[2, layers, H, Q, K]: the content term and what the positions add inside self-attention (model/nn/positions.py):
    rope's queries and keys turned back by their positions, dotted over √d_k, then the rest of the score (what the
    turn adds); a bias's query·key over √d_k, then the bias (the score less it). Masked entries stay -inf."""
    scheme = model.positions  # the network's own scheme (a table's turns nothing)
    queries, keys = torch.from_numpy(q), torch.from_numpy(k)  # [layers, H, Q or K, d_k]
    queries, keys = scheme.turn(queries, 0, back=True), scheme.turn(keys, 0, back=True)  # unturned (no-op for a bias)
    content = torch.einsum("lhqd,lhkd->lhqk", queries, keys).numpy() / math.sqrt(q.shape[-1])  # [layers, H, Q, K]
    with np.errstate(invalid="ignore"):
        added = np.where(np.isfinite(scores), scores - content, scores)
    return np.stack([np.where(np.isfinite(scores), content, scores), added])


def term_split(config: TableConfig) -> TermSplit | None:
    """How an own model's self-attention scores split by position (its scheme, model/nn/positions.py): the absolute
    table's four terms, rope's or a bias's two, none without positions."""
    scheme = SCHEMES[str(config.positional_encoding)]
    if scheme.table:
        return ABSOLUTE_TERMS
    if scheme.rotates:
        return ROTARY_TERMS
    return bias_terms(scheme.name, scheme.bias_words) if scheme.bias_words else None  # a bias, or no positions


@torch.inference_mode()
def own_vectors(
    model: Network, source_ids: Sequence[int], target_ids: Sequence[int], first_input: int | None, private: bool
) -> SentenceVectors:
    """The app's own Transformer's (or encoder classifier's) vectors of one sentence (``sentence_vectors``, the
    inputs checked), from its hooked pass run on a float64 copy of the model (``private``: the caller's own copy,
    converted in place)."""
    family = family_of(model)
    own = cast(OwnNetwork, model)  # its family's queries and keys are the app's own (its ``queries_keys``)
    network = own.double().eval() if private else copy.deepcopy(own).double().eval()  # see the module's docstring
    config = network.config
    device = next(network.parameters()).device
    # An absolute table added: four terms; rope or a score bias: two in self-attention (cross-attention has no positions)
    split = term_split(config) if family.capabilities.positions is Positions.TABLE else None
    cross_split = split if split is ABSOLUTE_TERMS else None
    table = network.positional_table.detach()  # [max_len, d_model]
    has_decoder = family.capabilities.architecture.has_decoder
    acts = Hooks(capture=_captured(config.n_encoder_layers, config.n_decoder_layers if has_decoder else 0))
    source = torch.tensor([list(source_ids)], device=device)  # [1, S]
    inputs: list[int] = []
    own_pass = None
    if has_decoder and target_ids:  # the whole pass, by the family's own hooked pass (the app's Transformer's)
        own_pass = declared(cast(str, family.capabilities.hooked_pass))(network)
        inputs = [config.bos_id if first_input is None else first_input, *list(target_ids)[:-1]]
        own_pass.run_hooked(source, torch.tensor([inputs], device=device), acts, None)  # decoder inputs [1, T]
    else:  # the encoder's pass (an encoder-only classifier's, or a sentence not decoded yet)
        hooked_encode(network, source, acts)
    encoder_reads, memory_position = _encoder_reads(network, acts.activations, table[None, : len(source_ids)])
    kinds = {AttentionKind.ENCODER: _kind_vectors(network, AttentionKind.ENCODER, encoder_reads, acts.activations, split)}
    if own_pass is not None:
        reads = _decoder_reads(own_pass.decoder_layers(), acts.activations, table[None, : len(inputs)], memory_position)
        kinds[AttentionKind.DECODER] = _kind_vectors(network, AttentionKind.DECODER, reads[0], acts.activations, split)
        kinds[AttentionKind.CROSS] = _kind_vectors(network, AttentionKind.CROSS, reads[1], acts.activations, cross_split)
    positions = str(config.positional_encoding) if split is not None else ""
    return SentenceVectors(kinds, list(source_ids), inputs, positions)
