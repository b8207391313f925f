"""The Hugging Face decoder-only models' measured pass (GPT-2; the Llama layout: Llama, Mistral, Qwen2): the library's
own forward pass over the prompt and the decoded tokens, with PyTorch hooks on its modules, split into what the
contribution measures read (model/attribution/transparent_pass.py says what a record holds).

A decoder-only model has one stack and no source: the record's decoder is every layer's masked self-attention, over
the decoder inputs (the prompt, then the tokens decoded but the last: ``decoder_inputs``, model/decoding/greedy.py);
its encoder and cross-attention are empty, and its source has no pieces. Per layer:

* the weights are the library's own ``output_attentions`` (the eager path's probabilities, in the autograd graph);
* the transformed vectors are the value projection's output (Llama's ``v_proj``; GPT-2's fused ``c_attn``, its last
  third), bias included, split per key-value head and repeated to the query heads a grouped-query model shares them
  with, through the head's slice of the output projection (W^O, ``head_weight``), whose bias is the record's ``bias``;
* the residual is the stream the layer is given (the attention's output is added to it);
* no norm: every layout served is pre-norm (each sublayer reads its own norm of the stream).

Token embeddings are the output of the library's input embedding (``get_input_embeddings``: before GPT-2's learned
positions are added; Llama's rotary positions turn queries and keys inside each attention); replaced, they take that
module's output. Value zeroing runs the library's forward again, batched, with each key's values scaled, and stops once
the layer's output is read. Where each module sits is the layout's table (``DECODER_LAYOUT_MODULES``).
"""

from __future__ import annotations

from typing import cast

import torch

from model.attribution.library_pass import LayerRead, installed, keep_input, keep_output
from model.attribution.transparent_pass import TARGET, AttentionRecord, PassRecord
from model.kinds import AttentionKind
from model.nn.attention import split_heads, through_heads
from model.nn.hooks import for_this_thread
from model.pretrained.families import DecoderNetwork
from model.pretrained.layouts import ModuleOutput

DECODER = AttentionKind.DECODER


class DecoderLibraryPass:
    """One Hugging Face decoder-only model's measured pass (see the module's docstring)."""

    def __init__(self, network: DecoderNetwork) -> None:
        self.network = network
        self.hf_model = network.hf_model
        self.modules = network.modules

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor:
        return self.hf_model.get_input_embeddings()(ids)  # [B, L, d_model]

    def _value_module(self, layer: int) -> torch.nn.Module:
        """The module whose output holds ``layer``'s values: the value projection, or the fused one."""
        name = self.modules.values or self.modules.fused
        assert name is not None, "a decoder layout names its value projection or its fused one"
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
        w_out = self.network.head_weight(DECODER, layer)  # [d_model, H * d_k]
        n_heads = self.network.config.n_heads
        d_k = w_out.shape[1] // n_heads
        values = self._values(acts[("v", layer)])  # [B, K, H_kv * d_k]
        shared = split_heads(values, values.shape[-1] // d_k)  # [B, H_kv, K, d_k]
        per_head = shared.repeat_interleave(n_heads // shared.shape[1], dim=1)  # [B, H, K, d_k] (the library's repeat_kv)
        transformed = through_heads(per_head, w_out)  # [B, H, K, d_model]
        bias = cast(torch.Tensor | None, getattr(self.network.head_projection(DECODER, layer), "bias", None))
        return AttentionRecord(weights, transformed, acts[("resid", layer)], None, bias)

    def _capturing(self, acts: dict) -> list:
        """Hooks that keep each layer's input and its values."""
        handles = []
        for index, layer in enumerate(self.network.layers()):
            keep = for_this_thread(keep_output(acts, ("v", index)))
            handles.append(self._value_module(index).register_forward_hook(keep))
            handles.append(layer.register_forward_pre_hook(for_this_thread(keep_input(acts, ("resid", index))), with_kwargs=True))
        return handles

    def _replacing(self, replacements: dict[str, torch.Tensor]) -> list:
        """A hook that puts the decoder inputs' replacement [B, T, d_model] in place of the token embeddings."""
        vectors = replacements.get(TARGET)
        if vectors is None:
            return []
        embedding = self.hf_model.get_input_embeddings()
        return [embedding.register_forward_hook(for_this_thread(lambda _module, _args, _output: vectors))]

    def run(
        self,
        source_ids: torch.Tensor,  # [B, 0]: a decoder-only model has no source
        target_ids: torch.Tensor,  # [B, T]: the prompt, then the tokens decoded but the last
        replacements: dict[str, torch.Tensor],
        logits_at: torch.Tensor | None,
        record_sublayers: bool,
    ) -> PassRecord:
        acts: dict[tuple, torch.Tensor] = {}
        handles = self._replacing(replacements) + (self._capturing(acts) if record_sublayers else [])
        with installed(handles):
            out = self.hf_model(
                input_ids=target_ids,
                attention_mask=torch.ones_like(target_ids),  # unpadded (stand-in ids are no padding either)
                output_attentions=record_sublayers,
                use_cache=False,
                return_dict=True,
            )
        logits = out.logits  # [B, T, V]
        if logits_at is not None:
            logits = logits[torch.arange(logits.shape[0], device=logits.device), logits_at]  # [B, V]
        record = PassRecord(source_ids[:, :0], target_ids, hidden=logits, read_out=self.network.logits)
        if record_sublayers:
            record.decoder = [self._record(layer, w, acts) for layer, w in enumerate(out.attentions)]
            record.decoder_inputs = [acts[("resid", layer)] for layer in range(len(record.decoder))]
        return record

    def zeroed_layer(self, record: PassRecord, kind: AttentionKind, layer: int, scale: torch.Tensor) -> torch.Tensor:
        """The library's forward again, once per row of ``scale`` [1 + K, K], up to the layer's output [1 + K, T, d_model]."""
        rows, module = scale.shape[0], self.network.layers()[layer]
        outputs: dict[tuple, torch.Tensor] = {}

        def scaled(_module: torch.nn.Module, _args: tuple, output: torch.Tensor) -> torch.Tensor:
            return self._with_values(output, self._values(output) * scale[:, :, None])  # [1 + K, K, ...]

        def read(_module: torch.nn.Module, args: tuple, output: ModuleOutput) -> None:
            keep_output(outputs, ("out",))(_module, args, output)
            raise LayerRead

        handles = [
            self._value_module(layer).register_forward_hook(for_this_thread(scaled)),
            module.register_forward_hook(for_this_thread(read)),
        ]
        target = record.target_ids.expand(rows, -1)  # [1 + K, T]
        with installed(handles), torch.inference_mode():
            try:
                self.hf_model(input_ids=target, attention_mask=torch.ones_like(target), use_cache=False, return_dict=True)
            except LayerRead:
                pass
        return outputs[("out",)]


def measured_pass(network: DecoderNetwork) -> DecoderLibraryPass:
    """The pretrained decoder-only family's measured pass (its ``Capabilities.measured_pass``, declared for the layouts
    whose modules are known: model/pretrained/families.py)."""
    return DecoderLibraryPass(network)
