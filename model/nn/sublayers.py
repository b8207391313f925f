"""The residual connections around a Transformer layer's sublayers, with their LayerNorms after (post-norm, the
paper's) or before (pre-norm), and the hook points of what each sublayer reads, what it outputs and its norm's scale
(model/nn/hooks.py): the encoder's and decoder's layers (model/nn/transformer.py) are made of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.nn.attention import MultiHeadAttention
from model.nn.config import TransformerConfig
from model.nn.dropout import Dropout
from model.nn.hooks import HookPoint


def layer_norm(norm: nn.LayerNorm, x: torch.Tensor, scale_point: HookPoint | None = None) -> torch.Tensor:
    """A LayerNorm module's function of x [..., d_model], as a functional call (what every sublayer's norm computes).
    With ``scale_point`` hooked, by hand: γ ⊙ (x − mean) · s + β with s = 1/σ [..., 1] passed through the point, so that
    a tool can read the norm's scale or hold it at another run's (the circuits' frozen norm, model/circuits/)."""
    normalised = F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
    if scale_point is None or not scale_point.hooked:
        return normalised
    centred = x - x.mean(-1, keepdim=True)  # [..., d_model]
    computed = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + norm.eps)  # [..., 1]
    scale = scale_point(computed)
    if scale is computed:  # only read: the norm's own values, so that reading never changes what the model computes
        return normalised
    return centred * scale * norm.weight + norm.bias


Points = tuple[HookPoint, HookPoint, HookPoint]  # a sublayer's hook points: what it reads, its output, its norm's scale


class Sublayers(nn.Module):
    """Residual connections around sublayers, with LayerNorm after (post) or before (pre)."""

    def __init__(self, config: TransformerConfig, n_sublayers: int):
        super().__init__()
        self.pre_norm = config.norm_placement == "pre"
        self.norms = nn.ModuleList(nn.LayerNorm(config.d_model) for _ in range(n_sublayers))
        self.dropout = Dropout(config.dropout)
        self.hook_resid_pre, self.hook_resid_post = HookPoint(), HookPoint()  # the layer's input and output

    def residual(
        self, index: int, x: torch.Tensor, sublayer: Callable, points: Points | None = None
    ) -> tuple[torch.Tensor, object]:
        """Apply sublayer(x) -> (output, extra) with its residual and norm; return (x, extra). ``points``: the hook
        points of what the sublayer reads and of its output (the teacher-forced pass's; a one-token step has none)."""
        norm = cast(nn.LayerNorm, self.norms[index])
        scale = points[2] if points is not None else None
        read = layer_norm(norm, x, scale) if self.pre_norm else x  # [.., d_model]
        if points is not None:
            read = points[0](read)
        output, extra = sublayer(read)
        if points is not None:
            output = points[1](output)
        summed = self.dropout.add_to(x, output)  # [.., d_model]
        return (summed if self.pre_norm else layer_norm(norm, summed, scale)), extra

    def mlp_points(self) -> Points:
        """The feed-forward sublayer's hook points (what it reads, its output, its norm's scale)."""
        return cast(Points, (self.hook_mlp_in, self.hook_mlp_out, self.hook_mlp_scale))

    def _attention_points(self, name: str, attention: MultiHeadAttention) -> dict[str, HookPoint]:
        """The hook points of attention sublayer ``name`` ("self" or "cross") by their names within the layer."""
        read, output, scale, resid = (getattr(self, f"hook_{name}_{point}") for point in ("in", "out", "scale", "resid"))
        own = {f"{name}.{point}": hook for point, hook in attention.hook_points().items()}
        norm = {f"{name}.scale": scale}  # the sublayer's norm's 1/σ: before it reads (pre-norm), after its add (post-norm)
        return {f"{name}.in": read, **own, f"{name}.out": output, **norm, f"{name}.resid": resid}
