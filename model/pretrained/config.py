"""A pretrained model's sizes and special ids, read from its ``transformers`` config under the names the app uses for
its own Transformer (``PretrainedConfig``, ``read_config``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model.family import Architecture

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
    reads_masks: bool = False  # an encoder-only model's head reads masked pieces back (a masked-LM head, a mask token)
    classifies: bool = False  # an encoder-only model's head decides a class (of the sentence, or of each piece)
    offload: Any = None  # an offloaded model's OffloadPlan (model/pretrained/offload.py); None: in memory
    dtype: Any = None  # the torch type it is analysed in (None or float32: exact)

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
