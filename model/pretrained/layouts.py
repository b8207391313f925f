"""Where each Hugging Face encoder-decoder layout keeps its modules, and which adapter hooks it, by model type: the
registry entry's tables (model/pretrained/families.py), so that nothing else names a model type.

``LAYOUT_MODULES``: each stack's layers and each attention's output projection (what a knocked-out head's columns are
zeroed in, and what the hooked pass reads each head through); ``HOOKED_LAYOUTS``: the hooked-pass adapter of each
layout the interventions serve (model/interventions/library.py, named by path: that package sits above this one).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

import torch

from model.kinds import AttentionKind

# The hooked pass of each Hugging Face layout the interventions serve, by model type: the adapter that gives the
# library's modules the app's hook names (model/interventions/library.py; by dotted path: that package sits above this
# one, and is imported only when a tool asks). A layout not named here has none.
ENCODER_STACK_PASS = "model.interventions.encoder_stack.EncoderStackPass"
HOOKED_LAYOUTS = {
    "t5": "model.interventions.library.T5Pass",
    "mt5": "model.interventions.library.T5Pass",
    "marian": "model.interventions.library.MarianPass",
    "bart": "model.interventions.library.BartPass",
    "mbart": "model.interventions.library.PreNormPass",
    "m2m_100": "model.interventions.library.PreNormPass",  # M2M100 and NLLB
    "pegasus": "model.interventions.library.PreNormPass",
    "gpt2": "model.interventions.decoder_library.DecoderPass",  # decoder-only: one adapter, the layout's table says where
    "llama": "model.interventions.decoder_library.DecoderPass",
    "mistral": "model.interventions.decoder_library.DecoderPass",
    "qwen2": "model.interventions.decoder_library.DecoderPass",
    "bert": ENCODER_STACK_PASS,  # encoder-only: one adapter, the layout's table says where
    "roberta": ENCODER_STACK_PASS,
    "xlm-roberta": ENCODER_STACK_PASS,
    "electra": ENCODER_STACK_PASS,
    "distilbert": ENCODER_STACK_PASS,
}


@dataclass(frozen=True)
class LayoutModules:
    """Where an encoder-decoder layout keeps its modules, by the library's names (within a layer): what knocking a head
    out zeroes columns of, what the hooked pass reads each head through, and what the contribution measures' pass reads
    (model/attribution/library_pass.py): each attention's value projection, the module whose input is the stream
    cross-attention's output is added to (self-attention's is the layer's input), and a post-norm layer's norms."""

    layers: str  # each stack's ModuleList of layers
    projections: dict[AttentionKind, str]  # the output projection of each kind of attention
    values: dict[AttentionKind, str]  # the value projection of each kind of attention
    queries: dict[AttentionKind, str]  # the query projection of each kind of attention
    keys: dict[AttentionKind, str]  # the key projection of each kind of attention
    cross_residual: str  # the module whose hidden-states input is the stream cross-attention adds to
    post_norms: dict[AttentionKind, str] = field(default_factory=dict)  # post-norm: the LayerNorm after each add
    # The neuron view's positional split (model/neuron/library_vectors.py), within a stack: the module whose output
    # is the positions added to the embeddings (none: T5's relative bias), the norm of that sum (BART's, mBART's), and
    # the norm the last layer's output passes to become the memory (a pre-norm model's); within a layer, the norms of
    # its self-attention, cross-attention and feed-forward (read before the sublayer, or after the add: post_norms)
    positions: str | None = "embed_positions"
    embedding_norm: str | None = None
    final_norm: str | None = None
    sublayer_norms: tuple[str, str, str] = ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm")
    # A piece replaced by the pad id is masked and the others keep their positions (the report card hides pieces so);
    # not so where the positions count the pieces that are not padding (M2M100's and NLLB's)
    pad_keeps_positions: bool = True


_SELF_AND_CROSS = (AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS)


def _by_kind(self_name: str, cross_name: str) -> dict[AttentionKind, str]:
    return {kind: cross_name if kind is AttentionKind.CROSS else self_name for kind in _SELF_AND_CROSS}


_T5_MODULES = LayoutModules(
    "block",
    _by_kind("layer.0.SelfAttention.o", "layer.1.EncDecAttention.o"),
    _by_kind("layer.0.SelfAttention.v", "layer.1.EncDecAttention.v"),
    _by_kind("layer.0.SelfAttention.q", "layer.1.EncDecAttention.q"),
    _by_kind("layer.0.SelfAttention.k", "layer.1.EncDecAttention.k"),
    "layer.1",  # T5LayerCrossAttention: its norm, its attention and its residual add
    positions=None,  # a relative position bias, computed by each stack's first self-attention
    final_norm="final_layer_norm",
)
_PRE_NORM_MODULES = LayoutModules(  # mBART, M2M100, Pegasus: each sublayer reads its own norm of the stream
    "layers",
    _by_kind("self_attn.out_proj", "encoder_attn.out_proj"),
    _by_kind("self_attn.v_proj", "encoder_attn.v_proj"),
    _by_kind("self_attn.q_proj", "encoder_attn.q_proj"),
    _by_kind("self_attn.k_proj", "encoder_attn.k_proj"),
    "encoder_attn_layer_norm",
    final_norm="layer_norm",
)
_POST_NORM_MODULES = LayoutModules(  # Marian, BART: the sum of the stream and the sublayer's output is normed
    "layers",
    _PRE_NORM_MODULES.projections,
    _PRE_NORM_MODULES.values,
    _PRE_NORM_MODULES.queries,
    _PRE_NORM_MODULES.keys,
    "encoder_attn",
    _by_kind("self_attn_layer_norm", "encoder_attn_layer_norm"),
)
# Each encoder-decoder layout's modules, by model type (T5 v1.0 and v1.1 are "t5", mT5 "mt5"; NLLB is "m2m_100").
LAYOUT_MODULES = {
    "t5": _T5_MODULES,
    "mt5": _T5_MODULES,
    "marian": _POST_NORM_MODULES,
    "bart": replace(_POST_NORM_MODULES, embedding_norm="layernorm_embedding"),
    "mbart": replace(_PRE_NORM_MODULES, embedding_norm="layernorm_embedding"),
    "m2m_100": replace(_PRE_NORM_MODULES, pad_keeps_positions=False),
    "pegasus": _PRE_NORM_MODULES,
}

# What a library module returns: its hidden states, a tuple of them and more (attention, a cache), or a ModelOutput
# (a dict: its "last_hidden_state").
ModuleOutput = torch.Tensor | tuple[object, ...] | dict[str, object]


def hidden_of(output: ModuleOutput) -> torch.Tensor:
    """The hidden states a library module returned: the tensor, a tuple's first item or a ModelOutput's
    last_hidden_state."""
    if isinstance(output, torch.Tensor):
        return output
    return cast(torch.Tensor, output["last_hidden_state"] if isinstance(output, dict) else output[0])


def hidden_input(args: tuple, kwargs: dict) -> torch.Tensor:
    """The hidden states a library module was given (a forward pre-hook's arguments): first, or by name."""
    return args[0] if args else kwargs["hidden_states"]


@dataclass(frozen=True)
class DecoderModules:
    """Where a decoder-only layout keeps its modules, by the library's names: what the neuron view reads
    (model/neuron/decoder_vectors.py: each layer's attention and the norm it reads, its query and key projections or
    GPT-2's fused one, the positions table added to the embeddings, none for rotary positions applied inside each
    attention), and what the hooked pass (model/interventions/decoder_library.py) and knocking a head out read: each
    layer's output projection, feed-forward block and the norm it reads, and the final norm before the output head."""

    layers: str  # the ModuleList of layers, from the library model
    attention: str  # within a layer
    input_norm: str  # within a layer: the norm the attention reads (pre-norm)
    projection: str  # within a layer: the attention's output projection W^O
    mlp: str  # within a layer: the feed-forward block
    mlp_norm: str  # within a layer: the norm the feed-forward block reads
    final_norm: str  # from the library model: the norm before the output head
    queries: str | None = None  # within a layer
    keys: str | None = None
    values: str | None = None  # within a layer: the value projection (the contribution measures read its output)
    fused: str | None = None  # within a layer: one projection to queries, keys and values (GPT-2's Conv1D)
    positions: str | None = None  # from the library model: the learned table added to the embeddings
    # GPT-2's projections are Conv1D, whose weight is stored [in, out]: W^O is its transpose
    weight_in_out: bool = False
    rms_norms: bool = False  # its norms are RMS norms (no mean subtracted, no shift), not LayerNorms
    post_norm: str | None = None  # pre-norm, all of them: no norm after the attention's add (as the encoders' table says)


_LLAMA_MODULES = DecoderModules(
    "model.layers",
    "self_attn",
    "input_layernorm",
    "self_attn.o_proj",
    "mlp",
    "post_attention_layernorm",
    "model.norm",
    queries="self_attn.q_proj",
    keys="self_attn.k_proj",
    values="self_attn.v_proj",
    rms_norms=True,
)
# Each decoder-only layout's modules, by model type (Mistral and Qwen2 are laid out as Llama).
DECODER_LAYOUT_MODULES = {
    "gpt2": DecoderModules(
        "transformer.h",
        "attn",
        "ln_1",
        "attn.c_proj",
        "mlp",
        "ln_2",
        "transformer.ln_f",
        fused="attn.c_attn",
        positions="transformer.wpe",
        weight_in_out=True,
    ),
    "llama": _LLAMA_MODULES,
    "mistral": _LLAMA_MODULES,
    "qwen2": _LLAMA_MODULES,
}


@dataclass(frozen=True)
class EncoderModules:
    """Where an encoder-only layout keeps each layer's attention output projection W^O (what knocking a head out zeroes
    columns of), its value projection and the LayerNorm after the attention's residual add (what the contribution
    measures read: every layout served is post-norm), by the library's names: the layers within the base model
    (``hf_model.base_model``), the rest within a layer."""

    layers: str
    projection: str
    values: str
    post_norm: str | None
    queries: str  # the query and key projections (the neuron view reads their outputs)
    keys: str
    # The neuron view's positional split (model/neuron/encoder_vectors.py): the positions table added to the embeddings
    # and the norm of that sum (within the base model); each layer's feed-forward output and the norm after its add
    positions: str
    embedding_norm: str
    mlp_output: str
    mlp_norm: str
    fused: str | None = None  # none of them fuses its query, key and value projections (as the decoders' table says)


_BERT_MODULES = EncoderModules(
    "encoder.layer",
    "attention.output.dense",
    "attention.self.value",
    "attention.output.LayerNorm",
    "attention.self.query",
    "attention.self.key",
    "embeddings.position_embeddings",
    "embeddings.LayerNorm",
    "output.dense",
    "output.LayerNorm",
)
# Each encoder-only layout's modules, by model type (RoBERTa, ELECTRA and XLM-R are laid out as BERT).
ENCODER_LAYOUT_MODULES = {
    "bert": _BERT_MODULES,
    "roberta": _BERT_MODULES,
    "xlm-roberta": _BERT_MODULES,
    "electra": _BERT_MODULES,
    "distilbert": EncoderModules(
        "transformer.layer",
        "attention.out_lin",
        "attention.v_lin",
        "sa_layer_norm",
        "attention.q_lin",
        "attention.k_lin",
        "embeddings.position_embeddings",
        "embeddings.LayerNorm",
        "ffn",
        "output_layer_norm",
    ),
}
