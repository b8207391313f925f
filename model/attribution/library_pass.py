"""The Hugging Face encoder-decoders' measured pass (T5, Marian, BART, mBART, M2M100/NLLB, Pegasus): the library's own
teacher-forced forward pass, with PyTorch hooks on its modules, split into what the contribution measures read
(model/attribution/transparent_pass.py says what a record holds).

Where each module sits is the layout's table (model/pretrained/layouts.py, ``LAYOUT_MODULES``); nothing here names a
model type. Per attention sublayer:

* the weights are the library's own ``output_attentions`` (the eager path's probabilities, the tensors it multiplies
  the values by, so gradients reach them);
* the transformed vectors are the value projection's output (``v``, ``v_proj``: its bias included, part of each
  token's value) split per head, through the head's slice of the output projection (``o``, ``out_proj``), whose bias is
  the record's ``bias``;
* the residual of self-attention is the stream the layer is given; that of cross-attention is the hidden-states input
  of the layout's ``cross_residual`` module (T5's ``layer.1``, a pre-norm layer's ``encoder_attn_layer_norm``, a
  post-norm layer's ``encoder_attn``);
* the norm is a post-norm layer's LayerNorm after the sum (Marian, BART); None where each sublayer reads its own norm
  of the stream (T5's RMS norm, mBART, M2M100, Pegasus).

Token embeddings are the output of each stack's ``embed_tokens`` (before the scale some layouts apply after it, and
before positions); replaced, they take that module's output (a module both stacks share is told which stack calls it by
a pre-hook on each stack). Value zeroing runs the library's stack again, batched, with the values of ``kind``'s
attention scaled, and stops once the layer's output is read (the layer alone cannot run without the stack: T5's
position bias is computed by its first layer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import torch
from torch.utils.hooks import RemovableHandle

from model.attribution.transparent_pass import SOURCE, TARGET, AttentionRecord, PassRecord
from model.kinds import AttentionKind
from model.nn.attention import split_heads, through_heads
from model.nn.hooks import for_this_thread
from model.pretrained.layouts import LAYOUT_MODULES, LayoutModules, ModuleOutput, hidden_input, hidden_of
from model.pretrained.networks import Seq2SeqNetwork
from model.pretrained.offload import tensor_of

ENCODER, DECODER, CROSS = AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS


class LayerRead(Exception):
    """Raised by a hook once the layer value zeroing reads has run: the rest of the stack is not needed."""


@contextmanager
def installed(handles: list[RemovableHandle]) -> Iterator[None]:
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def keep_input(acts: dict, key: tuple) -> Callable[..., None]:
    def keep(_module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        acts[key] = hidden_input(args, kwargs)

    return keep


def keep_output(acts: dict, key: tuple) -> Callable[..., None]:
    def keep(_module: torch.nn.Module, _args: tuple, output: ModuleOutput) -> None:
        acts[key] = hidden_of(output)

    return keep


def _grown(value: object, rows: int) -> object:
    """``value`` with a batch of one grown to ``rows`` (a tensor of 2 or more dimensions whose first is 1, or a tuple
    of them: the hidden states, masks, position embeddings and biases a layer is given); anything else as it is."""
    if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[0] == 1:
        return value.expand(rows, *value.shape[1:])
    if isinstance(value, tuple):
        return tuple(_grown(item, rows) for item in value)
    return value


def zeroed_output(
    layer: torch.nn.Module,
    values: torch.nn.Module,
    rows: int,
    scaled: Callable[[torch.Tensor], torch.Tensor],
    run: Callable[[], object],
) -> torch.Tensor:
    """``layer``'s output [rows, L, d_model] with ``values``' output passed through ``scaled`` (each row its own
    scale). ``run`` runs the library's stack on one sentence: everything below the layer is the same for every row, so
    what the layer is given is grown to ``rows`` as it enters (a batch of one broadcasts in every layout served), and
    the run stops once the layer's output is read (value zeroing's cost: the layer's rows, not the stack's)."""
    outputs: dict[tuple, torch.Tensor] = {}

    def grow(_module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return tuple(_grown(item, rows) for item in args), {name: _grown(item, rows) for name, item in kwargs.items()}

    def read(module: torch.nn.Module, args: tuple, output: ModuleOutput) -> None:
        keep_output(outputs, ("out",))(module, args, output)
        raise LayerRead

    handles = [
        layer.register_forward_pre_hook(for_this_thread(grow), with_kwargs=True),
        values.register_forward_hook(for_this_thread(lambda _module, _args, output: scaled(output))),
        layer.register_forward_hook(for_this_thread(read)),
    ]
    with installed(handles), torch.inference_mode():
        try:
            run()
        except LayerRead:
            pass
    return outputs[("out",)]


class LibraryPass:
    """One Hugging Face encoder-decoder's measured pass (see the module's docstring)."""

    def __init__(self, network: Seq2SeqNetwork) -> None:
        self.network = network
        self.hf_model = network.hf_model
        self.modules: LayoutModules = LAYOUT_MODULES[network.config.model_type]

    def _stack(self, side: str) -> torch.nn.Module:
        return self.hf_model.get_encoder() if side == SOURCE else self.hf_model.get_decoder()

    def _embedding(self, side: str) -> torch.nn.Module:
        return cast(torch.nn.Module, self._stack(side).embed_tokens)

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor:
        return self._embedding(side)(ids)  # [B, L, d_model]

    def _replacing(self, replacements: dict[str, torch.Tensor]) -> list[RemovableHandle]:
        """Hooks that put ``replacements`` (side -> [B, L, d_model]) in place of each stack's token embeddings."""
        if not replacements:
            return []
        calling = [SOURCE]  # the stack whose forward runs (both may call one shared embedding)

        def entering(side: str) -> Callable[..., None]:
            return lambda _module, _args, _kwargs: calling.__setitem__(0, side)

        def replace(_module: torch.nn.Module, _args: tuple, output: torch.Tensor) -> torch.Tensor:
            vectors = replacements.get(calling[0])
            return output if vectors is None else vectors  # [B, L, d_model]

        handles = [
            self._stack(side).register_forward_pre_hook(for_this_thread(entering(side)), with_kwargs=True)
            for side in (SOURCE, TARGET)
        ]
        embeddings = {id(module): module for module in (self._embedding(SOURCE), self._embedding(TARGET))}
        return handles + [module.register_forward_hook(for_this_thread(replace)) for module in embeddings.values()]

    def _capturing(self, acts: dict) -> list[RemovableHandle]:
        """Hooks that keep each layer's input, each attention's values and each cross-attention's residual."""
        handles = []
        for kind in (ENCODER, DECODER, CROSS):
            for index, layer in enumerate(self.network.layers(kind)):
                value = layer.get_submodule(self.modules.values[kind])
                handles.append(value.register_forward_hook(for_this_thread(keep_output(acts, ("v", kind, index)))))
                if kind is CROSS:
                    entry = layer.get_submodule(self.modules.cross_residual)
                    handles.append(
                        entry.register_forward_pre_hook(for_this_thread(keep_input(acts, ("resid", kind, index))), with_kwargs=True)
                    )
                else:
                    keep = for_this_thread(keep_input(acts, ("resid", kind, index)))
                    handles.append(layer.register_forward_pre_hook(keep, with_kwargs=True))
        return handles

    def _record(self, kind: AttentionKind, layer: int, weights: torch.Tensor, acts: dict) -> AttentionRecord:
        """One sublayer's record from the library's weights [B, H, Q, K] and what the hooks kept."""
        projection = self.network.head_projection(kind, layer)  # [d_model, H * d_k]
        values = split_heads(acts[("v", kind, layer)], self.network.head_count(kind))  # [B, H, K, d_k]
        transformed = through_heads(values, cast(torch.Tensor, tensor_of(projection, "weight")))  # [B, H, K, d_model]
        norm_name = self.modules.post_norms.get(kind)
        norm = None if norm_name is None else self.network.layers(kind)[layer].get_submodule(norm_name)
        return AttentionRecord(weights, transformed, acts[("resid", kind, layer)], cast(Any, norm), tensor_of(projection, "bias"))

    def run(
        self,
        source_ids: torch.Tensor,  # [B, S]
        target_ids: torch.Tensor,  # [B, T]
        replacements: dict[str, torch.Tensor],
        logits_at: torch.Tensor | None,
        record_sublayers: bool,
    ) -> PassRecord:
        acts: dict[tuple, torch.Tensor] = {}
        handles = self._replacing(replacements) + (self._capturing(acts) if record_sublayers else [])
        with installed(handles):
            out = self.hf_model(
                input_ids=source_ids,
                attention_mask=torch.ones_like(source_ids),  # unpadded sentences (stand-in ids are no padding either)
                decoder_input_ids=target_ids,
                output_attentions=record_sublayers,
                use_cache=False,
                return_dict=True,
            )
        logits = out.logits  # [B, T, V]
        if logits_at is not None:
            logits = logits[torch.arange(logits.shape[0], device=logits.device), logits_at]  # [B, V]
        record = PassRecord(
            source_ids, target_ids, memory=out.encoder_last_hidden_state, hidden=logits, read_out=self.network.logits
        )
        if record_sublayers:
            found = {ENCODER: out.encoder_attentions, DECODER: out.decoder_attentions, CROSS: out.cross_attentions}
            for kind, weights in found.items():
                record.attentions(kind)[:] = [self._record(kind, layer, w, acts) for layer, w in enumerate(weights)]
            record.encoder_inputs = [acts[("resid", ENCODER, layer)] for layer in range(len(record.encoder))]
            record.decoder_inputs = [acts[("resid", DECODER, layer)] for layer in range(len(record.decoder))]
        return record

    def zeroed_layer(self, record: PassRecord, kind: AttentionKind, layer: int, scale: torch.Tensor) -> torch.Tensor:
        """The layer's output [1 + K, L, d_model], once per row of ``scale`` [1 + K, K]: the library's stack again on the
        sentence, its rows grown as they enter the layer (``zeroed_output``)."""
        module = self.network.layers(kind)[layer]
        source, target, memory = record.source_ids, record.target_ids, record.memory  # [1, S], [1, T], [1, S, d_model]

        def run() -> object:
            if kind is ENCODER:
                return self.hf_model.get_encoder()(input_ids=source, attention_mask=torch.ones_like(source), return_dict=True)
            return self.hf_model(
                encoder_outputs=(memory,),
                attention_mask=torch.ones_like(source),
                decoder_input_ids=target,
                use_cache=False,
                return_dict=True,
            )

        value = module.get_submodule(self.modules.values[kind])
        return zeroed_output(module, value, scale.shape[0], lambda values: values * scale[:, :, None], run)


def measured_pass(network: Seq2SeqNetwork) -> LibraryPass:
    """The pretrained encoder-decoder family's measured pass (its ``Capabilities.measured_pass``, declared for the
    layouts whose modules are known: model/pretrained/families.py)."""
    return LibraryPass(network)
