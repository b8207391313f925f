"""Hugging Face T5, Marian and BART through the interventions' hook points, on the library's own forward pass.

The model runs as the library runs it (``model(input_ids, attention_mask, decoder_input_ids)``: its relative position
bias, norms, scaled embeddings and head); PyTorch hooks on its modules read and replace the activations the app's
Transformer names (model/interventions/hooked.py), with the same names and shapes:

* ``{side}.{l}.resid_pre``: the hidden states a layer is given (a forward pre-hook on the layer);
* ``{side}.{l}.{self|cross}.head_out`` [B, H, L, d_model]: the attention's output projection (T5's ``o``, Marian's
  and BART's ``out_proj``) read per head, each head's slice of its input through its slice of the weight; patched,
  the projection returns the heads' sum (plus its bias), so a patched head changes what follows; only read, it
  returns its own output, with the gradient passing through the heads read (for attribution patching);
* ``{side}.{l}.{self|cross}.out``: the projection's output, the sublayer's before its residual add;
* ``{side}.{l}.{self|cross}.resid``: the stream after that sublayer (T5: its ``T5Layer…Attention``'s output, pre-norm;
  Marian and BART, post-norm: the sublayer's LayerNorm's output);
* ``{side}.{l}.mlp_out``: the feed-forward block's output before its residual add (T5's ``DenseReluDense``, ``fc2``);
* ``{side}.{l}.resid_post``: the layer's output; ``encoder.memory``: the encoder's (T5: after its final norm).

A hook is installed only for a name the pass captures, patches or starts gradients at, and removed after the pass:
with none, the library's forward pass runs untouched. The run's ``hidden`` holds the model's logits [B, T, V], which
the network's ``logits`` passes on, as its ``decode_step`` does (model/pretrained/families.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from model.interventions.hooked import HookedRun, Hooks, InterventionError, Patch, hook_names

LAYOUTS = {"t5": "t5", "marian": "post-norm", "bart": "post-norm"}  # model type -> how its modules are laid out
INPUT, OUTPUT, HEADS = "input", "output", "heads"  # what a site reads: a module's hidden-states input, output, heads


@dataclass(frozen=True)
class Site:
    """Where a hook point sits: a module, and what of it the hook reads (INPUT, OUTPUT or HEADS)."""

    module: torch.nn.Module
    reads: str
    n_heads: int = 0  # an output projection's heads (HEADS)


def layout(network: Any) -> str:
    """The module layout of a pretrained encoder-decoder ("t5" or "post-norm"); an InterventionError for others."""
    model_type = network.config.model_type
    if model_type not in LAYOUTS:
        raise InterventionError(
            f"the logit lens and patching hook T5, Marian and BART among pretrained models, not this {model_type} model"
        )
    return LAYOUTS[model_type]


def _attention_sites(prefix: str, projection: torch.nn.Module, resid: torch.nn.Module, n_heads: int) -> dict[str, Site]:
    return {
        f"{prefix}.head_out": Site(projection, HEADS, n_heads),
        f"{prefix}.out": Site(projection, OUTPUT),
        f"{prefix}.resid": Site(resid, OUTPUT),
    }


def _t5_layer(block: Any, prefix: str, attentions: tuple[str, ...], n_heads: int) -> dict[str, Site]:
    """A T5Block's sites: layer[0] self-attention, layer[1] cross-attention (decoder), layer[-1] feed-forward."""
    sites = {f"{prefix}.resid_pre": Site(block, INPUT)}
    for index, attention in enumerate(attentions):
        sublayer = block.layer[index]
        projection = (sublayer.SelfAttention if attention == "self" else sublayer.EncDecAttention).o
        sites |= _attention_sites(f"{prefix}.{attention}", projection, sublayer, n_heads)
    sites[f"{prefix}.mlp_out"] = Site(block.layer[-1].DenseReluDense, OUTPUT)
    sites[f"{prefix}.resid_post"] = Site(block, OUTPUT)
    return sites


def _post_norm_layer(layer: Any, prefix: str, attentions: tuple[str, ...], n_heads: int) -> dict[str, Site]:
    """A Marian or BART layer's sites: each attention's out_proj and the LayerNorm after its residual add, fc2."""
    sites = {f"{prefix}.resid_pre": Site(layer, INPUT)}
    for attention in attentions:
        own = attention == "self"
        module, norm = (layer.self_attn, layer.self_attn_layer_norm) if own else (layer.encoder_attn, layer.encoder_attn_layer_norm)
        sites |= _attention_sites(f"{prefix}.{attention}", module.out_proj, norm, n_heads)
    sites[f"{prefix}.mlp_out"] = Site(layer.fc2, OUTPUT)
    sites[f"{prefix}.resid_post"] = Site(layer, OUTPUT)
    return sites


def hook_sites(network: Any) -> dict[str, Site]:
    """Every hook point of a pretrained T5, Marian or BART network (``hook_names``) -> its site."""
    hf_model, config = network.hf_model, network.config
    encoder, decoder = hf_model.get_encoder(), hf_model.get_decoder()
    t5 = layout(network) == "t5"
    layer_sites: Callable[..., dict[str, Site]] = _t5_layer if t5 else _post_norm_layer
    sites: dict[str, Site] = {}
    for side, stack, attentions, n_heads in (
        ("encoder", encoder, ("self",), config.n_encoder_heads),
        ("decoder", decoder, ("self", "cross"), config.n_heads),
    ):
        for index, layer in enumerate(stack.block if t5 else stack.layers):
            sites |= layer_sites(layer, f"{side}.{index}", attentions, n_heads)
    sites["encoder.memory"] = Site(encoder, OUTPUT)
    return sites


def _hidden(output: Any) -> torch.Tensor:
    """The hidden states a module returned: the tensor, a tuple's first item or a ModelOutput's last_hidden_state."""
    if isinstance(output, torch.Tensor):
        return output
    return output["last_hidden_state"] if isinstance(output, dict) else output[0]


def _with_hidden(output: Any, hidden: torch.Tensor) -> Any:
    """``output`` with its hidden states replaced (the shape the module returned kept)."""
    if isinstance(output, torch.Tensor):
        return hidden
    if isinstance(output, dict):  # a ModelOutput: setting the key sets the attribute as well
        output["last_hidden_state"] = hidden
        return output
    return (hidden, *output[1:])


def projection_heads(projection: torch.nn.Linear, context: torch.Tensor, n_heads: int) -> torch.Tensor:
    """An output projection's input [B, L, H * d_k] (the heads' contexts side by side) -> each head's output through
    its slice of the weight [B, H, L, d_model] (the bias is no head's)."""
    weight = projection.weight  # [d_model, H * d_k]
    per_head = context.view(*context.shape[:-1], n_heads, -1)  # [B, L, H, d_k]
    return torch.einsum("blhd,mhd->bhlm", per_head, weight.view(weight.shape[0], n_heads, -1))  # [B, H, L, d_model]


def _install(site: Site, name: str, hooks: Hooks) -> RemovableHandle:
    """One PyTorch hook on the site's module that passes the activation through ``hooks`` under ``name``."""
    if site.reads == INPUT:

        def read_input(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            if args:
                return (hooks(name, args[0]), *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": hooks(name, kwargs["hidden_states"])}

        return site.module.register_forward_pre_hook(read_input, with_kwargs=True)
    if site.reads == HEADS:

        def read_heads(module: Any, args: tuple, output: torch.Tensor) -> torch.Tensor:
            computed = projection_heads(module, args[0], site.n_heads)  # [B, H, L, d_model]
            heads = hooks(name, computed)
            if heads is computed:  # read only: the library's output, its gradient through the heads read
                summed = computed.sum(1)  # [B, L, d_model]
                return output.detach() + (summed - summed.detach())
            return heads.sum(1) if module.bias is None else heads.sum(1) + module.bias

        return site.module.register_forward_hook(read_heads)

    def read_output(module: Any, args: tuple, output: Any) -> Any:
        return _with_hidden(output, hooks(name, _hidden(output)))

    return site.module.register_forward_hook(read_output)


def run_library_hooked(
    network: Any,  # a model.pretrained.families.Seq2SeqNetwork of a T5, Marian or BART model
    source_ids: torch.Tensor,  # [B, S], padded with the model's pad id
    target_input_ids: torch.Tensor,  # [B, T]: the decoder start token, then the target so far
    capture: Iterable[str] = (),
    patches: Sequence[Patch] = (),
    memory: torch.Tensor | None = None,  # [B, S, d_model]: read instead of the encoder's (the encoder is skipped)
    gradient_roots: Iterable[str] = (),
) -> HookedRun:
    """The library's teacher-forced pass with ``capture``d and ``patches``d hook points (see the module's docstring)."""
    config = network.config
    longest = max(source_ids.shape[1], target_input_ids.shape[1])
    if longest > config.max_len:
        raise InterventionError(f"a sequence of {longest} pieces exceeds this model's {config.max_len} positions")
    sites = hook_sites(network)
    hooks = Hooks(capture, patches, gradient_roots)
    names = hook_names(network)
    hooks.check(names)
    skipped = {"encoder.memory"} if memory is not None else set()
    handles = [_install(sites[name], name, hooks) for name in names if name in hooks.names and name not in skipped]
    mask = source_ids.ne(config.pad_id).long()  # [B, S]
    inputs: dict[str, Any] = {"input_ids": source_ids}
    if memory is not None:  # the encoder skipped: the decoder reads ``memory``
        inputs = {"encoder_outputs": (hooks("encoder.memory", memory),)}
    try:
        out = network.hf_model(**inputs, attention_mask=mask, decoder_input_ids=target_input_ids, use_cache=False, return_dict=True)
    finally:
        for handle in handles:
            handle.remove()
    return HookedRun(out.logits, hooks.activations, out.encoder_last_hidden_state, mask)


def lens_logits(network: Any, streams: torch.Tensor) -> torch.Tensor:
    """Decoder residual streams [..., d_model] read as the model reads its last layer's output -> logits [..., V]:
    T5 through the decoder's final norm, the ``d_model ** -0.5`` rescale of a tied head and ``lm_head``; Marian and
    BART (post-norm, no final norm) through ``lm_head`` and ``final_logits_bias``."""
    hf_model = network.hf_model
    if layout(network) == "t5":
        hidden = hf_model.get_decoder().final_layer_norm(streams)
        if hf_model.config.tie_word_embeddings:
            hidden = hidden * network.config.d_model**-0.5
        return hf_model.lm_head(hidden)
    return hf_model.lm_head(streams) + hf_model.final_logits_bias


def has_final_norm(network: Any) -> bool:
    """Whether the lens readings pass a final norm of the model's own (T5's, pre-norm)."""
    return layout(network) == "t5"
