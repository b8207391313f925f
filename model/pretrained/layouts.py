"""Where each Hugging Face encoder-decoder layout keeps its modules, and which adapter hooks it, by model type: the
registry entry's tables (model/pretrained/families.py), so that nothing else names a model type.

``LAYOUT_MODULES``: each stack's layers and each attention's output projection (what a knocked-out head's columns are
zeroed in, and what the hooked pass reads each head through); ``HOOKED_LAYOUTS``: the hooked-pass adapter of each
layout the interventions serve (model/interventions/library.py, named by path: that package sits above this one).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.kinds import AttentionKind

# The hooked pass of each Hugging Face layout the interventions serve, by model type: the adapter that gives the
# library's modules the app's hook names (model/interventions/library.py; by dotted path: that package sits above this
# one, and is imported only when a tool asks). A layout not named here has none.
HOOKED_LAYOUTS = {
    "t5": "model.interventions.library.T5_PASS",
    "mt5": "model.interventions.library.T5_PASS",
    "marian": "model.interventions.library.MARIAN_PASS",
    "bart": "model.interventions.library.BART_PASS",
    "mbart": "model.interventions.library.PRE_NORM_PASS",
    "m2m_100": "model.interventions.library.PRE_NORM_PASS",  # M2M100 and NLLB
    "pegasus": "model.interventions.library.PRE_NORM_PASS",
}


@dataclass(frozen=True)
class LayoutModules:
    """Where an encoder-decoder layout keeps its layers and its attentions' output projections, by the library's
    module names: what knocking a head out zeroes columns of, and what the hooked pass reads each head through."""

    layers: str  # each stack's ModuleList of layers
    projections: dict[AttentionKind, str]  # within a layer: the output projection of each kind of attention


_T5_MODULES = LayoutModules(
    "block",
    {
        AttentionKind.ENCODER: "layer.0.SelfAttention.o",
        AttentionKind.DECODER: "layer.0.SelfAttention.o",
        AttentionKind.CROSS: "layer.1.EncDecAttention.o",
    },
)
_BART_MODULES = LayoutModules(
    "layers",
    {
        AttentionKind.ENCODER: "self_attn.out_proj",
        AttentionKind.DECODER: "self_attn.out_proj",
        AttentionKind.CROSS: "encoder_attn.out_proj",
    },
)
# Each encoder-decoder layout's modules, by model type (T5 v1.0 and v1.1 are "t5", mT5 "mt5"; NLLB is "m2m_100").
LAYOUT_MODULES = {
    "t5": _T5_MODULES,
    "mt5": _T5_MODULES,
    "marian": _BART_MODULES,
    "bart": _BART_MODULES,
    "mbart": _BART_MODULES,
    "m2m_100": _BART_MODULES,
    "pegasus": _BART_MODULES,
}
