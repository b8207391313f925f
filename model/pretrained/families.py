"""Pretrained networks behind the model-family interface (model/family.py), stepped through their own caches.

Three shapes of network, each a thin adapter over a ``transformers`` model loaded with the eager
attention path (the fused SDPA and flash paths return no attention weights):

- ``Seq2SeqNetwork`` (T5, Marian, BART, ...): ``encode`` runs the encoder once; ``decode_step`` feeds one
  decoder token through the model's own key/value cache (an ``EncoderDecoderCache``) and returns that
  step's logits with the new row of every layer's and head's decoder self- and cross-attention;
- ``EncoderNetwork`` (BERT, ...): one pass; the head's output (masked-LM logits, class logits) comes back
  in place of the memory, and ``predictions`` reads it;
- ``DecoderNetwork`` (GPT-2, ...): no encoder; the prompt and then each new token go through the cache.

The library's heads differ (T5 rescales before its tied head, BART and Marian add a bias), so
``decode_step`` returns the model's logits themselves where our Transformer returns the hidden state,
and ``logits`` passes them on: the stepper, greedy and beam search call both in the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from model.family import Architecture, Capabilities, Family, Objective, Positions, QueriesKeys, declared, register
from model.kinds import AttentionKind
from model.network import AttentionWeights, Network
from model.nn.classifier import Predictions
from model.pretrained.layouts import (
    DECODER_LAYOUT_MODULES,
    ENCODER_LAYOUT_MODULES,
    HOOKED_LAYOUTS,
    LAYOUT_MODULES,
    DecoderModules,
    EncoderModules,
)
from model.pretrained.positional import pretrained_report

if TYPE_CHECKING:
    from typing_extensions import Self

ENCODER_DECODER, ENCODER_ONLY, DECODER_ONLY = Architecture.ENCODER_DECODER, Architecture.ENCODER_ONLY, Architecture.DECODER_ONLY


@dataclass
class PretrainedConfig:
    """Sizes and special ids of a pretrained model, under the names the app uses for its own Transformer."""

    architecture: str  # the transformers class, "T5ForConditionalGeneration"
    model_type: str  # "t5", "marian", "bart", "bert", "gpt2"
    shape: Architecture  # encoder-decoder, encoder-only or decoder-only
    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int  # of the decoder (of the encoder in an encoder-only model)
    n_encoder_heads: int
    d_model: int
    d_ff: int
    max_len: int  # positions the model takes
    source_vocab_size: int
    target_vocab_size: int
    pad_id: int
    bos_id: int  # the first decoder input: decoder_start_token_id (a decoder-only model starts from its prompt)
    eos_id: int
    positional_encoding: str  # sinusoidal, learned, relative (T5), rotary (the Llama family) or none
    attention_implementation: str = "eager"
    forced_bos_id: int | None = None  # a first target token the model's generation config forces (mBART's language)
    suppressed_ids: tuple[int, ...] = ()  # tokens generation never picks (Marian bans <pad>)
    labels: list[str] = field(default_factory=list)  # class names of a classification head

    def describe(self) -> str:
        if self.shape == ENCODER_ONLY:
            layers = f"{self.n_encoder_layers} encoder layers"
        elif self.shape == DECODER_ONLY:
            layers = f"{self.n_decoder_layers} decoder layers"
        else:
            layers = f"{self.n_encoder_layers}+{self.n_decoder_layers} layers"
        return f"{self.model_type} {self.shape.value}, {layers}, d_model {self.d_model}, {self.n_heads} heads"


def _first(config: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def read_config(
    hf_config: Any,
    shape: Architecture,
    architecture: str,
    vocab_size: int,
    max_len_hint: int | None,
    generation: Any = None,
    classes: bool = False,
) -> PretrainedConfig:
    """Our sizes from a transformers config (and its generation config, which holds the generation
    conventions in newer saves), whatever names its family gives them."""
    layers = int(_first(hf_config, "encoder_layers", "num_layers", "num_hidden_layers", "n_layer", default=0))
    decoder_layers = int(_first(hf_config, "decoder_layers", "num_decoder_layers", "num_hidden_layers", "n_layer", default=0))
    heads = int(_first(hf_config, "encoder_attention_heads", "num_heads", "num_attention_heads", "n_head", default=1))
    decoder_heads = int(_first(hf_config, "decoder_attention_heads", "num_heads", "num_attention_heads", "n_head", default=1))
    d_model = int(_first(hf_config, "d_model", "hidden_size", "n_embd", default=0))
    d_ff = int(_first(hf_config, "d_ff", "encoder_ffn_dim", "intermediate_size", "n_inner", default=4 * d_model))
    positions = _first(hf_config, "max_position_embeddings", "n_positions")
    if getattr(hf_config, "relative_attention_num_buckets", None):
        kind = "relative"
    elif getattr(hf_config, "rope_theta", None) or getattr(hf_config, "rope_scaling", None):
        kind = "rotary"  # the Llama family's: queries and keys turned by the position (model/pretrained/positional.py)
    elif hf_config.model_type in ("marian", "pegasus") or getattr(hf_config, "static_position_embeddings", False):
        kind = "sinusoidal"
    elif positions:
        kind = "learned"
    else:
        kind = "none"
    hint = max_len_hint if max_len_hint and max_len_hint < 100_000 else None  # tokenizers say 1e30 for "no limit"
    max_len = min(int(positions or hint or 512), int(hint or positions or 512))
    pad = _first(hf_config, "pad_token_id", "eos_token_id", default=0)
    eos = _first(hf_config, "eos_token_id", "sep_token_id", default=pad)
    eos = eos[0] if isinstance(eos, list) else eos
    start = _first(generation, "decoder_start_token_id", default=None)
    start = start if start is not None else _first(hf_config, "decoder_start_token_id", "bos_token_id", default=pad)
    banned = _first(generation, "bad_words_ids", default=None) or getattr(hf_config, "bad_words_ids", None) or []
    suppressed = tuple(int(ids[0]) for ids in banned if isinstance(ids, list) and len(ids) == 1)
    forced_bos = _first(generation, "forced_bos_token_id", default=None)
    forced_bos = forced_bos if forced_bos is not None else getattr(hf_config, "forced_bos_token_id", None)
    labels = [str(name) for _, name in sorted((getattr(hf_config, "id2label", None) or {}).items())] if classes else []
    encoder_only, decoder_only = shape == ENCODER_ONLY, shape == DECODER_ONLY
    return PretrainedConfig(
        architecture=architecture,
        model_type=str(hf_config.model_type),
        shape=shape,
        n_encoder_layers=0 if decoder_only else layers,
        n_decoder_layers=0 if encoder_only else decoder_layers,
        n_heads=heads if encoder_only else decoder_heads,
        n_encoder_heads=0 if decoder_only else heads,
        d_model=d_model,
        d_ff=int(d_ff or 4 * d_model),
        max_len=max_len,
        source_vocab_size=vocab_size,
        target_vocab_size=int(getattr(hf_config, "vocab_size", vocab_size) or vocab_size),
        pad_id=int(pad if pad is not None else 0),
        bos_id=int(start if start is not None else 0),
        eos_id=int(eos if eos is not None else -1),
        positional_encoding=kind,
        forced_bos_id=None if forced_bos is None else int(forced_bos),
        suppressed_ids=suppressed,
        labels=labels,
    )


class PretrainedCache:
    """The model's own key/value cache for one or more sentences, with the encoder's output beside it.
    ``select`` (beam search) and ``truncate`` (stepping back) act on the library's cache in place."""

    def __init__(self, memory: torch.Tensor | None, memory_mask: torch.Tensor | None):
        self.memory = memory  # [B, S, d_model] encoder output; None in a decoder-only model
        self.memory_mask = memory_mask  # [B, S] 1 for real source pieces
        self.past: Any = None  # the library's Cache, made by the first step

    def select(self, rows: torch.Tensor) -> PretrainedCache:
        if self.past is not None:
            self.past.reorder_cache(rows)
        if self.memory is not None:
            self.memory = self.memory.index_select(0, rows)  # [beams, S, d_model]
            self.memory_mask = self.memory_mask.index_select(0, rows) if self.memory_mask is not None else None
        return self

    def truncate(self, length: int) -> None:
        if self.past is not None and self.past.get_seq_length() > length:
            self.past.crop(length)


class PretrainedNetwork:
    """What every adapter shares: the wrapped model, its config, parameters, evaluation mode."""

    def __init__(self, hf_model: Any, config: PretrainedConfig):
        self.hf_model = hf_model
        self.config = config

    def parameters(self):
        return self.hf_model.parameters()

    def eval(self) -> Self:
        self.hf_model.eval()
        return self

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.hf_model.parameters())

    def module_tree(self) -> torch.nn.Module:
        """The module whose parts are its layers, embeddings and head (the report card's cascade): the library's."""
        return cast(torch.nn.Module, self.hf_model)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden  # decode_step returned the model's logits already (see the module docstring)

    def _mask(self, ids: torch.Tensor) -> torch.Tensor:
        return ids.ne(self.config.pad_id).long()  # [B, S]


class Seq2SeqNetwork(PretrainedNetwork):
    def __call__(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> torch.Tensor:
        """The library's teacher-forced pass: source [B, S], decoder input [B, T] -> the model's logits [B, T, V]
        (``logits`` passes them on, as after ``decode_step``)."""
        return self._teacher_forced(source_ids, target_input_ids, attentions=False).logits

    def _teacher_forced(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, attentions: bool) -> Any:
        """The library's output of one teacher-forced pass (its attentions when asked)."""
        return self.hf_model(
            input_ids=source_ids,
            attention_mask=self._mask(source_ids),
            decoder_input_ids=target_input_ids,
            output_attentions=attentions,
            use_cache=False,
            return_dict=True,
        )

    def layers(self, kind: AttentionKind) -> list[torch.nn.Module]:
        """The layers of the stack that holds ``kind``'s attention (the encoder's, or the decoder's), in order."""
        stack = self.hf_model.get_encoder() if kind is AttentionKind.ENCODER else self.hf_model.get_decoder()
        return list(stack.get_submodule(LAYOUT_MODULES[self.config.model_type].layers))

    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Linear:
        """The output projection of ``kind``'s attention in ``layer`` (T5's ``o``, BART's ``out_proj``)."""
        return self.attention_part(kind, layer, "projections")

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] of ``kind``'s attention in ``layer``: the output projection's weight."""
        return self.head_projection(kind, layer).weight

    def attention_part(self, kind: AttentionKind, layer: int, part: str) -> torch.nn.Linear:
        """A projection of ``kind``'s attention in ``layer``: ``part`` is one of the layout's tables of them
        (model/pretrained/layouts.py: "projections", "values", "queries", "keys")."""
        path = getattr(LAYOUT_MODULES[self.config.model_type], part)[kind]
        return cast(torch.nn.Linear, self.layers(kind)[layer].get_submodule(path))

    def head_count(self, kind: AttentionKind) -> int:
        return self.config.n_encoder_heads if kind is AttentionKind.ENCODER else self.config.n_heads

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        mask = self._mask(source_ids)  # [B, S]
        out = self.hf_model.get_encoder()(
            input_ids=source_ids, attention_mask=mask, output_attentions=need_weights, return_dict=True
        )
        return out.last_hidden_state, mask, (list(out.attentions) if need_weights else None)  # [B, S, d_model]

    def start_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor | None) -> PretrainedCache:
        return PretrainedCache(memory, memory_mask)

    def decode_step(self, token_ids: torch.Tensor, cache: PretrainedCache):
        # deferred: transformers is the optional "hf" extra: imported when a pretrained model runs
        from transformers.modeling_outputs import BaseModelOutput

        out = self.hf_model(
            encoder_outputs=BaseModelOutput(last_hidden_state=cast(Any, cache.memory)),
            attention_mask=cache.memory_mask,
            decoder_input_ids=token_ids[:, None],  # [B, 1]
            past_key_values=cache.past,
            use_cache=True,
            output_attentions=True,
            return_dict=True,
        )
        cache.past = out.past_key_values
        self_rows = [weights[:, :, -1] for weights in out.decoder_attentions]  # layers x [B, heads, t + 1]
        cross_rows = [weights[:, :, -1] for weights in out.cross_attentions]  # layers x [B, heads, S]
        return out.logits[:, -1], self_rows, cross_rows  # [B, V]

    def inspect(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor):
        out = self._teacher_forced(source_ids, target_input_ids, attentions=True)
        weights = AttentionWeights(list(out.encoder_attentions), list(out.decoder_attentions), list(out.cross_attentions))
        return out.logits, weights


class DecoderNetwork(PretrainedNetwork):
    @property
    def modules(self) -> DecoderModules:
        """Where its layout keeps its modules (a layout the family serves, ``DECODER_LAYOUT_MODULES``)."""
        return DECODER_LAYOUT_MODULES[self.config.model_type]

    def layers(self) -> list[torch.nn.Module]:
        """The decoder's layers, in order."""
        return list(self.hf_model.get_submodule(self.modules.layers))

    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Module:
        """The attention's output projection in ``layer`` (GPT-2's ``c_proj``, Llama's ``o_proj``)."""
        return self.layers()[layer].get_submodule(self.modules.projection)

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] in ``layer``: the projection's weight, or its transpose where it is stored [in, out]."""
        weight = cast(torch.Tensor, self.head_projection(kind, layer).weight)
        return weight.T if self.modules.weight_in_out else weight

    def head_count(self, kind: AttentionKind) -> int:
        return self.config.n_heads

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        raise NotImplementedError("a decoder-only model has no encoder: its prompt goes through decode_step")

    def start_cache(self, memory: Any = None, memory_mask: Any = None) -> PretrainedCache:
        return PretrainedCache(None, None)

    def decode_steps(self, token_ids: torch.Tensor, cache: PretrainedCache):
        """Tokens [B, n] through the cache in one pass -> (logits [B, n, V], layers x [B, heads, n, past + n], None)."""
        out = self.hf_model(
            input_ids=token_ids, past_key_values=cache.past, use_cache=True, output_attentions=True, return_dict=True
        )
        cache.past = out.past_key_values
        return out.logits, list(out.attentions), None

    def decode_step(self, token_ids: torch.Tensor, cache: PretrainedCache):
        logits, weights, _ = self.decode_steps(token_ids[:, None], cache)  # [B, 1, V]
        return logits[:, -1], [rows[:, :, -1] for rows in weights], None  # [B, V]; layers x [B, heads, t + 1]

    def inspect(self, source_ids: Any, target_input_ids: torch.Tensor):
        out = self.hf_model(input_ids=target_input_ids, output_attentions=True, use_cache=False, return_dict=True)
        return out.logits, AttentionWeights([], list(out.attentions), [])


class EncoderNetwork(PretrainedNetwork):
    def __init__(self, hf_model: Any, config: PretrainedConfig, head: str, mask_id: int | None):
        super().__init__(hf_model, config)
        self.head = head  # "masked-lm", "sequence-classification", "token-classification" or "none"
        self.mask_id = mask_id

    @property
    def modules(self) -> EncoderModules:
        """Where its layout keeps its modules (a layout the family serves, ``ENCODER_LAYOUT_MODULES``)."""
        return ENCODER_LAYOUT_MODULES[self.config.model_type]

    def layers(self) -> list[torch.nn.Module]:
        """The encoder's layers, in order."""
        return list(self.hf_model.base_model.get_submodule(self.modules.layers))

    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Module:
        """The attention's output projection in ``layer`` (BERT's ``attention.output.dense``, DistilBERT's
        ``attention.out_lin``): a layout the family's capabilities let heads be knocked out of."""
        return self.layers()[layer].get_submodule(self.modules.projection)

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] in ``layer``: the projection's weight."""
        return cast(torch.Tensor, self.head_projection(kind, layer).weight)

    def head_count(self, kind: AttentionKind) -> int:
        return self.config.n_heads

    @property
    def reads_masks(self) -> bool:
        """Its head reads masked pieces back (a masked-LM head, with the tokenizer's mask token)."""
        return self.head == "masked-lm" and self.mask_id is not None

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        """(the last layer's hidden states [B, S, d_model]; mask; per-layer weights when asked)."""
        mask = self._mask(source_ids)
        out = self.hf_model(
            input_ids=source_ids, attention_mask=mask, output_attentions=need_weights, output_hidden_states=True, return_dict=True
        )
        return out.hidden_states[-1], mask, (list(out.attentions) if need_weights else [])

    def read(self, source_ids: torch.Tensor, k: int) -> tuple[Predictions, list[torch.Tensor]]:
        """The head's reading of one text [1, S] and every layer's self-attention [1, H, S, S], in one pass."""
        mask = self._mask(source_ids)
        out = self.hf_model(input_ids=source_ids, attention_mask=mask, output_attentions=True, return_dict=True)
        head_output = out.logits if self.head != "none" else out.last_hidden_state
        return self.predictions(head_output, source_ids[0].tolist(), k), list(out.attentions)

    def inspect(self, source_ids: torch.Tensor, target_input_ids: Any = None):
        out = self.hf_model(input_ids=source_ids, attention_mask=self._mask(source_ids), output_attentions=True, return_dict=True)
        return getattr(out, "logits", None), AttentionWeights(list(out.attentions), [], [])

    def predictions(self, head_output: torch.Tensor, source_ids: list[int], k: int) -> Predictions:
        """The head's reading of one sentence: candidates at every mask token, or class probabilities."""
        empty = np.zeros((0, k), np.int64)
        positions, ids, probabilities = np.zeros(0, np.int64), empty, empty.astype(np.float32)
        classes = np.zeros(0, np.float32)
        if self.reads_masks:
            positions = np.array([i for i, token in enumerate(source_ids) if token == self.mask_id], dtype=np.int64)
            if len(positions):
                distribution = torch.softmax(head_output[0, torch.from_numpy(positions)].float(), dim=-1)  # [M, V]
                top = distribution.topk(min(k, distribution.shape[-1]))
                ids, probabilities = top.indices.cpu().numpy(), top.values.cpu().numpy()
        elif self.head in ("sequence-classification", "token-classification"):
            classes = torch.softmax(head_output[0].float(), dim=-1).cpu().numpy()  # [C] or [S, C]
        names = self.config.labels or [f"class {i}" for i in range(classes.shape[-1] if classes.size else 0)]
        return Predictions(positions, ids, probabilities.astype(np.float32), names, classes.astype(np.float32))


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
    )


def encoder_layout_capabilities(network: Network) -> Capabilities:
    """What a pretrained encoder-only model's code serves for ``network`` (its entry's ``layout_capabilities``): heads
    knocked out where its layout's output projections are known (``ENCODER_LAYOUT_MODULES``)."""
    known = cast(PretrainedConfig, network.config).model_type in ENCODER_LAYOUT_MODULES
    masked_lm = cast(EncoderNetwork, network).reads_masks  # its head reads masked pieces back: its objective
    return replace(
        ENCODER.capabilities,
        head_masking=known,
        measured_pass=STACK_MEASURED_PASS if known else None,
        objective=Objective.MASKED_LANGUAGE_MODEL if masked_lm else None,
    )


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
        hooked_pass=HOOKED_PASS if architecture.has_decoder else None,
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
