"""Hugging Face decoder-only models (GPT-2; the Llama layout: Llama, Mistral, Qwen2) through the interventions' hook
points, on the library's own forward pass.

A decoder-only model has one stack, the decoder, and no source: its prompt is the start of what the decoder reads, as
the Explore tab's trace shows it (the prompt's first token is the first input, the rest are given steps;
model/decoding/stepper.py). So a tool's decoder inputs are the prompt followed by the decoded tokens
(``decoder_inputs``, model/decoding/greedy.py), every position is a step, and a corrupted prompt is a corrupted
start of the decoder's input (activation patching compares two prompts of equal length along the clean
continuation). The hook points are the decoder's of model/interventions/hooked.py, with no cross-attention:

* ``decoder.{l}.resid_pre``: the hidden states the layer is given (a forward pre-hook on the layer);
* ``decoder.{l}.self.head_out`` [B, H, T, d_model]: the output projection (GPT-2's ``c_proj``, a Conv1D whose weight
  is W^O's transpose; Llama's ``o_proj``) read per head; patched, the projection returns the heads' sum plus its bias;
* ``decoder.{l}.self.q``, ``decoder.{l}.self.k`` [B, H, T, d_k]: the queries and keys as the layer projected them,
  before a rotary model's rotation (a grouped-query model's key heads repeated to its query heads); read only where
  they are a third of GPT-2's fused ``c_attn`` or repeated;
* ``decoder.{l}.self.out``: the attention's output, before its residual add;
* ``decoder.{l}.self.resid``: the stream after the attention's residual add, which no module returns (pre-norm: the
  stream the layer's first norm read, plus the attention's output);
* ``decoder.{l}.mlp_out``: the feed-forward block's output; ``decoder.{l}.resid_post``: the layer's output;
* ``decoder.{l}.self.pattern``: the library's own ``output_attentions`` (read, not patched).

The lens reads a stream through the final norm (GPT-2's ``ln_f``, a LayerNorm; Llama's ``norm``, an RMS norm) and
``lm_head``; direct logit attribution holds that norm linear. Where each module sits is the layout's table
(``DECODER_LAYOUT_MODULES``, model/pretrained/layouts.py): one adapter serves every decoder-only layout it names.
DecoderLens decodes from the encoder's layers: a decoder-only model has none (an inherent "no", said in one line).
"""

from __future__ import annotations

from typing import cast

import torch

from model.family import InterventionTool
from model.interventions.circuit_parts import NO_CROSSING
from model.interventions.hooked import AttributionLayout, HeldNorm, HookedRun, Hooks, InterventionError
from model.interventions.library_sites import ADDED, HEADS, INPUT, OUTPUT, SPLIT, Site, one_stack_run
from model.kinds import AttentionKind
from model.pretrained.networks import DecoderNetwork
from model.pretrained.offload import tensor_of

SERVED = (InterventionTool.LOGIT_LENS, InterventionTool.LOGIT_ATTRIBUTION, InterventionTool.PATCHING)
NO_ENCODER = "DecoderLens decodes from each encoder layer's output, and a decoder-only model has no encoder"


class DecoderPass:
    """A decoder-only layout's adapter (its registry entry's hooked pass, ``HOOKED_LAYOUTS``), bound to one network."""

    served_tools = SERVED
    unserved = {
        InterventionTool.DECODER_LENS: NO_ENCODER,
        InterventionTool.CIRCUITS: NO_CROSSING.format(what="a decoder-only model", part="encoder"),
    }

    def __init__(self, network: DecoderNetwork) -> None:
        self.network = network
        self.modules = network.modules  # where its layout keeps its modules

    def hook_sites(self) -> dict[str, Site]:
        """Every hook point but the patterns -> its site, in the order the pass reaches them."""
        network, modules = self.network, self.modules
        n_heads = network.config.n_heads
        sites: dict[str, Site] = {}
        for index, layer in enumerate(network.layers()):
            prefix = f"decoder.{index}"
            projection = layer.get_submodule(modules.projection)
            attention = layer.get_submodule(modules.attention)
            weight = network.head_weight(AttentionKind.DECODER, index)  # [d_model, H * d_k]
            sites[f"{prefix}.resid_pre"] = Site(layer, INPUT)
            sites[f"{prefix}.self.head_out"] = Site(projection, HEADS, n_heads, weight=weight)
            sites |= self._query_key_sites(layer, prefix, weight.shape[1] // n_heads)
            sites[f"{prefix}.self.out"] = Site(attention, OUTPUT)
            sites[f"{prefix}.self.resid"] = Site(attention, ADDED, before=layer.get_submodule(modules.input_norm))
            sites[f"{prefix}.mlp_out"] = Site(layer.get_submodule(modules.mlp), OUTPUT)
            sites[f"{prefix}.resid_post"] = Site(layer, OUTPUT)
        return sites

    def _query_key_sites(self, layer: torch.nn.Module, prefix: str, head_width: int) -> dict[str, Site]:
        """A layer's queries and keys as the model projected them, per query head (before a rotary model's rotation;
        a grouped-query model's key heads repeated to its query heads): read, not patched, where they are a part of a
        fused projection's output (GPT-2's) or repeated."""
        modules, n_heads = self.modules, self.network.config.n_heads
        if modules.fused is not None:
            fused = layer.get_submodule(modules.fused)
            return {f"{prefix}.self.{point}": Site(fused, SPLIT, n_heads, part=part) for part, point in enumerate("qk")}
        assert modules.queries is not None and modules.keys is not None  # a layout names its projections or a fused one
        return {
            f"{prefix}.self.q": Site(layer.get_submodule(modules.queries), SPLIT, n_heads),
            f"{prefix}.self.k": Site(layer.get_submodule(modules.keys), SPLIT, n_heads, head_width=head_width),
        }

    def hook_names(self) -> list[str]:
        return list(self.hook_sites()) + [f"decoder.{layer}.self.pattern" for layer in range(self.network.config.n_decoder_layers)]

    def head_count(self, side: str) -> int:
        return self.network.config.n_heads if side == "decoder" else 0

    def run_hooked(
        self,
        source_ids: torch.Tensor,  # [B, S]: the prompt, which the decoder inputs already begin with
        target_input_ids: torch.Tensor,  # [B, T]: the prompt, then the tokens decoded but the last
        hooks: Hooks,
        memory: torch.Tensor | None = None,
    ) -> HookedRun:
        """The library's pass over the decoder inputs with ``hooks`` installed where they read."""
        if memory is not None:
            raise InterventionError("a decoder-only model reads no memory: it has no encoder")
        hf_model = self.network.hf_model
        out = one_stack_run(
            self.hook_sites(),
            hooks,
            hf_model.lm_head,
            lambda attentions: hf_model(
                input_ids=target_input_ids, use_cache=False, output_attentions=attentions, return_dict=True
            ),
        )
        batch = target_input_ids.shape[0]
        no_memory = out.logits.new_zeros((batch, 0, self.network.config.d_model))  # [B, 0, d_model]: no encoder
        return HookedRun(out.logits, hooks.activations, no_memory, None)

    def final_norm(self) -> torch.nn.Module:
        """The norm before the output head."""
        return self.network.hf_model.get_submodule(self.modules.final_norm)

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        """Residual streams [..., d_model] through the final norm and ``lm_head`` -> logits [..., V]."""
        hf_model = self.network.hf_model
        return hf_model.lm_head(self.final_norm()(streams))

    def has_final_norm(self) -> bool:
        return True

    def has_encoder_final_norm(self) -> bool:
        return False  # no encoder

    def layer_memories(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        raise InterventionError(NO_ENCODER)

    def held_final_norm(self) -> HeldNorm:
        """The final norm, held linear: a LayerNorm (GPT-2's), or an RMS norm (the Llama layout's: no mean, no β)."""
        norm = self.final_norm()
        weight = cast(torch.Tensor, tensor_of(norm, "weight"))
        if self.modules.rms_norms:
            return HeldNorm(weight, None, float(cast(float, norm.variance_epsilon)), centred=False)
        layer_norm = cast(torch.nn.LayerNorm, norm)
        return HeldNorm(weight, tensor_of(layer_norm, "bias"), layer_norm.eps)

    def attribution_layout(self) -> AttributionLayout:
        """The stream starts as what enters the first layer (token embeddings, and GPT-2's learned positions: one part,
        "embeddings"); pre-norm, it meets the final norm only; each attention's projection bias is no head's."""
        network = self.network
        projections = [network.head_projection(AttentionKind.DECODER, index) for index in range(network.config.n_decoder_layers)]
        lm_head = network.hf_model.lm_head
        return AttributionLayout(
            embeddings=lambda _inputs, activations: [("embeddings", activations["decoder.0.resid_pre"][0])],
            capture=("decoder.0.resid_pre",),
            sublayer_norms=[(None, None, None) for _ in projections],
            projection_biases=[(tensor_of(projection, "bias"), None) for projection in projections],
            final_norm=self.held_final_norm(),
            unembedding=cast(torch.Tensor, tensor_of(lm_head, "weight")),
            unembedding_bias=tensor_of(lm_head, "bias"),
        )
