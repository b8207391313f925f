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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from model.decoding.greedy import decoder_inputs
from model.family import Bundle, InterventionTool, capabilities_of
from model.interventions.hooked import HeadReadingPass, Hooks, Patch, adapter_of, hook_names, ids_as_text, translated
from model.interventions.served_pass import has_final_norm, head_reading, lens_logits, run_hooked, supported
from model.network import Network, stack_layers

SENTENCE = "sentence"  # the place of a sentence classifier's one prediction
READING_BYTES = 2**28  # at most this much of the readings' float32 scores [readings, T, V] at once


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
    # What the columns are: a decoder's steps and the tokens chosen, or an encoder-only model's places and what its
    # head predicts there ("position" and "tag" or "word"; "sentence" and "class": ``encoder_logit_lens``, whose
    # decoder_input_tokens are the text's pieces and final_norm the encoder's)
    place: str = "step"
    predicted: str = "token"

    @property
    def reads_text(self) -> bool:
        """An encoder-only model's lens: its head's predictions on the text, not a decoding's steps."""
        return self.place != "step"

    @property
    def columns_title(self) -> str:
        """ "step: the token chosen", "position: the tag predicted", "the sentence: the class predicted"."""
        if not self.reads_text:
            return "step: the token chosen"
        return f"{'the sentence' if self.place == SENTENCE else self.place}: the {self.predicted} predicted"

    def column_label(self, column: int) -> str:
        """The piece read at a column (an encoder-only model's), or the token chosen at a step."""
        if self.reads_text:
            return self.decoder_input_tokens[column]
        inputs = self.decoder_input_tokens
        return inputs[column + 1] if column + 1 < len(inputs) else self.candidate_tokens[-1][column][0]


def lens_points(model: Network, side: str = "decoder") -> tuple[list[str], list[str]]:
    """(reading labels, hook names): the embeddings, then after each sublayer of each layer of ``side``'s stack (a
    decoder-only model's and an encoder's have no cross-attention)."""
    names = set(hook_names(model))
    labels, hooks = ["embeddings"], [f"{side}.0.resid_pre"]
    for layer in range(stack_layers(model.config, side)):
        for label, hook in (("self-attention", "self.resid"), ("cross-attention", "cross.resid"), ("feed-forward", "resid_post")):
            if f"{side}.{layer}.{hook}" in names:
                labels.append(f"L{layer + 1} {label}")
                hooks.append(f"{side}.{layer}.{hook}")
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
    per_reading = streams.shape[1] * network.config.target_vocab_size * 4  # one reading's float32 scores [T, V]
    size = max(1, READING_BYTES // per_reading)
    logits = (lens_logits(network, streams[start : start + size]).float() for start in range(0, len(hooks), size))  # [r, T, V]
    chosen = torch.tensor(list(chosen_ids), device=device)  # [T]
    return lens_result(labels, hooks, logits, chosen, k, target_pieces, target_pieces(inputs[0].tolist()), has_final_norm(network))


def lens_result(
    readings: list[str],
    hooks: list[str],
    logits: torch.Tensor | Iterable[torch.Tensor],  # [R, T, V] each reading's scores at each step (or place), or in parts
    chosen: torch.Tensor,  # [T] the tokens (or classes) finally chosen
    k: int,
    pieces: Callable[[list[int]], list[str]],
    columns: list[str],
    final_norm: bool,
    place: str = "step",
    predicted: str = "token",
) -> LogitLensResult:
    """The readings' top-k candidates and the chosen tokens' ranks and probabilities, labelled by ``pieces``. Given in
    parts (consecutive readings), only one part's scores are held at once (a 256k vocabulary's are 1 MB a position)."""
    parts = [logits] if isinstance(logits, torch.Tensor) else logits
    tops, top_ids, ranks_parts, chosen_parts = [], [], [], []
    for part in parts:
        probabilities = torch.softmax(part.float(), dim=-1)  # [r, T, V]
        top = probabilities.topk(min(k, probabilities.shape[-1]), dim=-1)  # [r, T, k]
        chosen_rows = chosen.expand(len(part), -1)[..., None]  # [r, T, 1]
        ranks_parts.append((part > part.gather(-1, chosen_rows)).sum(-1))  # [r, T]
        chosen_parts.append(probabilities.gather(-1, chosen_rows)[..., 0])  # [r, T]
        tops.append(top.values)
        top_ids.append(top.indices)
        del probabilities
    candidate_ids = torch.cat(top_ids).cpu().numpy()  # [R, T, k]
    ranks, chosen_probabilities = torch.cat(ranks_parts), torch.cat(chosen_parts)  # [R, T]
    chosen_ids = chosen.tolist()
    return LogitLensResult(
        readings=readings,
        hooks=hooks,
        candidate_ids=candidate_ids,
        candidate_probabilities=torch.cat(tops).cpu().numpy(),
        candidate_tokens=[[pieces(step.tolist()) for step in reading] for reading in candidate_ids],
        chosen_ids=np.array(chosen_ids, dtype=np.int64),
        chosen_ranks=ranks.cpu().numpy(),
        chosen_probabilities=chosen_probabilities.cpu().numpy(),
        decoder_input_tokens=columns,
        final_norm=final_norm,
        chosen_tokens=pieces(chosen_ids),
        place=place,
        predicted=predicted,
    )


def bundle_logit_lens(bundle: Bundle, text: str, k: int = 5) -> LogitLensResult:
    """The logit lens of ``bundle``'s greedy translation of ``text``, labelled with its pieces (an encoder-only model's:
    of its head's predictions on the text, model/interventions/encoder_lens.py)."""
    if not capabilities_of(bundle.model).architecture.has_decoder:
        return bundle_encoder_lens(bundle, text, k)
    source_ids, chosen = translated(bundle, text, InterventionTool.LOGIT_LENS)
    return logit_lens(bundle.model, source_ids, chosen, k, bundle.target_tokenizer.pieces)


@torch.inference_mode()
def encoder_logit_lens(
    model: Network,
    source_ids: list[int],  # the text's pieces
    k: int = 5,
    source_pieces: Callable[[list[int]], list[str]] = ids_as_text,
) -> LogitLensResult:
    """An encoder-only model's logit lens: each reading of the stream given to the model's own head in place of its
    last layer's output (through the encoder's final norm where it has one), at each place the head predicts (every
    piece of a tagger or a masked-LM head; the sentence of a sentence classifier). The last reading is the model's own
    output; the chosen class (or word) at each place is its top one."""
    network = supported(model, InterventionTool.LOGIT_LENS)
    adapter = cast(HeadReadingPass, adapter_of(network))  # served and encoder-only: it reads its head
    source = torch.tensor([source_ids], device=next(network.parameters()).device)  # [1, S]
    labels, hooks = lens_points(network, "encoder")
    run = run_hooked(network, source, source[:, :0], capture=hooks)
    streams = torch.cat([run.activations[hook] for hook in hooks])  # [R, S, d_model]
    last = f"encoder.{network.config.n_encoder_layers - 1}.resid_post"
    read = Hooks(patches=[Patch(last, streams)])  # row r: reading r is what the head reads
    read.check(adapter.hook_names())
    logits = adapter.head_output(source.expand(len(hooks), -1), read).float()  # [R, P, C]
    head = head_reading(network, logits.shape[-1], source_pieces)
    columns = head.columns(source_pieces(list(source_ids)))
    chosen = logits[-1].argmax(-1)  # [P] the model's own prediction
    norm = adapter.has_encoder_final_norm()
    return lens_result(labels, hooks, logits, chosen, k, head.label, columns, norm, head.place, head.predicted)


def bundle_encoder_lens(bundle: Bundle, text: str, k: int = 5) -> LogitLensResult:
    """The logit lens of an encoder-only ``bundle``'s head on ``text``, labelled with its pieces and classes."""
    return encoder_logit_lens(bundle.model, bundle.source_ids(text)[0], k, bundle.source_tokenizer.pieces)
