"""The hooked passes of encoder-only models: the app's classifier (model/nn/classifier.py) and the Hugging Face
encoder-only layouts (BERT, RoBERTa, DistilBERT; model/pretrained/layouts.py ``ENCODER_LAYOUT_MODULES``), each on its
own forward pass, with the encoder's hook names of model/interventions/hooked.py:

* ``encoder.{l}.resid_pre``: the hidden states the layer is given; ``encoder.{l}.resid_post``: its output;
* ``encoder.{l}.self.q``, ``encoder.{l}.self.k`` [B, H, S, d_k]: the queries and keys as the layer projected them;
* ``encoder.{l}.self.pattern`` [B, H, S, S]: the attention's probabilities (the library's ``output_attentions``);
* a Hugging Face layout's ``encoder.{l}.self.head_out`` [B, H, S, d_model] (each head through its slice of W^O),
  ``encoder.{l}.self.out`` (the output projection's) and ``encoder.{l}.self.resid`` (the LayerNorm's after the add:
  every layout served is post-norm); the classifier's every point of its encoder layers (model/nn/transformer.py).

What reads them: the corpus index (model/corpus/extract.py), and the interventions on the model's own head: with
hooks that want an output, ``run_hooked`` runs the whole model, its head (and a library classifier's pooler) included,
and its ``hidden`` is the head's scores at each place it predicts (``HookedRun.scored``). The logit lens
(model/interventions/logit_lens.py ``encoder_logit_lens``) patches the last layer's output with each reading; patching
(model/interventions/patching_setup.py) compares the head's prediction at a piece or for the sentence; logit
attribution (model/interventions/logit_attribution.py ``encoder_logit_attribution``) needs a head linear in the stream
(``nonlinear_head`` says why a masked-LM or pooled head is not). DecoderLens needs a decoder; a bare encoder (no head)
has no prediction to read, and each tool says so in one line.
"""

from __future__ import annotations

import math
from typing import cast

import torch

from model.family import INTERVENTION_TOOLS, InterventionTool
from model.interventions.circuit_parts import NO_CROSSING
from model.interventions.hooked import AttributionLayout, HeldNorm, HookedRun, Hooks, InterventionError, hooked_encode
from model.interventions.library_sites import HEADS, INPUT, OUTPUT, SPLIT, Site, one_stack_run
from model.nn.classifier import EncoderClassifier
from model.nn.transformer import EncoderLayer
from model.pretrained.networks import EncoderNetwork

HEADS_READ = ("masked-lm", "sequence-classification", "token-classification")  # a library head with predictions
NO_DECODER = "DecoderLens decodes from each encoder layer's output through the decoder, and an encoder-only model has none"
NO_HEAD = "the {tool} reads the model's output head, and this model is a bare encoder with no head"
READS_TEXT = (InterventionTool.LOGIT_LENS, InterventionTool.PATCHING)  # the tools that read its head on its text
NONLINEAR_HEADS = {  # a library head that does not read the stream linearly: no part of the stream has a logit of its own
    "masked-lm": "logit attribution splits a logit that is linear in the stream, and a masked-LM head transforms the "
    "stream first (a dense layer, GELU and a LayerNorm)",
    "sequence-classification": "logit attribution splits a logit that is linear in the stream, and a sentence "
    "classifier's head reads it through a pooler (a dense layer and tanh; DistilBERT's: a ReLU)",
}


class _EncoderOnlyPass:
    """What the encoder-only adapters share: one stack, no decoder; the logit lens and patching where the model has a
    head, logit attribution where that head reads the stream linearly."""

    def has_head(self) -> bool:
        raise NotImplementedError

    def nonlinear_head(self) -> str:
        """Why its head does not read the stream linearly (no logit attribution); '' when it does."""
        raise NotImplementedError

    @property
    def unserved(self) -> dict[InterventionTool, str]:
        """DecoderLens (no decoder), and without a head every tool; a head not linear in the stream: logit attribution."""
        reasons = {
            InterventionTool.DECODER_LENS: NO_DECODER,
            InterventionTool.CIRCUITS: NO_CROSSING.format(what="an encoder-only model", part="decoder"),
        }
        for tool in (*READS_TEXT, InterventionTool.LOGIT_ATTRIBUTION):
            if not self.has_head():
                reasons[tool] = NO_HEAD.format(tool=tool)
        if self.has_head() and self.nonlinear_head():
            reasons[InterventionTool.LOGIT_ATTRIBUTION] = self.nonlinear_head()
        return reasons

    @property
    def served_tools(self) -> tuple[InterventionTool, ...]:
        unserved = self.unserved
        return tuple(tool for tool in INTERVENTION_TOOLS if tool not in unserved)

    def hook_names(self) -> list[str]:
        raise NotImplementedError

    def head_output(self, source_ids: torch.Tensor, hooks: Hooks) -> torch.Tensor:
        """source_ids [B, S] through the whole model, its head included, with ``hooks``: the head's scores [B, P, C] at
        each place it predicts (P = S: a tag or a masked-LM word per piece; P = 1: the sentence's class)."""
        return self.run_hooked(source_ids, source_ids[:, :0], hooks, None).hidden

    def run_hooked(
        self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, hooks: Hooks, memory: torch.Tensor | None
    ) -> HookedRun:
        raise NotImplementedError

    def per_piece(self) -> bool:
        """It predicts at every piece (a tagger, a masked-LM head); else once for the sentence (a sentence classifier)."""
        raise NotImplementedError

    def class_names(self, count: int) -> list[str] | None:
        """The names of the head's ``count`` classes, in the order of its scores; None: it predicts words (a masked-LM
        head's vocabulary)."""
        raise NotImplementedError

    def head_count(self, side: str) -> int:
        raise NotImplementedError

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        raise InterventionError("an encoder-only model's logit lens reads its own head on its text (encoder_logit_lens)")

    def has_final_norm(self) -> bool:
        return False

    def has_encoder_final_norm(self) -> bool:
        return False

    def layer_memories(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        raise InterventionError(NO_DECODER)

    def attribution_layout(self) -> AttributionLayout:
        raise InterventionError(self.unserved.get(InterventionTool.LOGIT_ATTRIBUTION) or "no logit attribution for this model")

    @staticmethod
    def _encoder_only(target_input_ids: torch.Tensor, memory: torch.Tensor | None) -> None:
        if target_input_ids.shape[1] or memory is not None:
            raise InterventionError("an encoder-only model reads its text only: it has no decoder input and no memory")


class ClassifierPass(_EncoderOnlyPass):
    """The app's encoder-only classifier's adapter (its registry entry's ``hooked_pass``): its own ``encode`` with
    hooks on its encoder layers' points."""

    def __init__(self, model: EncoderClassifier) -> None:
        self.model = model

    def hook_names(self) -> list[str]:
        return list(self.model.hook_points())

    def head_count(self, side: str) -> int:
        return self.model.config.n_heads if side == "encoder" else 0

    def has_head(self) -> bool:
        return True  # a tagger's or a sentence classifier's linear head

    def class_names(self, count: int) -> list[str] | None:
        return list(self.model.config.class_names)

    def classes(self) -> list[str]:
        return list(self.model.config.class_names)

    def per_piece(self) -> bool:
        return self.model.config.task == "tagging"

    def nonlinear_head(self) -> str:
        return ""  # one linear layer, on each piece or on their mean

    def attribution_layout(self) -> AttributionLayout:
        """The stream starts as the token embeddings (scaled by √d_model) and the positions added; a post-norm layer's
        two norms follow its sublayers; a pre-norm model's final LayerNorm comes last; the head is one linear layer,
        on each piece (a tagger) or on their mean (a sentence classifier)."""
        model = self.model

        def embeddings(source_ids: torch.Tensor, _activations: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
            token = model.embedding(source_ids[0]) * math.sqrt(model.config.d_model)  # [S, d_model]
            return [("token embedding", token), ("positions", model.positional_table[: source_ids.shape[1]].to(token.dtype))]

        layers = [cast(EncoderLayer, layer) for layer in model.layers]
        norms: list[tuple[HeldNorm | None, HeldNorm | None, HeldNorm | None]] = [
            (None, None, None) if layer.pre_norm else (HeldNorm.of(layer.norms[0]), None, HeldNorm.of(layer.norms[1]))
            for layer in layers
        ]  # after the self-attention and the feed-forward: an encoder has no cross-attention
        final = HeldNorm.of(model.final_norm) if self.has_encoder_final_norm() else None
        biases: list[tuple[torch.Tensor | None, torch.Tensor | None]] = [(None, None)] * len(layers)  # W^O has no bias
        head, pool = model.head, model.config.task != "tagging"
        return AttributionLayout(embeddings, (), norms, biases, final, head.weight, head.bias, side="encoder", pool=pool)

    def has_encoder_final_norm(self) -> bool:
        return self.model.config.norm_placement == "pre"

    def run_hooked(
        self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, hooks: Hooks, memory: torch.Tensor | None
    ) -> HookedRun:
        """source_ids [B, S] through the encoder with ``hooks``: the run's ``hidden`` is the head's scores [B, P, C]
        (``scored``), or the encoder's output [B, S, d_model] when the hooks want no output."""
        self._encoder_only(target_input_ids, memory)
        memory, mask = hooked_encode(self.model, source_ids, hooks)  # [B, S, d_model] after the final norm
        if not hooks.output:
            return HookedRun(memory, hooks.activations, memory, mask)
        scores = self.model.classify(memory, source_ids)  # [B, S, C] (a tagger) or [B, C] (a sentence class)
        return HookedRun(scores if scores.dim() == 3 else scores[:, None], hooks.activations, memory, mask, scored=True)


class EncoderStackPass(_EncoderOnlyPass):
    """A Hugging Face encoder-only layout's adapter (``HOOKED_LAYOUTS``), bound to one network: hooks on the library's
    modules around its own forward pass."""

    def __init__(self, network: EncoderNetwork) -> None:
        self.network = network

    def hook_sites(self) -> dict[str, Site]:
        """Every hook point but the patterns -> its site, in the order the pass reaches them."""
        network, modules = self.network, self.network.modules
        n_heads = network.config.n_heads
        base = network.hf_model.base_model
        sites: dict[str, Site] = {name: Site(base.get_submodule(path), OUTPUT) for name, path in self._embedding_parts().items()}
        for index, layer in enumerate(network.layers()):
            prefix = f"encoder.{index}"
            projection = layer.get_submodule(modules.projection)
            sites[f"{prefix}.resid_pre"] = Site(layer, INPUT)
            sites[f"{prefix}.self.q"] = Site(layer.get_submodule(modules.queries), SPLIT, n_heads)
            sites[f"{prefix}.self.k"] = Site(layer.get_submodule(modules.keys), SPLIT, n_heads)
            sites[f"{prefix}.self.head_out"] = Site(projection, HEADS, n_heads)
            sites[f"{prefix}.self.out"] = Site(projection, OUTPUT)
            if modules.post_norm is not None:
                sites[f"{prefix}.self.resid"] = Site(layer.get_submodule(modules.post_norm), OUTPUT)
            sites[f"{prefix}.mlp_out"] = Site(layer.get_submodule(modules.mlp_output), OUTPUT)
            sites[f"{prefix}.resid_post"] = Site(layer, OUTPUT)
        return sites

    def _embedding_parts(self) -> dict[str, str]:
        """The embeddings' parts before their norm, by hook name -> module path in the base model: the words
        (``encoder.embed``), the positions (``encoder.pos``) and, where the layout has them, the token types."""
        base = self.network.hf_model.base_model
        words = self.network.modules.positions.rsplit(".", 1)[0] + ".word_embeddings"
        parts = {"encoder.embed": words, "encoder.pos": self.network.modules.positions}
        types = words.replace("word_embeddings", "token_type_embeddings")
        if any(name == types for name, _ in base.named_modules()):
            parts["encoder.token_type"] = types
        return parts

    def attribution_layout(self) -> AttributionLayout:
        """A token-classification head's (one linear layer on each piece): the stream starts as the words, positions
        (and token types) summed and normalised (the embedding LayerNorm held), then each post-norm layer's heads, the
        output projection's bias and the norm after the attention, the feed-forward block and the norm after it."""
        if self.nonlinear_head():
            raise InterventionError(self.nonlinear_head())
        network, modules = self.network, self.network.modules
        names = list(self._embedding_parts())
        labels = {"encoder.embed": "token embedding", "encoder.pos": "positions", "encoder.token_type": "token types"}

        def embeddings(_ids: torch.Tensor, activations: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
            return [(labels[name], activations[name][0]) for name in names]  # each [S, d_model]

        layers, mlp_norm = network.layers(), modules.mlp_norm
        norms: list[tuple[HeldNorm | None, HeldNorm | None, HeldNorm | None]] = [
            (HeldNorm.of(layer.get_submodule(cast(str, modules.post_norm))), None, HeldNorm.of(layer.get_submodule(mlp_norm)))
            for layer in layers
        ]
        biases: list[tuple[torch.Tensor | None, torch.Tensor | None]] = [
            (cast(torch.nn.Linear, layer.get_submodule(modules.projection)).bias, None) for layer in layers
        ]  # W^O's bias: no head's
        head = network.hf_model.classifier
        embedding_norm = HeldNorm.of(network.hf_model.base_model.get_submodule(modules.embedding_norm))
        return AttributionLayout(
            embeddings, tuple(names), norms, biases, None, head.weight, head.bias, side="encoder", embedding_norm=embedding_norm
        )

    def hook_names(self) -> list[str]:
        return list(self.hook_sites()) + [f"encoder.{layer}.self.pattern" for layer in range(self.network.config.n_encoder_layers)]

    def head_count(self, side: str) -> int:
        return self.network.config.n_heads if side == "encoder" else 0

    def has_head(self) -> bool:
        return self.network.head in HEADS_READ

    def per_piece(self) -> bool:
        return self.network.head != "sequence-classification"

    def nonlinear_head(self) -> str:
        return NONLINEAR_HEADS.get(self.network.head, "")

    def classes(self) -> list[str]:
        return [] if self.network.head == "masked-lm" else list(self.network.config.labels)

    def class_names(self, count: int) -> list[str] | None:
        if self.network.head == "masked-lm":
            return None
        labels = self.network.config.labels
        return labels if len(labels) == count else [f"class {i}" for i in range(count)]

    def run_hooked(
        self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, hooks: Hooks, memory: torch.Tensor | None
    ) -> HookedRun:
        """The library's pass over source_ids [B, S] (padded with the pad id, masked as padding) with ``hooks``
        installed where they read: its whole model when the hooks want an output and it has a head (the run's
        ``hidden`` is then the head's scores [B, P, C], its pooler and head the library's), else its encoder (the last
        layer's output [B, S, d_model])."""
        self._encoder_only(target_input_ids, memory)
        mask = source_ids.ne(self.network.config.pad_id).long()  # [B, S]
        scored = hooks.output and self.has_head()
        model = self.network.hf_model if scored else self.network.hf_model.base_model
        out = one_stack_run(
            self.hook_sites(),
            hooks,
            None,
            lambda attentions: model(
                input_ids=source_ids,
                attention_mask=mask,
                output_attentions=attentions,
                output_hidden_states=scored,
                return_dict=True,
            ),
        )
        if not scored:
            return HookedRun(out.last_hidden_state, hooks.activations, out.last_hidden_state, mask)
        scores = out.logits if out.logits.dim() == 3 else out.logits[:, None]  # [B, P, C]
        return HookedRun(scores, hooks.activations, out.hidden_states[-1], mask, scored=True)


def classifier_pass(network: EncoderClassifier) -> ClassifierPass:
    """The classifier family's hooked pass (declared by path in its registry entry), bound to ``network``."""
    return ClassifierPass(network)
