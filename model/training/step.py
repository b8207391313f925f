"""One training step of any family (model/nn/registry.py), and the pieces around it: the examples a family
learns from, the scores of the positions a batch teaches, the paper's Adam over the flat weights.

An encoder-decoder (Transformer or RNN) learns the next piece at every real target position; a classifier
learns its labels (model/training/labelling.py). Either way a step is one label-smoothed cross-entropy over
[N, V] scores, and a step whose loss is not finite is not taken.
"""

from __future__ import annotations

import math
from typing import cast

import torch

from model.data.batching import encode_pairs
from model.family import family_of
from model.network import LabellingNetwork, TeacherForcedNetwork, TrainableNetwork
from model.nn.packing import PackedRows
from model.training.labelling import batch_logits as labelled_batch_logits
from model.training.labelling import encode_labelled
from model.training.loss import smoothed_cross_entropy
from model.training.optimizer import FlatAdam


def weights_are_finite(model: torch.nn.Module) -> bool:
    """Whether every parameter and buffer of the model is finite (no NaN, no infinity)."""
    return all(bool(torch.isfinite(tensor).all()) for tensor in model.state_dict().values() if tensor.is_floating_point())


def make_optimizer(model: torch.nn.Module) -> FlatAdam:
    """The paper's Adam (betas 0.9 and 0.98, eps 1e-9) over the model's parameters as one flat buffer."""
    return FlatAdam(model, lr=0.0, betas=(0.9, 0.98), eps=1e-9)


def training_step(
    model: TrainableNetwork, optimizer, source, target, label_smoothing: float, clip_norm: float, autocast_dtype=None
) -> tuple[float, int, int]:
    """One optimizer step on a padded batch; returns (loss, correct pieces, real pieces).

    A non-finite loss (NaN or infinite) takes no step: the weights stay as they were and the caller
    sees the loss, so it can stop."""
    if not model.training:  # train() walks every module: a millisecond a step when done needlessly
        model.train()
    optimizer.zero_grad()
    with torch.autocast(source.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
        logits, gold = batch_logits(model, source, target)  # [N, V], [N]
    loss, correct = smoothed_cross_entropy(logits, gold, label_smoothing)
    value = loss.item()
    if not math.isfinite(value):  # a NaN or infinite loss would turn every weight into NaN: no step
        return value, correct, gold.numel()
    loss.backward()
    optimizer.step(clip_norm)
    return value, correct, gold.numel()


def batch_logits(model: TrainableNetwork, source: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores [N, V] of the N positions a batch teaches, their gold ids [N]): the next piece at every real target
    position of an encoder-decoder (Transformer or RNN), the labels of a classifier."""
    if family_of(model).capabilities.labels:
        return labelled_batch_logits(cast(LabellingNetwork, model), source, target)
    network = cast(TeacherForcedNetwork[PackedRows], model)  # an encoder-decoder: its forward reads the target too
    gold = target[:, 1:]  # [B, T]
    real = gold != network.config.pad_id  # [B, T]
    hidden = network(source, target[:, :-1], rows=PackedRows(real))  # [N, d_model]: real positions only
    return network.logits(hidden), gold[real]  # [N, V], [N]


def encode_examples(model: TrainableNetwork, pairs, source_tokenizer, target_tokenizer) -> list[tuple[list[int], list[int]]]:
    """The pairs as the family learns them: (source ids, target ids), or (input ids, shifted labels)."""
    if family_of(model).capabilities.labels:
        return encode_labelled(pairs, source_tokenizer, model.config)
    return encode_pairs(pairs, source_tokenizer, target_tokenizer, model.config)
