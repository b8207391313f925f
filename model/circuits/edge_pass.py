"""Edges patched, and edges' gradients, in the network's own forward pass (its hooked pass, model/interventions/).

Each node's output is read where the pass writes it to the stream (a side's embeddings at its first layer's
``resid_pre``, each head's ``head_out``, each ``mlp_out``); the difference of each writer's corrupted output from its
output in this run is carried along the stream as the stream carries it: as it is in a pre-norm model, and through each
post-norm LayerNorm held at the clean run's scale (``γ ⊙ (Δ − mean Δ) · s``, the norm made linear; the norm's own scale
point holds the pass to the same scale, so the carried differences are exactly what the stream would have carried). At
a receiver, the differences of the edges patched in a row are added to its own input only: a head's queries, keys and
values are formed again from its own input (``CircuitParts.head_inputs``), a pre-norm receiver's LayerNorm recomputed
on it, the memory's for a cross-attention head's keys and values.

Two uses (``EdgeHooks``):

* **patching**: row b of the batch patches the edges ``absent[b]`` (True = the edge carries the corrupted writer's
  output instead of this run's);
* **gradients**: a zero added to every receiver's input requires grad (``receiver_inputs``), so one backward pass gives
  ∂metric/∂(each receiver's own input), and the differences carried to each receiver are kept (``carried_at``): EAP's
  score of an edge is their product summed over positions and dimensions. With ``absent`` as fractions, the rows walk
  receivers' inputs along the line to their patched value (EAP-IG over activations).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from model.circuits.graph import CircuitGraph, ReceiverGroup
from model.interventions.circuit_parts import CircuitParts
from model.interventions.hooked import Hooks

GroupKey = tuple[str, int | None, str]
SUBLAYER_OF_SCALE = {"self.scale": "self", "cross.scale": "cross", "mlp_scale": "mlp"}


def writer_points(parts: CircuitParts) -> list[str]:
    """The hook points where the writers' outputs are read."""
    names = ["encoder.0.resid_pre", "decoder.0.resid_pre"]
    for side, layers, attentions in (
        ("encoder", parts.n_encoder_layers, ("self",)),
        ("decoder", parts.n_decoder_layers, ("self", "cross")),
    ):
        for layer in range(layers):
            names += [f"{side}.{layer}.{attention}.head_out" for attention in attentions] + [f"{side}.{layer}.mlp_out"]
    return names


def scale_points(parts: CircuitParts) -> list[str]:
    """Every sublayer norm's scale point (a post-norm model's are held at the clean run's)."""
    names = []
    for side, layers, sublayers in (
        ("encoder", parts.n_encoder_layers, ("self.scale", "mlp_scale")),
        ("decoder", parts.n_decoder_layers, ("self.scale", "cross.scale", "mlp_scale")),
    ):
        names += [f"{side}.{layer}.{point}" for layer in range(layers) for point in sublayers]
    return names


class EdgeHooks(Hooks):
    """One pass's edge patches or receiver gradients (see the module's docstring)."""

    def __init__(
        self,
        graph: CircuitGraph,
        corrupted: Mapping[str, torch.Tensor],  # writer point -> its output in the corrupted run [1, (H,) L, d_model]
        scales: Mapping[str, torch.Tensor],  # scale point -> the clean run's 1/σ [1, L, 1] (post-norm); {} for pre-norm
        absent: torch.Tensor | None = None,  # [B, edges] bool (patched) or a fraction on a path to patched (EAP-IG)
        clean: Mapping[str, torch.Tensor] | None = None,  # the differences taken from these outputs, not this run's
        gradients: bool = False,  # a zero that requires grad added to each receiver's input (``receiver_inputs``)
        capture: tuple[str, ...] = (),
        source_stream: torch.Tensor | None = None,  # [B, S, d_model]: read instead of the source's embeddings (EAP-IG)
    ) -> None:
        super().__init__(capture=capture)
        self.graph, self.parts = graph, graph.parts
        self.corrupted, self.scales, self.absent, self.clean = corrupted, scales, absent, clean
        self.source_stream, self.gradients = source_stream, gradients
        self.carried: dict[str, list[torch.Tensor]] = {"encoder": [], "decoder": []}  # differences [B|1, L, d] per writer
        self.stream: dict[str, torch.Tensor] = {}  # each stream's current value [B, L, d_model]
        self.encoder_out: tuple[torch.Tensor, torch.Tensor] | None = None  # (the encoder's last stream, carried stack)
        self.extra: dict[GroupKey, torch.Tensor] = {}  # a group's added input [B, (H,) L, d_model]: query side
        self.pending: dict[tuple[str, int, str], dict[str, torch.Tensor]] = {}  # attention -> its heads' q/k/v changes
        self.receiver_inputs: dict[GroupKey, torch.Tensor] = {}  # gradients: the zeros added, requiring grad
        self.carried_at: dict[GroupKey, torch.Tensor] = {}  # gradients: the differences a group reads [B|1, n, L, d]
        self._names = frozenset(writer_points(self.parts)) | frozenset(self._stream_points()) | frozenset(self._receiver_points())
        if scales:
            self._names |= frozenset(scales)

    @property
    def names(self) -> frozenset[str]:
        return self._names | frozenset(self.capture)

    def _stream_points(self) -> list[str]:
        parts = self.parts
        names = [
            f"encoder.{layer}.{point}"
            for layer in range(parts.n_encoder_layers)
            for point in ("resid_pre", "self.resid", "resid_post")
        ]
        points = ("resid_pre", "self.resid", "cross.resid", "resid_post")
        return names + [f"decoder.{layer}.{point}" for layer in range(parts.n_decoder_layers) for point in points]

    def _receiver_points(self) -> list[str]:
        parts = self.parts
        names = ["decoder.final"]
        for layer in range(parts.n_encoder_layers):
            names += [f"encoder.{layer}.self.{p}" for p in "qkv"] + [f"encoder.{layer}.mlp_in"]
        for layer in range(parts.n_decoder_layers):
            names += [f"decoder.{layer}.self.{p}" for p in "qkv"] + [f"decoder.{layer}.cross.{p}" for p in "qkv"]
            names.append(f"decoder.{layer}.mlp_in")
        return names

    # --- the pass --------------------------------------------------------------------------------------------
    def __call__(self, name: str, activation: torch.Tensor) -> torch.Tensor:
        activation = self._on(name, activation)
        if name in self.capture:
            self.activations[name] = activation
        return activation

    def _on(self, name: str, activation: torch.Tensor) -> torch.Tensor:
        side, _, rest = name.partition(".")
        if name == "decoder.final":
            return self._logits(activation)
        layer_text, _, point = rest.partition(".")
        layer = int(layer_text)
        if point == "resid_pre" and layer == 0:
            if side == "encoder" and self.source_stream is not None:
                activation = self.source_stream
            self._write(side, name, activation)
        if point in ("resid_pre", "self.resid", "cross.resid", "resid_post"):
            self.stream[side] = activation
            if side == "encoder" and point == "resid_post" and layer == self.parts.n_encoder_layers - 1:
                self.encoder_out = (activation, self._stack("encoder"))
            return activation
        if point.endswith("head_out") or point == "mlp_out":
            self._write(side, name, activation)
            return activation
        if point in SUBLAYER_OF_SCALE:
            return self._hold_scale(side, layer, point, name, activation)
        if point == "mlp_in":
            return activation + self._read_change((side, layer, "mlp"), self.parts.read_norm(side, layer, "mlp"))
        attention, _, projection = point.partition(".")
        return activation + self._head_change(side, layer, attention, projection)

    def _write(self, side: str, name: str, output: torch.Tensor) -> None:
        """A writer's (or a head writer's, [B, H, L, d]) output: its difference joins the stream's carried stack."""
        reference = self.clean[name] if self.clean is not None else output.detach()
        difference = self.corrupted[name] - reference  # [B|1, (H,) L, d_model]
        if difference.dim() == 4:
            self.carried[side].extend(difference.unbind(1))
        else:
            self.carried[side].append(difference)

    def _stack(self, stream: str) -> torch.Tensor:
        """The stream's carried differences [B|1, writers, L, d_model]."""
        return torch.stack(self.carried[stream], dim=1)

    def _hold_scale(self, side: str, layer: int, point: str, name: str, scale: torch.Tensor) -> torch.Tensor:
        """A post-norm norm: held at the clean run's scale, and the carried differences carried through it."""
        held = self.scales[name].to(scale.dtype).expand_as(scale)  # [B, L, 1]
        weight = self.parts.norm_weight(side, layer, SUBLAYER_OF_SCALE[point])  # [d_model]
        stack = self._stack(side)
        stack = (stack - stack.mean(-1, keepdim=True)) * self.scales[name][:, None] * weight  # [B|1, n, L, d_model]
        self.carried[side] = list(stack.unbind(1))
        return held

    def _group_add(self, key: GroupKey, stack: torch.Tensor) -> torch.Tensor:
        """What the receivers of group ``key`` have added to their input [B, heads or 1, L, d_model]."""
        group: ReceiverGroup = self.graph.groups[key]
        added = None
        if self.absent is not None:
            index = torch.as_tensor(group.edge_index, device=stack.device)  # [heads, n] or [heads, n, L] (split)
            chosen = self.absent[:, index].to(stack.dtype)  # [B, heads, n(, L)]: 1 patched, a fraction on a path
            rows = stack.expand(chosen.shape[0], -1, -1, -1)  # [B, n, L, d_model]
            split = "bhnl,bnld->bhld" if chosen.dim() == 4 else "bhn,bnld->bhld"  # one edge per source position
            added = torch.einsum(split, chosen, rows)  # [B, heads, L, d_model]
        if self.gradients:  # a zero that requires grad, and what the group's edges carry
            self.carried_at[key] = stack.detach()  # [B|1, n, L, d_model]
            rows_count = stack.shape[0] if added is None else added.shape[0]
            shape = (rows_count, group.edge_index.shape[0]) + tuple(stack.shape[2:])
            zero = torch.zeros(shape, dtype=stack.dtype, device=stack.device, requires_grad=True)
            self.receiver_inputs[key] = zero
            added = zero if added is None else added + zero
        assert added is not None, "a pass patches edges or differentiates at receivers"
        return added

    def _read_change(self, key: GroupKey, norm, base: torch.Tensor | None = None) -> torch.Tensor:
        """The change of a one-receiver group's read [B, L, d_model] (a feed-forward block's, the logits')."""
        stream = self.stream[key[0]] if base is None else base
        added = self._group_add(key, self._stack(key[0]))[:, 0]  # [B, L, d_model]
        return added if norm is None else norm(stream + added) - norm(stream)

    def _head_change(self, side: str, layer: int, attention: str, projection: str) -> torch.Tensor:
        """The change of one head-indexed q, k or v [B, H, L, d_k] from each head's own added input."""
        pending_key = (side, layer, attention if attention == "self" or projection == "q" else "cross_kv")
        if projection in self.pending.get(pending_key, {}):
            return self.pending[pending_key].pop(projection)
        if attention == "self":
            key, stream, norm, parts = (side, layer, "self"), self.stream[side], self.parts.read_norm(side, layer, "self"), "qkv"
            stack = self._stack(side)
        elif projection == "q":
            key, stream, norm, parts = (side, layer, "cross_q"), self.stream[side], self.parts.read_norm(side, layer, "cross"), "q"
            stack = self._stack(side)
        else:
            assert self.encoder_out is not None, "the encoder runs before the decoder reads its memory"
            key, norm, parts = (side, layer, "cross_kv"), self.parts.memory_norm, "kv"
            stream, stack = self.encoder_out
        added = self._group_add(key, stack)  # [B, H, L, d_model]
        base = stream[:, None]  # [B, 1, L, d_model]
        change = added if norm is None else norm(base + added) - norm(base)  # [B, H, L, d_model]
        projected = dict(zip(parts, self.parts.head_inputs(side, layer, parts, change)))  # each [B, H, L, d_k]
        first = projected.pop(projection)
        self.pending[pending_key] = projected
        return first

    def _logits(self, final: torch.Tensor) -> torch.Tensor:
        return final + self._read_change(("decoder", None, "logits"), self.parts.final_norm)
