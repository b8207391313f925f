"""Which hooked pass serves a model: the app's Transformer's own (hooked.py) or a pretrained T5's, Marian's or BART's,
hooked on the library's modules (library.py). The logit lens and patching ask here, so both kinds go through the same
functions and views; the hook names, shapes and ``HookedRun`` are the same."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from model.family import INTERVENTION_TOOLS, family_of
from model.interventions import hooked, library
from model.interventions.hooked import HookedRun, Patch
from model.nn.transformer import Transformer


def supported(model: Any, tool: str) -> Any:
    """``model`` when its hooked pass serves ``tool`` (model.family.INTERVENTION_TOOLS), else an InterventionError."""
    hooked.check_tool(model, tool)
    if not isinstance(model, Transformer):
        library.layout(model)
    return model


def served_tools(model: Any) -> tuple[str, ...]:
    """The interventions (of INTERVENTION_TOOLS, in that order) ``model``'s hooked pass serves; an InterventionError
    (one line) when it serves none: its family cannot be patched, or a pretrained model's layout is not hooked."""
    served = family_of(model).capabilities.intervention_tools
    supported(model, served[0] if served else INTERVENTION_TOOLS[0])
    return tuple(tool for tool in INTERVENTION_TOOLS if tool in served)


def run_hooked(
    model: Any,
    source_ids: torch.Tensor,  # [B, S]
    target_input_ids: torch.Tensor,  # [B, T]
    capture: Iterable[str] = (),
    patches: Sequence[Patch] = (),
    memory: torch.Tensor | None = None,
    gradient_roots: Iterable[str] = (),
) -> HookedRun:
    """``model``'s teacher-forced pass through its hooks (the arguments as hooked.run_hooked's)."""
    run = hooked.run_hooked if isinstance(model, Transformer) else library.run_library_hooked
    return run(model, source_ids, target_input_ids, capture, patches, memory, gradient_roots)


def lens_logits(model: Any, streams: torch.Tensor) -> torch.Tensor:
    """Decoder residual streams [..., d_model] read as ``model`` reads its last layer's output -> logits [..., V]."""
    if isinstance(model, Transformer):
        return model.logits(model.decoder_norm(streams))
    return library.lens_logits(model, streams)


def has_final_norm(model: Any) -> bool:
    """Whether the decoder's output passes a final norm of its own (a pre-norm model's) before the output head."""
    if isinstance(model, Transformer):
        return isinstance(model.decoder_norm, torch.nn.LayerNorm)
    return library.has_final_norm(model)
