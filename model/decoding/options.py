"""How decoding chooses tokens (greedy, sampling, beam) and the errors a user's choices can cause."""

from __future__ import annotations

import math
from dataclasses import dataclass

from model.errors import UserError

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
    masked_heads: tuple = ()  # model.nn.masking.Head: heads knocked out (their outputs zeroed)

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
