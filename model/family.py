"""The one interface every model family implements, and the registry of families with what each can do.

A **family** is one registry entry (``Family``): its name (what a checkpoint records), its config and network
classes, the tasks it learns and its quality measure, the options a user can set (one schema read by the
command line, the Train form and the presets) and its ``Capabilities``. Code never compares family or
architecture names: it asks ``family_of(network).capabilities`` (or ``bundle.family.capabilities``) whether
something is possible. Adding a family is registering one entry (``register``), as a test does with a toy one.

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

A **bundle** (``Bundle``) pairs a network with its tokenizers and what it was trained on: ``ModelBundle``
(model/io/bundle.py) for the app's own families, ``PretrainedBundle`` (model/pretrained/loading.py) for a
Hugging Face folder.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from model.errors import UserError
from model.kinds import AttentionKind

if TYPE_CHECKING:  # the registry is read without PyTorch (the window starts before importing it)
    import torch


class Architecture(enum.Enum):
    """How a model reads and writes."""

    ENCODER_DECODER = "encoder-decoder"  # encodes a source, then decodes step by step
    ENCODER_ONLY = "encoder-only"  # reads a text; its head labels it (tags, a class, masked words)
    DECODER_ONLY = "decoder-only"  # continues a prompt

    @property
    def has_encoder(self) -> bool:
        return self is not Architecture.DECODER_ONLY

    @property
    def has_decoder(self) -> bool:
        return self is not Architecture.ENCODER_ONLY


class Positions(enum.Enum):
    """What a family's positional report shows (model/inspection/positional.py)."""

    TABLE = "table"  # an absolute table of its own (``positional_table``: sinusoidal or learned)
    RECURRENCE = "recurrence"  # none: a recurrence reads the pieces in order, so position is in its state
    PRETRAINED = "pretrained"  # whatever a pretrained model has (model/pretrained/positional.py)
    NONE = "none"  # no positional information at all

    def describe(self, config: Any) -> str:
        """The info panel's line: the table's kind, or why there is none."""
        if self is Positions.RECURRENCE:
            return "none: the recurrence carries the order"
        if self is Positions.NONE:
            return "none"
        return str(config.positional_encoding)  # an own table's kind, or what a pretrained model has


class QueriesKeys(enum.Enum):
    """Whether a family's attention has queries and keys that the neuron view (model/neuron/) reads."""

    OWN = "own"  # the app's own projections (its Transformers): read by running them again on what each attention read
    NOT_READ = "not read"  # a pretrained model's: it has them, but they are not read here (its scores add its own biases)
    NONE = "none"  # none: an RNN's attention scores a decoder state against the encoder's annotations

    def unavailable(self, title: str) -> str:
        """Why the neuron view cannot show a model of this family (``title``), or '' when it can."""
        if self is QueriesKeys.OWN:
            return ""
        if self is QueriesKeys.NOT_READ:
            return f"the neuron view reads the app's own Transformers' queries and keys, not this model's ({title})"
        return f"the neuron view is not available for this family ({title}): it has no queries and keys"


LOGIT_LENS, DECODER_LENS, LOGIT_ATTRIBUTION, PATCHING = "logit lens", "DecoderLens", "logit attribution", "patching"
INTERVENTION_TOOLS = (LOGIT_LENS, DECODER_LENS, LOGIT_ATTRIBUTION, PATCHING)  # model/interventions/'s tools


@dataclass(frozen=True)
class Capabilities:
    """What a family supports; every question code asks of a family is one of these fields."""

    architecture: Architecture
    kinds: tuple[AttentionKind, ...]  # the kinds of attention it has; its traces hold None for the others
    positions: Positions
    trainable: bool = False  # trained by this app and saved in its model files (a pretrained folder is not)
    labels: bool = False  # learns and predicts labels (tags, sentence classes) rather than a target text
    teacher_forced_scores: bool = True  # validation loss and accuracy by the app's own teacher-forced pass
    head_masking: bool = False  # heads can be knocked out (model/attribution/masking.py)
    head_importance: bool = False  # heads can be gated and scored (model/attribution/importance.py)
    contribution_measures: bool = False  # measures beyond raw attention (model/attribution/measures.py)
    numpy_engine: bool = False  # the NumPy decoding step (model/decoding/numpy_step.py) serves it on a CPU
    interventions: bool = False  # activations can be read and patched in its own forward pass (model/interventions/)
    # Which of INTERVENTION_TOOLS its hooked pass serves (when ``interventions``): the app's Transformer every one; a
    # pretrained encoder-decoder the logit lens and patching, hooked on the library's modules (a hooked pass of its
    # own would be needed for the parts of logit attribution and for DecoderLens's cached decoding from a layer).
    intervention_tools: tuple[str, ...] = INTERVENTION_TOOLS
    beam_search: bool = True  # beam search applies (an encoder-decoder's)
    queries_keys: QueriesKeys = QueriesKeys.NONE  # the neuron view reads its queries and keys (model/neuron/)
    # A source or target piece whose id is replaced by the pad id is hidden in place: masked as padding is, the other
    # pieces keeping their positions (the report card's perturbations, model/grading/scoring.py).
    hides_pieces: bool = False


@dataclass(frozen=True)
class ModelOption:
    """One option of a family's model, as the command line (``--flag``), the Train form and presets know it.

    ``dest`` is the command line's and the form's name for it (several families may declare the same one with
    the same meaning); ``fields`` the config fields it sets (``--layers`` sets two). A later option of a family
    overrides an earlier one that sets the same field."""

    dest: str  # "encoder_layers": --encoder-layers on the command line, the form's row
    fields: tuple[str, ...]  # the config fields it sets: ("n_encoder_layers",)
    label: str  # the form's label: "Encoder layers"
    type: type  # int, float, str or bool
    help: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: float = 1
    form: bool = True  # shown as a row of the Train form (--layers is a command-line shortcut only)
    flag_inverts: bool = False  # a bool option given as --no-<dest> (--no-tie-embeddings) sets False

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


@dataclass(frozen=True)
class Family:
    """One model family: everything the rest of the app needs to know about it."""

    name: str  # what a checkpoint records: "transformer"
    title: str  # what a person reads: "encoder-decoder Transformer"
    config_class: type
    # The network's class, or its dotted path ("model.nn.transformer.Transformer"): a path is imported only when a
    # network is built, so that the command line and the window read the registry without importing PyTorch.
    network: type | str
    capabilities: Capabilities
    tasks: tuple[str, ...] = ("translation",)  # what its corpora are for (model/data/corpora: a corpus's task)
    quality_measure: str = "BLEU"  # what validation keeps the best model by
    options: tuple[ModelOption, ...] = ()
    summary: Callable[[dict], str] | None = None  # one line describing model options ("2+2 layers, d_model 128…")
    # Its model options when a corpus's preset was made for another family that learns the same task (an RNN on
    # a corpus whose preset trains the Transformer): the corpus's tokenizer, data and time budget stay.
    default_model: dict = field(default_factory=dict)
    # Its positional report (model/inspection/positional.py: bundle, positions, largest offset -> PositionalReport or
    # None) when its positions are not an absolute table of its own.
    read_positions: Callable[[Any, int | None, int], Any] | None = None
    tip: str = ""  # one line for the Train form's family box
    label: str = ""  # the family box's item (the title, capitalised, when empty)

    @property
    def network_class(self) -> type:
        if isinstance(self.network, type):
            return self.network
        module, _, name = self.network.rpartition(".")
        return getattr(importlib.import_module(module), name)  # deferred on purpose: see ``network``

    def owns(self, cls: type) -> bool:
        """Whether ``cls`` is this family's network class (compared by name when it is declared by path)."""
        if isinstance(self.network, type):
            return cls is self.network
        return f"{cls.__module__}.{cls.__qualname__}" == self.network

    def option_dests(self) -> tuple[str, ...]:
        return tuple(option.dest for option in self.options)

    @property
    def form_label(self) -> str:
        """The Train form's name for the family: its label, else its title with a capital."""
        return self.label or self.title[:1].upper() + self.title[1:]

    def config_fields(self, given: dict[str, Any]) -> dict[str, Any]:
        """The config fields that option values (by ``dest``; None = not given) set. Where two options set one
        field, the more specific one (fewer fields) wins: ``--layers 2 --encoder-layers 3`` is 3 + 2 layers."""
        fields: dict[str, Any] = {}
        set_by: dict[str, ModelOption] = {}
        for option in sorted(self.options, key=lambda option: -len(option.fields)):  # stable: general ones first
            value = given.get(option.dest)
            if value is None:
                continue
            for name in option.fields:
                value_here = (not value) if option.flag_inverts else value
                earlier = set_by.get(name)
                if earlier is not None and len(earlier.fields) == len(option.fields) and fields[name] != value_here:
                    raise UserError(f"{earlier.flag} and {option.flag} both set {name}: give one of them")
                fields[name], set_by[name] = value_here, option
        return fields

    def build_config(
        self,
        options: dict,
        source_vocab_size: int,
        target_vocab_size: int,
        joint_vocab: bool = True,
        labels: tuple[str, list[str]] | None = None,
    ) -> Any:
        """Its config from model options and what the tokenizers and corpus fix: the vocabularies' sizes, and for a
        family that learns labels, ``labels`` = (its task, "tagging" or "sentence"; the class names)."""
        if self.capabilities.labels:
            fixed: dict[str, Any] = dict(vocab_size=source_vocab_size)
            if labels is not None:
                fixed.update(task=labels[0], class_names=list(labels[1]))
        else:
            fixed = dict(source_vocab_size=source_vocab_size, target_vocab_size=target_vocab_size, joint_vocab=joint_vocab)
        return self.config_class(**fixed, **options)

    def describe_options(self, options: dict) -> str:
        if self.summary is not None:
            return self.summary(options)
        return ", ".join(f"{name} {value}" for name, value in options.items())


class FamilyError(UserError):
    """A model family this version does not know."""


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Make ``family`` known by its name and its network class (registering the same entry again is a no-op)."""
    known = _FAMILIES.get(family.name)
    if known is not None and known != family:
        raise ValueError(f"a different family named {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    """Forget a family (a test's toy family, once the test is done)."""
    _FAMILIES.pop(name, None)


def family_named(name: str) -> Family:
    if name not in _FAMILIES:
        raise FamilyError(f"unknown model family {name!r}; choose one of {', '.join(trainable_family_names())}")
    return _FAMILIES[name]


def families() -> tuple[Family, ...]:
    return tuple(_FAMILIES.values())


def trainable_family_names() -> tuple[str, ...]:
    return tuple(family.name for family in _FAMILIES.values() if family.capabilities.trainable)


def family_of(network: Any) -> Family:
    """The family a network belongs to, by its class (a subclass belongs to its parent's family)."""
    for cls in type(network).__mro__:
        for family in _FAMILIES.values():
            if family.owns(cls):
                return family
    raise FamilyError(f"no model family has a network of type {type(network).__name__}")


def family_of_config(config: Any) -> Family:
    for family in _FAMILIES.values():
        if isinstance(config, family.config_class):
            return family
    raise FamilyError(f"no model family has a config of type {type(config).__name__}")


def suppressed_ids(config: Any) -> list[int]:
    """Tokens a model's generation never picks: a pretrained model's banned words (its generation config), none for the
    app's own families, whose configs have no such field."""
    return list(getattr(config, "suppressed_ids", ()))


def forced_first_id(config: Any) -> int | None:
    """The token a model's decoding must start with after BOS (a pretrained model's forced language token), if any."""
    return getattr(config, "forced_bos_id", None)


@dataclass
class AttentionWeights:
    """Probabilities of every layer and head: lists over layers of [B, H, queries, keys] (empty: the kind is absent)."""

    encoder_self: list[torch.Tensor] = field(default_factory=list)
    decoder_self: list[torch.Tensor] = field(default_factory=list)
    cross: list[torch.Tensor] = field(default_factory=list)


class NetworkConfig(Protocol):
    """What every family's config says (sizes and special ids under the app's names)."""

    pad_id: int
    bos_id: int
    eos_id: int
    max_len: int
    n_heads: int
    n_encoder_layers: int
    n_decoder_layers: int
    target_vocab_size: int

    def describe(self) -> str: ...

    def layer_summary(self) -> str: ...  # the info panel's line on its layers


class DecoderCache(Protocol):
    """A decoder's state after the positions fed so far; ``truncate(n)`` goes back to the first n."""

    def truncate(self, n_positions: int) -> None: ...


@runtime_checkable
class Network(Protocol):
    """A family's network (a ``torch.nn.Module``), as the stepper, trainer, checkpoints and views drive it."""

    @property
    def config(self) -> Any: ...  # a NetworkConfig, with the family's own fields beside

    def encode(
        self, source_ids: torch.Tensor, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None, Sequence[torch.Tensor]]: ...

    def start_cache(self, memory: torch.Tensor | None, memory_mask: torch.Tensor | None) -> Any: ...

    def decode_step(
        self, token_ids: torch.Tensor, cache: Any
    ) -> tuple[torch.Tensor, Sequence[torch.Tensor] | None, Sequence[torch.Tensor] | None]: ...

    def logits(self, hidden: torch.Tensor) -> torch.Tensor: ...

    def inspect(
        self, source_ids: torch.Tensor | None, target_input_ids: torch.Tensor | None
    ) -> tuple[torch.Tensor, AttentionWeights]: ...

    def parameter_count(self) -> int: ...

    def parameters(self, recurse: bool = True) -> Iterator[torch.nn.Parameter]: ...

    def eval(self) -> Any: ...


@runtime_checkable
class TrainableNetwork(Network, Protocol):
    """A network of a trainable family: a ``torch.nn.Module`` that the trainer steps and checkpoints save."""

    training: bool

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def state_dict(self) -> Any: ...

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> Any: ...

    def to(self, *args: Any, **kwargs: Any) -> Any: ...

    def train(self, mode: bool = True) -> Any: ...


class TextTokenizer(Protocol):
    """What the app asks of a tokenizer (model/data/tokenizer.py, model/pretrained/tokenizer.py)."""

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Any) -> str: ...

    def pieces(self, ids: Any) -> list[str]: ...

    def piece_to_id(self, piece: str) -> int | None: ...

    @property
    def unk_id(self) -> int: ...  # the unknown piece's id (-1 where there is none: a byte-level tokenizer)


@runtime_checkable
class Bundle(Protocol):
    """A network with its tokenizers and what it was trained on: the app's own (``ModelBundle``) or a pretrained
    folder's (``PretrainedBundle``)."""

    model: Network
    source_tokenizer: Any  # a TextTokenizer
    target_tokenizer: Any
    path: str | None
    corpus: Any  # model.data.corpora.CorpusSpec, or None when unknown
    history: dict
    training: dict

    @property
    def config(self) -> Any: ...

    @property
    def family(self) -> Family: ...

    @property
    def examples(self) -> list[str]: ...  # sentences that show it at its best ([] for the app's own)

    def source_ids(self, text: str) -> tuple[list[int], int, int]: ...

    def info(self) -> list[tuple[str, str]]: ...

    def describe(self) -> str: ...
