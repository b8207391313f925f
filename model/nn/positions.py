"""How the app's Transformer knows the order of its pieces: one registered scheme per way (issue 42).

* **sinusoidal** (the paper): PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same), added to the embeddings;
* **learned**: a table of ``max_len`` positions learned with the model, added likewise (it cannot place a piece past it);
* **rope** (rotary, Su et al. 2021): no table; each self-attention's queries and keys are turned, dimension pair
  (2i, 2i+1) by the angle pos · θ_i with θ_i = 10000^(-2i/d_k), so that q_i · k_j depends on the offset i − j only;
* **alibi** (Press et al., ICLR 2022): no table; each self-attention head h adds −m_h · |i − j| to its scores (the
  decoder's causal mask keeps j ≤ i), m_h the geometric sequence 2^(−8/H), 2^(−16/H), …;
* **relative** (T5, Raffel et al. 2020): no table; each self-attention head adds a learned bias per bucket of the
  offset (exact up to 8, logarithmic buckets up to 128; the encoder's buckets tell left from right), one table per stack
  shared by its layers;
* **none** (NoPE): nothing; a decoder's causal mask is its only source of order, and an encoder cannot tell orders apart.

Cross-attention carries no positions in any scheme (its keys are the encoder's output, which has them already or not).
The two absolute schemes are the model's ``positional_table`` (added to the embeddings); the others answer two questions
of a stack's self-attention (``StackPositions``): the queries and keys turned, a bias to add to the scores. The attention
asks them on every path (the fast one, the inspection one, the one-token steps), so every view reads what the model
computed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch
import torch.nn as nn

RELATIVE_BUCKETS, RELATIVE_MAX_DISTANCE = 32, 128  # T5's


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same angle). Computed in NumPy, so that it is
    a CPU tensor whatever device a network is built under (on the meta device, for its shapes, PyTorch's reference
    arange would import torch._dynamo, about a second of the app's start-up)."""
    positions = np.arange(max_len, dtype=np.float64)[:, None]  # [max_len, 1]
    frequencies = np.power(10000.0, -np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # [d_model/2]
    angles = positions * frequencies  # [max_len, d_model/2]
    table = np.zeros((max_len, d_model), dtype=np.float64)  # [max_len, d_model]
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return torch.from_numpy(table.astype(np.float32))


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's slopes [H]: 2^(−8/H · h) for h = 1..H when H is a power of two; otherwise those of the power of two
    below, then every other slope of the one above (the paper's rule)."""

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    below = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two(below)
    if below < n_heads:
        slopes += power_of_two(2 * below)[0::2][: n_heads - below]
    return torch.tensor(slopes, dtype=torch.float32)


def relative_buckets(offsets: torch.Tensor, bidirectional: bool, n_buckets: int = RELATIVE_BUCKETS) -> torch.Tensor:
    """T5's bucket of each offset key − query [Q, K] -> [Q, K] ints: half the buckets for each direction when
    ``bidirectional`` (else only the past: a later key's bucket is 0); in each, exact offsets up to half its buckets,
    then logarithmic up to RELATIVE_MAX_DISTANCE, the last bucket beyond."""
    buckets = torch.zeros_like(offsets)
    if bidirectional:
        n_buckets //= 2
        buckets = buckets + (offsets > 0).long() * n_buckets
        distance = offsets.abs()
    else:
        distance = (-offsets).clamp(min=0)
    exact = n_buckets // 2
    logarithmic = (
        exact
        + (torch.log(distance.float().clamp(min=1) / exact) / math.log(RELATIVE_MAX_DISTANCE / exact) * (n_buckets - exact)).long()
    )
    logarithmic = logarithmic.clamp(max=n_buckets - 1)
    return buckets + torch.where(distance < exact, distance, logarithmic)


class PositionScheme(nn.Module):
    """One way of knowing order (see the module's docstring); a subclass is registered with ``register_scheme``."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""  # what the Train form and the info panel say
    table: ClassVar[bool] = False  # an absolute table is added to the embeddings (the model's ``positional_table``)
    in_attention: ClassVar[bool] = False  # it turns self-attention's queries and keys or biases its scores
    rotates: ClassVar[bool] = False  # it turns queries and keys by their positions (``turn``)
    bias_words: ClassVar[str] = ""  # what its score bias is, in a few words (the neuron view's terms); '' without one

    def __init__(self, max_len: int, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.max_len, self.d_model, self.n_heads = max_len, d_model, n_heads

    def turn(self, x: torch.Tensor, start: int, back: bool = False) -> torch.Tensor:
        """Queries or keys [B, H, L, d_k] at positions start.. as self-attention reads them (turned by rope; ``back``:
        the turn undone)."""
        return x

    def bias_summary(self) -> str:
        """What its score bias is, in words (the Positional tab's summary); '' without one."""
        return ""

    def bias(self, stack: str, n_queries: int, n_keys: int, start: int) -> torch.Tensor | None:
        """What ``stack``'s self-attention adds to its scores [H, Q, K], queries at positions start.. and keys at 0..;
        None when nothing."""
        return None


SCHEMES: dict[str, type[PositionScheme]] = {}


def register_scheme(cls: type[PositionScheme]) -> type[PositionScheme]:
    """Make ``cls`` a scheme the Transformer can be built with, by its name."""
    SCHEMES[cls.name] = cls
    return cls


@register_scheme
class Sinusoidal(PositionScheme):
    """The paper's table (the model's ``positional_table``, a buffer: ``sinusoidal_table``)."""

    name, label, table = "sinusoidal", "Sinusoidal (the paper)", True


@register_scheme
class Learned(PositionScheme):
    """A table learned with the model (its ``positional_table``, a parameter: no position past ``max_len``)."""

    name, label, table = "learned", "Learned table", True


@register_scheme
class Rotary(PositionScheme):
    name, label, in_attention, rotates = "rope", "Rotary (RoPE)", True, True

    def angles(self, positions: torch.Tensor, d_k: int) -> torch.Tensor:
        """[L] positions -> the angle of each dimension pair [L, d_k / 2]: pos · 10000^(−2i/d_k)."""
        frequencies = torch.pow(10000.0, -torch.arange(0, d_k, 2, dtype=torch.float64, device=positions.device) / d_k)
        return positions.double()[:, None] * frequencies  # [L, d_k / 2]

    def turn(self, x: torch.Tensor, start: int, back: bool = False) -> torch.Tensor:
        positions = torch.arange(start, start + x.shape[-2], device=x.device)
        angles = self.angles(positions, x.shape[-1]) * (-1.0 if back else 1.0)  # [L, d_k / 2]
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]  # [B, H, L, d_k / 2] each
        turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # [B, H, L, d_k / 2, 2]
        return turned.flatten(-2)  # [B, H, L, d_k]


def _offsets(n_queries: int, n_keys: int, start: int, device: torch.device | None = None) -> torch.Tensor:
    """key − query position [Q, K], queries at start.., keys at 0.."""
    queries = torch.arange(start, start + n_queries, device=device)[:, None]
    return torch.arange(n_keys, device=device)[None, :] - queries  # [Q, K]


@register_scheme
class ALiBi(PositionScheme):
    name, label, in_attention = "alibi", "ALiBi (linear biases)", True
    bias_words = "ALiBi's −m_h·|i − j| (a fixed slope per head)"
    slopes: torch.Tensor

    def __init__(self, max_len: int, d_model: int, n_heads: int) -> None:
        super().__init__(max_len, d_model, n_heads)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def bias_summary(self) -> str:
        slopes = ", ".join(f"1/{1 / float(m):g}" for m in self.slopes)
        return (
            f"ALiBi adds no position vector to the embeddings: each of the {self.n_heads} heads of every self-attention "
            f"adds −m·|key − query| to its scores, with the slopes m = {slopes} (the paper's geometric sequence)."
        )

    def bias(self, stack: str, n_queries: int, n_keys: int, start: int) -> torch.Tensor:
        distance = _offsets(n_queries, n_keys, start, self.slopes.device).abs()  # [Q, K]: the decoder's mask keeps j <= i
        return -self.slopes[:, None, None] * distance  # [H, Q, K]


@register_scheme
class RelativeBias(PositionScheme):
    name, label, in_attention = "relative", "Relative bias (T5)", True
    bias_words = "the bias the model learned for the bucket of the offset (T5's buckets)"

    def __init__(self, max_len: int, d_model: int, n_heads: int) -> None:
        super().__init__(max_len, d_model, n_heads)
        self.encoder_table = nn.Embedding(RELATIVE_BUCKETS, n_heads)  # per bucket of the offset, per head
        self.decoder_table = nn.Embedding(RELATIVE_BUCKETS, n_heads)

    def bias_summary(self) -> str:
        return (
            f"A learned relative bias (T5's) and no position vector: each of the {self.n_heads} heads adds the bias it "
            "learned for the bucket of the distance key − query (exact up to 8, logarithmic up to 128; the encoder's "
            "buckets tell left from right), the same in every layer."
        )

    def bias(self, stack: str, n_queries: int, n_keys: int, start: int) -> torch.Tensor:
        table = self.encoder_table if stack == "encoder" else self.decoder_table
        offsets = _offsets(n_queries, n_keys, start, table.weight.device)  # [Q, K]
        buckets = relative_buckets(offsets, bidirectional=stack == "encoder")  # [Q, K]
        return table(buckets).permute(2, 0, 1)  # [H, Q, K]


@register_scheme
class NoPositions(PositionScheme):
    name, label = "none", "None (NoPE)"


class StackPositions:
    """What one stack's self-attention asks of the model's scheme (not a module: the scheme's parameters belong to the
    model once, not to every attention that reads them)."""

    def __init__(self, scheme: PositionScheme, stack: str) -> None:
        self._scheme = [scheme]  # a list, so that nn.Module does not take it for a submodule of the attention
        self.stack = stack

    @property
    def scheme(self) -> PositionScheme:
        return self._scheme[0]

    def turn(self, q: torch.Tensor, k: torch.Tensor, q_start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries [B, H, Q, d_k] at q_start.., keys [B, H, K, d_k] at (K − Q + q_start).. (a step's new key is the
        query's own position)."""
        k_start = q_start + q.shape[-2] - k.shape[-2]
        return self.scheme.turn(q, q_start), self.scheme.turn(k, k_start)

    def bias(self, n_queries: int, n_keys: int, q_start: int) -> torch.Tensor | None:
        return self.scheme.bias(self.stack, n_queries, n_keys, q_start)


def build_scheme(name: str, max_len: int, d_model: int, n_heads: int) -> PositionScheme:
    """The scheme ``name`` for a model of these sizes."""
    return SCHEMES[name](max_len, d_model, n_heads)
