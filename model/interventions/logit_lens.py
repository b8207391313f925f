"""The logit lens: what the decoder would predict if it stopped early, at every step.

At each decoding step (teacher-forced along the decoded tokens) the residual stream is read after the embeddings and
after every decoder sublayer (self-attention, cross-attention, feed-forward) as the model reads its last layer's
output: through the decoder's final norm where the model has one (a pre-norm model's LayerNorm; a post-norm model's
is the identity and its residual stream is already normalised by each sublayer's norm), then the output projection.
Each reading gives its top-k candidates and the rank and probability of the token finally chosen; the last reading is
the model's own prediction. A pretrained T5, Marian or BART model is read the same way on the library's own pass
(model/interventions/library.py): T5 through its final norm, rescale and tied head; Marian and BART through their
head and ``final_logits_bias``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from model.decoding.greedy import decoder_inputs
from model.family import Bundle, InterventionTool
from model.interventions.hooked import hook_names, ids_as_text, translated
from model.interventions.served_pass import has_final_norm, lens_logits, run_hooked, supported
from model.network import Network


@dataclass
class LogitLensResult:
    """Readings × steps: R readings (rows, in the order the stream passes them) of T steps."""

    readings: list[str]  # [R] "embeddings", "L1 self-attention", "L1 cross-attention", "L1 feed-forward", …
    hooks: list[str]  # [R] the hook point each reading reads (model/interventions/hooked.py)
    candidate_ids: np.ndarray  # [R, T, k] best first
    candidate_probabilities: np.ndarray  # [R, T, k]
    candidate_tokens: list[list[list[str]]]  # [R][T][k]
    chosen_ids: np.ndarray  # [T] the tokens decoded
    chosen_ranks: np.ndarray  # [R, T] 0 = the reading's top candidate
    chosen_probabilities: np.ndarray  # [R, T]
    decoder_input_tokens: list[str]  # [T] <s>, then the decoded tokens but the last
    final_norm: bool  # the readings went through the decoder's final LayerNorm (a pre-norm model)
    chosen_tokens: list[str] = field(default_factory=list)  # [T] the pieces of chosen_ids (a forced one is no top candidate)


def lens_points(model: Network) -> tuple[list[str], list[str]]:
    """(reading labels, hook names): the embeddings, then after each sublayer of each decoder layer (a decoder-only
    model has no cross-attention)."""
    names = set(hook_names(model))
    labels, hooks = ["embeddings"], ["decoder.0.resid_pre"]
    for layer in range(model.config.n_decoder_layers):
        for label, hook in (("self-attention", "self.resid"), ("cross-attention", "cross.resid"), ("feed-forward", "resid_post")):
            if f"decoder.{layer}.{hook}" in names:
                labels.append(f"L{layer + 1} {label}")
                hooks.append(f"decoder.{layer}.{hook}")
    return labels, hooks


@torch.inference_mode()
def logit_lens(
    model: Network,
    source_ids: list[int],  # the source pieces, EOS last
    chosen_ids: list[int],  # the decoded tokens: step t produced chosen_ids[t]
    k: int = 5,
    target_pieces: Callable[[list[int]], list[str]] = ids_as_text,
) -> LogitLensResult:
    """Every reading at every step (see the module's docstring); ``target_pieces`` labels the candidates."""
    network = supported(model, InterventionTool.LOGIT_LENS)
    device = next(network.parameters()).device
    inputs = torch.tensor([decoder_inputs(network, source_ids, chosen_ids)], device=device)  # [1, T]
    labels, hooks = lens_points(network)
    run = run_hooked(network, torch.tensor([source_ids], device=device), inputs, capture=hooks)
    streams = torch.cat([run.activations[hook] for hook in hooks])  # [R, T, d_model]
    logits = lens_logits(network, streams).float()  # [R, T, V]
    probabilities = torch.softmax(logits, dim=-1)  # [R, T, V]
    top = probabilities.topk(min(k, probabilities.shape[-1]), dim=-1)  # [R, T, k]
    chosen = torch.tensor(list(chosen_ids), device=device)  # [T]
    chosen_logits = logits.gather(-1, chosen.expand(len(hooks), -1)[..., None])  # [R, T, 1]
    ranks = (logits > chosen_logits).sum(-1)  # [R, T]
    chosen_probabilities = probabilities.gather(-1, chosen.expand(len(hooks), -1)[..., None])[..., 0]  # [R, T]
    candidate_ids = top.indices.cpu().numpy()
    return LogitLensResult(
        readings=labels,
        hooks=hooks,
        candidate_ids=candidate_ids,
        candidate_probabilities=top.values.cpu().numpy(),
        candidate_tokens=[[target_pieces(step.tolist()) for step in reading] for reading in candidate_ids],
        chosen_ids=np.array(chosen_ids, dtype=np.int64),
        chosen_ranks=ranks.cpu().numpy(),
        chosen_probabilities=chosen_probabilities.cpu().numpy(),
        decoder_input_tokens=target_pieces(inputs[0].tolist()),
        final_norm=has_final_norm(network),
        chosen_tokens=target_pieces(list(chosen_ids)),
    )


def bundle_logit_lens(bundle: Bundle, text: str, k: int = 5) -> LogitLensResult:
    """The logit lens of ``bundle``'s greedy translation of ``text``, labelled with its pieces."""
    source_ids, chosen = translated(bundle, text, InterventionTool.LOGIT_LENS)
    return logit_lens(bundle.model, source_ids, chosen, k, bundle.target_tokenizer.pieces)
