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

import copy
import time
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from model.kinds import AttentionKind
from model.network import AttentionWeights
from model.nn.classifier import Predictions
from model.pretrained.config import PretrainedConfig
from model.pretrained.layouts import DECODER_LAYOUT_MODULES, ENCODER_LAYOUT_MODULES, LAYOUT_MODULES, DecoderModules, EncoderModules
from model.pretrained.offload import tensor_of

STEPS_TIMED = 20  # the decoding steps whose mean is a step's cost

if TYPE_CHECKING:
    from typing_extensions import Self


class PretrainedCache:
    """The model's own key/value cache for one or more sentences, with the encoder's output beside it.
    ``select`` (beam search) and ``truncate`` (stepping back) act on the library's cache in place."""

    def __init__(self, memory: torch.Tensor | None, memory_mask: torch.Tensor | None):
        self.memory = memory  # [B, S, d_model] encoder output; None in a decoder-only model
        self.memory_mask = memory_mask  # [B, S] 1 for real source pieces
        self.past: Any = None  # the library's Cache, made by the first step
        # A decoder-only model's prompts left-padded to one length: [B, ≥ read] 1 for a real piece, 0 for a pad (None:
        # no padding), of which ``read`` are read so far; each row's positions count its own pieces only
        self.padding: torch.Tensor | None = None
        self.read = 0

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
        self.step_seconds: list[float] = []  # the last STEPS_TIMED decoding steps' durations (what a step costs)

    @classmethod
    def of_library_model(cls, hf_model: Any, config: PretrainedConfig, head: str, mask_id: int | None) -> PretrainedNetwork:
        """The network of a library model just opened (``head``: its head's kind; ``mask_id``: its tokenizer's mask
        token): each shape's network takes what it reads."""
        return cls(hf_model, config)

    @staticmethod
    def layout_layers(hf_model: Any, model_type: str) -> list[torch.nn.Module] | None:
        """A library model's layers as its family's layout names them, before the network is made (each shape's
        network says; None where the layout is not served)."""
        return None

    def __deepcopy__(self, memo: dict) -> PretrainedNetwork:
        """A copy for a job; an offloaded network is shared instead (a copy would hold its weights in memory twice),
        its passes taking turns (``offload.take_turns``)."""
        if self.config.offload is not None:
            return self
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        for name, attribute in self.__dict__.items():
            setattr(copied, name, copy.deepcopy(attribute, memo))
        return copied

    def timed_step(self, started: float) -> None:
        """Record a decoding step begun at ``started`` (``time.perf_counter``)."""
        self.step_seconds.append(time.perf_counter() - started)  # the same list throughout (MemoryOptions holds it)
        del self.step_seconds[:-STEPS_TIMED]

    def step_cost(self) -> float | None:
        """Seconds a decoding step has taken lately (the mean of the last ones); None before any."""
        return sum(self.step_seconds) / len(self.step_seconds) if self.step_seconds else None

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

    @staticmethod
    def layout_layers(hf_model: Any, model_type: str) -> list[torch.nn.Module] | None:
        """Every layer of a library model of ``model_type``, the encoder's then the decoder's, where its layout is
        served (None otherwise): what offloading places layer by layer (offload.py), before the network is made."""
        layout = LAYOUT_MODULES.get(model_type)
        stacks = (hf_model.get_encoder(), hf_model.get_decoder())
        return None if layout is None else [layer for stack in stacks for layer in stack.get_submodule(layout.layers)]

    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Linear:
        """The output projection of ``kind``'s attention in ``layer`` (T5's ``o``, BART's ``out_proj``)."""
        return self.attention_part(kind, layer, "projections")

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] of ``kind``'s attention in ``layer``: the output projection's weight."""
        return cast(torch.Tensor, tensor_of(self.head_projection(kind, layer), "weight"))  # read from disk if offloaded

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

        started = time.perf_counter()
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
        self.timed_step(started)
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
        return cast(list[torch.nn.Module], self.layout_layers(self.hf_model, self.config.model_type))

    @staticmethod
    def layout_layers(hf_model: Any, model_type: str) -> list[torch.nn.Module] | None:
        """The decoder's layers of a library model of ``model_type`` where its layout is served (None otherwise)."""
        layout = DECODER_LAYOUT_MODULES.get(model_type)
        return None if layout is None else list(hf_model.get_submodule(layout.layers))

    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Module:
        """The attention's output projection in ``layer`` (GPT-2's ``c_proj``, Llama's ``o_proj``)."""
        return self.layers()[layer].get_submodule(self.modules.projection)

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] in ``layer``: the projection's weight, or its transpose where it is stored [in, out]."""
        weight = cast(torch.Tensor, tensor_of(self.head_projection(kind, layer), "weight"))  # read from disk if offloaded
        return weight.T if self.modules.weight_in_out else weight

    def head_count(self, kind: AttentionKind) -> int:
        return self.config.n_heads

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        raise NotImplementedError("a decoder-only model has no encoder: its prompt goes through decode_step")

    def start_cache(self, memory: Any = None, memory_mask: Any = None) -> PretrainedCache:
        return PretrainedCache(None, None)

    def start_padded_cache(self, padding: torch.Tensor) -> PretrainedCache:
        """A cache for prompts left-padded to one length: padding [B, P] (1 for a real piece, 0 for a pad before it).
        The pads are masked and each row's positions count its own pieces, so a row decodes as it would alone. Batched
        greedy decoding only (``greedy_prompts``): beam search and stepping back never start one."""
        cache = PretrainedCache(None, None)
        cache.padding = padding  # [B, P]: grown with ones by the passes after the prompt's (``decode_steps``)
        return cache

    def decode_steps(self, token_ids: torch.Tensor, cache: PretrainedCache):
        """Tokens [B, n] through the cache in one pass -> (logits [B, n, V], layers x [B, heads, n, past + n], None)."""
        padded: dict[str, torch.Tensor] = {}
        if cache.padding is not None:
            seen, total = cache.read, cache.read + token_ids.shape[1]
            if total > cache.padding.shape[1]:  # pieces after the prompts: real in every row
                more = cache.padding.new_ones((cache.padding.shape[0], total - cache.padding.shape[1]))
                cache.padding = torch.cat([cache.padding, more], 1)  # [B, total]
            mask = cache.padding[:, :total]  # [B, total]
            positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, seen:]  # [B, n]: each row counts its own pieces
            padded, cache.read = {"attention_mask": mask, "position_ids": positions}, total
        out = self.hf_model(
            input_ids=token_ids, past_key_values=cache.past, use_cache=True, output_attentions=True, return_dict=True, **padded
        )
        cache.past = out.past_key_values
        return out.logits, list(out.attentions), None

    def decode_step(self, token_ids: torch.Tensor, cache: PretrainedCache):
        started = time.perf_counter()
        logits, weights, _ = self.decode_steps(token_ids[:, None], cache)  # [B, 1, V]
        self.timed_step(started)
        return logits[:, -1], [rows[:, :, -1] for rows in weights], None  # [B, V]; layers x [B, heads, t + 1]

    def inspect(self, source_ids: Any, target_input_ids: torch.Tensor):
        out = self.hf_model(input_ids=target_input_ids, output_attentions=True, use_cache=False, return_dict=True)
        return out.logits, AttentionWeights([], list(out.attentions), [])

    def masked_logits(self, token_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Tokens [B, L] read with ``attention_mask`` [B, L] (0: a piece no position reads; the others keep their
        positions: the layouts served count positions whatever the mask says) -> logits [B, L, V]."""
        out = self.hf_model(input_ids=token_ids, attention_mask=attention_mask, use_cache=False, return_dict=True)
        return out.logits


class EncoderNetwork(PretrainedNetwork):
    def __init__(self, hf_model: Any, config: PretrainedConfig, head: str, mask_id: int | None):
        super().__init__(hf_model, config)
        self.head = head  # "masked-lm", "sequence-classification", "token-classification" or "none"
        self.mask_id = mask_id

    @classmethod
    def of_library_model(cls, hf_model: Any, config: PretrainedConfig, head: str, mask_id: int | None) -> PretrainedNetwork:
        return cls(hf_model, config, head, mask_id)

    @property
    def modules(self) -> EncoderModules:
        """Where its layout keeps its modules (a layout the family serves, ``ENCODER_LAYOUT_MODULES``)."""
        return ENCODER_LAYOUT_MODULES[self.config.model_type]

    def layers(self) -> list[torch.nn.Module]:
        """The encoder's layers, in order."""
        return cast(list[torch.nn.Module], self.layout_layers(self.hf_model, self.config.model_type))

    @staticmethod
    def layout_layers(hf_model: Any, model_type: str) -> list[torch.nn.Module] | None:
        """The encoder's layers of a library model of ``model_type`` where its layout is served (None otherwise)."""
        layout = ENCODER_LAYOUT_MODULES.get(model_type)
        return None if layout is None else list(hf_model.base_model.get_submodule(layout.layers))

    def head_projection(self, kind: AttentionKind, layer: int) -> torch.nn.Module:
        """The attention's output projection in ``layer`` (BERT's ``attention.output.dense``, DistilBERT's
        ``attention.out_lin``): a layout the family's capabilities let heads be knocked out of."""
        return self.layers()[layer].get_submodule(self.modules.projection)

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] in ``layer``: the projection's weight."""
        return cast(torch.Tensor, tensor_of(self.head_projection(kind, layer), "weight"))  # read from disk if offloaded

    def head_count(self, kind: AttentionKind) -> int:
        return self.config.n_heads

    @property
    def reads_masks(self) -> bool:
        """Its head reads masked pieces back (a masked-LM head, with the tokenizer's mask token: its config says)."""
        return self.config.reads_masks

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

    def sentence_rows(self, length: int) -> list[int]:
        """The positions of a ``length``-piece text a sentence classifier reads: the first ([CLS], <s>), which every
        library layout's pooler or classification head reads."""
        return [0]

    def masked_logits(self, token_ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor | None:
        """Text [B, S] read with the pieces where ``keep`` [B, S] is False hidden in place: masked from every position
        by the attention mask, their ids the mask token's (the pad id's without one; a pad-counting layout's positions
        are the only ones it would move, and RoBERTa's tokenizer has a mask token) -> the head's scores [B, S, C] or
        [B, C] (the report card's removal, model/grading/scoring.py); None for a bare encoder (no head)."""
        hidden_id = self.mask_id if self.mask_id is not None else self.config.pad_id
        ids = token_ids.masked_fill(~keep.bool(), hidden_id)  # [B, S]
        out = self.hf_model(input_ids=ids, attention_mask=keep.long(), return_dict=True)
        return getattr(out, "logits", None)  # a bare encoder's output has none

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
