"""Gradient-based readings of one decoded sentence: attention × gradient (with Chefer et al.'s rules),
gradient × input, integrated gradients, and the contrastive "why this token and not that one".

Every prediction is scored separately: the sentence is repeated once per step in one batch, and row b's
objective reads step b only, so one backward pass gives every step its own gradients (the decoder is causal,
so step b's gradients never reach later inputs).

* Attention × gradient (Chefer, Gur and Wolf, "Generic Attention-model Explainability for Interpreting
  Bi-Modal and Encoder-Decoder Transformers", ICCV 2021). Each attention map A of each layer becomes
  Ā = mean over heads of (∇A ⊙ A)⁺, the gradient of the predicted token's logit. Relevancies start as
  R^ss = I, R^tt = I, R^ts = 0 and are updated layer by layer: encoder self-attention R^ss += Ā R^ss; decoder
  self-attention R^tt += Ā R^tt and R^ts += Ā R^ts; cross-attention R^ts += (R̄^tt)ᵀ Ā R̄^ss, where
  R̄ = rownorm(R − I) + I (their equations 6–10; rule 11 is left out, the encoder never reads the decoder).
  Step t's row of R^ts (source) and of R^tt (target prefix) is its relevancy; the encoder's R^ss is
  averaged over the steps.
* Gradient × input and integrated gradients (Sundararajan, Taly and Yan, ICML 2017) of the log-probability
  of step t's token, over the token embeddings of the source and of the target prefix (positions kept).
  Integrated gradients run from the all-zero embeddings to the real ones along a straight line, integrated
  by adaptive Simpson panels (model/attribution/integration.py) until the attributions sum to
  F(input) − F(baseline) within 1% (completeness) and no token's moves by 0.03 nats when refined, or until a
  cap on the points: each row reports its gap, its points and whether it converged.
* Contrastive (Yin and Neubig, "Interpreting Language Models with Contrastive Explanations", EMNLP 2022):
  the same saliency of log p(chosen) − log p(other) at one step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from model.attribution.integration import integrate
from model.attribution.transparent_pass import SOURCE, TARGET, embed_tokens, transparent_pass
from model.network import Network
from model.runtime import follow_free_cores

GAP_FLOOR = 0.05  # nats: a completeness gap is a share of F(x) − F(0), or of this when F barely changes
IG_GAP_TOLERANCE = 0.01  # integrated gradients converge when the completeness gap is below 1%...
# ...and no token's attribution moves by more than this (nats) when every panel is refined once. The estimate is
# cautious: on the shipped model the attributions were then within 0.0075 nats of a float64 reference
# (benchmarks/ig_convergence.py; 0.01 there took 84% more points for errors of 0.0016, 0.1 let errors reach 0.07).
IG_TOKEN_TOLERANCE = 0.03
IG_MAX_POINTS = 8192  # gradient points per prediction at most: a row that needs more is flagged as not converged
MAX_BATCH = 64  # rows of one batch (steps × points on the path): larger ones were measured slower per row


def _repeated_embeddings(model: Network, source_ids: torch.Tensor, target_input_ids: torch.Tensor, n: int):
    """[1, S], [1, T] -> their embeddings repeated n times, detached: [n, S, d_model], [n, T, d_model]."""
    source = embed_tokens(model, source_ids, SOURCE).detach().expand(n, -1, -1)
    target = embed_tokens(model, target_input_ids, TARGET).detach().expand(n, -1, -1)
    return source, target


def _normalised_relevance(relevance: torch.Tensor) -> torch.Tensor:
    """R̄ = rownorm(R − I) + I, [B, N, N] (a row with nothing beside the identity stays the identity)."""
    eye = torch.eye(relevance.shape[-1], dtype=relevance.dtype, device=relevance.device)
    beside = relevance - eye  # [B, N, N]
    total = beside.sum(-1, keepdim=True)  # [B, N, 1]
    return torch.where(total > 0, beside / torch.where(total > 0, total, torch.ones_like(total)), 0.0) + eye


def attention_gradient(model: Network, source_ids: torch.Tensor, target_input_ids: torch.Tensor, chosen_ids: torch.Tensor):
    """Chefer et al.'s relevancy after each layer: (encoder [S, S] per layer, averaged over steps; decoder
    [T, T] per decoder layer; cross [T, S] per decoder layer), row t that of step t's prediction."""
    n_steps = target_input_ids.shape[1]
    source, target = _repeated_embeddings(model, source_ids, target_input_ids, n_steps)
    steps = torch.arange(n_steps, device=source.device)
    with torch.enable_grad():
        record = transparent_pass(model, source, target, logits_at=steps)
        logits = record.logits  # [B, V]
        assert logits is not None
        objective = logits[steps, chosen_ids].sum()  # each row's own step
        maps = [r.weights for r in (*record.encoder, *record.decoder, *record.cross)]
        gradients = torch.autograd.grad(objective, maps)
    cams = [(g * a).clamp(min=0).mean(1).detach() for g, a in zip(gradients, maps)]  # [B, Q, K] per map
    n_encoder, n_decoder = len(record.encoder), len(record.decoder)
    encoder_cams = cams[:n_encoder]
    self_cams = cams[n_encoder : n_encoder + n_decoder]
    cross_cams = cams[n_encoder + n_decoder :]
    n_source = source.shape[1]
    r_ss = torch.eye(n_source, dtype=source.dtype, device=source.device).expand(n_steps, -1, -1)  # [B, S, S]
    encoder = []
    for cam in encoder_cams:
        r_ss = r_ss + cam @ r_ss
        encoder.append(r_ss.mean(0))
    r_tt = torch.eye(n_steps, dtype=source.dtype, device=source.device).expand(n_steps, -1, -1)  # [B, T, T]
    r_ts = source.new_zeros(n_steps, n_steps, n_source)  # [B, T, S]
    normalised_ss = _normalised_relevance(r_ss)
    decoder, cross = [], []
    for layer, self_cam in enumerate(self_cams):  # a decoder-only model's layers have no cross-attention
        r_tt, r_ts = r_tt + self_cam @ r_tt, r_ts + self_cam @ r_ts
        decoder.append(r_tt[steps, steps])  # [T, T]: step t's own row
        if cross_cams:
            r_ts = r_ts + _normalised_relevance(r_tt).transpose(1, 2) @ cross_cams[layer] @ normalised_ss
            cross.append(r_ts[steps, steps])  # [T, S]
    return encoder, decoder, cross


def text_attention_gradient(model: Network, source_ids: torch.Tensor, steps: list[int], token_ids: list[int]) -> list[torch.Tensor]:
    """An encoder-only model's relevancy after each layer [n, S, S] (Chefer et al.'s self-attention rule
    R^ss += Ā R^ss from R^ss = I), batch row b that of the prediction at position ``steps[b]`` (a sentence head's
    one prediction: read at no position) of its decision ``token_ids[b]``'s score."""
    n = len(steps)
    source = embed_tokens(model, source_ids, SOURCE).detach().expand(n, -1, -1)  # [n, S, d_model]
    with torch.enable_grad():
        record = transparent_pass(model, source, source[:, :0], logits_at=torch.tensor(steps, device=source.device))
        logits = record.logits  # [n, C]
        assert logits is not None
        objective = logits[torch.arange(n, device=logits.device), torch.tensor(token_ids, device=logits.device)].sum()
        maps = [r.weights for r in record.encoder]
        gradients = torch.autograd.grad(objective, maps)
    relevance = torch.eye(source.shape[1], dtype=source.dtype, device=source.device).expand(n, -1, -1)  # [n, S, S]
    found = []
    for gradient, weights in zip(gradients, maps):
        relevance = relevance + (gradient * weights).clamp(min=0).mean(1).detach() @ relevance  # [n, S, S]
        found.append(relevance)
    return found


def prediction_scores(
    model: Network, source: torch.Tensor, target: torch.Tensor, steps, token_ids, contrast_ids=None
) -> torch.Tensor:
    """The objective the saliency explains, from embeddings [B, S, d_model], [B, T, d_model]: per row, log p(token)
    at its step, minus log p(contrast) when one is given: [B]."""
    record = transparent_pass(model, source, target, logits_at=steps, record_sublayers=False)
    logits = record.logits  # [B, V]
    assert logits is not None
    log_probabilities = torch.log_softmax(logits, dim=-1)  # [B, V]
    rows = torch.arange(len(steps))
    score = log_probabilities[rows, token_ids]
    if contrast_ids is not None:
        score = score - log_probabilities[rows, contrast_ids]
    return score


def _evaluate(model: Network, source, target, requests, steps, token_ids, contrast_ids, with_gradients: bool, between=None):
    """The objective at points on the path, for requests [(row, alpha)]: (scores [N], gradients over the source
    [N, S, d_model] and over the target [N, T, d_model] (zero past a row's step), or None without gradients).
    Many requests per step (integrated gradients) are batched by step, each batch's decoder inputs cut after its
    step (nothing later is read); a few per step (gradient × input) go together at full length. ``between()`` before
    each batch: it may raise to stop (the window's job, cancelled)."""
    n = len(requests)
    scores = source.new_zeros(n)
    source_gradients = source.new_zeros(n, *source.shape[1:]) if with_gradients else None
    target_gradients = target.new_zeros(n, *target.shape[1:]) if with_gradients else None
    groups: dict[int, list[int]] = {}
    by_step = n >= 4 * len({steps[row] for row, _ in requests})
    for index, (row, _) in enumerate(requests):
        groups.setdefault(steps[row] if by_step else -1, []).append(index)
    for group, indices in sorted(groups.items()):
        length = group + 1 if by_step else target.shape[1]
        for start in range(0, len(indices), MAX_BATCH):
            follow_free_cores()
            if between is not None:
                between()
            chunk = indices[start : start + MAX_BATCH]
            rows = [requests[i][0] for i in chunk]
            scale = torch.tensor([requests[i][1] for i in chunk], dtype=source.dtype, device=source.device)[:, None, None]
            contrast = None if contrast_ids is None else torch.tensor([contrast_ids[r] for r in rows])
            positions = torch.tensor([steps[r] for r in rows], dtype=torch.long)
            tokens = torch.tensor([token_ids[r] for r in rows])
            with torch.enable_grad() if with_gradients else torch.no_grad():
                scaled_source = (source * scale).requires_grad_(with_gradients)  # [B, S, d_model]
                scaled_target = (target[:, :length] * scale).requires_grad_(with_gradients)  # [B, length, d_model]
                values = prediction_scores(model, scaled_source, scaled_target, positions, tokens, contrast)  # [B]
                if with_gradients:
                    # a decoder-only model's source (no pieces) is not in the graph: its gradient stays zero
                    gradients = torch.autograd.grad(values.sum(), (scaled_source, scaled_target), allow_unused=True)
                    assert source_gradients is not None and target_gradients is not None
                    if gradients[0] is not None:
                        source_gradients[chunk] = gradients[0]
                    if gradients[1] is not None:  # an encoder-only model reads no target
                        target_gradients[chunk, :length] = gradients[1]
            scores[chunk] = values.detach()
    return scores, source_gradients, target_gradients


@dataclass
class Saliency:
    """Signed attributions of predictions to the source tokens [rows, S] and to the decoder inputs [rows, T]
    (zero past a row's step); for integrated gradients also, per row: how far the attributions miss F(x) − F(0)
    as a share of max(|F(x) − F(0)|, GAP_FLOOR), the gradient points used, and whether the integration converged
    (model/attribution/integration.py; all empty for gradient × input)."""

    source: np.ndarray
    target: np.ndarray
    completeness_gap: np.ndarray = field(default_factory=lambda: np.zeros(0))
    points: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    converged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


def saliency(
    model: Network,
    source_ids: torch.Tensor,  # [1, S]
    target_input_ids: torch.Tensor,  # [1, T]
    steps: list[int],  # the predictions explained
    token_ids: list[int],  # the token each explains (the chosen one)
    contrast_ids: list[int] | None = None,  # "and not this one": the log-probability difference
    method: str = "grad-input",  # or "ig"
    max_points: int | None = None,  # integrated gradients: the cap on each row's gradient points (IG_MAX_POINTS)
    between_batches: Callable[[], None] | None = None,  # before each batch of gradient passes; may raise to stop
) -> Saliency:
    """Gradient × input or integrated gradients of each step's objective (see the module's docstring)."""
    source, target = _repeated_embeddings(model, source_ids, target_input_ids, 1)
    evaluate = functools.partial(
        _evaluate, model, source, target, steps=steps, token_ids=token_ids, contrast_ids=contrast_ids, between=between_batches
    )
    if method == "ig":
        return _integrated(evaluate, source, target, len(steps), IG_MAX_POINTS if max_points is None else max_points)
    if method != "grad-input":
        raise ValueError(f"saliency method is grad-input or ig, not {method!r}")
    _, source_gradient, target_gradient = evaluate([(row, 1.0) for row in range(len(steps))], with_gradients=True)
    assert source_gradient is not None and target_gradient is not None
    source_attribution = (source_gradient * source).sum(-1).detach().cpu().numpy()  # [rows, S]
    target_attribution = (target_gradient * target).sum(-1).detach().cpu().numpy()  # [rows, T]
    return Saliency(source_attribution, target_attribution)


def _integrated(evaluate, source: torch.Tensor, target: torch.Tensor, n_rows: int, max_points: int) -> Saliency:
    """Integrated gradients of every row: x ⊙ ∫₀¹ ∇F(αx) dα per token, summed over d_model, integrated by
    adaptive Simpson panels until the completeness gap is below IG_GAP_TOLERANCE and no token's attribution
    moves by more than IG_TOKEN_TOLERANCE nats when the panels are refined, or ``max_points`` are used
    (model/attribution/integration.py)."""
    n_source = source.shape[1]

    def integrand(requests):
        values, source_gradient, target_gradient = evaluate(list(requests), with_gradients=True)
        per_token = torch.cat([(source_gradient * source).sum(-1), (target_gradient * target).sum(-1)], 1)  # [N, S + T]
        return values.double().cpu().numpy(), per_token.double().cpu().numpy()

    found = integrate(integrand, n_rows, max_points, IG_GAP_TOLERANCE, IG_TOKEN_TOLERANCE, GAP_FLOOR)
    attribution = found.integral.astype(np.float32)  # [rows, S + T]
    return Saliency(attribution[:, :n_source], attribution[:, n_source:], found.gap, found.points, found.converged)
