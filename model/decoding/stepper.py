"""Step-by-step decoding with a complete attention trace, for people watching a model translate.

A Stepper encodes the source once, then advances one target token per ``step()`` through the
decoder's key/value cache, recording at each step the distribution over the next token, its top
candidates, and the new rows of decoder self-attention and cross-attention of every layer and head.
It can go back, jump to any step, reset, and force any token at any step (what-if), then carry on.
Strategies: greedy, sampling (temperature, top-k, top-p, seed) and beam search (its tree is kept
and any hypothesis can be stepped through).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from model.data.batching import encode_source
from model.decoding.beam import BeamTree, beam_search
from model.decoding.greedy import default_max_target
from model.decoding.numpy_step import NumpyDecoder
from model.decoding.trace import Trace
from model.errors import UserError
from model.io.checkpoint import ModelBundle

STRATEGIES = ("greedy", "sample", "beam")
TEMPERATURE_RANGE = (0.01, 100.0)  # beyond these, logits / T overflows or every token is equally likely
MAX_SEED = 2**63 - 1  # the largest seed torch.Generator.manual_seed takes


class DecodingError(UserError):
    """An input or option that decoding cannot use; the message says why."""


@dataclass
class DecodingOptions:
    strategy: str = "greedy"  # greedy, sample or beam
    temperature: float = 1.0  # sampling: < 1 sharpens, > 1 flattens
    top_k: int = 0  # sampling: only the k most likely tokens (0 = all)
    top_p: float = 1.0  # sampling: the smallest set with this much probability (nucleus)
    seed: int = 0  # sampling
    beam_width: int = 4
    length_penalty: float = 0.6  # beam: GNMT alpha
    max_steps: int | None = None  # at most this many target tokens (EOS included); default from the source
    n_candidates: int = 10  # candidates kept per step for display
    stop_at_eos: bool = True  # benchmarks turn this off to decode a fixed length
    engine: str = "auto"  # "numpy" (one sentence on the CPU, least overhead), "torch", or auto

    def validate(self) -> None:
        """Raise a DecodingError naming the first option that cannot be used."""
        if self.strategy not in STRATEGIES:
            raise DecodingError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if not (math.isfinite(self.temperature) and TEMPERATURE_RANGE[0] <= self.temperature <= TEMPERATURE_RANGE[1]):
            raise DecodingError(
                f"temperature must be between {TEMPERATURE_RANGE[0]} and {TEMPERATURE_RANGE[1]}, got {self.temperature}"
            )
        if not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise DecodingError(f"top-p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise DecodingError(f"top-k must be 0 (every token) or more, got {self.top_k}")
        if self.beam_width < 1:
            raise DecodingError(f"beam width must be at least 1, got {self.beam_width}")
        if self.n_candidates < 1:
            raise DecodingError(f"candidates must be at least 1, got {self.n_candidates}")
        if not (math.isfinite(self.length_penalty) and self.length_penalty >= 0):
            raise DecodingError(f"the beam length penalty (alpha) must be a number >= 0, got {self.length_penalty}")
        if self.max_steps is not None and self.max_steps < 1:
            raise DecodingError(f"max steps must be at least 1, got {self.max_steps}")
        if not 0 <= self.seed <= MAX_SEED:
            raise DecodingError(f"seed must be between 0 and {MAX_SEED}, got {self.seed}")
        if self.engine not in ("auto", "numpy", "torch"):
            raise DecodingError(f"engine must be auto, numpy or torch, got {self.engine!r}")


@dataclass
class Step:
    token_id: int  # the token this step produced
    probabilities: np.ndarray  # [V] distribution it was chosen from (before sampling filters)
    candidate_ids: np.ndarray  # [k] most likely tokens, best first
    candidate_probabilities: np.ndarray  # [k]
    decoder_self: np.ndarray  # [layers, heads, t + 1] the new row of each head
    cross: np.ndarray  # [layers, heads, S]
    forced: bool
    rng_state: torch.Tensor | None = field(default=None, repr=False)  # sampler state before this step
    candidate_tokens: list[str] = field(default_factory=list)  # [k] pieces of candidate_ids (made once)


class Stepper:
    def __init__(self, bundle: ModelBundle, text: str, options: DecodingOptions | None = None):
        self.bundle, self.model, self.config = bundle, bundle.model, bundle.config
        self.options = options or DecodingOptions()
        self.options.validate()
        if not isinstance(text, str) or not text.strip():
            raise DecodingError("the source sentence is empty: type something to translate")
        self.messages: list[str] = []
        self.text = text
        self.source_ids, n_pieces = encode_source(bundle.source_tokenizer, text, self.config)
        if n_pieces == 0:
            raise DecodingError("the source sentence has nothing the tokenizer can read")
        if n_pieces > len(self.source_ids) - 1:
            kept = len(self.source_ids) - 1
            self.messages.append(
                f"the sentence has {n_pieces} pieces; this model reads at most {kept}, so it was cut after piece {kept}"
            )
        self.device = next(self.model.parameters()).device
        self.source = torch.tensor([self.source_ids], device=self.device)
        self.model.eval()
        with torch.inference_mode():
            memory, memory_mask, weights = self.model.encode(self.source, need_weights=True)
            self.cache = self.model.start_cache(memory, memory_mask)
        self.encoder_self = torch.stack(weights)[:, 0].float().cpu().numpy()  # [layers, heads, S, S]
        use_numpy = self.options.engine == "numpy" or (self.options.engine == "auto" and self.device.type == "cpu")
        self.numpy_decoder = NumpyDecoder(self.model, self.cache) if use_numpy else None
        limit = default_max_target(len(self.source_ids), self.config.max_len) - 1
        self.max_steps = min(self.options.max_steps or limit, self.config.max_len - 1)
        self.steps: list[Step] = []
        heads = self.encoder_self.shape[1]
        # Every step's new attention rows, kept in place so that trace() copies slices instead of
        # assembling 6 x 8 x T x T arrays from T pieces at every step (np.zeros leaves untouched pages free).
        self._decoder_rows = np.zeros(
            (self.config.n_decoder_layers, heads, self.max_steps, self.max_steps), np.float32
        )  # [layers, heads, step, key]
        self._cross_rows = np.zeros(
            (self.config.n_decoder_layers, heads, self.max_steps, len(self.source_ids)), np.float32
        )  # [layers, heads, step, source]
        self.generator = torch.Generator().manual_seed(self.options.seed)
        self.beam: BeamTree | None = None
        self.hypothesis: list[int] | None = None  # tokens the steps follow (beam search)
        self.hypothesis_rank: int | None = None  # which of the beam's hypotheses (0 = best)
        if self.options.strategy == "beam":
            self.beam = beam_search(
                self.model, self.source, self.options.beam_width, self.options.length_penalty, self.max_steps + 1
            )
            self.beam.pieces = bundle.target_tokenizer.pieces([node.token_id for node in self.beam.nodes])
            self.follow_hypothesis(0)

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
        return self.bundle.source_tokenizer.pieces(self.source_ids)

    def target_ids(self) -> list[int]:
        return [s.token_id for s in self.steps]

    def translation(self) -> str:
        return self.bundle.target_tokenizer.decode(self.target_ids())

    # --- moving ---------------------------------------------------------------------------------
    @torch.inference_mode()
    def step(self, force: int | None = None) -> Step | None:
        """Produce the next token (or ``force`` it); None when decoding has finished."""
        if force is not None and not 0 <= int(force) < self.config.target_vocab_size:
            raise DecodingError(f"token id {force} is outside the vocabulary (0-{self.config.target_vocab_size - 1})")
        if self.finished:
            return None
        previous = self.steps[-1].token_id if self.steps else self.config.bos_id
        if self.numpy_decoder is not None:
            logits_array, self_rows, cross_rows = self.numpy_decoder.step(previous)
            logits = torch.from_numpy(logits_array)  # [V]
        else:
            hidden, self_weights, cross_weights = self.model.decode_step(torch.tensor([previous], device=self.device), self.cache)
            logits = self.model.logits(hidden[0]).float().cpu()  # [V]
            self_rows = torch.stack(self_weights)[:, 0].float().cpu().numpy()  # [layers, heads, t + 1]
            cross_rows = torch.stack(cross_weights)[:, 0].float().cpu().numpy()  # [layers, heads, S]
        probabilities = torch.softmax(logits, dim=-1)
        rng_state = self.generator.get_state() if self.options.strategy == "sample" else None
        forced_by_caller = force is not None
        if force is None and self.hypothesis is not None:
            force = self.hypothesis[len(self.steps)]
        chosen = int(force) if force is not None else self._choose(logits, probabilities)
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
        self._decoder_rows[:, :, t, : t + 1] = self_rows
        self._cross_rows[:, :, t] = cross_rows
        self.steps.append(step)
        return step

    def _choose(self, logits: torch.Tensor, probabilities: torch.Tensor) -> int:
        options = self.options
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
        return int(torch.multinomial(distribution, 1, generator=self.generator))

    def back(self) -> bool:
        """Undo the last step; False at the start."""
        if not self.steps:
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
        n_steps = max(0, n_steps)
        while len(self.steps) > n_steps:
            self.back()
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
        decoder_self = self._decoder_rows[:, :, :n, :n].copy()  # [layers, heads, n, n]; later keys are 0
        cross = self._cross_rows[:, :, :n].copy()  # [layers, heads, n, S]
        targets = self.target_ids()
        inputs = [self.config.bos_id] + targets[:-1] if n else []
        width = min(self.options.n_candidates, self.config.target_vocab_size)
        candidate_ids = np.array([s.candidate_ids for s in self.steps], dtype=np.int64).reshape(n, width)
        return Trace(
            encoder_self=self.encoder_self,
            decoder_self=decoder_self,
            cross=cross,
            source_tokens=self.source_tokens,
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
            beam=self.beam,
            hypothesis_rank=self.hypothesis_rank,
            source_text=self.text,
            target_text=self.translation(),
        )


@torch.inference_mode()
def full_pass_trace(bundle: ModelBundle, source_ids: list[int], target_ids: list[int]) -> Trace:
    """The trace of one teacher-forced inspection pass over source and produced target ids."""
    model, config = bundle.model, bundle.config
    device = next(model.parameters()).device
    inputs = [config.bos_id] + target_ids[:-1]
    _, weights = model.inspect(torch.tensor([source_ids], device=device), torch.tensor([inputs], device=device))

    def as_numpy(layers):  # [layers][1, heads, Q, K] -> [layers, heads, Q, K]
        return torch.stack(layers)[:, 0].float().cpu().numpy()

    return Trace(
        as_numpy(weights.encoder_self),
        as_numpy(weights.decoder_self),
        as_numpy(weights.cross),
        bundle.source_tokenizer.pieces(source_ids),
        bundle.target_tokenizer.pieces(target_ids),
        bundle.target_tokenizer.pieces(inputs),
    )
