"""The hooked pass of the app's Transformer: its own teacher-forced pass with forward hooks on its hook points.

The Transformer (model/nn/transformer.py) carries a ``HookPoint`` (model/nn/hooks.py) at every activation the
interventions read or patch, named as model/interventions/hooked.py lists them (``Transformer.hook_points``). A run
registers a PyTorch forward hook on each point its ``Hooks`` captures, patches or starts gradients at, runs what the
model's ``forward`` runs (``encode``, ``start_cache``, ``decode``: its weights, its norm placement, its padding masks;
no dropout) and removes the hooks: a change to the model is a change to its hooked pass. Each head's output through its
slice of W^O is formed only when its point is hooked. It serves every tool of model.family.INTERVENTION_TOOLS.
"""

from __future__ import annotations

import math

import torch

from model.attribution.own_pass import without_dropout
from model.family import INTERVENTION_TOOLS, InterventionTool
from model.interventions.circuit_parts import CircuitParts, Norm
from model.interventions.hooked import AttributionLayout, HeldNorm, HookedRun, Hooks, hooked_encode
from model.kinds import AttentionKind
from model.nn.transformer import DecoderLayer, EncoderLayer, Transformer, layer_norm

SUBLAYERS = {"self": 0, "cross": 1, "mlp": -1}  # a sublayer's norm among its layer's (the feed-forward's: the last)


class TransformerPass:
    """The app's Transformer's adapter (its registry entry's ``hooked_pass``, model/nn/registry.py), bound to one."""

    served_tools = INTERVENTION_TOOLS
    unserved: dict[InterventionTool, str] = {}  # every tool served

    def __init__(self, model: Transformer) -> None:
        self.model = model

    def hook_names(self) -> list[str]:
        return list(self.model.hook_points())

    def head_count(self, side: str) -> int:
        return self.model.config.n_heads

    def run_hooked(
        self,
        source_ids: torch.Tensor,  # [B, S]
        target_input_ids: torch.Tensor,  # [B, T]
        hooks: Hooks,
        memory: torch.Tensor | None = None,  # [B, S, d_model]: read instead of the encoder's (passed through its point)
    ) -> HookedRun:
        model = self.model
        points = model.hook_points()
        mask = model.padding_mask(source_ids)  # [B, 1, 1, S] or None
        with hooks.attached(points), without_dropout(model):
            if memory is None:
                memory, mask, _ = model.encode(source_ids)  # [B, S, d_model]
            else:
                memory = points["encoder.memory"](memory)  # [B, S, d_model]
            hidden, _, _ = model.decode(target_input_ids, model.start_cache(memory, mask))  # [B, T, d_model]
        return HookedRun(hidden, hooks.activations, memory, mask)

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        """Decoder residual streams [..., d_model] through the decoder's final norm and the output projection."""
        model = self.model
        return model.logits(model.decoder_norm(streams))

    def has_final_norm(self) -> bool:
        """Whether the decoder's output passes a LayerNorm of its own (a pre-norm model's) before the projection."""
        return self.model.config.norm_placement == "pre"

    def has_encoder_final_norm(self) -> bool:
        """Whether the encoder's last layer output passes a LayerNorm of its own (a pre-norm model's) to the memory."""
        return self.model.config.norm_placement == "pre"

    def decoder_layers(self) -> list[DecoderLayer]:
        """The decoder's layers, in order (what the neuron view reads each sublayer's norm of)."""
        return list(self.model.decoder_stack)

    def layer_memories(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        model = self.model
        n_layers = model.config.n_encoder_layers
        hooks = Hooks([f"encoder.{layer}.resid_post" for layer in range(n_layers)])
        hooked_encode(model, source_ids, hooks)
        outputs = torch.cat([hooks.activations[f"encoder.{layer}.resid_post"] for layer in range(n_layers)])  # [L, S, d]
        return model.encoder_norm(outputs), model.padding_mask(source_ids.expand(n_layers, -1))

    def attribution_layout(self) -> AttributionLayout:
        """The stream starts as the token embeddings (scaled by √d_model) and the positions added; a post-norm layer's
        three norms follow its sublayers; a pre-norm model's final LayerNorm comes last; W^O has no bias."""
        model = self.model

        def embeddings(inputs: torch.Tensor, _activations: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
            token = model.target_embedding(inputs[0]) * math.sqrt(model.config.d_model)  # [T, d_model]
            if not model.positions.table:  # rope, a bias or none: no positions in the stream (model/nn/positions.py)
                return [("token embedding", token)]
            return [("token embedding", token), ("positions", model.positional_table[: inputs.shape[1]].to(token.dtype))]

        norms: list[tuple[HeldNorm | None, HeldNorm | None, HeldNorm | None]] = [
            (None, None, None)
            if layer.pre_norm
            else (HeldNorm.of(layer.norms[0]), HeldNorm.of(layer.norms[1]), HeldNorm.of(layer.norms[2]))
            for layer in model.decoder_stack
        ]
        final = HeldNorm.of(model.decoder_norm) if self.has_final_norm() else None
        projection = model.output_projection
        weight, bias = (model.target_embedding.weight, None) if projection is None else (projection.weight, projection.bias)
        return AttributionLayout(embeddings, (), norms, [(None, None)] * len(norms), final, weight, bias)

    def circuit_parts(self) -> CircuitParts:
        """Its layers, heads and norms (model/interventions/circuit_parts.py): a pre-norm model's norms are each
        sublayer's and the two final ones; a post-norm model's sit on the stream, after each sublayer's add."""
        model = self.model
        config = model.config
        pre_norm = config.norm_placement == "pre"

        def layer(side: str, index: int) -> EncoderLayer | DecoderLayer:
            return model.encoder_layers[index] if side == "encoder" else model.decoder_stack[index]  # type: ignore[return-value]

        def norm_of(side: str, index: int, sublayer: str) -> torch.nn.LayerNorm:
            return layer(side, index).norms[SUBLAYERS[sublayer]]  # type: ignore[return-value]

        def read_norm(side: str, index: int, sublayer: str) -> Norm | None:
            norm = norm_of(side, index, sublayer)
            return (lambda x: layer_norm(norm, x)) if pre_norm else None

        def head_inputs(side: str, index: int, parts: str, reads: torch.Tensor) -> tuple[torch.Tensor, ...]:
            kind = (
                AttentionKind.CROSS if parts != "qkv" else (AttentionKind.ENCODER if side == "encoder" else AttentionKind.DECODER)
            )
            return model.attention_module(kind, index).head_projections(reads, parts)

        return CircuitParts(
            config.n_encoder_layers, config.n_decoder_layers, config.n_heads, pre_norm, read_norm,
            model.encoder_norm if pre_norm else None, model.decoder_norm if pre_norm else None, head_inputs,
            lambda side, index, sublayer: norm_of(side, index, sublayer).weight,
        )  # fmt: skip


def hooked_pass(network: Transformer) -> TransformerPass:
    """The Transformer family's hooked pass (declared by path in its registry entry), bound to ``network``."""
    return TransformerPass(network)
