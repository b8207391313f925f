"""What the contribution measures read of a network's own teacher-forced pass, whatever the network: one record.

Every contribution measure needs more than the attention probabilities: ALTI splits each attention sublayer's
output into one vector per input token (through the residual and the layer norm), value zeroing runs a layer
again with value vectors scaled, and the gradient methods differentiate through the probabilities and the input
embeddings. A family declares the pass that gives them (``Capabilities.measured_pass``: the app's Transformer's in
model/attribution/own_pass.py, the Hugging Face encoder-decoders' in model/attribution/library_pass.py); each runs the
network's own forward pass with hooks, and keeps per attention sublayer:

* ``weights`` α [B, H, Q, K], the probabilities the pass used, in the autograd graph (attention × gradient
  differentiates through them);
* ``transformed`` f_h(x_j) = v_j,h W_O,h [B, H, K, d_model]: each key's value vector through the head's slice of the
  output projection, each key's vector as head h passes it on;
* ``residual`` x_i [B, Q, d_model], the stream the sublayer's output is added to;
* ``bias``, the output projection's bias (no token's; None where there is none);
* ``norm``, the LayerNorm after the sum in a post-norm model (None in a pre-norm one).

Token embeddings (``embed_tokens``: what the network's token embedding gives, before positions) can replace the
network's own, so the gradient methods can scale or differentiate them. A change to a model is a change to what every
measure reads: there is no second copy of its pass. Tests check each pass's logits and attention against the model's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from model.errors import UserError
from model.family import capabilities_of, declared, family_of
from model.kinds import AttentionKind
from model.network import Network

SOURCE, TARGET = "source", "target"  # the sides a pass embeds


@dataclass
class AttentionRecord:
    """One attention sublayer of one pass (see the module's docstring)."""

    weights: torch.Tensor  # [B, H, Q, K]
    transformed: torch.Tensor  # [B, H, K, d_model]
    residual: torch.Tensor  # [B, Q, d_model]
    norm: torch.nn.LayerNorm | None  # post-norm: applied to residual + output
    bias: torch.Tensor | None = None  # [d_model]: the output projection's, added once to the sublayer's output


@dataclass
class PassRecord:
    source_ids: torch.Tensor  # [B, S]: what the pass was given (stand-ins where embeddings replaced the tokens')
    target_ids: torch.Tensor  # [B, T]
    encoder: list[AttentionRecord] = field(default_factory=list)  # per encoder layer
    decoder: list[AttentionRecord] = field(default_factory=list)  # per decoder layer: masked self-attention
    cross: list[AttentionRecord] = field(default_factory=list)  # per decoder layer: cross-attention
    encoder_inputs: list[torch.Tensor] = field(default_factory=list)  # x entering each encoder layer [B, S, d_model]
    decoder_inputs: list[torch.Tensor] = field(default_factory=list)  # x entering each decoder layer [B, T, d_model]
    memory: torch.Tensor | None = None  # [B, S, d_model]: what cross-attention reads
    hidden: torch.Tensor | None = None  # [B, T, ...], or [B, ...] at one position per row (``logits_at``)
    read_out: Callable[[torch.Tensor], torch.Tensor] | None = field(default=None, repr=False)  # hidden -> logits

    @property
    def logits(self) -> torch.Tensor | None:
        """[B, T, V], or [B, V] at one position per row: the decoder's output through the model's output projection
        (computed when asked: the contribution measures read none)."""
        return None if self.hidden is None or self.read_out is None else self.read_out(self.hidden)

    def attentions(self, kind: AttentionKind) -> list[AttentionRecord]:
        """The records of ``kind``'s attention, one per layer."""
        return {AttentionKind.ENCODER: self.encoder, AttentionKind.DECODER: self.decoder, AttentionKind.CROSS: self.cross}[kind]


class MeasuredPass(Protocol):
    """A network's own teacher-forced pass, split into what the measures read (one per network, its family's)."""

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor: ...  # [B, L] -> [B, L, d_model] token embeddings

    def run(
        self,
        source_ids: torch.Tensor,  # [B, S]
        target_ids: torch.Tensor,  # [B, T]: the decoder start token, then the target so far
        replacements: dict[str, torch.Tensor],  # side -> embeddings [B, L, d_model] that replace the token embeddings
        logits_at: torch.Tensor | None,  # [B]: keep only each row's output at this position
        record_sublayers: bool,  # keep every attention's record (else only the memory and the output)
    ) -> PassRecord: ...

    # one layer's output [1 + K, L, d_model] from the record's inputs, with ``kind``'s value vectors of key j scaled by
    # scale[b, j] (scale [1 + K, K]: row 0 unchanged, then each key zeroed): what value zeroing compares
    def zeroed_layer(self, record: PassRecord, kind: AttentionKind, layer: int, scale: torch.Tensor) -> torch.Tensor: ...


def measured_pass_of(model: Network) -> MeasuredPass:
    """``model``'s measured pass, once its family says it has one for its layout (``Capabilities.measured_pass``);
    a UserError (one line) otherwise."""
    path = capabilities_of(model).measured_pass
    if path is None:
        title = family_of(model).title
        raise UserError(f"the contribution measures are computed for the app's Transformers, not for this model ({title})")
    return declared(path)(model)


def _stand_in_ids(vectors: torch.Tensor, pad_id: int) -> torch.Tensor:
    """[B, L] ids of no padding, whose embeddings ``vectors`` [B, L, d_model] replace."""
    piece = 1 if pad_id == 0 else 0
    return torch.full(vectors.shape[:2], piece, dtype=torch.long, device=vectors.device)  # [B, L]


def embed_tokens(model: Network, ids: torch.Tensor, side: str) -> torch.Tensor:
    """Token ids [B, L] -> the token embeddings the network's pass starts from [B, L, d_model] (no positions)."""
    return measured_pass_of(model).embed(ids, side)


def transparent_pass(
    model: Network,
    source_vectors: torch.Tensor,
    target_vectors: torch.Tensor,
    logits_at: torch.Tensor | None = None,
    record_sublayers: bool = True,
) -> PassRecord:
    """The teacher-forced pass from token embeddings: source [B, S, d_model], decoder inputs [B, T, d_model]
    (``embed_tokens``, or scaled copies of them) in place of the model's own. Sentences are unpadded (one sentence,
    repeated). With ``logits_at`` [B], only each row's logits at that position are kept ([B, V]); without
    ``record_sublayers`` only the memory and the logits are (the attention runs its fast path)."""
    pad = model.config.pad_id
    stand_ins = _stand_in_ids(source_vectors, pad), _stand_in_ids(target_vectors, pad)
    replacements = {SOURCE: source_vectors, TARGET: target_vectors}
    return measured_pass_of(model).run(*stand_ins, replacements, logits_at, record_sublayers)


def token_pass(model: Network, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> PassRecord:
    """The record of the pass from token ids [B, S] and [B, T] (unpadded): the model's own embeddings."""
    return measured_pass_of(model).run(source_ids, target_input_ids, {}, None, True)
