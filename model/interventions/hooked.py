"""A network's own teacher-forced pass with named hook points, to read and patch activations.

Every family that the interventions serve declares a hooked-pass adapter in its registry entry
(``Capabilities.hooked_pass``, model/family.py): the app's Transformer its own (model/interventions/own.py: forward
hooks on the hook points its modules carry, model/nn/hooks.py), each Hugging Face layout one that gives the library's
modules the same names (model/interventions/library.py). The adapter runs the network's own forward pass, with PyTorch
forward hooks where a ``Hooks`` captures or patches, and says which tools it serves (``served_tools``); nothing here
asks a network's type. The hook names, as TransformerLens names them, with B sentences, S source and T target pieces,
for encoder layer l (from 0):

* ``encoder.{l}.resid_pre`` [B, S, d_model]: the residual stream entering the layer (layer 0: the embeddings);
* ``encoder.{l}.self.head_out`` [B, H, S, d_model]: each head's output through its slice of W^O (the heads summed
  are the sublayer's output);
* ``encoder.{l}.self.out`` [B, S, d_model]: the self-attention sublayer's output, before its residual add;
* ``encoder.{l}.self.resid`` [B, S, d_model]: the residual stream after that sublayer (post-norm: normalised);
* ``encoder.{l}.mlp_out`` [B, S, d_model]: the feed-forward sublayer's output, before its residual add;
* ``encoder.{l}.resid_post`` [B, S, d_model]: the layer's output;
* ``encoder.memory`` [B, S, d_model]: what cross-attention reads (the last layer's output through the encoder's
  final norm: a LayerNorm in a pre-norm model, nothing in a post-norm one).

Decoder layer l has the same points over T with ``decoder.{l}.self.*`` (masked self-attention), ``decoder.{l}.cross.*``
(cross-attention) and ``decoder.{l}.mlp_out``. The app's Transformer has more: ``{side}.embed`` (the scaled token
embeddings) and ``{side}.pos`` [L, d_model] (the positions added), what each sublayer reads (``….self.in``,
``….cross.in``, ``….mlp_in``: after the norm in a pre-norm model), each attention's ``q``, ``k``, ``v``
[B, H, L, d_k], ``scores`` and ``pattern`` [B, H, Q, K], and ``decoder.final`` (the decoder's output after its final
norm); ``hook_names`` lists a network's. A ``Patch`` replaces a hook's activation (all of it, or some rows, heads and
positions, or where a boolean mask says) before later computation reads it; a hook that captures keeps the activation
after its patches. A replacement ``memory`` skips the encoder (DecoderLens reads an earlier layer). Many patched runs
go in one batch: each row may patch something else (``Patch.mask``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

import torch

from model.decoding.greedy import default_max_target, greedy_decode, greedy_prompt
from model.errors import UserError
from model.family import Bundle, InterventionTool, QueriesKeys, capabilities_of, declared, family_of
from model.network import Network
from model.nn.classifier import EncoderClassifier
from model.nn.hooks import HookPoint, for_this_thread
from model.nn.transformer import DecoderLayer, EncoderLayer, Transformer
from model.pretrained.offload import tensor_of

if TYPE_CHECKING:
    from model.network import DecodingNetwork, PromptNetwork


class InterventionError(UserError):
    """A model, sentence, step or hook that an intervention cannot use; the message says why."""


@dataclass(frozen=True)
class Patch:
    """Replace the activation at hook ``name`` with ``value`` (broadcast to the activation's shape) where selected.

    With no selection the whole activation is replaced. ``rows`` (batch rows), ``heads`` (a ``head_out`` hook's axis 1)
    and ``positions`` (the sequence axis, second to last) select what is replaced, and ``mask`` (boolean,
    broadcastable to the activation, True = replaced) selects as well; the selections are combined with "and"."""

    name: str
    value: torch.Tensor
    rows: tuple[int, ...] | None = None
    heads: tuple[int, ...] | None = None
    positions: tuple[int, ...] | None = None
    mask: torch.Tensor | None = None

    def selection(self, activation: torch.Tensor) -> torch.Tensor | None:
        """The boolean mask of what is replaced, broadcastable to ``activation``; None for all of it."""
        shape = activation.shape
        if self.heads is not None and len(shape) != 4:
            raise InterventionError(f"{self.name}: only a head_out hook has heads to choose")
        selected = self.mask
        for axis, chosen in ((0, self.rows), (1, self.heads), (len(shape) - 2, self.positions)):
            if chosen is None:
                continue
            axis_mask = torch.zeros(shape[axis], dtype=torch.bool, device=activation.device)  # [n]
            axis_mask[list(chosen)] = True
            axis_mask = axis_mask.view([-1 if dim == axis else 1 for dim in range(len(shape))])
            selected = axis_mask if selected is None else selected & axis_mask
        return selected

    def apply(self, activation: torch.Tensor) -> torch.Tensor:
        value = self.value.to(activation.dtype).expand_as(activation)  # [activation's shape]
        selected = self.selection(activation)
        return value if selected is None else torch.where(selected, value, activation)


@dataclass
class Hooks:
    """What one pass captures (hook names) and patches; the captured activations land in ``activations``."""

    capture: Iterable[str] = ()
    patches: Sequence[Patch] = ()
    gradient_roots: Iterable[str] = ()  # detached there and made to require grad: gradients reach every later point
    activations: dict[str, torch.Tensor] = field(default_factory=dict)
    # False: what the pass is for is its hook points; a library model's output head then reads no position (its
    # logits, [B, 0, V], are not computed: a 256k-word head over every position of a batch is gigabytes)
    output: bool = True

    def __post_init__(self) -> None:
        self.capture = frozenset(self.capture)
        self.gradient_roots = frozenset(self.gradient_roots)
        self._patches: dict[str, list[Patch]] = {}
        for patch in self.patches:
            self._patches.setdefault(patch.name, []).append(patch)

    def __call__(self, name: str, activation: torch.Tensor) -> torch.Tensor:
        for patch in self._patches.get(name, ()):
            activation = patch.apply(activation)
        if name in self.gradient_roots:
            activation = activation.detach().requires_grad_()
        if name in self.capture:
            self.activations[name] = activation
        return activation

    @property
    def names(self) -> frozenset[str]:
        """Every hook point this pass captures, patches or starts gradients at."""
        return frozenset(self.capture) | frozenset(self._patches) | frozenset(self.gradient_roots)

    def check(self, names: Sequence[str]) -> None:
        """Refuse hook names the pass does not have (``names``: the ones it has), naming the first."""
        unknown = sorted(self.names - set(names))
        if unknown:
            raise InterventionError(f"this model has no hook point {unknown[0]!r} (see hook_names)")

    def forward_hook(self, name: str) -> Callable[[torch.nn.Module, tuple, torch.Tensor], torch.Tensor]:
        """A PyTorch forward hook that passes a module's output through these hooks under ``name``."""
        return lambda _module, _args, output: self(name, output)

    @contextmanager
    def attached(self, points: Mapping[str, HookPoint]) -> Iterator[None]:
        """These hooks on the hook points of ``points`` (name -> HookPoint) that they name, for the ``with`` block."""
        handles = [
            points[name].register_forward_hook(for_this_thread(self.forward_hook(name))) for name in self.names if name in points
        ]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()


@dataclass
class HookedRun:
    """One hooked pass: the final hidden states and what its hooks captured."""

    hidden: torch.Tensor  # [B, T, d_model] after the decoder's final norm (a library model: its logits [B, T, V])
    activations: dict[str, torch.Tensor]  # hook name -> activation (after its patches)
    memory: torch.Tensor  # [B, S, d_model]
    memory_mask: torch.Tensor | None  # padding: [B, 1, 1, S] (the app's Transformer) or [B, S] (a library model); or None
    # True: ``hidden`` holds an encoder-only model's head scores [B, P, C] at each place it predicts (each piece, or
    # the sentence: P = 1), the model's own whole pass (model/interventions/encoder_stack.py)
    scored: bool = False

    def logits(self, model: Network, position: int | None = None) -> torch.Tensor:
        """[B, T, V], or [B, V] at one target ``position`` (an encoder-only model's: at one place it predicts)."""
        hidden = self.hidden if position is None else self.hidden[:, position]  # [B, (T,) d_model]
        return hidden if self.scored else model.logits(hidden)


@dataclass(frozen=True)
class HeldNorm:
    """A norm of the decoder's stream as direct logit attribution holds it linear: y = γ ⊙ (x − centre) / σ + β with σ
    (and the centre) the run's own. ``centred``: a LayerNorm (σ the standard deviation, the mean subtracted); else an
    RMS norm (T5's: σ the root mean square, nothing subtracted, no β)."""

    weight: torch.Tensor  # [d_model] γ
    bias: torch.Tensor | None  # [d_model] β, or None
    eps: float
    centred: bool = True

    @classmethod
    def of(cls, norm: torch.nn.Module) -> HeldNorm:
        """A LayerNorm (the app's or a library's, offloaded or not), held linear."""
        layer_norm = cast(torch.nn.LayerNorm, norm)
        return cls(cast(torch.Tensor, tensor_of(layer_norm, "weight")), tensor_of(layer_norm, "bias"), layer_norm.eps)


@dataclass(frozen=True)
class AttributionLayout:
    """What direct logit attribution reads of a network's decoder (an encoder-only model's encoder: ``side``;
    model/interventions/logit_attribution.py), from its own modules: where the stream starts, which norms it meets, and
    how it becomes logits."""

    # (decoder inputs [1, T], the run's activations) -> the named parts the stream starts as, each [T, d_model]
    embeddings: Callable[[torch.Tensor, dict[str, torch.Tensor]], list[tuple[str, torch.Tensor]]]
    capture: tuple[str, ...]  # the hook points ``embeddings`` reads
    # Per layer, the norm after its self-attention, cross-attention and feed-forward (a post-norm model's), or None
    # where the stream meets none (an encoder has no cross-attention); each attention's output-projection bias, or None.
    sublayer_norms: list[tuple[HeldNorm | None, HeldNorm | None, HeldNorm | None]]
    projection_biases: list[tuple[torch.Tensor | None, torch.Tensor | None]]
    final_norm: HeldNorm | None  # the decoder's final norm (a pre-norm model's), or None
    unembedding: torch.Tensor  # [V, d_model]: logits = scale · stream after the final norm @ unembedding.T + bias
    unembedding_bias: torch.Tensor | None  # [V]
    unembedding_scale: float = 1.0  # T5's d_model ** -0.5 before a tied head
    side: str = "decoder"  # the stack whose stream the logits read: an encoder-only model's is the "encoder"
    embedding_norm: HeldNorm | None = None  # a norm the embeddings' sum meets before the first layer (BERT's)
    pool: bool = False  # the head reads the stream's mean over the pieces (a sentence classifier), not each piece


class HookedPass(Protocol):
    """A family's hooked-pass adapter, bound to one network: its own teacher-forced pass with the hook names above."""

    served_tools: tuple[InterventionTool, ...]  # which of model.family.INTERVENTION_TOOLS it serves
    unserved: Mapping[InterventionTool, str]  # a tool it does not serve -> the inherent reason (one line), where known

    def hook_names(self) -> list[str]: ...  # every hook point, in the order the pass reaches them

    def head_count(self, side: str) -> int: ...  # heads per attention of "encoder" or "decoder"

    def run_hooked(
        self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, hooks: Hooks, memory: torch.Tensor | None
    ) -> HookedRun: ...  # ``run_hooked``'s pass, the inputs checked

    def lens_logits(self, streams: torch.Tensor) -> torch.Tensor: ...  # [..., d_model] -> [..., V]

    def has_final_norm(self) -> bool: ...  # the decoder's output passes a final norm of its own

    def has_encoder_final_norm(self) -> bool: ...  # the encoder's output (the memory) passes one

    # source [1, S] -> (every encoder layer's output through the encoder's final norm [L, S, d_model]; the padding mask
    # of L copies of the source, in the network's own form): what DecoderLens decodes from
    def layer_memories(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]: ...

    def attribution_layout(self) -> AttributionLayout: ...  # what direct logit attribution reads


class HeadReadingPass(HookedPass, Protocol):
    """An encoder-only model's adapter (model/interventions/encoder_stack.py): its whole pass, head included."""

    def head_output(self, source_ids: torch.Tensor, hooks: Hooks) -> torch.Tensor: ...  # [B, S] -> scores [B, P, C]

    def class_names(self, count: int) -> list[str] | None: ...  # the head's classes; None: a vocabulary's words

    def per_piece(self) -> bool: ...  # it predicts at every piece (a tagger, a masked-LM head); else once per sentence

    def classes(self) -> list[str]: ...  # the head's class names as its config has them ([]: a masked-LM head's words)


def adapter_of(model: Network) -> HookedPass:
    """The hooked-pass adapter ``model``'s registry entry declares for it; an InterventionError (one line) when none."""
    family = family_of(model)
    path = family.capabilities.hooked_pass
    if path is None:
        headless = family.capabilities.queries_keys is QueriesKeys.NONE
        why = "no residual stream of layers and no attention heads" if headless else "no hooked pass"
        raise InterventionError(
            f"this model ({family.title}) has {why}: the interventions read and patch those, through a model's hooked pass"
        )
    adapter = declared(path)(model)
    if adapter is None:
        raise InterventionError(
            f"interventions are not computed for this model ({model.config.describe()}): its family ({family.title}) "
            "has no hooked pass for its layout"
        )
    return adapter


def check_tool(model: Network, tool: InterventionTool) -> HookedPass:
    """``model``'s adapter, or an InterventionError (one line) when its family has none for it or the adapter does not
    serve ``tool`` (one of model.family.INTERVENTION_TOOLS)."""
    adapter = adapter_of(model)
    served = adapter.served_tools
    if tool in adapter.unserved:
        raise InterventionError(adapter.unserved[tool])
    if tool not in served:
        raise InterventionError(
            f"the {tool} is not computed for this model ({family_of(model).title}): its hooked pass serves the "
            f"{' and the '.join(served)}"
        )
    return adapter


def hook_names(model: Network) -> list[str]:
    """Every hook point of ``model``'s hooked pass, in the order the pass reaches them."""
    return adapter_of(model).hook_names()


def run_hooked(
    model: Network,
    source_ids: torch.Tensor,  # [B, S], padded with the model's pad id
    target_input_ids: torch.Tensor,  # [B, T]: BOS (the decoder start token), then the target so far
    capture: Iterable[str] = (),
    patches: Sequence[Patch] = (),
    memory: torch.Tensor | None = None,  # [B, S, d_model]: read instead of the encoder's (the encoder is skipped)
    gradient_roots: Iterable[str] = (),  # hook points that start the autograd graph (the weights may be frozen)
    output: bool = True,  # False: the hook points only (a library model's logits are not computed; see ``Hooks``)
) -> HookedRun:
    """``model``'s teacher-forced pass with ``capture``d and ``patches``d hook points (see the module's docstring),
    run by its family's adapter. For gradients with respect to activations, run it under ``torch.enable_grad()`` with
    the first layers' ``resid_pre`` as ``gradient_roots``."""
    adapter = adapter_of(model)
    longest = max(source_ids.shape[1], target_input_ids.shape[1])
    if longest > model.config.max_len:
        raise InterventionError(f"a sequence of {longest} pieces exceeds this model's {model.config.max_len} positions")
    hooks = Hooks(capture, patches, gradient_roots, output=output)
    hooks.check(adapter.hook_names())
    return adapter.run_hooked(source_ids, target_input_ids, hooks, memory)


def _layer_points(layers: Sequence[EncoderLayer | DecoderLayer], side: str) -> dict[str, HookPoint]:
    """The hook points of a stack of the app's encoder or decoder layers (model/nn/transformer.py), named."""
    return {f"{side}.{index}.{name}": point for index, layer in enumerate(layers) for name, point in layer.hook_points().items()}


def hooked_encode(
    model: Transformer | EncoderClassifier, source_ids: torch.Tensor, hooks: Hooks
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """source_ids [B, S] -> (memory [B, S, d_model], padding mask [B, 1, 1, S] or None): the model's own ``encode``
    (the app's Transformer's, or the encoder-only classifier's, whose layers are the Transformer's) with ``hooks`` on
    its encoder layers' hook points."""
    with hooks.attached(_layer_points(cast("list[EncoderLayer]", list(model.encoder_layers)), "encoder")):
        memory, mask, _ = model.encode(source_ids)
    return memory, mask


def ids_as_text(ids: list[int]) -> list[str]:
    """Labels for pieces without a tokenizer: their ids."""
    return [str(piece_id) for piece_id in ids]


def greedy_output(model: DecodingNetwork, source: torch.Tensor) -> list[int]:
    """source [1, S] -> its greedy translation's ids, with the EOS when decoding ended on one (the tokens a Stepper
    produces by default); a decoder-only model's: its prompt's given tokens, then the greedy continuation."""
    if not capabilities_of(model).architecture.has_encoder:
        return greedy_prompt(cast("PromptNetwork", model), source)
    output = greedy_decode(model, source)[0]
    limit = default_max_target(source.shape[1], model.config.max_len) - 1
    return output + [model.config.eos_id] if len(output) < limit else output


def translated(bundle: Bundle, text: str, tool: InterventionTool) -> tuple[list[int], list[int]]:
    """(the source ids ``bundle`` reads from ``text``, their greedy translation's ids, EOS included when reached), once
    ``tool`` is known to be served (``check_tool``)."""
    check_tool(bundle.model, tool)
    source_ids = bundle.source_ids(text)[0]
    source = torch.tensor([source_ids], device=next(bundle.model.parameters()).device)  # [1, S]
    return source_ids, greedy_output(cast("DecodingNetwork", bundle.model), source)  # served: it decodes
