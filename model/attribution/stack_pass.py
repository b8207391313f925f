"""The Hugging Face one-stack models' measured pass: decoder-only (GPT-2; the Llama layout: Llama, Mistral, Qwen2) and
encoder-only (BERT, RoBERTa, ELECTRA, XLM-R, DistilBERT). The library's own forward pass, with PyTorch hooks on its
modules, split into what the contribution measures read (model/attribution/transparent_pass.py says what a record
holds): the one stack's records are the record's decoder (a decoder-only model: no source, so no encoder or
cross-attention) or its encoder (an encoder-only model: no decoder).

A decoder-only model reads the prompt, then the tokens decoded but the last (``decoder_inputs``,
model/decoding/greedy.py). Per layer:

* the weights are the library's own ``output_attentions`` (the eager path's probabilities, in the autograd graph);
* the transformed vectors are the value projection's output (Llama's ``v_proj``, BERT's ``attention.self.value``;
  GPT-2's fused ``c_attn``, its last third), bias included, split per key-value head and repeated to the query heads
  a grouped-query model shares them with, through the head's slice of the output projection (W^O, ``head_weight``),
  whose bias is the record's ``bias``;
* the residual is the stream the layer is given (the attention's output is added to it);
* the norm: none in the decoder-only layouts (pre-norm: each sublayer reads its own norm of the stream); the LayerNorm
  after the attention's residual add in the encoder-only ones (post-norm: BERT's ``attention.output.LayerNorm``,
  DistilBERT's ``sa_layer_norm``).

Token embeddings are the output of the library's input embedding (``get_input_embeddings``: before learned positions
are added; Llama's rotary positions turn queries and keys inside each attention); replaced, they take that module's
output. Value zeroing runs the library's forward again, batched, with each key's values scaled, and stops once the
layer's output is read. Where each module sits is the layout's table (``DECODER_LAYOUT_MODULES``,
``ENCODER_LAYOUT_MODULES``).
"""

from __future__ import annotations

from typing import Any, cast

import torch

from model.attribution.library_pass import installed, keep_input, keep_output, zeroed_output
from model.attribution.transparent_pass import SOURCE, TARGET, AttentionRecord, PassRecord
from model.family import capabilities_of
from model.kinds import AttentionKind
from model.nn.attention import split_heads, through_heads
from model.nn.hooks import for_this_thread
from model.pretrained.networks import DecoderNetwork, EncoderNetwork
from model.pretrained.offload import tensor_of

StackNetwork = DecoderNetwork | EncoderNetwork


class StackPass:
    """One Hugging Face one-stack model's measured pass (see the module's docstring)."""

    def __init__(self, network: StackNetwork) -> None:
        self.network = network
        self.hf_model = network.hf_model
        self.kind = capabilities_of(network).kinds[0]  # its stack's attention: the decoder's, or the encoder's
        self.side = TARGET if self.kind is AttentionKind.DECODER else SOURCE
        self.modules = network.modules  # where its layout keeps its modules

    def _norm(self, layer: int) -> torch.nn.LayerNorm | None:
        """A post-norm layer's LayerNorm after the attention's residual add; None in a pre-norm layout."""
        name = self.modules.post_norm
        return None if name is None else cast(torch.nn.LayerNorm, self.network.layers()[layer].get_submodule(name))

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor:
        return self.hf_model.get_input_embeddings()(ids)  # [B, L, d_model]

    def _value_module(self, layer: int) -> torch.nn.Module:
        """The module whose output holds ``layer``'s values: the value projection, or the fused one."""
        name = self.modules.values or self.modules.fused
        assert name is not None, "a layout names its value projection or its fused one"
        return self.network.layers()[layer].get_submodule(name)

    def _values(self, output: torch.Tensor) -> torch.Tensor:
        """The values [B, L, H_kv * d_k] in what the value module returned (a fused projection's last third)."""
        if self.modules.values is None:
            return output[..., 2 * self.network.config.d_model :]  # [B, L, d_model]: GPT-2's q | k | v
        return output

    def _with_values(self, output: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """What the value module returns with ``values`` in place of its own."""
        if self.modules.values is None:
            return torch.cat([output[..., : 2 * self.network.config.d_model], values], dim=-1)  # [B, L, 3 d_model]
        return values

    def _record(self, layer: int, weights: torch.Tensor, acts: dict) -> AttentionRecord:
        """One layer's record from the library's weights [B, H, Q, K] and what the hooks kept."""
        w_out = self.network.head_weight(self.kind, layer)  # [d_model, H * d_k]
        n_heads = self.network.config.n_heads
        d_k = w_out.shape[1] // n_heads
        values = self._values(acts[("v", layer)])  # [B, K, H_kv * d_k]
        shared = split_heads(values, values.shape[-1] // d_k)  # [B, H_kv, K, d_k]
        per_head = shared.repeat_interleave(n_heads // shared.shape[1], dim=1)  # [B, H, K, d_k] (the library's repeat_kv)
        transformed = through_heads(per_head, w_out)  # [B, H, K, d_model]
        bias = tensor_of(self.network.head_projection(self.kind, layer), "bias")  # None where it has none
        return AttentionRecord(weights, transformed, acts[("resid", layer)], self._norm(layer), bias)

    def _capturing(self, acts: dict) -> list:
        """Hooks that keep each layer's input and its values."""
        handles = []
        for index, layer in enumerate(self.network.layers()):
            keep = for_this_thread(keep_output(acts, ("v", index)))
            handles.append(self._value_module(index).register_forward_hook(keep))
            handles.append(layer.register_forward_pre_hook(for_this_thread(keep_input(acts, ("resid", index))), with_kwargs=True))
        return handles

    def _replacing(self, replacements: dict[str, torch.Tensor]) -> list:
        """A hook that puts the stack's replacement [B, L, d_model] in place of the token embeddings."""
        vectors = replacements.get(self.side)
        if vectors is None:
            return []
        embedding = self.hf_model.get_input_embeddings()
        return [embedding.register_forward_hook(for_this_thread(lambda _module, _args, _output: vectors))]

    def _forward(self, ids: torch.Tensor, attentions: bool) -> Any:
        """The library's forward over the stack's ids [B, L] (unpadded: stand-in ids are no padding either)."""
        extra = {"use_cache": False} if self.side == TARGET else {}  # a decoder's cache is not kept
        return self.hf_model(
            input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=attentions, return_dict=True, **extra
        )

    def run(
        self,
        source_ids: torch.Tensor,  # [B, S]: an encoder-only model's text; [B, 0] for a decoder-only model
        target_ids: torch.Tensor,  # [B, T]: a decoder-only model's prompt, then the tokens decoded but the last
        replacements: dict[str, torch.Tensor],
        logits_at: torch.Tensor | None,
        record_sublayers: bool,
    ) -> PassRecord:
        acts: dict[tuple, torch.Tensor] = {}
        handles = self._replacing(replacements) + (self._capturing(acts) if record_sublayers else [])
        decoder = self.side == TARGET
        with installed(handles):
            out = self._forward(target_ids if decoder else source_ids, record_sublayers)
        record = PassRecord(source_ids[:, :0] if decoder else source_ids, target_ids[:, :0] if not decoder else target_ids)
        # what the gradient measures differentiate: a decoded token's logits, an encoder-only head's scores [B, S, C]
        # (a sentence head's [B, C]: read at no position); a bare encoder has none
        logits = getattr(out, "logits", None)  # [B, L, V] or [B, C]
        if logits is not None and logits_at is not None and logits.dim() == 3:
            logits = logits[torch.arange(logits.shape[0], device=logits.device), logits_at]  # [B, V]
        record.hidden, record.read_out = logits, self.network.logits
        if record_sublayers:
            layers = [self._record(layer, w, acts) for layer, w in enumerate(out.attentions)]
            inputs = [acts[("resid", layer)] for layer in range(len(layers))]
            if decoder:
                record.decoder, record.decoder_inputs = layers, inputs
            else:
                record.encoder, record.encoder_inputs = layers, inputs
        return record

    def zeroed_layer(self, record: PassRecord, kind: AttentionKind, layer: int, scale: torch.Tensor) -> torch.Tensor:
        """The layer's output [1 + K, L, d_model], once per row of ``scale`` [1 + K, K]: the library's forward again on
        the sentence, its rows grown as they enter the layer (``zeroed_output``)."""
        ids = record.target_ids if self.side == TARGET else record.source_ids  # [1, L]

        def scaled(output: torch.Tensor) -> torch.Tensor:
            return self._with_values(output, self._values(output) * scale[:, :, None])  # [1 + K, K, ...]

        module, values = self.network.layers()[layer], self._value_module(layer)
        return zeroed_output(module, values, scale.shape[0], scaled, lambda: self._forward(ids, attentions=False))


def measured_pass(network: StackNetwork) -> StackPass:
    """The pretrained decoder-only and encoder-only families' measured pass (their ``Capabilities.measured_pass``,
    declared for the layouts whose modules are known: model/pretrained/families.py)."""
    return StackPass(network)
