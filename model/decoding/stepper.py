"""Step-by-step decoding with a complete attention trace, for people watching a model translate.

A Stepper encodes the source once, then advances one target token per ``step()`` through the
decoder's key/value cache, recording at each step the distribution over the next token, its top
candidates, and the new rows of decoder self-attention and cross-attention of every layer and head.
It can go back, jump to any step, reset, and force any token at any step (what-if), then carry on.
Strategies: greedy, sampling (temperature, top-k, top-p, seed) and beam search (its tree is kept
and any hypothesis can be stepped through).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch

from model.data.tokenizer import unknown_note, unknown_pieces
from model.decoding.beam import BeamTree, beam_search
from model.decoding.greedy import DEFAULT_CONTINUATION, default_max_target
from model.decoding.numpy_step import NumpyDecoder
from model.decoding.options import MAX_SEED, STRATEGIES, TEMPERATURE_RANGE, DecodingError, DecodingOptions
from model.decoding.sampling import choose_token
from model.decoding.trace import Trace
from model.family import Bundle, Capabilities, forced_first_id, suppressed_ids
from model.kinds import AttentionKind
from model.network import PromptNetwork
from model.nn.masking import masked_model

__all__ = ["MAX_SEED", "STRATEGIES", "TEMPERATURE_RANGE", "DecodingError", "DecodingOptions", "Stepper", "Step", "full_pass_trace"]


def beam_unavailable(capabilities: Capabilities) -> str:
    """Why beam search does not serve a family with ``capabilities`` ('' when it does)."""
    if capabilities.beam_search:
        return ""
    if not capabilities.architecture.has_decoder:
        return "an encoder-only model decodes no target: beam search does not apply"
    return "beam search is not served for this model's family; choose greedy or sampling"


@dataclass
class Step:
    token_id: int  # the token this step produced
    probabilities: np.ndarray  # [V] distribution it was chosen from (before sampling filters)
    candidate_ids: np.ndarray  # [k] most likely tokens, best first
    candidate_probabilities: np.ndarray  # [k]
    decoder_self: np.ndarray | None  # [layers, heads, t + 1] the new row of each head; None without self-attention
    cross: np.ndarray | None  # [layers, heads, S]; None without cross-attention
    forced: bool
    rng_state: torch.Tensor | None = field(default=None, repr=False)  # sampler state before this step
    candidate_tokens: list[str] = field(default_factory=list)  # [k] pieces of candidate_ids (made once)


class Stepper:
    """Decoding of one source sentence (or prompt), for any model family (model/family.py): an
    encoder-decoder encodes the source and then steps; a decoder-only model takes its prompt as given steps
    (``given``: their tokens are forced) and then continues; an encoder-only model makes no steps, and its
    head's reading of the text (mask candidates, classes) comes with the trace."""

    def __init__(self, bundle: Bundle, text: str, options: DecodingOptions | None = None):
        self.bundle = bundle
        self.config: Any = bundle.config
        self.options = options or DecodingOptions()
        self.options.validate()
        # Any model family (model/family.py), each path below taken as its capabilities say; a copy with the masked
        # heads' outputs zeroed when some are.
        self.model = cast(Any, masked_model(bundle.model, tuple(self.options.masked_heads)))
        if not isinstance(text, str) or not text.strip():
            raise DecodingError("the source sentence is empty: type something to translate")
        can = bundle.family.capabilities
        kinds = can.kinds
        self.has_encoder, self.has_decoder = can.architecture.has_encoder, can.architecture.has_decoder
        self.has_encoder_self, self.has_decoder_self = AttentionKind.ENCODER in kinds, AttentionKind.DECODER in kinds
        self.has_cross = AttentionKind.CROSS in kinds  # an RNN encodes and decodes, but its only attention is cross
        if self.has_decoder and self.options.strategy == "beam" and beam_unavailable(can):
            raise DecodingError(beam_unavailable(can))
        self.messages: list[str] = []
        self.text = text
        self.source_ids = self._read_source(text)
        self.device = next(self.model.parameters()).device
        self.source = torch.tensor([self.source_ids], device=self.device)
        self.model.eval()
        self.encoder_self: np.ndarray | None = None
        self.predictions = None  # an encoder-only model's head output (model/nn/classifier.Predictions)
        self._start()
        forced_first = forced_first_id(self.config)
        if self.has_encoder:  # decoding starts from the start token; some models force the first target token
            self.first_input, self.given = self.config.bos_id, ([forced_first] if forced_first is not None else [])
        else:  # a decoder-only model starts from its prompt's first token and is given the rest
            self.first_input, self.given = self.source_ids[0], list(self.source_ids[1:])
        self.suppressed = suppressed_ids(self.config)  # tokens the model's generation never picks
        use_numpy = self.options.engine == "numpy" or (self.options.engine == "auto" and self.device.type == "cpu")
        use_numpy = use_numpy and self.has_decoder and can.numpy_engine and NumpyDecoder.serves(self.model)
        self.numpy_decoder = NumpyDecoder(self.model, self.cache) if use_numpy else None
        self.max_steps = self._step_limit()
        self.steps: list[Step] = []
        heads, layers, rows = self.config.n_heads, self.config.n_decoder_layers, max(self.max_steps, 0)
        # Every step's new attention rows, kept in place so that trace() copies slices instead of
        # assembling 6 x 8 x T x T arrays from T pieces at every step (np.zeros leaves untouched pages free).
        self._decoder_rows = np.zeros((layers, heads, rows, rows), np.float32)  # [layers, heads, step, key]
        self._cross_rows = np.zeros((layers, heads, rows, len(self.source_ids)), np.float32)  # [layers, heads, step, source]
        self.generator = torch.Generator().manual_seed(self.options.seed)
        self.beam: BeamTree | None = None
        self.hypothesis: list[int] | None = None  # tokens the steps follow (beam search)
        self.hypothesis_rank: int | None = None  # which of the beam's hypotheses (0 = best)
        if self.options.strategy == "beam" and self.has_decoder:
            self.beam = beam_search(
                self.model, self.source, self.options.beam_width, self.options.length_penalty, self.max_steps + 1
            )
            self.beam.pieces = bundle.target_tokenizer.pieces([node.token_id for node in self.beam.nodes])
            self.follow_hypothesis(0)
        elif self.given and can.prompt_in_one_pass and self.numpy_decoder is None:
            self._decode_given()  # a decoder-only model's prompt: one pass of the model, as ``generate`` reads it
        elif self.given:
            self.jump(len(self.given))  # the prompt (or the forced first token) is decoded at once

    def _read_source(self, text: str) -> list[int]:
        """The ids the model reads, with a message when the sentence had to be cut."""
        source_ids, n_pieces, kept = self.bundle.source_ids(text)
        if n_pieces == 0:
            raise DecodingError("the source sentence has nothing the tokenizer can read")
        if n_pieces > kept:
            self.messages.append(
                f"the sentence has {n_pieces} pieces; this model reads at most {kept}, so it was cut after piece {kept}"
            )
        self.unknown_note = unknown_note(self.bundle.source_tokenizer, source_ids, kept)  # "" when every piece is known
        if self.unknown_note:
            self.messages.append(self.unknown_note)
        return source_ids

    @torch.inference_mode()
    def _start(self) -> None:
        """Encode the source (or read it with an encoder-only model's head) and start the decoder's cache."""
        weights: Any = ()
        self.cache: Any = None  # the decoder's (none for an encoder-only model)
        if not self.has_decoder:  # an encoder-only model: its head reads the text in the encoder's pass
            self.predictions, weights = self.model.read(self.source, self.options.n_candidates)
        elif self.has_encoder:
            memory, memory_mask, weights = self.model.encode(self.source, need_weights=True)
            self.cache = self.model.start_cache(memory, memory_mask)
        else:
            self.cache = self.model.start_cache(None, None)  # a decoder-only family: no memory
        if self.has_encoder_self:
            self.encoder_self = torch.stack(list(weights))[:, 0].float().cpu().numpy()  # [layers, heads, S, S]

    def _step_limit(self) -> int:
        """How many steps decoding may take: none for an encoder-only model; a decoder-only one's prompt counts."""
        if not self.has_decoder:
            return 0
        if self.has_encoder:
            limit = default_max_target(len(self.source_ids), self.config.max_len) - 1
            return min(self.options.max_steps or limit, self.config.max_len - 1)
        max_steps = min(len(self.given) + (self.options.max_steps or DEFAULT_CONTINUATION), self.config.max_len - 1)
        if max_steps <= len(self.given):
            self.messages.append(f"the prompt fills the model's {self.config.max_len} positions: nothing is left to generate")
        return max_steps

    # --- state ----------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        if len(self.steps) >= self.max_steps:
            return True
        if self.hypothesis is not None and len(self.steps) >= len(self.hypothesis):
            return True
        return bool(self.steps) and self.options.stop_at_eos and self.steps[-1].token_id == self.config.eos_id

    @property
    def source_tokens(self) -> list[str]:
        """The source pieces; none for a decoder-only model (its prompt is the start of the decoder's input)."""
        return self.bundle.source_tokenizer.pieces(self.source_ids) if self.has_encoder else []

    def target_ids(self) -> list[int]:
        return [s.token_id for s in self.steps]

    def translation(self) -> str:
        """The output's text; a decoder-only model's is the whole text, its prompt's first token included."""
        ids = self.target_ids() if self.has_encoder else [self.first_input] + self.target_ids()
        return self.bundle.target_tokenizer.decode(ids)

    # --- moving ---------------------------------------------------------------------------------
    @torch.inference_mode()
    def step(self, force: int | None = None) -> Step | None:
        """Produce the next token (or ``force`` it); None when decoding has finished."""
        if force is not None and not 0 <= int(force) < self.config.target_vocab_size:
            raise DecodingError(f"token id {force} is outside the vocabulary (0-{self.config.target_vocab_size - 1})")
        if self.finished:
            return None
        previous = self.steps[-1].token_id if self.steps else self.first_input
        if self.numpy_decoder is not None:
            cross_rows: np.ndarray | None
            self_rows: np.ndarray | None
            logits_array, self_rows, cross_rows = self.numpy_decoder.step(previous)
            logits = torch.from_numpy(logits_array)  # [V]
        else:
            hidden, self_weights, cross_weights = self.model.decode_step(torch.tensor([previous], device=self.device), self.cache)
            logits = self.model.logits(hidden[0]).float().cpu()  # [V]
            self_rows = (
                torch.stack(list(self_weights))[:, 0].float().cpu().numpy() if self_weights else None
            )  # [layers, heads, t + 1]
            cross_rows = (
                None if cross_weights is None else torch.stack(cross_weights)[:, 0].float().cpu().numpy()
            )  # [layers, heads, S]
        return self._add_step(logits, self_rows, cross_rows, force)

    def _add_step(
        self, logits: torch.Tensor, self_rows: np.ndarray | None, cross_rows: np.ndarray | None, force: int | None
    ) -> Step:
        """The step whose logits [V] and attention rows were computed: its token chosen (given, forced, the followed
        hypothesis's or the model's own choice), kept."""
        if self.suppressed:
            logits[self.suppressed] = float("-inf")
        probabilities = torch.softmax(logits, dim=-1)
        rng_state = self.generator.get_state() if self.options.strategy == "sample" else None
        if force is None and len(self.steps) < len(self.given):
            force = self.given[len(self.steps)]
        forced_by_caller = force is not None
        if force is None and self.hypothesis is not None:
            force = self.hypothesis[len(self.steps)]
        chosen = int(force) if force is not None else choose_token(logits, probabilities, self.options, self.generator)
        top = probabilities.topk(min(self.options.n_candidates, probabilities.numel()))
        step = Step(
            chosen,
            probabilities.numpy(),
            top.indices.numpy(),
            top.values.numpy(),
            self_rows,
            cross_rows,
            forced_by_caller,
            rng_state,
            self.bundle.target_tokenizer.pieces(top.indices.tolist()),
        )
        t = len(self.steps)
        if self_rows is not None:
            self._decoder_rows[:, :, t, : t + 1] = self_rows
        if cross_rows is not None:
            self._cross_rows[:, :, t] = cross_rows
        self.steps.append(step)
        return step

    @torch.inference_mode()
    def _decode_given(self) -> None:
        """Every given step in one pass of the model (``decode_steps``): its logits and attention rows at each position
        are those of the given steps one by one, and its cache holds them all."""
        inputs = torch.tensor([[self.first_input, *self.given[:-1]]], device=self.device)  # [1, n]
        hidden, self_weights, _ = cast(PromptNetwork, self.model).decode_steps(inputs, self.cache)  # [1, n, ...]
        logits = self.model.logits(hidden[0]).float().cpu()  # [n, V]
        rows = torch.stack(list(self_weights))[:, 0].float().cpu().numpy()  # [layers, heads, n, n]
        for t in range(len(self.given)):
            self._add_step(logits[t], rows[:, :, t, : t + 1], None, None)

    def back(self) -> bool:
        """Undo the last step; False at the start (a decoder-only model's prompt stays given)."""
        if len(self.steps) <= len(self.given):
            return False
        step = self.steps.pop()
        self.cache.truncate(len(self.steps))
        if self.numpy_decoder is not None:
            self.numpy_decoder.truncate(len(self.steps))
        if step.rng_state is not None:
            self.generator.set_state(step.rng_state)  # stepping forward again draws the same sample
        return True

    def jump(self, n_steps: int) -> None:
        """Go to the state after ``n_steps`` steps (as far as decoding goes)."""
        n_steps = max(len(self.given), n_steps)
        while len(self.steps) > n_steps and self.back():
            pass
        while len(self.steps) < n_steps and self.step() is not None:
            pass

    def reset(self) -> None:
        self.jump(0)

    def run(self) -> None:
        while self.step() is not None:
            pass

    def force(self, step_index: int, token_id: int) -> Step:
        """What-if: make step ``step_index`` (0-based) produce ``token_id``, going back or forward to it;
        later steps are dropped (call step() or run() to continue from it)."""
        if step_index < 0:
            raise DecodingError("steps are numbered from 1")
        if step_index < len(self.given):
            raise DecodingError(f"the first {len(self.given)} steps are the prompt's given tokens; force a step after them")
        self.jump(step_index)  # back, or forward by the model's own choices
        if len(self.steps) != step_index:
            raise DecodingError(f"decoding ended after {len(self.steps)} steps, before step {step_index + 1}")
        self.hypothesis, self.hypothesis_rank = None, None  # off the beam: on by the model's own choices
        step = self.step(force=token_id)
        if step is None:
            raise DecodingError(f"decoding ended before step {step_index + 1}")
        return step

    def token_id(self, token: str) -> int:
        """Id of a target piece or word typed by a user; a clear error if it is not one piece."""
        token_id = self.bundle.target_tokenizer.piece_to_id(token)
        if token_id is None:
            raise DecodingError(f"{token!r} is not a single piece of the target vocabulary")
        return token_id

    def follow_hypothesis(self, rank: int) -> None:
        """Step through the beam's hypothesis of this rank (0 = best) from the start."""
        if self.beam is None or not 0 <= rank < len(self.beam.hypotheses):
            raise DecodingError("no such beam hypothesis")
        self.reset()
        self.hypothesis = self.beam.token_ids(self.beam.hypotheses[rank])
        self.hypothesis_rank = rank

    # --- the trace --------------------------------------------------------------------------------
    def upcoming_candidates(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Before the first step: (ids [k], probabilities [k], pieces) of the distribution the first token will be
        chosen from; empty once a step was made or when decoding has finished. Made by one step and a
        step back, which restore the decoder cache, the sampler's RNG and the beam hypothesis followed."""
        empty: tuple[np.ndarray, np.ndarray, list[str]] = np.zeros(0, np.int64), np.zeros(0, np.float32), []
        if self.steps or self.finished:
            return empty
        step = self.step()
        if step is None:
            return empty
        self.back()
        return (step.candidate_ids.astype(np.int64), step.candidate_probabilities.astype(np.float32), list(step.candidate_tokens))

    def trace(self) -> Trace:
        tokenizer = self.bundle.target_tokenizer
        n = len(self.steps)
        next_ids, next_probabilities, next_tokens = self.upcoming_candidates()  # [k]; empty after step 0
        decoder_self = self._decoder_rows[:, :, :n, :n].copy() if self.has_decoder_self else None  # [layers, heads, n, n]
        cross = self._cross_rows[:, :, :n].copy() if self.has_cross else None  # [layers, heads, n, S]
        targets = self.target_ids()
        inputs = [self.first_input] + targets[:-1] if n else []
        width = min(self.options.n_candidates, self.config.target_vocab_size)
        candidate_ids = np.array([s.candidate_ids for s in self.steps], dtype=np.int64).reshape(n, width)
        return Trace(
            encoder_self=self.encoder_self,
            decoder_self=decoder_self,
            cross=cross,
            source_tokens=self.source_tokens,
            source_unknown=unknown_pieces(self.bundle.source_tokenizer, self.source_ids),
            target_tokens=tokenizer.pieces(targets),
            decoder_input_tokens=tokenizer.pieces(inputs),
            candidate_ids=candidate_ids,
            candidate_probabilities=np.array([s.candidate_probabilities for s in self.steps], dtype=np.float32).reshape(n, width),
            candidate_tokens=[list(s.candidate_tokens) for s in self.steps],
            chosen_ids=np.array(targets, dtype=np.int64),
            log_probabilities=np.array(
                [np.log(max(float(s.probabilities[s.token_id]), 1e-45)) for s in self.steps], dtype=np.float32
            ),
            forced=np.array([s.forced for s in self.steps], dtype=bool),
            next_candidate_ids=next_ids,
            next_candidate_probabilities=next_probabilities,
            next_candidate_tokens=next_tokens,
            target_vocab_size=self.config.target_vocab_size,
            n_given=len(self.given),
            **self._prediction_fields(),
            beam=self.beam,
            hypothesis_rank=self.hypothesis_rank,
            source_text=self.text,
            target_text=self.translation(),
            masked_heads=[str(head) for head in self.options.masked_heads],
        )

    def _prediction_fields(self) -> dict:
        """An encoder-only model's head output as Trace fields (none for other families)."""
        if self.predictions is None:
            return {}
        found = self.predictions
        return {
            "mask_positions": found.mask_positions,
            "mask_candidate_ids": found.mask_candidate_ids,
            "mask_candidate_probabilities": found.mask_candidate_probabilities,
            "mask_candidate_tokens": [self.bundle.target_tokenizer.pieces(row) for row in found.mask_candidate_ids],
            "class_names": list(found.class_names),
            "class_probabilities": found.class_probabilities,
        }


@torch.inference_mode()
def full_pass_trace(bundle: Bundle, source_ids: list[int], target_ids: list[int], first_input: int | None = None) -> Trace:
    """The trace of one teacher-forced inspection pass over source and produced target ids (the attention
    that incremental decoding must equal). A decoder-only model reads ``[first_input] + target_ids[:-1]``
    (its prompt's first token, then the rest); an encoder-only model reads the source alone."""
    model: Any = bundle.model
    config = bundle.config
    device = next(model.parameters()).device
    start = config.bos_id if first_input is None else first_input
    inputs = [start] + target_ids[:-1] if target_ids else []
    architecture = bundle.family.capabilities.architecture
    has_source = architecture.has_encoder
    source = torch.tensor([source_ids], device=device) if has_source else None
    target = torch.tensor([inputs], device=device) if architecture.has_decoder else None
    _, weights = model.inspect(source, target)

    def as_numpy(layers):  # [layers][1, heads, Q, K] -> [layers, heads, Q, K]; None for a kind the model lacks
        return torch.stack(layers)[:, 0].float().cpu().numpy() if layers else None

    return Trace(
        as_numpy(weights.encoder_self),
        as_numpy(weights.decoder_self),
        as_numpy(weights.cross),
        bundle.source_tokenizer.pieces(source_ids) if has_source else [],
        bundle.target_tokenizer.pieces(target_ids),
        bundle.target_tokenizer.pieces(inputs),
    )
