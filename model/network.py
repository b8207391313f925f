"""What every family's network, config and tokenizers answer to: the protocols the stepper, trainer, checkpoints and
views drive (model/family.py's registry says which family a network is and what it can do).

A **network** (``Network``) is what the stepper, trainer, checkpoints and views drive. With B sentences, S source
and T target pieces:

- ``encode(source_ids [B, S], need_weights)`` -> (memory [B, S, d_model], padding mask or None, per-layer encoder
  self-attention [B, heads, S, S] when asked);
- ``start_cache(memory, mask)`` -> a cache that ``decode_step`` extends by one position per call;
- ``decode_step(token_ids [B], cache)`` -> (hidden [B, d_model], per-layer decoder self-attention rows
  [B, heads, t + 1] or None, per-layer cross-attention rows [B, heads, S] or None);
- ``logits(hidden [..., d_model])`` -> [..., target vocabulary];
- ``inspect(source_ids, target_input_ids)`` -> (logits, ``AttentionWeights`` of every layer and kind) in one
  teacher-forced pass: the full-pass trace that incremental decoding must equal;
- an encoder-only network also has ``predictions(memory, source_ids, k)``: its head's reading of the text.

A network of a trainable family (``TrainableNetwork``) is also a ``torch.nn.Module`` that the trainer steps and
checkpoints save; what the trainer calls is its ``forward``: an encoder-decoder's (``TeacherForcedNetwork``) reads
``(source_ids [B, S], target_input_ids [B, T], rows=None)`` and gives the hidden states [B, T, d_model] (or [N, d_model]
for only the positions ``rows`` names: training passes the real ones); a labelling one's (``LabellingNetwork``, a family
whose capabilities say ``labels``) reads ``source_ids [B, S]`` and gives class scores [B, S, C] or [B, C]. Its config
(``TrainableConfig``) is built from the family's own options (``Family.build_config``) and saved by ``to_dict``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from model.kinds import AttentionKind

if TYPE_CHECKING:  # read without PyTorch (the window starts before importing it)
    import torch
    from typing_extensions import Self


@dataclass
class AttentionWeights:
    """Probabilities of every layer and head: lists over layers of [B, H, queries, keys] (empty: the kind is absent)."""

    encoder_self: list[torch.Tensor] = field(default_factory=list)
    decoder_self: list[torch.Tensor] = field(default_factory=list)
    cross: list[torch.Tensor] = field(default_factory=list)


class NetworkConfig(Protocol):
    """What every family's config says (sizes and special ids under the app's names); a family's own fields beside."""

    @property
    def pad_id(self) -> int: ...

    @property
    def bos_id(self) -> int: ...

    @property
    def eos_id(self) -> int: ...

    @property
    def max_len(self) -> int: ...  # the longest sequence in pieces, BOS and EOS included

    @property
    def d_model(self) -> int: ...

    @property
    def n_heads(self) -> int: ...

    @property
    def n_encoder_layers(self) -> int: ...

    @property
    def n_decoder_layers(self) -> int: ...

    @property
    def source_vocab_size(self) -> int: ...

    @property
    def target_vocab_size(self) -> int: ...

    def describe(self) -> str: ...


def stack_layers(config: NetworkConfig, stack: str) -> int:
    """The layers of a network's "encoder" or "decoder" stack (a kind's: ``AttentionKind.stack``)."""
    return {"encoder": config.n_encoder_layers, "decoder": config.n_decoder_layers}[stack]


class TrainableConfig(NetworkConfig, Protocol):
    """The config of a trainable family: built from its options (``Family.build_config``), saved in a model file."""

    def layer_summary(self) -> str: ...  # the info panel's line on its layers

    def to_dict(self) -> dict[str, Any]: ...  # its fields as JSON values; the config class's ``from_dict`` reads them


class LabellingConfig(TrainableConfig, Protocol):
    """The config of a family that learns labels: its task ("tagging" or "sentence") and its classes' names."""

    @property
    def task(self) -> str: ...

    @property
    def class_names(self) -> list[str]: ...


class TableConfig(Protocol):
    """The config of a family whose positions are a table of its own (or a pretrained model's)."""

    positional_encoding: str


class DecoderCache(Protocol):
    """A decoder's state after the positions fed so far; ``truncate(n)`` goes back to the first n; ``select(rows)``
    keeps the batch rows given, in that order (beam search's hypotheses)."""

    def truncate(self, n_positions: int) -> None: ...

    def select(self, rows: torch.Tensor) -> DecoderCache: ...


class Rows(Protocol):
    """The positions of a padded batch a teacher-forced pass computes (model/nn/packing.py's ``PackedRows``)."""

    def pack(self, padded: torch.Tensor) -> torch.Tensor: ...  # [B, T, C] -> [N, C]


@runtime_checkable
class Network(Protocol):
    """A family's network (a ``torch.nn.Module``), as the stepper, trainer, checkpoints and views drive it."""

    @property
    def config(self) -> NetworkConfig: ...

    def encode(
        self, source_ids: torch.Tensor, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None, Sequence[torch.Tensor]]: ...

    def logits(self, hidden: torch.Tensor) -> torch.Tensor: ...

    def inspect(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> tuple[torch.Tensor, AttentionWeights]: ...

    def parameter_count(self) -> int: ...

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...

    def eval(self) -> Network: ...  # itself, in inference mode (a torch.nn.Module's eval)

    def module_tree(self) -> torch.nn.Module: ...  # the modules its parameters are in (itself, or the library's model)


class HeadMaskingNetwork(Network, Protocol):
    """A network whose heads can be knocked out and gated (its family's capabilities say ``head_masking``): each
    attention's output projection W^O [d_model, H * d_k], whose columns h·d_k … (h+1)·d_k carry head h's output."""

    # The module W^O belongs to (layer from 0): a pre-hook on it sees the heads' contexts [..., H * d_k] side by side
    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Module: ...

    # W^O [d_model, H * d_k] itself, as a view of the projection's weight (GPT-2's Conv1D stores its transpose)
    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor: ...

    def head_count(self, kind: AttentionKind) -> int: ...  # the heads of each attention of ``kind``


@runtime_checkable
class DecodingNetwork(Network, Protocol):
    """A network with a decoder (an encoder-decoder or a decoder-only one): the stepper feeds it one token at a time."""

    def start_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor | None) -> DecoderCache: ...

    # ``cache`` is what this network's ``start_cache`` gave (each family's own DecoderCache class).
    def decode_step(
        self, token_ids: torch.Tensor, cache: Any
    ) -> tuple[torch.Tensor, Sequence[torch.Tensor] | None, Sequence[torch.Tensor] | None]: ...


class PromptNetwork(DecodingNetwork, Protocol):
    """A decoder-only network that reads its prompt in one pass (its family's capabilities say ``prompt_in_one_pass``):
    ``decode_steps`` feeds tokens [B, n] through its cache at once -> (outputs [B, n, ...] that ``logits`` reads,
    per layer the new rows of self-attention [B, H, n, past + n], None)."""

    def decode_steps(self, token_ids: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Sequence[torch.Tensor], None]: ...

    def start_cache(self, memory: torch.Tensor | None = None, memory_mask: torch.Tensor | None = None) -> Any: ...  # no memory

    def start_padded_cache(self, padding: torch.Tensor) -> Any: ...  # prompts left-padded: padding [B, P], 1 for a piece


@runtime_checkable
class TextReadingNetwork(Network, Protocol):
    """An encoder-only network as the report card reads it (model/grading/text_cases.py): its head on a text with pieces
    hidden in place, and where a sentence head reads."""

    # text [B, S] with the pieces where keep [B, S] is False hidden -> head scores [B, S, C] or [B, C]; None: no head
    def masked_logits(self, source_ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor | None: ...

    def sentence_rows(self, length: int) -> list[int]: ...  # the positions a sentence head reads (their mean)


class TrainableNetwork(Network, Protocol):
    """A network of a trainable family: a ``torch.nn.Module`` that the trainer steps and checkpoints save. What the
    trainer calls is ``TeacherForcedNetwork``'s ``forward`` (an encoder-decoder) or ``LabellingNetwork``'s (a family
    that learns labels)."""

    training: bool

    @property
    def config(self) -> TrainableConfig: ...

    def state_dict(self) -> dict[str, torch.Tensor]: ...  # parameter and buffer names -> tensors

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True, assign: bool = False) -> object: ...

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, torch.nn.Parameter]]: ...

    def to(self, device: torch.device | str) -> Self: ...  # moved to a device (torch.nn.Module.to)

    def eval(self) -> Self: ...

    def train(self, mode: bool = True) -> Self: ...


RowsT = TypeVar("RowsT", bound=Rows, contravariant=True)  # what a network takes as ``rows``: PackedRows


@runtime_checkable
class TeacherForcedNetwork(TrainableNetwork, DecodingNetwork, Protocol[RowsT]):
    """A trainable encoder-decoder: the trainer's teacher-forced pass gives the hidden states of every target position
    (``logits`` turns them into scores). ``rows`` (``TeacherForcedNetwork[PackedRows]``) names the positions to compute;
    it packs [B, T, C] into [N, C] as ``Rows`` says."""

    def forward(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, rows: RowsT | None = None) -> torch.Tensor:
        """[B, S], [B, T] -> hidden states [B, T, d_model], or [N, d_model] for only the positions in ``rows``."""
        ...

    def __call__(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, rows: RowsT | None = None) -> torch.Tensor: ...


@runtime_checkable
class LabellingNetwork(TrainableNetwork, Protocol):
    """A trainable network of a family that learns labels (tags, sentence classes)."""

    @property
    def config(self) -> LabellingConfig: ...

    def forward(self, source_ids: torch.Tensor) -> torch.Tensor:
        """[B, S] -> class scores [B, S, C] (a tag per position) or [B, C] (a class per sentence)."""
        ...

    def __call__(self, source_ids: torch.Tensor) -> torch.Tensor: ...


class TextTokenizer(Protocol):
    """What the app asks of a tokenizer (model/data/tokenizer.py, model/pretrained/tokenizer.py)."""

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def pieces(self, ids: Sequence[int]) -> list[str]: ...

    def piece(self, piece_id: int) -> str: ...

    def piece_to_id(self, piece: str) -> int | None: ...

    @property
    def unk_id(self) -> int: ...  # the unknown piece's id (-1 where there is none: a byte-level tokenizer)
