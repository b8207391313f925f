"""The registry entries of the pretrained families (model/family.py): the Hugging Face encoder-decoders, encoder-only and
decoder-only models, their networks (model/pretrained/networks.py) and what their code serves for each layout (each
entry's ``layout_capabilities``: the hooked pass, knocking heads out, the measured pass, the objective, by the layout's
module tables in model/pretrained/layouts.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import cast

from model.family import Architecture, Capabilities, Family, Objective, Positions, QueriesKeys, declared, register
from model.kinds import AttentionKind
from model.network import Network
from model.pretrained.config import PretrainedConfig
from model.pretrained.layouts import DECODER_LAYOUT_MODULES, ENCODER_LAYOUT_MODULES, HOOKED_LAYOUTS, LAYOUT_MODULES
from model.pretrained.networks import DecoderNetwork, EncoderNetwork, PretrainedNetwork, Seq2SeqNetwork
from model.pretrained.positional import pretrained_report

HOOKED_PASS = "model.pretrained.families.hooked_pass"  # this module's ``hooked_pass``, by path (Capabilities.hooked_pass)
# The contribution measures' pass of a layout whose modules are known (LAYOUT_MODULES), by path: it sits above this one
MEASURED_PASS = "model.attribution.library_pass.measured_pass"
STACK_MEASURED_PASS = "model.attribution.stack_pass.measured_pass"  # a decoder-only or encoder-only layout's, likewise


def hooked_pass(network: PretrainedNetwork) -> object | None:
    """A pretrained family's hooked pass (its ``Capabilities.hooked_pass``): the adapter of the network's layout
    (``HOOKED_LAYOUTS``) bound to it, or None when its layout has none."""
    path = HOOKED_LAYOUTS.get(network.config.model_type)
    return None if path is None else declared(path)(network)


def layout_capabilities(network: Network) -> Capabilities:
    """What a pretrained encoder-decoder's code serves for ``network`` (its entry's ``layout_capabilities``): the
    family's capabilities, with its hooked pass only where the network's layout has one (``HOOKED_LAYOUTS``), so a
    layout without an adapter is declared without interventions."""
    model_type = cast(PretrainedConfig, network.config).model_type
    modules = LAYOUT_MODULES.get(model_type)
    modules_known = modules is not None  # its heads' projections are found: they can be masked and gated
    return replace(
        SEQ2SEQ.capabilities,
        hooked_pass=HOOKED_PASS if model_type in HOOKED_LAYOUTS else None,
        head_masking=modules_known,
        objective=Objective.TRANSLATION,
        measured_pass=MEASURED_PASS if modules_known else None,
        # the neuron view reads its queries and keys at the hooked pass's points, and splits its scores by the layout's
        # modules (model/neuron/library_vectors.py)
        queries_keys=QueriesKeys.HOOKED if modules_known and model_type in HOOKED_LAYOUTS else QueriesKeys.NOT_READ,
        hides_pieces=modules is not None and modules.pad_keeps_positions,  # its padding mask hides a piece in place
    )


def decoder_layout_capabilities(network: Network) -> Capabilities:
    """What a pretrained decoder-only model's code serves for ``network`` (its entry's ``layout_capabilities``): the
    neuron view, the hooked pass and knocking heads out where its layout's modules are known (``DECODER_LAYOUT_MODULES``)."""
    model_type = cast(PretrainedConfig, network.config).model_type
    known = model_type in DECODER_LAYOUT_MODULES
    return replace(
        DECODER.capabilities,
        queries_keys=QueriesKeys.DECODER if known else QueriesKeys.NOT_READ,
        hooked_pass=HOOKED_PASS if known and model_type in HOOKED_LAYOUTS else None,
        head_masking=known,  # its output projections are known: a head's columns can be zeroed
        objective=Objective.LANGUAGE_MODEL,  # ...and gated: head importance reads the language model's loss
        measured_pass=STACK_MEASURED_PASS if known else None,
        hides_pieces=True,  # the attention mask hides a piece of its text in place (model/grading/scoring.py)
    )


def encoder_layout_capabilities(network: Network) -> Capabilities:
    """What a pretrained encoder-only model's code serves for ``network`` (its entry's ``layout_capabilities``): heads
    knocked out where its layout's output projections are known (``ENCODER_LAYOUT_MODULES``)."""
    model_type = cast(PretrainedConfig, network.config).model_type
    known = model_type in ENCODER_LAYOUT_MODULES
    masked_lm = cast(PretrainedConfig, network.config).reads_masks  # its head reads masked pieces back: its objective
    return replace(
        ENCODER.capabilities,
        queries_keys=QueriesKeys.ENCODER if known else QueriesKeys.NOT_READ,
        head_masking=known,
        hooked_pass=HOOKED_PASS if known and model_type in HOOKED_LAYOUTS else None,  # what the corpus index reads
        measured_pass=STACK_MEASURED_PASS if known else None,
        objective=Objective.MASKED_LANGUAGE_MODEL if masked_lm else _head_objective(cast(PretrainedConfig, network.config)),
        hides_pieces=True,  # the attention mask hides a piece of its text in place (``masked_logits``)
    )


def _head_objective(config: PretrainedConfig) -> Objective | None:
    """A classification head's objective (its own decisions: no corpus labels its classes), as its config says (set
    when the folder is opened); none without a head."""
    return Objective.DECISIONS if config.classifies else None


def _pretrained(
    name: str,
    title: str,
    network: type,
    architecture: Architecture,
    kinds: tuple[AttentionKind, ...],
    layouts: Callable[[Network], Capabilities] | None = None,
) -> Family:
    """A pretrained adapter's registry entry: not trained here, scored on its translations only, its positions
    read from the wrapped model (model/pretrained/positional.py); an encoder-decoder's logit lens and patching hook
    the library's own modules where its layout has a hooked pass (``HOOKED_LAYOUTS``: T5, Marian and BART), which
    ``layouts`` (its ``layout_capabilities``) says per network."""
    encoder_decoder = architecture is Architecture.ENCODER_DECODER
    capabilities = Capabilities(
        architecture,
        kinds,
        Positions.PRETRAINED,
        teacher_forced_scores=False,
        # The family's hooked pass, which serves the layouts HOOKED_LAYOUTS names: a network's own capabilities
        # (``layouts``) keep it only for those.
        hooked_pass=HOOKED_PASS,
        measured_pass=MEASURED_PASS if encoder_decoder else None,  # likewise kept only where its layout's modules are known
        beam_search=architecture.has_decoder,  # a decoder-only model searches from its prompt (model/decoding/beam.py)
        queries_keys=QueriesKeys.NOT_READ,
        prompt_in_one_pass=architecture is Architecture.DECODER_ONLY,
    )
    return register(
        Family(name, title, PretrainedConfig, network, capabilities, read_positions=pretrained_report, layout_capabilities=layouts)
    )


SEQ2SEQ = _pretrained(
    "pretrained-encoder-decoder",
    "pretrained encoder-decoder (Hugging Face)",
    Seq2SeqNetwork,
    Architecture.ENCODER_DECODER,
    (AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS),
    layouts=layout_capabilities,
)
ENCODER = _pretrained(
    "pretrained-encoder",
    "pretrained encoder-only model (Hugging Face)",
    EncoderNetwork,
    Architecture.ENCODER_ONLY,
    (AttentionKind.ENCODER,),
    layouts=encoder_layout_capabilities,
)
DECODER = _pretrained(
    "pretrained-decoder",
    "pretrained decoder-only model (Hugging Face)",
    DecoderNetwork,
    Architecture.DECODER_ONLY,
    (AttentionKind.DECODER,),
    layouts=decoder_layout_capabilities,
)
