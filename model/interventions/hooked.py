"""The app's Transformer as a teacher-forced forward pass with named hook points, to read and patch activations.

``run_hooked`` is the model's own teacher-forced pass (its weights, its post- or pre-norm placement, its padding
masks; no dropout) written out as functions, with a hook at each point an intervention reads or replaces, as
TransformerLens names them. With B sentences, S source and T target pieces, for encoder layer l (from 0):

* ``encoder.{l}.resid_pre`` [B, S, d_model]: the residual stream entering the layer (layer 0: the embeddings);
* ``encoder.{l}.self.head_out`` [B, H, S, d_model]: each head's output through its slice of W^O (the heads summed
  are the sublayer's output);
* ``encoder.{l}.self.out`` [B, S, d_model]: the self-attention sublayer's output, before its residual add;
* ``encoder.{l}.self.resid`` [B, S, d_model]: the residual stream after that sublayer (post-norm: normalised);
* ``encoder.{l}.mlp_out`` [B, S, d_model]: the feed-forward sublayer's output, before its residual add;
* ``encoder.{l}.resid_post`` [B, S, d_model]: the layer's output;
* ``encoder.memory`` [B, S, d_model]: what cross-attention reads (the last layer's output through the encoder's
  final norm: a LayerNorm in a pre-norm model, nothing in a post-norm one).

Decoder layer l has the same points over T with ``decoder.{l}.self.*`` (masked self-attention), ``decoder.{l}.cross.*``
(cross-attention) and ``decoder.{l}.mlp_out``. A ``Patch`` replaces a hook's activation (all of it, or some rows,
heads and positions, or where a boolean mask says) before later computation reads it; a hook that captures keeps
the activation after its patches. A replacement ``memory`` skips the encoder (DecoderLens reads an earlier layer).
Many patched runs go in one batch: each row may patch something else (``Patch.mask``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from model.attribution.passes import embed_tokens, queries_keys_values
from model.decoding.greedy import default_max_target, greedy_decode
from model.errors import UserError
from model.family import Bundle, family_of
from model.nn.transformer import MultiHeadAttention, Transformer, attention_weights

SUBLAYER_NAMES = ("self", "cross", "mlp")  # a decoder layer's sublayers, in order (an encoder layer has no cross)


class InterventionError(UserError):
    """A model, sentence, step or hook that an intervention cannot use; the message says why."""


def check_tool(model: Any, tool: str) -> None:
    """An InterventionError (one line) when ``model``'s family cannot be patched or its hooked pass does not serve
    ``tool`` (one of model.family.INTERVENTION_TOOLS)."""
    family = family_of(model)
    if not family.capabilities.interventions:
        raise InterventionError(
            f"interventions are computed for the app's encoder-decoder Transformer, not for this model ({family.title})"
        )
    served = family.capabilities.intervention_tools
    if tool not in served:
        raise InterventionError(
            f"the {tool} is not computed for this model ({family.title}): its hooked pass serves the {' and the '.join(served)}"
        )


def check_supported(model: Any, tool: str | None = None) -> Transformer:
    """``model`` as the app's Transformer, or an InterventionError when its family cannot be patched, does not serve
    ``tool`` (when given), or is not the app's Transformer (whose own hooked pass this module is)."""
    if tool is not None:
        check_tool(model, tool)
    if not family_of(model).capabilities.interventions or not isinstance(model, Transformer):
        raise InterventionError(
            f"interventions are computed for the app's encoder-decoder Transformer, not for this model ({family_of(model).title})"
        )
    return model


def ids_as_text(ids: list[int]) -> list[str]:
    """Labels for pieces without a tokenizer: their ids."""
    return [str(piece_id) for piece_id in ids]


def greedy_output(model: Any, source: torch.Tensor) -> list[int]:
    """source [1, S] -> its greedy translation's ids, with the EOS when decoding ended on one (the tokens a Stepper
    produces by default)."""
    output = greedy_decode(model, source)[0]
    limit = default_max_target(source.shape[1], model.config.max_len) - 1
    return output + [model.config.eos_id] if len(output) < limit else output


def translated(bundle: Bundle, text: str, tool: str) -> tuple[list[int], list[int]]:
    """(the source ids ``bundle`` reads from ``text``, their greedy translation's ids, EOS included when reached), once
    ``tool`` is known to be served (``check_tool``)."""
    check_tool(bundle.model, tool)
    source_ids = bundle.source_ids(text)[0]
    source = torch.tensor([source_ids], device=next(bundle.model.parameters()).device)  # [1, S]
    return source_ids, greedy_output(bundle.model, source)


@dataclass(frozen=True)
class Patch:
    """Replace the activation at hook ``name`` with ``value`` (broadcast to the activation's shape) where selected.

    With no selection the whole activation is replaced. ``rows`` (batch rows), ``heads`` (a ``head_out`` hook's axis 1)
    and ``positions`` (the sequence axis, second to last) select what is replaced, and ``mask`` (boolean,
    broadcastable to the activation, True = replaced) selects as well; the selections are combined with "and"."""

    name: str
    value: torch.Tensor
    rows: tuple[int, ...] | None = None
    heads: tuple[int, ...] | None = None
    positions: tuple[int, ...] | None = None
    mask: torch.Tensor | None = None

    def selection(self, activation: torch.Tensor) -> torch.Tensor | None:
        """The boolean mask of what is replaced, broadcastable to ``activation``; None for all of it."""
        shape = activation.shape
        if self.heads is not None and len(shape) != 4:
            raise InterventionError(f"{self.name}: only a head_out hook has heads to choose")
        selected = self.mask
        for axis, chosen in ((0, self.rows), (1, self.heads), (len(shape) - 2, self.positions)):
            if chosen is None:
                continue
            axis_mask = torch.zeros(shape[axis], dtype=torch.bool, device=activation.device)  # [n]
            axis_mask[list(chosen)] = True
            axis_mask = axis_mask.view([-1 if dim == axis else 1 for dim in range(len(shape))])
            selected = axis_mask if selected is None else selected & axis_mask
        return selected

    def apply(self, activation: torch.Tensor) -> torch.Tensor:
        value = self.value.to(activation.dtype).expand_as(activation)  # [activation's shape]
        selected = self.selection(activation)
        return value if selected is None else torch.where(selected, value, activation)


@dataclass
class Hooks:
    """What one pass captures (hook names) and patches; the captured activations land in ``activations``."""

    capture: Iterable[str] = ()
    patches: Sequence[Patch] = ()
    gradient_roots: Iterable[str] = ()  # detached there and made to require grad: gradients reach every later point
    activations: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.capture = frozenset(self.capture)
        self.gradient_roots = frozenset(self.gradient_roots)
        self._patches: dict[str, list[Patch]] = {}
        for patch in self.patches:
            self._patches.setdefault(patch.name, []).append(patch)

    def __call__(self, name: str, activation: torch.Tensor) -> torch.Tensor:
        for patch in self._patches.get(name, ()):
            activation = patch.apply(activation)
        if name in self.gradient_roots:
            activation = activation.detach().requires_grad_()
        if name in self.capture:
            self.activations[name] = activation
        return activation

    @property
    def names(self) -> frozenset[str]:
        """Every hook point this pass captures, patches or starts gradients at."""
        return frozenset(self.capture) | frozenset(self._patches) | frozenset(self.gradient_roots)

    def check(self, names: Sequence[str]) -> None:
        """Refuse hook names the pass does not have (``names``: the ones it has), naming the first."""
        unknown = sorted(self.names - set(names))
        if unknown:
            raise InterventionError(f"this model has no hook point {unknown[0]!r} (see hook_names)")


def hook_names(model: Any) -> list[str]:
    """Every hook point of ``model``'s pass (an encoder-decoder with ``config.n_encoder_layers`` and
    ``n_decoder_layers``: the app's Transformer or a hooked library model), in the order the pass reaches them."""
    names = []
    for side, n_layers, attentions in (
        ("encoder", model.config.n_encoder_layers, ("self",)),
        ("decoder", model.config.n_decoder_layers, ("self", "cross")),
    ):
        for layer in range(n_layers):
            names.append(f"{side}.{layer}.resid_pre")
            for attention in attentions:
                names += [f"{side}.{layer}.{attention}.{point}" for point in ("head_out", "out", "resid")]
            names += [f"{side}.{layer}.mlp_out", f"{side}.{layer}.resid_post"]
        if side == "encoder":
            names.append("encoder.memory")
    return names


def layer_norm(norm: Any, x: torch.Tensor) -> torch.Tensor:
    """A LayerNorm module's function of x [..., d_model]."""
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def head_outputs(module: MultiHeadAttention, context: torch.Tensor) -> torch.Tensor:
    """Each head's context [B, H, Q, d_k] through its slice of W^O -> [B, H, Q, d_model]."""
    out = module.out_projection.weight.view(-1, module.n_heads, module.d_k)  # [d_model, H, d_k]
    return torch.einsum("bhqd,mhd->bhqm", context, out)  # [B, H, Q, d_model]


def _attention(
    module: MultiHeadAttention,
    h: torch.Tensor,  # [B, Q, d_model] what the sublayer reads
    hooks: Hooks,
    prefix: str,
    mask: torch.Tensor | None,
    memory: torch.Tensor | None = None,  # [B, K, d_model] cross-attention's keys and values
    causal: bool = False,  # query i sees keys 0..i (the decoder's self-attention)
) -> torch.Tensor:
    """One attention sublayer's output [B, Q, d_model], through its hooks."""
    q, k, v = queries_keys_values(module, h, memory)  # [B, H, Q, d_k], 2 x [B, H, K, d_k]
    weights = attention_weights(q, k, mask, is_causal=causal and q.shape[-2] > 1)  # [B, H, Q, K]
    per_head = hooks(f"{prefix}.head_out", head_outputs(module, weights @ v))  # [B, H, Q, d_model]
    return hooks(f"{prefix}.out", per_head.sum(1))  # [B, Q, d_model]


def _feed_forward(layer: Any, h: torch.Tensor) -> torch.Tensor:
    """The position-wise sublayer's output [B, L, d_model] (no dropout)."""
    ffn = layer.feed_forward
    hidden = F.relu(F.linear(h, ffn.expand.weight, ffn.expand.bias))  # [B, L, d_ff]
    return F.linear(hidden, ffn.contract.weight, ffn.contract.bias)  # [B, L, d_model]


def _sublayer(layer: Any, index: int, x: torch.Tensor, compute) -> torch.Tensor:
    """x [B, L, d_model] -> x + compute(x) with the layer's norm ``index`` before (pre-norm) or after (post-norm)."""
    norm = layer.norms[index]
    if layer.pre_norm:
        return x + compute(layer_norm(norm, x))
    return layer_norm(norm, x + compute(x))


def _encoder_layer(layer: Any, prefix: str, x: torch.Tensor, mask: torch.Tensor | None, hooks: Hooks) -> torch.Tensor:
    """One encoder layer over x [B, S, d_model], through its hooks."""
    x = hooks(f"{prefix}.resid_pre", x)
    attended = _sublayer(layer, 0, x, lambda h: _attention(layer.self_attention, h, hooks, f"{prefix}.self", mask))
    x = hooks(f"{prefix}.self.resid", attended)  # [B, S, d_model]
    return hooks(f"{prefix}.resid_post", _sublayer(layer, 1, x, lambda h: hooks(f"{prefix}.mlp_out", _feed_forward(layer, h))))


def _decoder_layer(
    layer: Any, prefix: str, y: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor | None, hooks: Hooks
) -> torch.Tensor:
    """One decoder layer over y [B, T, d_model] against memory [B, S, d_model], through its hooks."""
    y = hooks(f"{prefix}.resid_pre", y)
    attended = _sublayer(layer, 0, y, lambda h: _attention(layer.self_attention, h, hooks, f"{prefix}.self", None, causal=True))
    y = hooks(f"{prefix}.self.resid", attended)  # [B, T, d_model]
    read = _sublayer(layer, 1, y, lambda h: _attention(layer.cross_attention, h, hooks, f"{prefix}.cross", memory_mask, memory))
    y = hooks(f"{prefix}.cross.resid", read)  # [B, T, d_model]
    return hooks(f"{prefix}.resid_post", _sublayer(layer, 2, y, lambda h: hooks(f"{prefix}.mlp_out", _feed_forward(layer, h))))


def hooked_encode(model: Any, source_ids: torch.Tensor, hooks: Hooks) -> tuple[torch.Tensor, torch.Tensor | None]:
    """source_ids [B, S] -> (memory [B, S, d_model], padding mask [B, 1, 1, S] or None), through ``hooks``: the app's
    Transformer's encoder, or the encoder-only classifier's (which names its parts as the Transformer does)."""
    mask = model.padding_mask(source_ids)
    x = embed_tokens(model, source_ids, "source") + model.positional_table[: source_ids.shape[1]]  # [B, S, d_model]
    for index, layer in enumerate(model.encoder_layers):
        x = _encoder_layer(layer, f"encoder.{index}", x, mask, hooks)
    return hooks("encoder.memory", model.encoder_norm(x)), mask


def hooked_decode(
    model: Transformer, target_input_ids: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor | None, hooks: Hooks
) -> torch.Tensor:
    """Teacher-forced decoder pass over target_input_ids [B, T] against memory [B, S, d_model] -> hidden [B, T, d_model]
    (after the decoder's final norm). Padded target keys only follow the real ones, so the causal mask alone hides them
    from every real query (as the model's own forward pass)."""
    y = embed_tokens(model, target_input_ids, "target") + model.positional_table[: target_input_ids.shape[1]]  # [B, T, d_model]
    for index, layer in enumerate(model.decoder_stack):
        y = _decoder_layer(layer, f"decoder.{index}", y, memory, memory_mask, hooks)
    return model.decoder_norm(y)


@dataclass
class HookedRun:
    """One hooked pass: the final hidden states and what its hooks captured."""

    hidden: torch.Tensor  # [B, T, d_model] after the decoder's final norm
    activations: dict[str, torch.Tensor]  # hook name -> activation (after its patches)
    memory: torch.Tensor  # [B, S, d_model]
    memory_mask: torch.Tensor | None  # [B, 1, 1, S] or None

    def logits(self, model: Transformer, position: int | None = None) -> torch.Tensor:
        """[B, T, V], or [B, V] at one target ``position``."""
        hidden = self.hidden if position is None else self.hidden[:, position]  # [B, (T,) d_model]
        return model.logits(hidden)


def run_hooked(
    model: Transformer,
    source_ids: torch.Tensor,  # [B, S], padded with the model's pad id
    target_input_ids: torch.Tensor,  # [B, T]: BOS, then the target so far
    capture: Iterable[str] = (),
    patches: Sequence[Patch] = (),
    memory: torch.Tensor | None = None,  # [B, S, d_model]: read instead of the encoder's (the encoder is skipped)
    gradient_roots: Iterable[str] = (),  # hook points that start the autograd graph (the weights may be frozen)
) -> HookedRun:
    """The teacher-forced pass with ``capture``d and ``patches``d hook points (see the module's docstring). For
    gradients with respect to activations, run it under ``torch.enable_grad()`` with the first layers' ``resid_pre``
    as ``gradient_roots``."""
    longest = max(source_ids.shape[1], target_input_ids.shape[1])
    if longest > model.config.max_len:
        raise InterventionError(f"a sequence of {longest} pieces exceeds this model's {model.config.max_len} positions")
    hooks = Hooks(capture, patches, gradient_roots)
    hooks.check(hook_names(model))
    if memory is None:
        memory, memory_mask = hooked_encode(model, source_ids, hooks)
    else:
        memory, memory_mask = hooks("encoder.memory", memory), model.padding_mask(source_ids)
    hidden = hooked_decode(model, target_input_ids, memory, memory_mask, hooks)
    return HookedRun(hidden, hooks.activations, memory, memory_mask)
