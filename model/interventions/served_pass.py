"""The hooked pass of any model the interventions serve, through the adapter its registry entry declares.

The logit lens and patching ask here, so the app's Transformer (model/interventions/own.py) and a pretrained T5's,
Marian's or BART's (hooked on the library's modules, model/interventions/library.py) go through the same functions and
views: the hook names, shapes and ``HookedRun`` are the same (model/interventions/hooked.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch

from model.family import INTERVENTION_TOOLS, InterventionTool, capabilities_of
from model.interventions.hooked import HeadReadingPass, InterventionError, adapter_of, check_tool, ids_as_text
from model.interventions.hooked import run_hooked as run_hooked  # the one hooked pass, whatever the model
from model.network import Network


def supported(model: Network, tool: InterventionTool) -> Network:
    """``model`` when its hooked pass serves ``tool`` (model.family.INTERVENTION_TOOLS), else an InterventionError."""
    check_tool(model, tool)
    return model


def served_tools(model: Network) -> tuple[InterventionTool, ...]:
    """The interventions (of INTERVENTION_TOOLS, in that order) ``model``'s hooked pass serves; an InterventionError
    (one line) when it has none: its family cannot be patched, or a pretrained model's layout is not hooked."""
    served = adapter_of(model).served_tools
    return tuple(tool for tool in INTERVENTION_TOOLS if tool in served)


def unserved_reason(model: Network, tool: InterventionTool) -> str:
    """Why ``model``'s hooked pass does not serve ``tool`` (one line: the tool's own check); '' when it does."""
    try:
        check_tool(model, tool)
    except InterventionError as error:
        return str(error)
    return ""


def lens_logits(model: Network, streams: torch.Tensor) -> torch.Tensor:
    """Decoder residual streams [..., d_model] read as ``model`` reads its last layer's output -> logits [..., V]."""
    return adapter_of(model).lens_logits(streams)


def has_final_norm(model: Network) -> bool:
    """Whether the decoder's output passes a final norm of its own (a pre-norm model's) before the output head."""
    return adapter_of(model).has_final_norm()


def has_encoder_final_norm(model: Network) -> bool:
    """Whether the encoder's output passes a final norm of its own (a pre-norm model's) before it is the memory."""
    return adapter_of(model).has_encoder_final_norm()


def prediction_place(model: Network) -> str:
    """What a prediction the interventions compare belongs to: a decoder's "step", or an encoder-only model's
    "position" (a tagger, a masked-LM head) or "sentence" (a sentence classifier)."""
    if capabilities_of(model).architecture.has_decoder:
        return "step"
    return head_reading(model, 0, ids_as_text).place


def head_classes(model: Network) -> list[str]:
    """An encoder-only model's head's class names, in the order of its scores ([] for a masked-LM head's words)."""
    return cast(HeadReadingPass, adapter_of(model)).classes()


@dataclass(frozen=True)
class HeadReading:
    """What an encoder-only model's head predicts and how its predictions are labelled (the logit lens, patching and
    logit attribution of its text say the same)."""

    place: str  # "position" (a prediction at every piece) or "sentence" (one, a sentence classifier's)
    predicted: str  # "tag", "word" (a masked-LM head's) or "class"
    label: Callable[[list[int]], list[str]]  # ids of its scores -> their class names, or the pieces of a vocabulary's
    names: bool  # the labels are class names (printed as they are), not pieces

    def columns(self, pieces: list[str]) -> list[str]:
        """What each of its predictions is read at: the text's ``pieces``, or the sentence."""
        return pieces if self.place == "position" else ["the sentence"]


def head_reading(model: Network, count: int, source_pieces: Callable[[list[int]], list[str]]) -> HeadReading:
    """How an encoder-only ``model``'s head, with scores over ``count`` classes (or words), is read and labelled."""
    adapter = cast(HeadReadingPass, adapter_of(model))
    names, per_piece = adapter.class_names(count), adapter.per_piece()
    predicted = "word" if names is None else "tag" if per_piece else "class"
    label = source_pieces if names is None else (lambda ids: [names[i] for i in ids])
    return HeadReading("position" if per_piece else "sentence", predicted, label, names is not None)
