"""The catalogue of readings a view can colour by: raw attention weights and the contribution measures of
model/attribution/ (their names, labels, the kinds each defines, whether per head or rolled out). Plain data, so that
selections, titles and captions name a measure without importing the code that computes it."""

from __future__ import annotations

from dataclasses import dataclass

from model.kinds import AttentionKind

ENCODER, DECODER, CROSS = AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS
ALL_KINDS = (ENCODER, DECODER, CROSS)


@dataclass(frozen=True)
class Measure:
    name: str  # what the command line and files call it
    label: str  # what a person reads
    what: str  # one line: how it is computed (tooltips, captions)
    kinds: tuple[AttentionKind, ...]  # the kinds it defines
    per_head: bool = False  # False: one map per layer (or one in all)
    rollout: bool = False  # layer l reads through layers 1..l
    gradient: bool = False  # needs backward passes (slower: computed in a worker)
    single: bool = False  # one map in all, not per layer
    why_not: str = ""  # why a kind it does not define is missing


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure("attention", "Attention weights", "softmax(QKᵀ/√d_k): the raw weights", ALL_KINDS, per_head=True),
        Measure("norm", "Norm-based ‖α f(x)‖", "‖α_ij · x_j W_V W_O‖ per head (Kobayashi et al. 2020)", ALL_KINDS, per_head=True),
        Measure(
            "alti",
            "ALTI",
            "token contributions through attention, residual and layer norm, rolled out (Ferrando et al. 2022)",
            (ENCODER, DECODER),
            rollout=True,
            why_not="ALTI rolls out self-attention; ALTI+ adds what cross-attention brings from the source",
        ),
        Measure(
            "alti+",
            "ALTI+",
            "ALTI through the decoder: each prediction split into source and target-prefix shares (Ferrando et al. 2022)",
            ALL_KINDS,
            rollout=True,
        ),
        Measure(
            "value-zeroing",
            "Value zeroing",
            "cosine distance of the layer's output when one value vector is zeroed (Mohebbi et al. 2023)",
            ALL_KINDS,
        ),
        Measure(
            "attn-grad",
            "Attention × gradient",
            "(∇A ⊙ A)⁺ averaged over heads with the encoder-decoder rules (Chefer et al. 2021)",
            ALL_KINDS,
            rollout=True,
            gradient=True,
        ),
        Measure(
            "grad-input",
            "Gradient × input",
            "∇ log p(token) · embedding, over source and target-prefix tokens",
            (DECODER, CROSS),
            gradient=True,
            single=True,
            why_not="saliency is of a prediction over the source and the target prefix; the encoder predicts nothing",
        ),
        Measure(
            "ig",
            "Integrated gradients",
            "gradients integrated from zero embeddings (Sundararajan et al. 2017), over source and target prefix",
            (DECODER, CROSS),
            gradient=True,
            single=True,
            why_not="saliency is of a prediction over the source and the target prefix; the encoder predicts nothing",
        ),
        Measure(
            "shift-att",
            "Shift-Att",
            "cross-attention read at the step where the word is the decoder's input (Chen et al. 2020)",
            (CROSS,),
            per_head=True,
            why_not="Shift-Att is a reading of cross-attention",
        ),
    )
}
NAMES = tuple(MEASURES)
CONTRIBUTIONS = NAMES[1:]  # every measure beyond raw attention
