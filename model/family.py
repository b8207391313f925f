"""The one interface every model family implements, and the registry of families with what each can do.

A **family** is one registry entry (``Family``): its name (what a checkpoint records), its config and network
classes, the tasks it learns and its quality measure, the options a user can set (one schema read by the
command line, the Train form and the presets) and its ``Capabilities``. Code never compares family or
architecture names: it asks ``family_of(network).capabilities`` (or ``bundle.family.capabilities``) whether
something is possible, and ``capabilities_of(network)`` what a tool may do with that network (one entry may hold
layouts that differ in what its code serves: a pretrained encoder-decoder's hooked pass serves T5, not mBART).
Adding a family is registering one entry (``register``), as a test does with a toy one.

A **network** answers to model/network.py's protocols (``Network``, ``DecodingNetwork``, ``TrainableNetwork``...).

A **bundle** (``Bundle``) pairs a network with its tokenizers and what it was trained on: ``ModelBundle``
(model/io/bundle.py) for the app's own families, ``PretrainedBundle`` (model/pretrained/loading.py) for a
Hugging Face folder.

The registry holds the app's own families from the first question asked of it (``family_named``, ``families``,
``family_of``...): it imports their module (model/nn/registry.py, which imports no PyTorch) itself, so no caller has to
import ``model.nn`` first. A pretrained adapter's entry is registered by its module (model/pretrained/families.py),
which the code that opens a pretrained folder imports (model/pretrained/loading.py); a test registers its own
(``register``).
"""

from __future__ import annotations

import enum
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from model.errors import UserError
from model.kinds import AttentionKind, ShownName
from model.network import Network, NetworkConfig, TableConfig, TextTokenizer, TrainableConfig

if TYPE_CHECKING:  # the registry is read without PyTorch (the window starts before importing it)
    pass

# The modules that register the app's own families, imported by the registry on its first question (by name: they sit
# above this module, and reading them imports no PyTorch).
BUILTIN_FAMILY_MODULES = ("model.nn.registry",)


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

    def describe(self, config: NetworkConfig) -> str:
        """The info panel's line: the table's kind, or why there is none."""
        if self is Positions.RECURRENCE:
            return "none: the recurrence carries the order"
        if self is Positions.NONE:
            return "none"
        return str(cast(TableConfig, config).positional_encoding)  # an own table's kind, or what a pretrained model has


class QueriesKeys(enum.Enum):
    """Whether a family's attention has queries and keys that the neuron view (model/neuron/) reads."""

    OWN = "own"  # the app's own projections (its Transformers): read by running them again on what each attention read
    HOOKED = "hooked"  # a Hugging Face encoder-decoder's: read at its hooked pass's points, on the library's forward
    DECODER = "decoder"  # a Hugging Face decoder-only model's: read by hooks on its projections, on the library's forward
    ENCODER = "encoder"  # a Hugging Face encoder-only model's: likewise (BERT, RoBERTa, DistilBERT)
    NOT_READ = "not read"  # a pretrained model's: it has them, but they are not read here (its scores add its own biases)
    NONE = "none"  # none: an RNN's attention scores a decoder state against the encoder's annotations

    def unavailable(self, title: str) -> str:
        """Why the neuron view cannot show a model of this family (``title``), or '' when it can."""
        if self in (QueriesKeys.OWN, QueriesKeys.HOOKED, QueriesKeys.DECODER, QueriesKeys.ENCODER):
            return ""
        if self is QueriesKeys.NOT_READ:
            return (
                f"the neuron view reads the queries and keys of the app's own Transformers and of the Hugging Face "
                f"layouts whose modules are known, not yet this model's ({title})"
            )
        return f"the neuron view is not available for this family ({title}): it has no queries and keys"


class Objective(enum.Enum):
    """What a family's model is scored on: the loss head importance differentiates and what its pruning curve scores
    (model/attribution/objectives.py)."""

    TRANSLATION = "translation"  # a reference translation, teacher-forced; greedy translations scored
    LANGUAGE_MODEL = "language model"  # each piece of a text from the ones before it
    MASKED_LANGUAGE_MODEL = "masked language model"  # pieces of a text masked, each read back
    LABELS = "labels"  # a classifier's labels (a tag per word, a class per sentence)
    DECISIONS = "decisions"  # a classification head's own decisions, where no labels of its classes are known


class InterventionTool(ShownName):
    """One of model/interventions/'s tools; its value is the name shown and saved (a str: "logit lens")."""

    LOGIT_LENS = "logit lens"
    DECODER_LENS = "DecoderLens"
    LOGIT_ATTRIBUTION = "logit attribution"
    PATCHING = "patching"
    CIRCUITS = "circuits"


INTERVENTION_TOOLS = tuple(InterventionTool)  # every tool, in the order the window shows them


def declared(path: str) -> Any:
    """What a registry entry names by dotted path ("model.nn.transformer.Transformer", a hooked pass's function),
    imported when asked: the modules that hold them sit above this one."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


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
    objective: Objective | None = None  # what it is scored on (head importance's loss, the pruning curve's scores)
    numpy_engine: bool = False  # the NumPy decoding step (model/decoding/numpy_step.py) serves it on a CPU
    # Its hooked pass (model/interventions/hooked.py): the dotted path of a function network -> the adapter that runs
    # that network's own forward pass with named hook points and says which of INTERVENTION_TOOLS it serves, or None for
    # a network it does not hook (a pretrained layout without one); imported when a tool asks. None: no network of the
    # family can be read and patched (``interventions``). Where it depends on the layout, the family's
    # ``layout_capabilities`` keep it only for the networks it serves: ask ``capabilities_of(network)``.
    hooked_pass: str | None = None
    beam_search: bool = True  # beam search applies (an encoder-decoder's)
    queries_keys: QueriesKeys = QueriesKeys.NONE  # the neuron view reads its queries and keys (model/neuron/)
    prompt_in_one_pass: bool = False  # a decoder-only network reads its prompt in one pass (model.network.PromptNetwork)
    # A source or target piece can be hidden in place: masked as padding is (its id replaced by the pad id; a
    # decoder-only model's by the attention mask), the other pieces keeping their positions (the report card's
    # perturbations, model/grading/scoring.py).
    hides_pieces: bool = False

    # Its measured pass (model/attribution/transparent_pass.py): the dotted path of a function network -> the pass that
    # splits that network's own teacher-forced pass into what the contribution measures read (each attention's weights,
    # each key's vector through each head, the residual, the norm). None: no measure beyond attention.
    measured_pass: str | None = None

    @property
    def head_importance(self) -> bool:
        """Heads can be gated and scored (model/attribution/importance.py): knocked out, with a known objective."""
        return self.head_masking and self.objective is not None

    @property
    def hooked(self) -> bool:
        """Activations can be read in its own forward pass: it declares a hooked pass (what the corpus index reads).
        Which of the interventions' tools it serves, and why not the others, its adapter says (``served_tools``,
        ``unserved``: an encoder-only model's serves none, for it decodes nothing)."""
        return self.hooked_pass is not None

    @property
    def contribution_measures(self) -> bool:
        """Measures beyond raw attention (model/attribution/measures.py): it declares a measured pass."""
        return self.measured_pass is not None


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
    config_class: type  # its config's class: a TrainableConfig (built by ``build_config``) or a NetworkConfig
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
    read_positions: Callable[[Bundle, int | None, int], Any] | None = None
    tip: str = ""  # one line for the Train form's family box
    label: str = ""  # the family box's item (the title, capitalised, when empty)
    # Its capabilities for one network, when what its code serves depends on the network's layout (network ->
    # Capabilities: a pretrained encoder-decoder hooks T5, Marian and BART, not mBART). None: ``capabilities`` hold for
    # every network of the family. What a tool may do with a network is asked of ``capabilities_for`` (``capabilities_of``).
    layout_capabilities: Callable[[Network], Capabilities] | None = None

    @property
    def network_class(self) -> type:
        if isinstance(self.network, type):
            return self.network
        return declared(self.network)  # deferred on purpose: see ``network``

    def capabilities_for(self, network: Network) -> Capabilities:
        """What this family's code serves for ``network``: its layout's capabilities where they depend on it (a layout
        without a hooked pass is declared without interventions), else the family's own."""
        if self.layout_capabilities is None:
            return self.capabilities
        return self.layout_capabilities(network)

    def owns(self, cls: type) -> bool:
        """Whether ``cls`` is this family's network class (compared by name when it is declared by path)."""
        if isinstance(self.network, type):
            return cls is self.network
        return f"{cls.__module__}.{cls.__qualname__}" == self.network

    def option_dests(self) -> tuple[str, ...]:
        return tuple(option.dest for option in self.options)

    def option_fields(self) -> frozenset[str]:
        """The config fields its options set: what a preset or a user may choose for a model of this family."""
        return frozenset(name for option in self.options for name in option.fields)

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
        options: dict[str, Any],
        source_vocab_size: int,
        target_vocab_size: int,
        joint_vocab: bool = True,
        labels: tuple[str, list[str]] | None = None,
    ) -> TrainableConfig:
        """Its config from model options (its config's fields, as ``config_fields`` names them) and what the tokenizers
        and corpus fix: the vocabularies' sizes, and for a family that learns labels, ``labels`` = (its task, "tagging"
        or "sentence"; the class names). A field its config does not have is a UserError naming it."""
        if self.capabilities.labels:
            fixed: dict[str, Any] = dict(vocab_size=source_vocab_size)
            if labels is not None:
                fixed.update(task=labels[0], class_names=list(labels[1]))
        else:
            fixed = dict(source_vocab_size=source_vocab_size, target_vocab_size=target_vocab_size, joint_vocab=joint_vocab)
        accepted = inspect.signature(self.config_class).parameters
        unknown = sorted(name for name in options if name not in accepted)
        if unknown:
            raise UserError(f"the {self.name} family's model has no {', '.join(unknown)}; its options set {self._fields_line()}")
        return cast(TrainableConfig, self.config_class(**fixed, **options))

    def _fields_line(self) -> str:
        return ", ".join(sorted(self.option_fields())) or "nothing"

    def describe_options(self, options: dict) -> str:
        if self.summary is not None:
            return self.summary(options)
        return ", ".join(f"{name} {value}" for name, value in options.items())


class FamilyError(UserError):
    """A model family this version does not know."""


_FAMILIES: dict[str, Family] = {}
_BUILTIN_LOADED: list[bool] = []  # [True] once the app's own families are registered


def _load_builtin() -> None:
    """Register the app's own families, once, before any other (their modules register them as they are imported)."""
    if _BUILTIN_LOADED:
        return
    _BUILTIN_LOADED.append(True)  # first: the modules' own ``register`` calls come back here
    try:
        for module in BUILTIN_FAMILY_MODULES:
            importlib.import_module(module)  # deferred on purpose: these modules import this one
    except BaseException:
        _BUILTIN_LOADED.clear()  # asked again, the import is tried again (and its error seen again)
        raise


def register(family: Family) -> Family:
    """Make ``family`` known by its name and its network class (registering the same entry again is a no-op)."""
    _load_builtin()
    known = _FAMILIES.get(family.name)
    if known is not None and known != family:
        raise ValueError(f"a different family named {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    """Forget a family (a test's toy family, once the test is done)."""
    _FAMILIES.pop(name, None)


def family_named(name: str) -> Family:
    """The family a checkpoint, the command line or the Train form names (a FamilyError naming the choices if none)."""
    _load_builtin()
    if name not in _FAMILIES:
        raise FamilyError(f"unknown model family {name!r}; choose one of {', '.join(trainable_family_names())}")
    return _FAMILIES[name]


def families() -> tuple[Family, ...]:
    """Every registered family: the app's own first, then the pretrained adapters and a test's, as registered."""
    _load_builtin()
    return tuple(_FAMILIES.values())


def trainable_family_names() -> tuple[str, ...]:
    return tuple(family.name for family in families() if family.capabilities.trainable)


def family_of(network: Network) -> Family:
    """The family a network belongs to, by its class (a subclass belongs to its parent's family)."""
    known = families()
    for cls in type(network).__mro__:
        for family in known:
            if family.owns(cls):
                return family
    raise FamilyError(f"no model family has a network of type {type(network).__name__}")


def capabilities_of(network: Network) -> Capabilities:
    """What the code serves for ``network``: its family's capabilities resolved for its layout (``capabilities_for``).
    Every question a tool asks of a network (interventions, its hooked pass) is asked here, never of the family alone:
    one registry entry may hold layouts that differ in what they serve."""
    return family_of(network).capabilities_for(network)


def family_of_config(config: NetworkConfig) -> Family:
    for family in families():
        if isinstance(config, family.config_class):
            return family
    raise FamilyError(f"no model family has a config of type {type(config).__name__}")


def suppressed_ids(config: NetworkConfig) -> list[int]:
    """Tokens a model's generation never picks: a pretrained model's banned words (its generation config), none for the
    app's own families, whose configs have no such field."""
    return list(getattr(config, "suppressed_ids", ()))


def forced_first_id(config: NetworkConfig) -> int | None:
    """The token a model's decoding must start with after BOS (a pretrained model's forced language token), if any."""
    return getattr(config, "forced_bos_id", None)


@runtime_checkable
class Bundle(Protocol):
    """A network with its tokenizers and what it was trained on: the app's own (``ModelBundle``) or a pretrained
    folder's (``PretrainedBundle``)."""

    @property
    def model(self) -> Network: ...

    @property
    def source_tokenizer(self) -> TextTokenizer: ...

    @property
    def target_tokenizer(self) -> TextTokenizer: ...

    path: str | None
    corpus: Any  # model.data.corpora's CorpusSpec (a layer above this one), or None when unknown
    history: dict
    training: dict

    @property
    def config(self) -> NetworkConfig: ...

    @property
    def family(self) -> Family: ...

    @property
    def examples(self) -> list[str]: ...  # sentences that show it at its best ([] for the app's own)

    def source_ids(self, text: str) -> tuple[list[int], int, int]: ...

    # The teacher-forced target of ``text``: the decoder's first input (BOS, a pretrained model's decoder start, then
    # its forced first token), the pieces cut to fit, EOS; fed as [:-1] and predicted as [1:].
    def target_ids(self, text: str) -> list[int]: ...

    # A multilingual model's language codes ([] otherwise), the source language its input is marked with and the target
    # language forced first (None for a model without languages); ``choose_languages`` changes either (a UserError,
    # one line, for a code it does not have).
    @property
    def languages(self) -> list[str]: ...

    @property
    def source_language(self) -> str | None: ...

    @property
    def target_language(self) -> str | None: ...

    def choose_languages(self, source: str | None = None, target: str | None = None) -> None: ...

    def info(self) -> list[tuple[str, str]]: ...

    def describe(self) -> str: ...
