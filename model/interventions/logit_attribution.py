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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from model.data.token_labels import display_candidate, piece_text
from model.decoding.greedy import decoder_inputs
from model.family import Bundle, InterventionTool, capabilities_of
from model.interventions.hooked import AttributionLayout, HeldNorm, check_tool, hook_names, ids_as_text, run_hooked, translated
from model.interventions.served_pass import head_reading
from model.network import Network

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
    place: str = "step"  # what a row is: a decoder's step, an encoder-only model's "position" or "sentence" (its
    # decoder_input_tokens then the pieces read, its target_tokens the tags or classes predicted)

    def where(self, step: int) -> str:
        """ "step 3", "position 3 (“cat”)", "the sentence"."""
        if self.place == "sentence":
            return "the sentence"
        if self.place == "position":
            return f"position {step + 1} (“{piece_text(self.decoder_input_tokens[step]) or self.decoder_input_tokens[step]}”)"
        return f"step {step + 1}"

    def shown(self, token: str) -> str:
        """A token as people read it: a piece on its own, a class name (an encoder-only model's) as it is."""
        return token if self.place != "step" else display_candidate(token)


class _Parts:
    """The decoder stream as named parts [P, T, d_model], through the norms that hold their scale."""

    def __init__(self, start: list[tuple[str, torch.Tensor]]):
        self.tensor = torch.stack([part for _, part in start])  # [P, T, d_model]
        self.names, self.kinds = [name for name, _ in start], ["embedding"] * len(start)
        self.bias_part: dict[str, int] = {}  # a bias part's name -> its index

    def add(self, parts: torch.Tensor, names: list[str], kind: str) -> None:
        """Append parts [N, T, d_model]."""
        self.tensor = torch.cat([self.tensor, parts.to(self.tensor.dtype)])
        self.names += names
        self.kinds += [kind] * len(names)

    def add_bias(self, bias: torch.Tensor, name: str) -> None:
        """A bias [d_model] added at every position, summed into the part ``name`` (made on its first bias)."""
        row = bias.to(self.tensor.dtype).expand(self.tensor.shape[1], -1)  # [T, d_model]
        if name in self.bias_part:
            self.tensor[self.bias_part[name]] += row
        else:
            self.bias_part[name] = len(self.names)
            self.add(row[None], [name], "bias")

    def normalise(self, norm: HeldNorm, bias_name: str) -> None:
        """Through a norm with its scale held at the stream's own: every part rescaled, β added to ``bias_name``."""
        summed = self.tensor.sum(0)  # [T, d_model]
        if norm.centred:  # a LayerNorm
            scale = torch.sqrt(summed.var(-1, unbiased=False) + norm.eps)[None, :, None]  # [1, T, 1]
            self.tensor = norm.weight * (self.tensor - self.tensor.mean(-1, keepdim=True)) / scale  # [P, T, d_model]
        else:  # an RMS norm (T5's)
            scale = torch.sqrt(summed.pow(2).mean(-1) + norm.eps)[None, :, None]  # [1, T, 1]
            self.tensor = norm.weight * self.tensor / scale  # [P, T, d_model]
        if norm.bias is not None:
            self.add_bias(norm.bias, bias_name)


def _decompose(layout: AttributionLayout, inputs: torch.Tensor, activations: dict[str, torch.Tensor]) -> _Parts:
    """The stream after the decoder's final norm (an encoder-only model's: the encoder's), as parts."""
    parts = _Parts(layout.embeddings(inputs, activations))
    if layout.embedding_norm is not None:  # BERT's LayerNorm of the embeddings' sum
        parts.normalise(layout.embedding_norm, "embedding norm bias")
    side = layout.side
    for index, (norms, biases) in enumerate(zip(layout.sublayer_norms, layout.projection_biases)):
        name = f"L{index + 1}"
        for sublayer, attention in enumerate(("self", "cross")):
            if f"{side}.{index}.{attention}.head_out" not in activations:  # no cross-attention (a one-stack model's)
                continue
            head_out = activations[f"{side}.{index}.{attention}.head_out"][0]  # [H, T, d_model]
            heads = range(head_out.shape[0])
            parts.add(head_out, [f"{name} {attention} H{head + 1}" for head in heads], f"{attention}-attention head")
            if biases[sublayer] is not None:  # the output projection's bias: no head's
                parts.add_bias(cast(torch.Tensor, biases[sublayer]), f"{name} attention biases")
            if norms[sublayer] is not None:  # a post-norm model's norm after the sublayer
                parts.normalise(cast(HeldNorm, norms[sublayer]), f"{name} norm biases")
        parts.add(activations[f"{side}.{index}.mlp_out"], [f"{name} feed-forward"], "feed-forward")  # [1, T, d_model]
        if norms[2] is not None:
            parts.normalise(norms[2], f"{name} norm biases")
    if layout.final_norm is not None:  # a pre-norm model's final norm
        parts.normalise(layout.final_norm, "final norm bias")
    if layout.pool:  # a sentence classifier's head reads the mean over the pieces: so does each part
        parts.tensor = parts.tensor.mean(1, keepdim=True)  # [P, 1, d_model]
    return parts


@torch.inference_mode()
def logit_attribution(
    model: Network,
    source_ids: list[int],  # the source pieces, EOS last
    chosen_ids: list[int],  # the decoded tokens: step t produced chosen_ids[t]
    compared_ids: list[int] | None = None,  # per step, a token whose logit is subtracted (-1: none)
    target_pieces: Callable[[list[int]], list[str]] = ids_as_text,
) -> LogitAttribution:
    """Each step's logit of its chosen token (minus a compared one's) split into parts (see the module's docstring)."""
    network = model
    layout = check_tool(model, InterventionTool.LOGIT_ATTRIBUTION).attribution_layout()
    device = next(network.parameters()).device
    inputs = torch.tensor([decoder_inputs(network, source_ids, chosen_ids)], device=device)  # [1, T]
    points, hooked = ("self.head_out", "cross.head_out", "mlp_out"), set(hook_names(network))
    capture = [f"decoder.{layer}.{point}" for layer in range(network.config.n_decoder_layers) for point in points]
    capture = [name for name in capture if name in hooked]  # a decoder-only model has no cross-attention
    run = run_hooked(network, torch.tensor([source_ids], device=device), inputs, capture=[*capture, *layout.capture])
    parts = _decompose(layout, inputs, run.activations)
    chosen = torch.tensor(list(chosen_ids), device=device)  # [T]
    logits = run.logits(network)[0]  # [T, V]
    result = _attributed(layout, parts, logits, chosen, compared_ids, target_pieces)
    result.decoder_input_tokens = target_pieces(inputs[0].tolist())
    return result


def _attributed(
    layout: AttributionLayout,
    parts: _Parts,
    logits: torch.Tensor,  # [T, V] the model's own, at each step (or place predicted)
    chosen: torch.Tensor,  # [T]
    compared_ids: list[int] | None,
    pieces: Callable[[list[int]], list[str]],
) -> LogitAttribution:
    """Each place's logit of ``chosen`` (minus a compared token's) split over ``parts`` [P, T, d_model]."""
    device = chosen.device
    compared = torch.tensor(list(compared_ids) if compared_ids is not None else [-1] * len(chosen), device=device)  # [T]
    weight, bias = layout.unembedding, layout.unembedding_bias  # [V, d_model], [V] or None
    weight = weight * layout.unembedding_scale
    direction = weight[chosen] - torch.where(compared[:, None] >= 0, weight[compared.clamp(min=0)], 0.0)  # [T, d_model]
    values = torch.einsum("ptm,tm->tp", parts.tensor, direction)  # [T, P]
    names, kinds = list(parts.names), list(parts.kinds)
    if bias is not None:
        output_bias = bias[chosen] - torch.where(compared >= 0, bias[compared.clamp(min=0)], 0.0)  # [T]
        values = torch.cat([values, output_bias[:, None]], dim=1)  # [T, P + 1]
        names, kinds = names + ["output bias"], kinds + ["bias"]
    steps = torch.arange(len(chosen), device=device)
    actual = logits[steps, chosen] - torch.where(compared >= 0, logits[steps, compared.clamp(min=0)], 0.0)  # [T]
    return LogitAttribution(
        parts=names,
        part_kinds=kinds,
        values=values.float().cpu().numpy(),
        logits=actual.float().cpu().numpy(),
        remainder=(actual - values.sum(1)).float().cpu().numpy(),
        chosen_ids=chosen.cpu().numpy(),
        compared_ids=compared.cpu().numpy(),
        decoder_input_tokens=[],
        target_tokens=pieces(chosen.tolist()),
        compared_tokens=[pieces([int(token)])[0] if token >= 0 else "" for token in compared.tolist()],
    )


@torch.inference_mode()
def encoder_logit_attribution(
    model: Network,
    source_ids: list[int],  # the text's pieces
    compared_ids: list[int] | None = None,  # per place predicted, a class whose logit is subtracted (-1: none)
    source_pieces: Callable[[list[int]], list[str]] = ids_as_text,
) -> LogitAttribution:
    """An encoder-only model's prediction at each place (each piece's tag, or the sentence's class) split over what
    wrote into its encoder's stream: the embeddings, each head, each feed-forward block and the biases, the norms held
    at the run's own scale (see the module's docstring); the model's head reads the stream linearly."""
    layout = check_tool(model, InterventionTool.LOGIT_ATTRIBUTION).attribution_layout()
    device = next(model.parameters()).device
    source = torch.tensor([source_ids], device=device)  # [1, S]
    points, hooked = ("self.head_out", "mlp_out"), set(hook_names(model))
    capture = [f"encoder.{layer}.{point}" for layer in range(model.config.n_encoder_layers) for point in points]
    run = run_hooked(model, source, source[:, :0], capture=[name for name in capture if name in hooked] + list(layout.capture))
    parts = _decompose(layout, source, run.activations)
    logits = run.logits(model)[0]  # [P, C] the head's own scores
    head = head_reading(model, logits.shape[-1], source_pieces)
    result = _attributed(layout, parts, logits, logits.argmax(-1), compared_ids, head.label)
    result.decoder_input_tokens, result.place = head.columns(source_pieces(list(source_ids))), head.place
    return result


def bundle_logit_attribution(bundle: Bundle, text: str, compared_ids: list[int] | None = None) -> LogitAttribution:
    """The logit attribution of ``bundle``'s greedy translation of ``text``, labelled with its pieces (an encoder-only
    model's: of its predictions on ``text``)."""
    if not capabilities_of(bundle.model).architecture.has_decoder:
        check_tool(bundle.model, InterventionTool.LOGIT_ATTRIBUTION)
        return encoder_logit_attribution(bundle.model, bundle.source_ids(text)[0], compared_ids, bundle.source_tokenizer.pieces)
    source_ids, chosen = translated(bundle, text, InterventionTool.LOGIT_ATTRIBUTION)
    return logit_attribution(bundle.model, source_ids, chosen, compared_ids, bundle.target_tokenizer.pieces)
