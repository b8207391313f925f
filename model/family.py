"""The interface every model family implements, so the stepper, trainer, checkpoints and views work
with any of them: today's encoder-decoder Transformer (model/nn/transformer.py) is the first.

A family names the kinds of attention it has (``kinds``): an encoder-decoder Transformer all three, an
encoder-only model only ``AttentionKind.ENCODER``, a decoder-only model only ``AttentionKind.DECODER``, an
RNN encoder-decoder with attention only ``AttentionKind.CROSS`` (one layer, one head). Its ``architecture``
says how it reads and writes: "encoder-decoder" (encodes a source, then decodes step by step),
"encoder-only" (reads a text, its head labels it) or "decoder-only" (continues a prompt); a family that
does not say is taken from its kinds (``architecture_of``).
Its inspection pass and its decoding steps return the attention of those kinds only, and the Trace
it fills holds None for the others (model/decoding/trace.py), which views hide.

The methods, with the shapes they take and return (B sentences, S source and T target pieces):

- ``encode(source_ids [B, S], need_weights)`` -> (memory [B, S, d_model], padding mask, per-layer
  encoder self-attention [B, heads, S, S] when asked);
- ``start_cache(memory, mask)`` -> a cache that ``decode_step`` extends by one position per call;
- ``decode_step(token_ids [B], cache)`` -> (hidden [B, d_model], per-layer decoder self-attention rows
  [B, heads, t + 1], per-layer cross-attention rows [B, heads, S]);
- ``logits(hidden [..., d_model])`` -> [..., target vocabulary];
- ``inspect(source_ids, target_input_ids)`` -> (logits, ``AttentionWeights`` of every layer and kind) in
  one teacher-forced pass: the full-pass trace that incremental decoding must equal;
- ``config`` (its sizes, ``describe()``), ``parameter_count()``.

A ``ModelBundle`` (model/io/checkpoint.py) pairs a family's network with its tokenizers, corpus and
training history; the checkpoint records the family's name and refuses one it does not know.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

from model.kinds import AttentionKind


@runtime_checkable
class ModelFamily(Protocol):
    family: ClassVar[str]  # the name a checkpoint records ("transformer")
    kinds: ClassVar[tuple[AttentionKind, ...]]  # the kinds of attention it has
    config: Any  # its configuration: sizes, special ids (pad_id, bos_id, eos_id), max_len, describe()

    def encode(self, source_ids: Any, need_weights: bool = False) -> tuple[Any, Any, Any]: ...

    def start_cache(self, memory: Any, memory_mask: Any) -> Any: ...

    def decode_step(self, token_ids: Any, cache: Any) -> tuple[Any, Any, Any]: ...

    def logits(self, hidden: Any) -> Any: ...

    def inspect(self, source_ids: Any, target_input_ids: Any) -> tuple[Any, Any]: ...

    def parameter_count(self) -> int: ...


FAMILIES = ("transformer", "rnn", "classifier")  # the families a checkpoint may name
ARCHITECTURES = ("encoder-decoder", "encoder-only", "decoder-only")


def architecture_of(model: Any) -> str:
    """How a model reads and writes: its own ``architecture``, else what its kinds of attention imply."""
    declared = getattr(model, "architecture", None)
    if declared in ARCHITECTURES:
        return declared
    kinds = set(getattr(model, "kinds", tuple(AttentionKind)))
    if AttentionKind.CROSS in kinds or {AttentionKind.ENCODER, AttentionKind.DECODER} <= kinds:
        return "encoder-decoder"
    return "encoder-only" if AttentionKind.ENCODER in kinds else "decoder-only"
