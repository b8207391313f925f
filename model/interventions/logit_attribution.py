"""Direct logit attribution: a decoded token's logit split over what wrote into the decoder's residual stream.

At each step (teacher-forced along the decoded tokens) the decoder's output is a sum of parts: the target token's
embedding (E[id]·√d_model), its position, each self-attention and cross-attention head's output (through its slice of
W^O: what the source contributes arrives through the cross-attention heads), and each feed-forward block's output
(its biases included). The logit is linear in that output, so each part's share is part · W_U[token] (minus
W_U[other] for a logit difference); an untied output layer's bias is a part of its own.

Layer norms are made linear by holding each one's scale at its value in this run (as ALTI does, model/attribution/
alti.py): LN(z) = γ ⊙ (z − mean z) / σ + β with σ fixed maps every part p to γ ⊙ (p − mean p) / σ, and β is a part
of its own. A pre-norm model's stream meets one such norm, the decoder's final one ("final norm bias"); a post-norm
model's meets every sublayer's norm, each rescaling all the parts before it ("L1 norm biases": a layer's three β,
carried through the norms after them). With every scale held at the run's own value the parts sum to the logit;
``remainder`` (the logit minus the parts) is reported all the same, and is rounding (about 1e-6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from model.family import Bundle, InterventionTool
from model.interventions.hooked import check_supported, ids_as_text, run_hooked, translated
from model.interventions.served_pass import has_final_norm
from model.network import Network
from model.nn.transformer import Transformer

PART_KINDS = ("embedding", "self-attention head", "cross-attention head", "feed-forward", "bias")


@dataclass
class LogitAttribution:
    """Parts × steps of the decoded tokens' logits (or logit differences)."""

    parts: list[str]  # [P] "token embedding", "positions", "L1 self H1", …, "L1 cross H1", …, "L1 feed-forward", …
    part_kinds: list[str]  # [P] one of PART_KINDS each
    values: np.ndarray  # [T, P] each part's share of the logit at each step
    logits: np.ndarray  # [T] the logit (difference) decomposed, as the model computes it
    remainder: np.ndarray  # [T] logits − the parts' sum (rounding; see the module's docstring)
    chosen_ids: np.ndarray  # [T]
    compared_ids: np.ndarray  # [T] the token subtracted at each step; -1 where none
    decoder_input_tokens: list[str]  # [T]
    target_tokens: list[str]  # [T]
    compared_tokens: list[str] = field(default_factory=list)  # [T] the pieces of compared_ids; "" where none


class _Parts:
    """The decoder stream as named parts [P, T, d_model], through the norms that hold their scale."""

    def __init__(self, model: Transformer, inputs: torch.Tensor):
        length = inputs.shape[1]
        token = model.target_embedding(inputs[0]) * math.sqrt(model.config.d_model)  # [T, d_model]
        self.tensor = torch.stack([token, model.positional_table[:length].to(token.dtype)])  # [2, T, d_model]
        self.names, self.kinds = ["token embedding", "positions"], ["embedding", "embedding"]
        self.bias_part: dict[str, int] = {}  # a norm-bias part's name -> its index

    def add(self, parts: torch.Tensor, names: list[str], kind: str) -> None:
        """Append parts [N, T, d_model]."""
        self.tensor = torch.cat([self.tensor, parts])
        self.names += names
        self.kinds += [kind] * len(names)

    def normalise(self, norm: torch.nn.LayerNorm, bias_name: str) -> None:
        """Through a LayerNorm with its scale held at the stream's own: every part rescaled, β added to ``bias_name``."""
        summed = self.tensor.sum(0)  # [T, d_model]
        scale = torch.sqrt(summed.var(-1, unbiased=False) + norm.eps)[None, :, None]  # [1, T, 1]
        self.tensor = norm.weight * (self.tensor - self.tensor.mean(-1, keepdim=True)) / scale  # [P, T, d_model]
        bias = norm.bias.expand_as(summed)[None]  # [1, T, d_model]
        if bias_name in self.bias_part:
            self.tensor[self.bias_part[bias_name]] += bias[0]
        else:
            self.bias_part[bias_name] = len(self.names)
            self.add(bias, [bias_name], "bias")


def _decompose(model: Transformer, inputs: torch.Tensor, activations: dict[str, torch.Tensor]) -> _Parts:
    """The stream after the decoder's final norm, as parts."""
    parts = _Parts(model, inputs)
    heads = range(model.config.n_heads)
    for index, layer in enumerate(model.decoder_stack):
        name = f"L{index + 1}"
        for sublayer, attention in enumerate(("self", "cross")):
            head_out = activations[f"decoder.{index}.{attention}.head_out"][0]  # [H, T, d_model]
            parts.add(head_out, [f"{name} {attention} H{head + 1}" for head in heads], f"{attention}-attention head")
            if not layer.pre_norm:
                parts.normalise(cast(torch.nn.LayerNorm, layer.norms[sublayer]), f"{name} norm biases")
        parts.add(activations[f"decoder.{index}.mlp_out"], [f"{name} feed-forward"], "feed-forward")  # [1, T, d_model]
        if not layer.pre_norm:
            parts.normalise(cast(torch.nn.LayerNorm, layer.norms[2]), f"{name} norm biases")
    if has_final_norm(model):  # a pre-norm model's LayerNorm (a post-norm model's is the identity)
        parts.normalise(cast(torch.nn.LayerNorm, model.decoder_norm), "final norm bias")
    return parts


def _unembedding(model: Transformer) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The output projection's (weight [V, d_model], bias [V] or None), as ``model.logits`` applies them."""
    if model.output_projection is None:
        return model.target_embedding.weight, None
    return model.output_projection.weight, model.output_projection.bias


@torch.inference_mode()
def logit_attribution(
    model: Network,
    source_ids: list[int],  # the source pieces, EOS last
    chosen_ids: list[int],  # the decoded tokens: step t produced chosen_ids[t]
    compared_ids: list[int] | None = None,  # per step, a token whose logit is subtracted (-1: none)
    target_pieces: Callable[[list[int]], list[str]] = ids_as_text,
) -> LogitAttribution:
    """Each step's logit of its chosen token (minus a compared one's) split into parts (see the module's docstring)."""
    network = check_supported(model, InterventionTool.LOGIT_ATTRIBUTION)
    device = next(network.parameters()).device
    inputs = torch.tensor([[network.config.bos_id] + list(chosen_ids[:-1])], device=device)  # [1, T]
    points = ("self.head_out", "cross.head_out", "mlp_out")
    capture = [f"decoder.{layer}.{point}" for layer in range(network.config.n_decoder_layers) for point in points]
    run = run_hooked(network, torch.tensor([source_ids], device=device), inputs, capture=capture)
    parts = _decompose(network, inputs, run.activations)
    chosen = torch.tensor(list(chosen_ids), device=device)  # [T]
    compared = torch.tensor(list(compared_ids) if compared_ids is not None else [-1] * len(chosen_ids), device=device)  # [T]
    weight, bias = _unembedding(network)
    direction = weight[chosen] - torch.where(compared[:, None] >= 0, weight[compared.clamp(min=0)], 0.0)  # [T, d_model]
    values = torch.einsum("ptm,tm->tp", parts.tensor, direction)  # [T, P]
    names, kinds = list(parts.names), list(parts.kinds)
    if bias is not None:
        output_bias = bias[chosen] - torch.where(compared >= 0, bias[compared.clamp(min=0)], 0.0)  # [T]
        values = torch.cat([values, output_bias[:, None]], dim=1)  # [T, P + 1]
        names, kinds = names + ["output bias"], kinds + ["bias"]
    logits = run.logits(network)[0]  # [T, V]
    steps = torch.arange(len(chosen_ids), device=device)
    actual = logits[steps, chosen] - torch.where(compared >= 0, logits[steps, compared.clamp(min=0)], 0.0)  # [T]
    return LogitAttribution(
        parts=names,
        part_kinds=kinds,
        values=values.float().cpu().numpy(),
        logits=actual.float().cpu().numpy(),
        remainder=(actual - values.sum(1)).float().cpu().numpy(),
        chosen_ids=chosen.cpu().numpy(),
        compared_ids=compared.cpu().numpy(),
        decoder_input_tokens=target_pieces(inputs[0].tolist()),
        target_tokens=target_pieces(list(chosen_ids)),
        compared_tokens=[target_pieces([int(token)])[0] if token >= 0 else "" for token in compared.tolist()],
    )


def bundle_logit_attribution(bundle: Bundle, text: str, compared_ids: list[int] | None = None) -> LogitAttribution:
    """The logit attribution of ``bundle``'s greedy translation of ``text``, labelled with its pieces."""
    source_ids, chosen = translated(bundle, text, InterventionTool.LOGIT_ATTRIBUTION)
    return logit_attribution(bundle.model, source_ids, chosen, compared_ids, bundle.target_tokenizer.pieces)
