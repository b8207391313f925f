"""Every head's queries and keys of one sentence, each split into its positional and its content part.

``sentence_vectors`` runs the model's own hooked teacher-forced pass (model/interventions/hooked.py: the app's
Transformer, or the encoder-only classifier's encoder) and keeps, for every attention sublayer, what it read: the
residual stream (through the sublayer's LayerNorm in a pre-norm model) for the queries, and the same for the keys
(cross-attention: the encoder's output, the memory). It then runs the attention module's own projections on them
(``queries_keys_values``, as every pass does) and its own ``attention_scores``, so the scores, and the softmax of them,
are the model's: the softmax rows equal the trace's attention.

The positional split. The residual stream is split additively into the positional encoding's direct path p (the
table's rows as the model adds them to the scaled token embeddings) and the rest, c = everything else (the token
embeddings and every sublayer's output). A LayerNorm is linear in its input once its mean and σ are fixed from the whole
input x = c + p: LN(x) = γ⊙(c − mean(c))/σ + γ⊙(p − mean(p))/σ + β. The positional part is the second term; β, and the
token and sublayer parts, are content. In a pre-norm model the stream's positional part stays p from layer to layer and
each attention reads LN(x); in a post-norm model every LayerNorm on the stream carries the positional part through in
the same way (p ← γ⊙(p − mean(p))/σ, σ from the full input), and the attention reads the stream itself. The memory is
split in the same way (through the encoder's final norm in a pre-norm model), over the source positions. The projections
have no bias here; the queries and keys are then q = q_content + q_position and k likewise, exactly. The pass runs in
float64 on a copy of the model, so the four terms sum to the scores to float64's rounding.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from model.attribution.passes import queries_keys_values
from model.errors import UserError
from model.family import Positions, family_of
from model.interventions.hooked import Hooks, hooked_decode, hooked_encode, layer_norm
from model.kinds import AttentionKind
from model.nn.transformer import attention_scores


class NeuronError(UserError):
    """A model, kind, layer, head or query that the neuron view cannot show; the message says why."""


@dataclass
class KindVectors:
    """One kind of attention of one sentence: every layer's and head's queries, keys, scores and weights."""

    kind: AttentionKind
    queries: np.ndarray  # [layers, heads, Q, d_k]
    keys: np.ndarray  # [layers, heads, K, d_k]
    scores: np.ndarray  # [layers, heads, Q, K] QKᵀ/√d_k, -inf where masked
    weights: np.ndarray  # [layers, heads, Q, K] the softmax of the scores
    query_positions: np.ndarray | None  # [layers, heads, Q, d_k] the queries' positional part; None: no split
    key_positions: np.ndarray | None  # [layers, heads, K, d_k]

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys)."""
        layers, heads, n_queries, n_keys = self.scores.shape
        return layers, heads, n_queries, n_keys

    def first_rows(self, n_rows: int, keys_too: bool) -> KindVectors:
        """The first ``n_rows`` queries (and keys, ``keys_too``): a causal decoder's as they were ``n_rows`` steps in."""
        keys = slice(0, n_rows) if keys_too else slice(None)
        return KindVectors(
            self.kind,
            self.queries[:, :, :n_rows],
            self.keys[:, :, keys],
            self.scores[:, :, :n_rows, keys],
            self.weights[:, :, :n_rows, keys],
            None if self.query_positions is None else self.query_positions[:, :, :n_rows],
            None if self.key_positions is None else self.key_positions[:, :, keys],
        )

    @property
    def split(self) -> bool:
        """Whether the queries and keys are split into positional and content parts."""
        return self.query_positions is not None and self.key_positions is not None


@dataclass
class SentenceVectors:
    """Every kind's vectors of one sentence (the kinds the model has), with the ids the pass read."""

    kinds: dict[AttentionKind, KindVectors]
    source_ids: list[int]
    target_input_ids: list[int]  # what the decoder read: its first input, then the tokens produced but the last
    positions: str = ""  # the positional encoding split off ("sinusoidal", "learned"); "" when none is

    def prefix(self, n_steps: int) -> SentenceVectors:
        """The vectors as the first ``n_steps`` decoding steps had them: the decoder is causal, so its first rows and keys
        (and cross-attention's first rows) do not depend on what comes later."""
        kinds = dict(self.kinds)
        for kind in (AttentionKind.DECODER, AttentionKind.CROSS):
            if kind in kinds:
                kinds[kind] = kinds[kind].first_rows(n_steps, keys_too=kind.causal)
        inputs = self.target_input_ids[:n_steps]
        return SentenceVectors(kinds, self.source_ids, inputs, self.positions)

    def of(self, kind: AttentionKind | str) -> KindVectors:
        kind = AttentionKind.parse(kind)
        if kind not in self.kinds:
            raise NeuronError(f"this model has no {kind.label}")
        return self.kinds[kind]


def check_model(model: Any) -> None:
    """A NeuronError (one line) when ``model``'s family has no queries and keys read here."""
    family = family_of(model)
    why = family.capabilities.queries_keys.unavailable(family.title)
    if why:
        raise NeuronError(why)


def splits_positions(model: Any) -> bool:
    """Whether ``model`` adds an absolute positional table to its embeddings (its scores split into four terms)."""
    return family_of(model).capabilities.positions is Positions.TABLE


def normalised_part(norm: Any, full: torch.Tensor, part: torch.Tensor) -> torch.Tensor:
    """The part of LN(full) that ``part`` of ``full`` [..., d_model] makes, with LN's mean and σ fixed from ``full``:
    γ⊙(part − mean(part))/σ (β belongs to no part: the caller counts it as content)."""
    variance = full.var(-1, unbiased=False, keepdim=True)  # [..., 1]
    centred = part - part.mean(-1, keepdim=True)  # [..., d_model]
    scaled = centred / torch.sqrt(variance + norm.eps)  # [..., d_model]
    return scaled * norm.weight if norm.weight is not None else scaled


@dataclass
class Read:
    """What one attention sublayer read: the stream its queries come from and its positional part (keys: ``memory``)."""

    queries: torch.Tensor  # [1, Q, d_model]
    query_positions: torch.Tensor  # [1, Q, d_model]
    memory: torch.Tensor | None = None  # cross-attention's [1, S, d_model]
    memory_positions: torch.Tensor | None = None


def _through(layer: Any, index: int, x: torch.Tensor, position: torch.Tensor, output: torch.Tensor | None) -> tuple:
    """Sublayer ``index`` of ``layer`` reading stream x [1, L, d_model] with positional part ``position``: (what the
    sublayer reads, its positional part, the positional part of the stream after it (given its ``output``))."""
    norm = layer.norms[index]
    if layer.pre_norm:
        return layer_norm(norm, x), normalised_part(norm, x, position), position
    after = position if output is None else normalised_part(norm, x + output, position)
    return x, position, after


def _encoder_reads(model: Any, acts: dict[str, torch.Tensor], position: torch.Tensor) -> tuple[list[Read], torch.Tensor]:
    """Each encoder layer's self-attention read, and the memory's positional part."""
    reads = []
    for index, layer in enumerate(model.encoder_layers):
        x = acts[f"encoder.{index}.resid_pre"]
        h, h_position, position = _through(layer, 0, x, position, acts[f"encoder.{index}.self.out"])
        reads.append(Read(h, h_position))
        _, _, position = _through(layer, 1, acts[f"encoder.{index}.self.resid"], position, acts[f"encoder.{index}.mlp_out"])
    final = model.encoder_norm
    if isinstance(final, torch.nn.LayerNorm):  # pre-norm: the memory is the last stream through the final norm
        position = normalised_part(final, acts[f"encoder.{len(reads) - 1}.resid_post"], position)
    return reads, position


def _decoder_reads(model: Any, acts: dict[str, torch.Tensor], position: torch.Tensor, memory: tuple) -> tuple[list, list]:
    """Each decoder layer's masked self-attention read and cross-attention read."""
    self_reads, cross_reads = [], []
    for index, layer in enumerate(model.decoder_stack):
        prefix = f"decoder.{index}"
        x = acts[f"{prefix}.resid_pre"]
        h, h_position, position = _through(layer, 0, x, position, acts[f"{prefix}.self.out"])
        self_reads.append(Read(h, h_position))
        y = acts[f"{prefix}.self.resid"]
        h, h_position, position = _through(layer, 1, y, position, acts[f"{prefix}.cross.out"])
        cross_reads.append(Read(h, h_position, *memory))
        _, _, position = _through(layer, 2, acts[f"{prefix}.cross.resid"], position, acts[f"{prefix}.mlp_out"])
    return self_reads, cross_reads


def _captured(model: Any) -> list[str]:
    """The hook points the split reads: each layer's streams and sublayer outputs (not the per-head outputs)."""
    names = []
    for index in range(len(model.encoder_layers)):
        names += [f"encoder.{index}.{point}" for point in ("resid_pre", "self.out", "self.resid", "mlp_out", "resid_post")]
    for index in range(len(getattr(model, "decoder_layers", ()))):
        points = ("resid_pre", "self.out", "self.resid", "cross.out", "cross.resid", "mlp_out")
        names += [f"decoder.{index}.{point}" for point in points]
    return names


def _kind_vectors(model: Any, kind: AttentionKind, reads: list[Read], mask: torch.Tensor | None, split: bool) -> KindVectors:
    """The queries, keys, scores and weights of every layer of ``kind`` from what each sublayer read."""
    tables: dict[str, list[np.ndarray]] = {name: [] for name in ("q", "k", "scores", "weights", "q_position", "k_position")}
    for layer, read in enumerate(reads):
        module = model.attention_module(kind, layer)
        q, k, _ = queries_keys_values(module, read.queries, read.memory)  # [1, H, Q, d_k], [1, H, K, d_k]
        scores = attention_scores(q, k, mask, is_causal=kind.causal)  # [1, H, Q, K]: the model's own
        q_position, k_position, _ = queries_keys_values(module, read.query_positions, read.memory_positions)
        for name, value in (("q", q), ("k", k), ("scores", scores), ("weights", torch.softmax(scores, dim=-1))):
            tables[name].append(value[0].cpu().numpy())
        tables["q_position"].append(q_position[0].cpu().numpy())  # [H, Q, d_k]
        tables["k_position"].append(k_position[0].cpu().numpy())  # [H, K, d_k]
    stacked = {name: np.stack(values) for name, values in tables.items()}
    return KindVectors(
        kind,
        stacked["q"],
        stacked["k"],
        stacked["scores"],
        stacked["weights"],
        stacked["q_position"] if split else None,
        stacked["k_position"] if split else None,
    )


@torch.inference_mode()
def sentence_vectors(
    model: Any, source_ids: Sequence[int], target_ids: Sequence[int] = (), first_input: int | None = None, private: bool = False
) -> SentenceVectors:
    """Every kind's queries, keys, scores and weights of one sentence: ``source_ids`` (the source pieces, </s> last) and,
    for an encoder-decoder, the ``target_ids`` produced (the decoder reads ``first_input`` (BOS), then all but the last).
    A NeuronError when the model's family has no queries and keys read here. The pass runs on a float64 copy of the
    model (``private``: the model is the caller's own copy, converted in place)."""
    check_model(model)
    family = family_of(model)
    model = model.double().eval() if private else copy.deepcopy(model).double().eval()  # see the module's docstring
    config = model.config
    longest = max(len(source_ids), len(target_ids))
    if longest > config.max_len:
        raise NeuronError(f"a sequence of {longest} pieces exceeds this model's {config.max_len} positions")
    if not source_ids:
        raise NeuronError("the sentence has no pieces")
    device = next(model.parameters()).device
    split = splits_positions(model)
    table = model.positional_table.detach()  # [max_len, d_model]
    acts = Hooks(capture=_captured(model))
    source = torch.tensor([list(source_ids)], device=device)  # [1, S]
    memory, memory_mask = hooked_encode(model, source, acts)
    encoder_reads, memory_position = _encoder_reads(model, acts.activations, table[None, : len(source_ids)])
    kinds = {AttentionKind.ENCODER: _kind_vectors(model, AttentionKind.ENCODER, encoder_reads, memory_mask, split)}
    inputs: list[int] = []
    if family.capabilities.architecture.has_decoder and target_ids:
        inputs = [config.bos_id if first_input is None else first_input, *list(target_ids)[:-1]]
        target = torch.tensor([inputs], device=device)  # [1, T]
        hooked_decode(model, target, memory, memory_mask, acts)
        reads = _decoder_reads(model, acts.activations, table[None, : len(inputs)], (memory, memory_position))
        kinds[AttentionKind.DECODER] = _kind_vectors(model, AttentionKind.DECODER, reads[0], None, split)
        kinds[AttentionKind.CROSS] = _kind_vectors(model, AttentionKind.CROSS, reads[1], memory_mask, split)
    positions = str(config.positional_encoding) if split else ""
    return SentenceVectors(kinds, list(source_ids), inputs, positions)
