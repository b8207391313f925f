"""Where a Hugging Face layout's hook point sits (``Site``: a module, and what of it is read) and the PyTorch hooks that
read or patch it there (``install``): the library adapters' machinery (model/interventions/library.py).

A site reads a module's hidden-states input (INPUT, a forward pre-hook), its output (OUTPUT), each head's share of an
output projection (HEADS: its input's slice through the weight's slice), a query or key projection's output per head
(SPLIT), or a pre-norm sublayer's stream after its residual add, which no module returns (ADDED: the stream the
sublayer's norm read, plus the sublayer's output).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch.utils.hooks import RemovableHandle

from model.interventions.hooked import Hooks, InterventionError
from model.nn.attention import split_heads, through_heads
from model.nn.hooks import for_this_thread
from model.pretrained.layouts import ModuleOutput, hidden_input, hidden_of
from model.pretrained.offload import tensor_of

INPUT, OUTPUT, HEADS = "input", "output", "heads"  # what a site reads: a module's hidden-states input, output, heads
ADDED = "added"  # a pre-norm sublayer's output added to the stream it was given (the ``before`` module's input)
SPLIT = "split"  # a query or key projection's output, split per head [B, H, L, d_k]
FUSED_PARTS = 3  # a fused projection's output: queries, keys and values side by side (GPT-2's ``c_attn``)


@dataclass(frozen=True)
class Site:
    """Where a hook point sits: a module, and what of it the hook reads (INPUT, OUTPUT or HEADS)."""

    module: torch.nn.Module
    reads: str
    n_heads: int = 0  # an output projection's heads (HEADS)
    before: torch.nn.Module | None = None  # ADDED: the module whose input is the stream the output is added to
    weight: torch.Tensor | None = None  # HEADS: W^O [d_model, H * d_k] where the module stores its transpose (Conv1D)
    # SPLIT: which part of a fused query-key-value projection's output (0 queries, 1 keys), or None; and each head's
    # width where the projection has fewer heads than the attention (a grouped-query model's keys, shared by
    # consecutive query heads, repeated to them as the library's ``repeat_kv`` does), or 0. Such a site is read only.
    part: int | None = None
    head_width: int = 0

    @property
    def read_only(self) -> bool:
        """A SPLIT site whose heads are not the module's output as it is (a part of it, or repeated)."""
        return self.part is not None or self.head_width > 0


def _with_hidden(output: ModuleOutput, hidden: torch.Tensor) -> ModuleOutput:
    """``output`` with its hidden states replaced (the shape the module returned kept)."""
    if isinstance(output, torch.Tensor):
        return hidden
    if isinstance(output, dict):  # a ModelOutput: setting the key sets the attribute as well
        output["last_hidden_state"] = hidden
        return output
    return (hidden, *output[1:])


def projection_heads(weight: torch.Tensor, context: torch.Tensor, n_heads: int) -> torch.Tensor:
    """An output projection's input [B, L, H * d_k] (the heads' contexts side by side) -> each head's output through
    its slice of W^O ``weight`` [d_model, H * d_k] -> [B, H, L, d_model] (the bias is no head's)."""
    return through_heads(split_heads(context, n_heads), weight)  # [B, H, L, d_model]


def install(site: Site, name: str, hooks: Hooks) -> RemovableHandle | _Handles:
    """One PyTorch hook on the site's module that passes the activation through ``hooks`` under ``name``."""
    if site.reads == INPUT:

        def read_input(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            if args:
                return (hooks(name, args[0]), *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": hooks(name, kwargs["hidden_states"])}

        return site.module.register_forward_pre_hook(for_this_thread(read_input), with_kwargs=True)
    if site.reads == HEADS:

        def read_heads(module: torch.nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
            projection = cast(torch.nn.Linear, module)  # an output projection (a HEADS site's module)
            weight = (
                cast(torch.Tensor, tensor_of(projection, "weight")) if site.weight is None else site.weight
            )  # [d_model, H * d_k]
            computed = projection_heads(weight, args[0], site.n_heads)  # [B, H, L, d_model]
            heads = hooks(name, computed)
            if heads is computed:  # read only: the library's output, its gradient through the heads read
                summed = computed.sum(1)  # [B, L, d_model]
                return output.detach() + (summed - summed.detach())
            bias = tensor_of(projection, "bias")  # [d_model] or None (an offloaded layer's read from its weights)
            return heads.sum(1) if bias is None else heads.sum(1) + bias

        return site.module.register_forward_hook(for_this_thread(read_heads))

    if site.reads == ADDED:
        return _install_added(site, name, hooks)
    if site.reads == SPLIT:

        def read_split(module: torch.nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
            split = _split(site, output)  # [B, H, L, d_k]
            hooked = hooks(name, split)
            if hooked is split:
                return output
            if site.read_only:
                raise InterventionError(f"{name} is read, not patched: its heads are not the module's own output")
            return hooked.transpose(1, 2).reshape(output.shape)  # [B, L, H * d_k]

        return site.module.register_forward_hook(for_this_thread(read_split))

    def read_output(module: torch.nn.Module, args: tuple, output: ModuleOutput) -> ModuleOutput:
        return _with_hidden(output, hooks(name, hidden_of(output)))

    return site.module.register_forward_hook(for_this_thread(read_output))


def _split(site: Site, output: torch.Tensor) -> torch.Tensor:
    """A SPLIT site's heads [B, H, L, d_k] in its module's output [B, L, width]."""
    projected = output if site.part is None else output.chunk(FUSED_PARTS, dim=-1)[site.part]  # [B, L, H' * d_k]
    if not site.head_width:
        return split_heads(projected, site.n_heads)  # [B, H, L, d_k]
    shared = split_heads(projected, projected.shape[-1] // site.head_width)  # [B, H_kv, L, d_k]
    return shared.repeat_interleave(site.n_heads // shared.shape[1], dim=1)  # [B, H, L, d_k] (the library's repeat_kv)


def one_stack_run(sites: dict[str, Site], hooks: Hooks, head: torch.nn.Module | None, run: Callable[[bool], Any]) -> Any:
    """A one-stack layout's library pass ``run(output_attentions)`` with ``hooks`` installed on their ``sites`` (and no
    position for the output ``head`` to read when they want no output), removed after it; each ``{side}.{l}.self.pattern``
    asked for is read from the library's own ``attentions`` (never patched)."""
    patterns = sorted(name for name in hooks.names if name.endswith(".pattern"))
    if any(name in hooks.names - frozenset(hooks.capture) for name in patterns):
        raise InterventionError("a pretrained model's attention patterns are read, not patched")
    handles = [install(sites[name], name, hooks) for name in sites if name in hooks.names]
    if head is not None:
        handles += [handle for handle in (without_output(hooks, head),) if handle is not None]
    try:
        out = run(bool(patterns))
    finally:
        for handle in handles:
            handle.remove()
    for name in patterns:
        hooks(name, out.attentions[int(name.split(".")[1])])  # [B, H, L, L]
    return out


def without_output(hooks: Hooks, head: torch.nn.Module) -> RemovableHandle | None:
    """When ``hooks`` want no output: a pre-hook on the output head that gives it no position to read (the library's
    forward then returns logits [B, 0, V]); None when they do."""
    if hooks.output:
        return None

    def no_position(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return (args[0][..., :0, :], *args[1:]), kwargs  # [B, 0, d_model]

    return head.register_forward_pre_hook(for_this_thread(no_position), with_kwargs=True)


class _Handles:
    """Two hooks removed as one (an ADDED site's)."""

    def __init__(self, *handles: RemovableHandle) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _install_added(site: Site, name: str, hooks: Hooks) -> _Handles:
    """A pre-norm sublayer's stream after its residual add, which no module returns: the stream it was given (its
    norm's input, kept by a pre-hook) plus its output. Patched, the sublayer returns the patched stream less the one
    it was given, so the layer's own add gives the patched stream; only read, it returns its own output, with the
    gradient passing through the stream read."""
    assert site.before is not None  # an ADDED site names the norm that reads the stream before it
    given: list[torch.Tensor] = []

    def keep_stream(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        given[:] = [hidden_input(args, kwargs)]

    def add_stream(module: torch.nn.Module, args: tuple, output: ModuleOutput) -> ModuleOutput:
        out = hidden_of(output)  # [B, L, d_model]
        stream = given[0] + out  # [B, L, d_model]: what the layer adds (dropout is off in eval mode)
        hooked = hooks(name, stream)
        if hooked is stream:  # read only: the library's output, its gradient through the stream read
            return _with_hidden(output, out.detach() + (stream - stream.detach()))
        return _with_hidden(output, hooked - given[0])

    return _Handles(
        site.before.register_forward_pre_hook(for_this_thread(keep_stream), with_kwargs=True),
        site.module.register_forward_hook(for_this_thread(add_stream)),
    )
