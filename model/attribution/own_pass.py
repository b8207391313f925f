"""The app's Transformers' measured pass: its own ``encode`` and ``decode`` (model/nn/transformer.py; no dropout) with
PyTorch forward hooks on its hook points (model/nn/hooks.py), split into what the contribution measures read
(model/attribution/transparent_pass.py says what a record holds). The encoder-only classifier (model/nn/classifier.py)
has the encoder's layers and hook points and no decoder: its record is its encoder's, its hidden states the encoder's
output.

Its token embeddings are E[id]·√d_model (what its ``{side}.embed`` points see), which replace the model's own at those
points; each attention's values are its ``v`` point, through the head's slice of its output projection (no bias);
the residual of cross-attention is the ``self.resid`` point; a post-norm block's norm after each sublayer is its own.
Value zeroing runs one layer from its recorded input, its values scaled through the ``v`` point.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import cast

import torch

from model.attribution.transparent_pass import SOURCE, TARGET, AttentionRecord, PassRecord
from model.kinds import AttentionKind
from model.nn.attention import MultiHeadAttention, through_heads
from model.nn.classifier import EncoderClassifier, OwnNetwork
from model.nn.hooks import HookPoint, for_this_thread
from model.nn.transformer import DecoderLayer, EncoderLayer, Transformer

Hook = Callable[[torch.Tensor], torch.Tensor | None]  # reads an activation; returns a replacement, or None to keep it


def attention_point(kind: AttentionKind, layer: int, point: str) -> str:
    """The hook name of ``point`` (``v``, ``pattern``, …) of the attention of ``kind`` in ``layer`` (from 0)."""
    if kind is AttentionKind.ENCODER:
        return f"encoder.{layer}.self.{point}"
    return f"decoder.{layer}.{'self' if kind is AttentionKind.DECODER else 'cross'}.{point}"


_POINTS: weakref.WeakKeyDictionary[OwnNetwork, dict[str, HookPoint]] = weakref.WeakKeyDictionary()


def hook_points(model: OwnNetwork) -> dict[str, HookPoint]:
    """The model's hook points by name (``Transformer.hook_points``), looked up once per model: a measure runs many
    short passes (value zeroing one per layer and kind), and the lookup walks every layer."""
    points = _POINTS.get(model)
    if points is None:
        points = _POINTS[model] = model.hook_points()
    return points


def _on_output(hook: Hook) -> Callable[[torch.nn.Module, object, torch.Tensor], torch.Tensor | None]:
    """A PyTorch forward hook that passes a point's output through ``hook``."""
    return lambda _module, _inputs, output: hook(output)


@contextmanager
def hooked(points: Mapping[str, HookPoint], hooks: Mapping[str, Hook]) -> Iterator[None]:
    """``hooks`` (name -> function of the activation) on the hook points they name, for the ``with`` block."""
    handles = [points[name].register_forward_hook(for_this_thread(_on_output(hook))) for name, hook in hooks.items()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def without_dropout(model: torch.nn.Module) -> Iterator[None]:
    """The model without dropout for the ``with`` block (a model in training mode is put back so after)."""
    if not model.training:  # (putting every module in and out of inference mode costs more than some measures)
        yield
        return
    model.eval()
    try:
        yield
    finally:
        model.train()


def _replacing(value: torch.Tensor) -> Hook:
    return lambda _out: value


def _keeping(acts: dict[str, torch.Tensor], name: str) -> Hook:
    def keep(out: torch.Tensor) -> None:
        acts[name] = out

    return keep


def _scaling(scale: torch.Tensor) -> Hook:
    """A hook on a ``v`` point [B, H, K, d_k] that multiplies each row's key j by scale [B, K]."""
    return lambda values: values * scale[:, None, :, None]  # [B, H, K, d_k]


Sublayer = tuple[MultiHeadAttention, EncoderLayer | DecoderLayer]  # an attention and the layer holding it


def _attention_record(sublayer: Sublayer, kind: AttentionKind, layer: int, weights: torch.Tensor, acts: dict) -> AttentionRecord:
    """One sublayer's record from its pattern [B, H, Q, K] and what the pass's hooks kept."""
    attention, block = sublayer
    projection = attention.out_projection.weight  # [d_model, H * d_k]
    transformed = through_heads(acts[attention_point(kind, layer, "v")], projection)  # [B, H, K, d_model]
    side = "encoder" if kind is AttentionKind.ENCODER else "decoder"
    residual = acts[f"decoder.{layer}.self.resid" if kind is AttentionKind.CROSS else f"{side}.{layer}.resid_pre"]
    norm = None if block.pre_norm else cast(torch.nn.LayerNorm, block.norms[1 if kind is AttentionKind.CROSS else 0])
    return AttentionRecord(weights, transformed, residual, norm)


Decoded = tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]  # (hidden states, self weights, cross weights)
PassRecordOutput = tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]  # (a record's hidden, its read-out)


def _read_as_is(scores: torch.Tensor) -> torch.Tensor:
    """A read-out of scores already read (an encoder-only head's)."""
    return scores


class EncoderPass:
    """The measured pass of the app's encoder-only classifier (its registry entry's): its encoder alone; the record's
    hidden states are the encoder's output. ``OwnPass`` adds the Transformer's decoder."""

    def __init__(self, model: OwnNetwork, classify: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None) -> None:
        self.model = model
        self.classify = classify  # the head reading the encoder's states: (hidden, source ids) -> class scores

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor:
        return self.model.source_embedding(ids) * math.sqrt(self.model.config.d_model)  # [B, L, d_model]

    def _captures(self) -> list[str]:
        """The hook points a record reads: each layer's input and each attention's values."""
        return [f"encoder.{layer}.{point}" for layer in range(len(self.model.encoder_layers)) for point in ("resid_pre", "self.v")]

    def _decoded(self, memory: torch.Tensor, mask: torch.Tensor | None, target_ids: torch.Tensor, weights: bool) -> Decoded:
        """What the record's output is read from after the encoder: here the encoder's states, which ``_output``
        reads with the head (no decoder)."""
        return memory, [], []

    def _output(self, hidden: torch.Tensor, source_ids: torch.Tensor, logits_at: torch.Tensor | None) -> PassRecordOutput:
        """(the record's hidden states, its read-out): the classifier's head scores [B, S, C] (at ``logits_at``: [B, C])
        or its sentence head's [B, C] (read at no position), already read out."""
        assert self.classify is not None, "an encoder-only pass reads its model's head (encoder_measured_pass gives it)"
        scores = self.classify(hidden, source_ids)  # [B, S, C] or [B, C]
        if logits_at is not None and scores.dim() == 3:
            scores = scores[torch.arange(scores.shape[0], device=scores.device), logits_at]  # [B, C]
        return scores, _read_as_is

    def _records(self, kind: AttentionKind, weights: list[torch.Tensor], acts: dict) -> list[AttentionRecord]:
        """The records of ``kind``'s attention, one per layer's weights."""
        return [_attention_record(self._sublayer(kind, layer), kind, layer, w, acts) for layer, w in enumerate(weights)]

    def _sublayer(self, kind: AttentionKind, layer: int) -> Sublayer:
        """(the attention of ``kind`` in ``layer``, the layer holding it)."""
        return self.model.attention_module(kind, layer), cast(EncoderLayer, self.model.encoder_layers[layer])

    def run(
        self,
        source_ids: torch.Tensor,  # [B, S]
        target_ids: torch.Tensor,  # [B, T] (none read by an encoder-only model)
        replacements: dict[str, torch.Tensor],
        logits_at: torch.Tensor | None,
        record_sublayers: bool,
    ) -> PassRecord:
        model = self.model
        acts: dict[str, torch.Tensor] = {}
        sides = {SOURCE: "encoder.embed", TARGET: "decoder.embed"}
        points = hook_points(model)
        hooks = {sides[side]: _replacing(value) for side, value in replacements.items() if sides[side] in points}  # its stacks'
        hooks |= {name: _keeping(acts, name) for name in (self._captures() if record_sublayers else [])}
        with hooked(points, hooks), without_dropout(model):
            memory, mask, encoder_weights = model.encode(source_ids, need_weights=record_sublayers)  # [B, S, d_model]
            hidden, self_weights, cross_weights = self._decoded(memory, mask, target_ids, record_sublayers)
            output, read_out = self._output(hidden, source_ids, logits_at)
        record = PassRecord(source_ids, target_ids, memory=memory, hidden=output, read_out=read_out)
        if record_sublayers:
            record.encoder = self._records(AttentionKind.ENCODER, encoder_weights, acts)
            record.decoder = self._records(AttentionKind.DECODER, self_weights, acts)
            record.cross = self._records(AttentionKind.CROSS, cross_weights, acts)
            record.encoder_inputs = [acts[f"encoder.{i}.resid_pre"] for i in range(len(encoder_weights))]
            record.decoder_inputs = [acts[f"decoder.{i}.resid_pre"] for i in range(len(self_weights))]
        return record

    def zeroed_layer(self, record: PassRecord, kind: AttentionKind, layer: int, scale: torch.Tensor) -> torch.Tensor:
        """The layer's own forward from its recorded input, once per row of ``scale`` [1 + K, K]."""
        model = self.model
        x = (record.encoder_inputs if kind is AttentionKind.ENCODER else record.decoder_inputs)[layer]  # [1, L, d_model]
        rows = x.expand(scale.shape[0], -1, -1)  # [1 + K, L, d_model]
        with hooked(hook_points(model), {attention_point(kind, layer, "v"): _scaling(scale)}), without_dropout(model):
            return self._layer_output(record, kind, layer, rows)

    def _layer_output(self, record: PassRecord, kind: AttentionKind, layer: int, rows: torch.Tensor) -> torch.Tensor:
        """The output [1 + K, L, d_model] of ``kind``'s layer given ``rows`` (the hooks installed): an encoder layer's."""
        outputs, _ = self.model.encoder_layers[layer](rows, None)  # [1 + K, S, d_model]
        return outputs


class OwnPass(EncoderPass):
    """The app's Transformer's measured pass: the encoder's (``EncoderPass``), then its decoder's."""

    model: Transformer

    def __init__(self, model: Transformer) -> None:
        super().__init__(model)

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor:
        embedding = self.model.source_embedding if side == SOURCE else self.model.target_embedding
        return embedding(ids) * math.sqrt(self.model.config.d_model)  # [B, L, d_model]

    def _captures(self) -> list[str]:
        """The encoder's, then each decoder layer's input, its attentions' values and cross-attention's residual."""
        points = ("resid_pre", "self.v", "self.resid", "cross.v")
        return super()._captures() + [
            f"decoder.{layer}.{point}" for layer in range(len(self.model.decoder_layers)) for point in points
        ]

    def _output(self, hidden: torch.Tensor, source_ids: torch.Tensor, logits_at: torch.Tensor | None) -> PassRecordOutput:
        """The decoder's hidden states [B, T, d_model] (at ``logits_at``: [B, d_model]) and the output projection."""
        if logits_at is not None:
            hidden = hidden[torch.arange(hidden.shape[0], device=hidden.device), logits_at]  # [B, d_model]
        return hidden, self.model.logits

    def _decoded(self, memory: torch.Tensor, mask: torch.Tensor | None, target_ids: torch.Tensor, weights: bool) -> Decoded:
        cache = self.model.start_cache(memory, mask)
        target_mask = self.model.target_mask(target_ids, when_padded_only=True)  # padding hidden, as inspection does
        return self.model.decode(target_ids, cache, target_mask, need_weights=weights)

    def _sublayer(self, kind: AttentionKind, layer: int) -> Sublayer:
        if kind is AttentionKind.ENCODER:
            return super()._sublayer(kind, layer)
        return self.model.attention_module(kind, layer), self.model.decoder_stack[layer]

    def _layer_output(self, record: PassRecord, kind: AttentionKind, layer: int, rows: torch.Tensor) -> torch.Tensor:
        if kind is AttentionKind.ENCODER:
            return super()._layer_output(record, kind, layer, rows)
        assert record.memory is not None
        keys, values = self.model.start_cache(record.memory, None).memory_keys_values[layer]  # [1, H, S, d_k] each
        memory_rows = (keys.expand(rows.shape[0], -1, -1, -1), values.expand(rows.shape[0], -1, -1, -1))
        outputs, _, _ = self.model.decoder_stack[layer](rows, memory_rows, None)  # [1 + K, T, d_model]
        return outputs


def measured_pass(network: Transformer) -> OwnPass:
    """The app's Transformer's measured pass (its registry entry's ``Capabilities.measured_pass``, model/nn/registry.py)."""
    return OwnPass(network)


def encoder_measured_pass(network: EncoderClassifier) -> EncoderPass:
    """The app's encoder-only classifier's measured pass (its registry entry's ``Capabilities.measured_pass``): its
    encoder, read out by its own head."""
    return EncoderPass(network, network.classify)
