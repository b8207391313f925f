"""What the contribution measures read of the app's Transformer, from its own forward pass through its hook points.

Every contribution measure needs more than the attention probabilities: ALTI splits each attention sublayer's
output into one vector per input token (through the residual and the layer norm), value zeroing runs a layer
again with value vectors scaled, and the gradient methods differentiate through the probabilities and the input
embeddings. ``transparent_pass`` runs the model's own teacher-forced ``encode`` and ``decode`` (model/nn/transformer.py;
no dropout) with PyTorch forward hooks on its hook points (model/nn/hooks.py), and keeps per attention sublayer:

* ``weights`` α [B, H, Q, K], the inspection path's probabilities, in the autograd graph (attention × gradient
  differentiates through them);
* ``transformed`` f_h(h_j) = h_j W_V,h W_O,h [B, H, K, d_model]: the ``v`` point's values through the head's slice
  of W^O, each key's vector as head h passes it on;
* ``residual`` x_i [B, Q, d_model], the stream the sublayer's output is added to (``resid_pre``, or ``self.resid``
  for cross-attention);
* ``norm``, the LayerNorm after the sum in a post-norm model (None in a pre-norm one).

It starts from token embeddings (``embed_tokens``: E[id]·√d_model), which replace the model's own at the ``embed``
points, so the gradient methods can scale or differentiate them. A change to the model is a change to what every
measure reads: there is no second copy of the pass. A test checks that its logits and attention equal ``inspect``'s.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import torch

from model.errors import UserError
from model.family import family_of
from model.kinds import AttentionKind
from model.network import Network
from model.nn.hooks import HookPoint, for_this_thread
from model.nn.transformer import EncoderLayer, Transformer

Hook = Callable[[torch.Tensor], torch.Tensor | None]  # reads an activation; returns a replacement, or None to keep it


@dataclass
class AttentionRecord:
    """One attention sublayer of one pass (see the module's docstring)."""

    weights: torch.Tensor  # [B, H, Q, K]
    transformed: torch.Tensor  # [B, H, K, d_model]
    residual: torch.Tensor  # [B, Q, d_model]
    norm: torch.nn.LayerNorm | None  # post-norm: applied to residual + output


@dataclass
class PassRecord:
    encoder: list[AttentionRecord] = field(default_factory=list)  # per encoder layer
    decoder: list[AttentionRecord] = field(default_factory=list)  # per decoder layer: masked self-attention
    cross: list[AttentionRecord] = field(default_factory=list)  # per decoder layer: cross-attention
    encoder_inputs: list[torch.Tensor] = field(default_factory=list)  # x entering each encoder layer [B, S, d_model]
    decoder_inputs: list[torch.Tensor] = field(default_factory=list)  # x entering each decoder layer [B, T, d_model]
    memory: torch.Tensor | None = None  # [B, S, d_model]: what cross-attention reads
    hidden: torch.Tensor | None = None  # [B, T, d_model], or [B, d_model] at one position per row (``logits_at``)
    read_out: Callable[[torch.Tensor], torch.Tensor] | None = field(default=None, repr=False)  # hidden -> logits

    @property
    def logits(self) -> torch.Tensor | None:
        """[B, T, V], or [B, V] at one position per row: the decoder's output through the model's output projection
        (computed when asked: the contribution measures read none)."""
        return None if self.hidden is None or self.read_out is None else self.read_out(self.hidden)


def measured_network(model: Network) -> Transformer:
    """``model`` as the network whose pass this module reads, once its family says it serves the contribution measures
    (``Capabilities.contribution_measures``: the app's Transformer's registry entry, model/nn/registry.py, declares it);
    a UserError (one line) otherwise."""
    family = family_of(model)
    if not family.capabilities.contribution_measures:
        raise UserError(f"the contribution measures are computed for the app's Transformer, not for this model ({family.title})")
    return cast(Transformer, model)


def attention_point(kind: AttentionKind, layer: int, point: str) -> str:
    """The hook name of ``point`` (``v``, ``pattern``, …) of the attention of ``kind`` in ``layer`` (from 0)."""
    if kind is AttentionKind.ENCODER:
        return f"encoder.{layer}.self.{point}"
    return f"decoder.{layer}.{'self' if kind is AttentionKind.DECODER else 'cross'}.{point}"


_POINTS: weakref.WeakKeyDictionary[Transformer, dict[str, HookPoint]] = weakref.WeakKeyDictionary()


def hook_points(model: Transformer) -> dict[str, HookPoint]:
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
def without_dropout(model: Transformer) -> Iterator[None]:
    """The model without dropout for the ``with`` block (a model in training mode is put back so after)."""
    if not model.training:  # (putting every module in and out of inference mode costs more than some measures)
        yield
        return
    model.eval()
    try:
        yield
    finally:
        model.train()


def embed_tokens(model: Transformer, ids: torch.Tensor, side: str) -> torch.Tensor:
    """Token ids [B, L] -> their embeddings scaled as the model scales them [B, L, d_model] (no positions): what its
    ``{side}.embed`` hook point sees."""
    embedding = model.source_embedding if side == "source" else model.target_embedding
    return embedding(ids) * math.sqrt(model.config.d_model)  # [B, L, d_model]


def _stand_in_ids(model: Transformer, vectors: torch.Tensor) -> torch.Tensor:
    """[B, L] ids of no padding, whose embeddings the ``embed`` point replaces with ``vectors`` [B, L, d_model]."""
    piece = 1 if model.config.pad_id == 0 else 0
    return torch.full(vectors.shape[:2], piece, dtype=torch.long, device=vectors.device)  # [B, L]


def _captures(model: Transformer, record: bool) -> list[str]:
    """The hook points a record reads: each layer's input, each attention's values, cross-attention's residual."""
    if not record:
        return []
    names = []
    for layer in range(len(model.encoder_layers)):
        names += [f"encoder.{layer}.resid_pre", f"encoder.{layer}.self.v"]
    for layer in range(len(model.decoder_layers)):
        names += [f"decoder.{layer}.{point}" for point in ("resid_pre", "self.v", "self.resid", "cross.v")]
    return names


def _attention_record(model: Transformer, kind: AttentionKind, layer: int, weights: torch.Tensor, acts: dict) -> AttentionRecord:
    """One sublayer's record from its pattern [B, H, Q, K] and what the pass's hooks kept."""
    module = model.attention_module(kind, layer)
    out = module.out_projection.weight.view(-1, module.n_heads, module.d_k)  # [d_model, H, d_k]
    transformed = torch.einsum("bhkd,mhd->bhkm", acts[attention_point(kind, layer, "v")], out)  # [B, H, K, d_model]
    side = "encoder" if kind is AttentionKind.ENCODER else "decoder"
    residual = acts[f"decoder.{layer}.self.resid" if kind is AttentionKind.CROSS else f"{side}.{layer}.resid_pre"]
    block = cast(EncoderLayer, model.encoder_layers[layer]) if kind is AttentionKind.ENCODER else model.decoder_stack[layer]
    norm = None if block.pre_norm else cast(torch.nn.LayerNorm, block.norms[1 if kind is AttentionKind.CROSS else 0])
    return AttentionRecord(weights, transformed, residual, norm)


def _replacing(value: torch.Tensor) -> Hook:
    return lambda _out: value


def _keeping(acts: dict[str, torch.Tensor], name: str) -> Hook:
    def keep(out: torch.Tensor) -> None:
        acts[name] = out

    return keep


def _pass(
    model: Transformer,
    source_ids: torch.Tensor,  # [B, S]
    target_ids: torch.Tensor,  # [B, T]
    replacements: dict[str, torch.Tensor],  # embed point -> the embeddings that replace the model's own
    logits_at: torch.Tensor | None,
    record_sublayers: bool,
) -> PassRecord:
    """The model's own teacher-forced pass with hooks that replace ``replacements`` and keep what a record reads."""
    acts: dict[str, torch.Tensor] = {}
    hooks = {name: _replacing(value) for name, value in replacements.items()}
    hooks |= {name: _keeping(acts, name) for name in _captures(model, record_sublayers)}
    with hooked(hook_points(model), hooks), without_dropout(model):
        memory, mask, encoder_weights = model.encode(source_ids, need_weights=record_sublayers)  # [B, S, d_model]
        cache = model.start_cache(memory, mask)
        hidden, self_weights, cross_weights = model.decode(target_ids, cache, need_weights=record_sublayers)  # [B, T, d]
    if logits_at is not None:
        hidden = hidden[torch.arange(hidden.shape[0], device=hidden.device), logits_at]  # [B, d_model]
    record = PassRecord(memory=memory, hidden=hidden, read_out=model.logits)
    if record_sublayers:
        record.encoder = [_attention_record(model, AttentionKind.ENCODER, i, w, acts) for i, w in enumerate(encoder_weights)]
        record.decoder = [_attention_record(model, AttentionKind.DECODER, i, w, acts) for i, w in enumerate(self_weights)]
        record.cross = [_attention_record(model, AttentionKind.CROSS, i, w, acts) for i, w in enumerate(cross_weights)]
        record.encoder_inputs = [acts[f"encoder.{i}.resid_pre"] for i in range(len(model.encoder_layers))]
        record.decoder_inputs = [acts[f"decoder.{i}.resid_pre"] for i in range(len(model.decoder_layers))]
    return record


def transparent_pass(
    model: Transformer,
    source_vectors: torch.Tensor,
    target_vectors: torch.Tensor,
    logits_at: torch.Tensor | None = None,
    record_sublayers: bool = True,
) -> PassRecord:
    """The teacher-forced pass from token embeddings: source [B, S, d_model], decoder inputs [B, T, d_model]
    (``embed_tokens``, or scaled copies of them) in place of the model's own. Sentences are unpadded (one sentence,
    repeated). With ``logits_at`` [B], only each row's logits at that position are kept ([B, V]); without
    ``record_sublayers`` only the memory and the logits are (the attention runs its fast path)."""
    replacements = {"encoder.embed": source_vectors, "decoder.embed": target_vectors}
    source_ids, target_ids = _stand_in_ids(model, source_vectors), _stand_in_ids(model, target_vectors)
    return _pass(model, source_ids, target_ids, replacements, logits_at, record_sublayers)


def token_pass(model: Transformer, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> PassRecord:
    """``transparent_pass`` from token ids [B, S] and [B, T] (unpadded): the model's own embeddings."""
    return _pass(model, source_ids, target_input_ids, {}, None, True)
