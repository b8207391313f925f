"""How the next token is chosen from a step's logits under the decoding options: the most probable one (greedy), or
a sample at the options' temperature, within its top-k and top-p (nucleus) limits, from the stepper's generator."""

from __future__ import annotations

import torch

from model.decoding.options import DecodingError, DecodingOptions


def choose_token(logits: torch.Tensor, probabilities: torch.Tensor, options: DecodingOptions, generator: torch.Generator) -> int:
    """The chosen token's id, from logits [V] and their probabilities [V]."""
    if options.strategy != "sample":
        return int(probabilities.argmax())
    scores = logits / options.temperature
    if options.top_k:
        kth = scores.topk(min(options.top_k, scores.numel())).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if options.top_p < 1.0:
        sorted_scores, order = scores.sort(descending=True)
        cumulative = torch.softmax(sorted_scores, dim=-1).cumsum(-1)
        drop = cumulative - torch.softmax(sorted_scores, dim=-1) >= options.top_p  # keep the first over p
        scores[order[drop]] = float("-inf")
    distribution = torch.softmax(scores, dim=-1).cpu()
    if not bool(torch.isfinite(distribution).all()) or float(distribution.sum()) <= 0:
        raise DecodingError(
            "the sampling distribution is not a valid probability distribution "
            "(the temperature is too extreme for this model); choose a temperature nearer 1"
        )
    return int(torch.multinomial(distribution, 1, generator=generator))
