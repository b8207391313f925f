"""Hugging Face encoder-decoders (T5, Marian, BART, mBART, M2M100/NLLB, Pegasus) through the interventions' hook
points, on the library's own forward pass.

The model runs as the library runs it (``model(input_ids, attention_mask, decoder_input_ids)``: its relative position
bias, norms, scaled embeddings and head); PyTorch hooks on its modules read and replace the activations the app's
Transformer names (model/interventions/hooked.py), with the same names and shapes:

* ``{side}.{l}.resid_pre``: the hidden states a layer is given (a forward pre-hook on the layer);
* ``{side}.{l}.{self|cross}.head_out`` [B, H, L, d_model]: the attention's output projection (T5's ``o``, Marian's
  and BART's ``out_proj``) read per head, each head's slice of its input through its slice of the weight; patched,
  the projection returns the heads' sum (plus its bias), so a patched head changes what follows; only read, it
  returns its own output, with the gradient passing through the heads read (for attribution patching);
* ``{side}.{l}.{self|cross}.out``: the projection's output, the sublayer's before its residual add;
* ``{side}.{l}.{self|cross}.resid``: the stream after that sublayer (T5: its ``T5Layer…Attention``'s output, pre-norm;
  Marian and BART, post-norm: the sublayer's LayerNorm's output; mBART, M2M100, Pegasus, pre-norm: the stream it was
  given plus its output);
* ``{side}.{l}.mlp_out``: the feed-forward block's output before its residual add (T5's ``DenseReluDense``, ``fc2``);
* ``{side}.{l}.resid_post``: the layer's output; ``encoder.memory``: the encoder's (T5: after its final norm).

Each layout is one adapter (``T5Pass``; ``MarianPass`` and ``BartPass``, post-norm; ``PreNormPass`` for mBART,
M2M100/NLLB and Pegasus, whose sublayers' streams after the residual add no module returns), which the pretrained
registry entry declares for its model type (model/pretrained/layouts.py, ``HOOKED_LAYOUTS``); a layout with none is
refused in one line. A hook is installed only for a name the pass captures, patches or starts
gradients at, and removed after the pass:
with none, the library's forward pass runs untouched. The run's ``hidden`` holds the model's logits [B, T, V], which
the network's ``logits`` passes on, as its ``decode_step`` does (model/pretrained/networks.py). How a site's hook
reads and patches: model/interventions/library_sites.py.

Every adapter serves every intervention: the logit lens and patching on the hook points, DecoderLens on each encoder
layer's output through the encoder's final norm (``layer_memories``), direct logit attribution on the decoder's
parts through the norms the layout places (``attribution_layout``: T5's RMS norm, a post-norm layer's three
LayerNorms, a pre-norm model's final one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import torch

from model.family import INTERVENTION_TOOLS, InterventionTool
from model.interventions.circuit_parts import NOT_SPLIT
from model.interventions.hooked import AttributionLayout, HeldNorm, HookedRun, Hooks, InterventionError
from model.interventions.library_sites import ADDED, HEADS, INPUT, OUTPUT, SPLIT, Site, install, without_output
from model.kinds import AttentionKind
from model.pretrained.networks import Seq2SeqNetwork
from model.pretrained.offload import tensor_of


def _attention_sites(prefix: str, projection: torch.nn.Module, resid: Site, n_heads: int) -> dict[str, Site]:
    return {
        f"{prefix}.head_out": Site(projection, HEADS, n_heads),
        f"{prefix}.out": Site(projection, OUTPUT),
        f"{prefix}.resid": resid,
    }


def _children(module: torch.nn.Module, name: str) -> list[torch.nn.Module]:
    """The modules of ``module``'s ModuleList ``name`` (a stack's layers, a T5 block's sublayers), in order."""
    return list(cast(torch.nn.ModuleList, module.get_submodule(name)))


class LibraryPass:
    """What the Hugging Face layouts' adapters share: hooks on the library's modules around its own forward pass. A
    layout's adapter (declared for its model type in model/pretrained/families.py) says where each hook point sits."""

    served_tools = tuple(tool for tool in INTERVENTION_TOOLS if tool is not InterventionTool.CIRCUITS)
    unserved: dict[InterventionTool, str] = {InterventionTool.CIRCUITS: NOT_SPLIT}

    def __init__(self, network: Seq2SeqNetwork) -> None:
        self.network = network  # the pretrained encoder-decoder entry's network whose layout declared this adapter

    def layer_sites(
        self, layer: torch.nn.Module, prefix: str, projections: Mapping[str, torch.nn.Module], n_heads: int
    ) -> dict[str, Site]:
        """One layer's sites under ``prefix`` ("decoder.1"), given its attentions' output projections ("self", and
        "cross" in a decoder layer -> the module: the network's ``head_projection``)."""
        raise NotImplementedError

    def hook_sites(self) -> dict[str, Site]:
        """Every hook point of the network (``hook_names``) -> its site, in the order the pass reaches them."""
        seq2seq = self.network
        sites: dict[str, Site] = {}
        for side, kinds in (
            ("encoder", {"self": AttentionKind.ENCODER}),
            ("decoder", {"self": AttentionKind.DECODER, "cross": AttentionKind.CROSS}),
        ):
            n_heads = seq2seq.head_count(kinds["self"])
            for index, layer in enumerate(seq2seq.layers(kinds["self"])):
                projections = {name: seq2seq.head_projection(kind, index) for name, kind in kinds.items()}
                sites |= self.layer_sites(layer, f"{side}.{index}", projections, n_heads)
                for name, kind in kinds.items():  # the queries and keys as the model projected them, per head
                    for point, part in (("q", "queries"), ("k", "keys")):
                        sites[f"{side}.{index}.{name}.{point}"] = Site(seq2seq.attention_part(kind, index, part), SPLIT, n_heads)
            if side == "encoder":
                sites["encoder.memory"] = Site(seq2seq.hf_model.get_encoder(), OUTPUT)
        return sites

    def hook_names(self) -> list[str]:
        """Every site's name, and each attention's ``pattern``: its probabilities, read (not patched) from the library's
        own ``output_attentions``."""
        return list(self.hook_sites()) + list(self._patterns())

    def _patterns(self) -> dict[str, tuple[str, int]]:
        """Each attention's ``pattern`` hook name -> (the library output's field of attentions, its layer)."""
        config = self.network.config
        stacks = (
            ("encoder.{}.self", "encoder_attentions", config.n_encoder_layers),
            ("decoder.{}.self", "decoder_attentions", config.n_decoder_layers),
            ("decoder.{}.cross", "cross_attentions", config.n_decoder_layers),
        )
        return {f"{name.format(layer)}.pattern": (field, layer) for name, field, n_layers in stacks for layer in range(n_layers)}

    def head_count(self, side: str) -> int:
        config = self.network.config
        return config.n_encoder_heads if side == "encoder" else config.n_heads

    def run_hooked(
        self,
        source_ids: torch.Tensor,  # [B, S], padded with the model's pad id
        target_input_ids: torch.Tensor,  # [B, T]: the decoder start token, then the target so far
        hooks: Hooks,
        memory: torch.Tensor | None = None,  # [B, S, d_model]: read instead of the encoder's (the encoder is skipped)
    ) -> HookedRun:
        """The library's teacher-forced pass with ``hooks`` installed where they read (see the module's docstring)."""
        seq2seq = self.network
        sites = self.hook_sites()
        skipped = {"encoder.memory"} if memory is not None else set()
        handles = [install(sites[name], name, hooks) for name in sites if name in hooks.names and name not in skipped]
        handles += [handle for handle in (without_output(hooks, seq2seq.hf_model.lm_head),) if handle is not None]
        mask = source_ids.ne(seq2seq.config.pad_id).long()  # [B, S]
        inputs: dict[str, Any] = {"input_ids": source_ids}
        if memory is not None:  # the encoder skipped: the decoder reads ``memory``
            inputs = {"encoder_outputs": (hooks("encoder.memory", memory),)}
        patterns = {name: where for name, where in self._patterns().items() if name in hooks.names}
        if any(name in hooks.names - frozenset(hooks.capture) for name in patterns):
            raise InterventionError("a pretrained model's attention patterns are read, not patched")
        try:
            out = seq2seq.hf_model(
                **inputs,
                attention_mask=mask,
                decoder_input_ids=target_input_ids,
                use_cache=False,
                output_attentions=bool(patterns),
                return_dict=True,
            )
        finally:
            for handle in handles:
                handle.remove()
        for name, (field, layer) in patterns.items():
            hooks(name, getattr(out, field)[layer])  # [B, H, Q, K]
        return HookedRun(out.logits, hooks.activations, out.encoder_last_hidden_state, mask)

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        """Decoder residual streams [..., d_model] read as the model reads its last layer's output -> logits [..., V]."""
        raise NotImplementedError

    def has_final_norm(self) -> bool:
        """Whether the lens readings pass a final norm of the model's own."""
        raise NotImplementedError

    def has_encoder_final_norm(self) -> bool:
        """Whether the encoder's last layer output passes a final norm to the memory (the same answer as the decoder's)."""
        return self.has_final_norm()

    def encoder_final_norm(self) -> torch.nn.Module | None:
        """The norm the encoder's last layer output passes to become the memory; None in a post-norm model."""
        raise NotImplementedError

    def sublayer_norms(self, layer: torch.nn.Module) -> tuple[HeldNorm | None, HeldNorm | None, HeldNorm | None]:
        """A decoder layer's norms after its self-attention, cross-attention and feed-forward (a post-norm layer's)."""
        return None, None, None

    def final_held_norm(self) -> HeldNorm | None:
        """The decoder's final norm (a pre-norm model's), held linear; None in a post-norm model."""
        return None

    def unembedding(self) -> tuple[torch.Tensor | None, float]:
        """(the bias added to the logits [V] or None, the scale of the stream before ``lm_head``)."""
        bias = getattr(self.network.hf_model, "final_logits_bias", None)  # [1, V] (BART's layouts)
        return (None if bias is None else bias[0]), 1.0

    def attribution_layout(self) -> AttributionLayout:
        """The stream starts as what enters the decoder's first layer (token embeddings, positions, and BART's and
        mBART's embedding norm: one part, "embeddings", read by the hooked pass); the layout says the rest."""
        seq2seq = self.network
        layers = seq2seq.layers(AttentionKind.DECODER)
        biases = [
            tuple(tensor_of(seq2seq.head_projection(kind, index), "bias") for kind in (AttentionKind.DECODER, AttentionKind.CROSS))
            for index in range(len(layers))
        ]
        bias, scale = self.unembedding()
        return AttributionLayout(
            embeddings=lambda _inputs, activations: [("embeddings", activations["decoder.0.resid_pre"][0])],
            capture=("decoder.0.resid_pre",),
            sublayer_norms=[self.sublayer_norms(layer) for layer in layers],
            projection_biases=[(self_bias, cross_bias) for self_bias, cross_bias in biases],
            final_norm=self.final_held_norm(),
            unembedding=cast(torch.Tensor, tensor_of(seq2seq.hf_model.lm_head, "weight")),
            unembedding_bias=bias,
            unembedding_scale=scale,
        )

    def layer_memories(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The library's encoder run with hooks on every layer's output, each through the encoder's final norm."""
        seq2seq = self.network
        n_layers = seq2seq.config.n_encoder_layers
        names = [f"encoder.{layer}.resid_post" for layer in range(n_layers)]
        hooks, sites = Hooks(names), self.hook_sites()
        handles = [install(sites[name], name, hooks) for name in names]
        mask = source_ids.ne(seq2seq.config.pad_id).long()  # [1, S]
        try:
            seq2seq.hf_model.get_encoder()(input_ids=source_ids, attention_mask=mask, return_dict=True)
        finally:
            for handle in handles:
                handle.remove()
        outputs = torch.cat([hooks.activations[name] for name in names])  # [L, S, d_model]
        norm = self.encoder_final_norm()
        return (outputs if norm is None else norm(outputs)), mask.expand(n_layers, -1)


class T5Pass(LibraryPass):
    """T5 (pre-norm): a T5Block's layer[0] self-attention, layer[1] cross-attention (decoder), layer[-1] feed-forward;
    the lens reads through the decoder's final norm, the ``d_model ** -0.5`` rescale of a tied head and ``lm_head``."""

    def layer_sites(
        self, layer: torch.nn.Module, prefix: str, projections: Mapping[str, torch.nn.Module], n_heads: int
    ) -> dict[str, Site]:
        sites = {f"{prefix}.resid_pre": Site(layer, INPUT)}
        sublayers = _children(layer, "layer")  # self-attention, cross-attention (a decoder's), feed-forward
        for sublayer, (attention, projection) in zip(sublayers, projections.items()):
            sites |= _attention_sites(f"{prefix}.{attention}", projection, Site(sublayer, OUTPUT), n_heads)
        sites[f"{prefix}.mlp_out"] = Site(sublayers[-1].get_submodule("DenseReluDense"), OUTPUT)
        sites[f"{prefix}.resid_post"] = Site(layer, OUTPUT)
        return sites

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        seq2seq = self.network
        hf_model = seq2seq.hf_model
        hidden = hf_model.get_decoder().final_layer_norm(streams)  # [..., d_model]
        if hf_model.config.tie_word_embeddings:
            hidden = hidden * seq2seq.config.d_model**-0.5
        return hf_model.lm_head(hidden)

    def has_final_norm(self) -> bool:
        return True

    def encoder_final_norm(self) -> torch.nn.Module | None:
        return self.network.hf_model.get_encoder().final_layer_norm

    def final_held_norm(self) -> HeldNorm | None:
        norm = self.network.hf_model.get_decoder().final_layer_norm  # an RMS norm: no mean, no β
        return HeldNorm(cast(torch.Tensor, tensor_of(norm, "weight")), None, norm.variance_epsilon, centred=False)

    def unembedding(self) -> tuple[torch.Tensor | None, float]:
        seq2seq = self.network
        return None, (seq2seq.config.d_model**-0.5 if seq2seq.hf_model.config.tie_word_embeddings else 1.0)


class BartLayoutPass(LibraryPass):
    """A layout with BART's module names: each stack's ``layers``, each attention's ``out_proj`` beside its
    ``{self_attn|encoder_attn}_layer_norm``, the feed-forward's ``fc2``. Where the norm stands (after the residual add,
    or before the sublayer) decides where the stream after the sublayer is read (``resid_site``)."""

    def resid_site(self, projection: torch.nn.Module, norm: torch.nn.Module) -> Site:
        """Where the stream after an attention sublayer is read, given its output projection and its norm."""
        raise NotImplementedError

    def layer_sites(
        self, layer: torch.nn.Module, prefix: str, projections: Mapping[str, torch.nn.Module], n_heads: int
    ) -> dict[str, Site]:
        sites = {f"{prefix}.resid_pre": Site(layer, INPUT)}
        for attention, projection in projections.items():
            norm = layer.get_submodule("self_attn_layer_norm" if attention == "self" else "encoder_attn_layer_norm")
            sites |= _attention_sites(f"{prefix}.{attention}", projection, self.resid_site(projection, norm), n_heads)
        sites[f"{prefix}.mlp_out"] = Site(layer.get_submodule("fc2"), OUTPUT)
        sites[f"{prefix}.resid_post"] = Site(layer, OUTPUT)
        return sites


class PostNormPass(BartLayoutPass):
    """A post-norm layout (Marian, BART): the stream after a sublayer is its LayerNorm's output (after the residual
    add); no final norm: the lens reads through ``lm_head`` and ``final_logits_bias``."""

    def resid_site(self, projection: torch.nn.Module, norm: torch.nn.Module) -> Site:
        return Site(norm, OUTPUT)

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        hf_model = self.network.hf_model
        return hf_model.lm_head(streams) + hf_model.final_logits_bias

    def has_final_norm(self) -> bool:
        return False

    def encoder_final_norm(self) -> torch.nn.Module | None:
        return None

    def sublayer_norms(self, layer: torch.nn.Module) -> tuple[HeldNorm | None, HeldNorm | None, HeldNorm | None]:
        names = ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm")
        return cast(tuple[HeldNorm, HeldNorm, HeldNorm], tuple(HeldNorm.of(layer.get_submodule(name)) for name in names))


class MarianPass(PostNormPass):
    """Marian's modules (``MarianEncoderLayer``, ``MarianDecoderLayer``), laid out as BART's."""


class BartPass(PostNormPass):
    """BART's modules (``BartEncoderLayer``, ``BartDecoderLayer``)."""


class PreNormPass(BartLayoutPass):
    """A pre-norm layout with BART's module names (mBART, M2M100/NLLB, Pegasus): each sublayer reads its own LayerNorm
    of the stream (``self_attn_layer_norm``, ``encoder_attn_layer_norm``, ``final_layer_norm``) and adds its output to
    the stream it was given, which no module returns (an ADDED site); each stack ends in a final ``layer_norm``, which
    the lens reads through before ``lm_head`` (and ``final_logits_bias`` where the model has one)."""

    def resid_site(self, projection: torch.nn.Module, norm: torch.nn.Module) -> Site:
        return Site(projection, ADDED, before=norm)

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor:
        hf_model = self.network.hf_model
        logits = hf_model.lm_head(hf_model.get_decoder().layer_norm(streams))  # [..., V]
        bias = getattr(hf_model, "final_logits_bias", None)  # [1, V] in mBART and Pegasus; none in M2M100
        return logits if bias is None else logits + bias

    def has_final_norm(self) -> bool:
        return True

    def encoder_final_norm(self) -> torch.nn.Module | None:
        return self.network.hf_model.get_encoder().layer_norm

    def final_held_norm(self) -> HeldNorm | None:
        return HeldNorm.of(self.network.hf_model.get_decoder().layer_norm)
