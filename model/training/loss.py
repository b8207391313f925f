"""Label-smoothed cross-entropy and token accuracy in one pass over the logits, for training.

F.cross_entropy(label_smoothing=...) takes a log-softmax, a separate sum for the smoothing term, and
in the backward pass builds two dense gradients and adds them before the log-softmax backward; the
accuracy then needs an argmax, which on the CPU is single-threaded and slow. The logits are the
largest activation of a step ([N, vocabulary]), so those passes cost several percent of a CPU step.

Here the forward pass shifts the logits by their row maximum once and exponentiates them in place;
the backward pass turns those exponentials into the gradient:

    loss_i = log Z_i - (1 - eps) s_i[gold] - (eps / V) sum_j s_ij,   s = logits - rowmax, Z = sum_j exp s_ij
    d loss / d logits = (softmax - (1 - eps) onehot(gold) - eps / V) / N

A piece counts as correct when its gold logit is the row maximum (what argmax picks, barring exact ties).
Results equal F.cross_entropy to float rounding (tests/test_loss.py).
"""

from __future__ import annotations

import torch


class _SmoothedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, gold: torch.Tensor, smoothing: float):
        vocab = logits.shape[-1]
        shifted = logits - logits.amax(-1, keepdim=True)  # [N, V], every value <= 0
        shifted_sum = shifted.sum(-1)  # [N]
        gold_shifted = shifted.gather(1, gold[:, None]).squeeze(1)  # [N], 0 where gold is the maximum
        exponentials = shifted.exp_()  # [N, V], in place: the backward pass needs only these
        sum_exp = exponentials.sum(-1)  # [N]
        per_row = sum_exp.log() - (1.0 - smoothing) * gold_shifted - (smoothing / vocab) * shifted_sum  # [N]
        ctx.save_for_backward(exponentials, sum_exp, gold)
        ctx.smoothing = smoothing
        ctx.mark_non_differentiable(gold_shifted)
        return per_row.mean(), gold_shifted

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor, _grad_gold_shifted):
        exponentials, sum_exp, gold = ctx.saved_tensors
        n_rows, vocab = exponentials.shape
        scale = grad_loss / n_rows  # []
        gradient = exponentials.mul((scale / sum_exp)[:, None]).sub_(scale * (ctx.smoothing / vocab))  # [N, V]
        gradient[torch.arange(n_rows, device=gold.device), gold] -= scale * (1.0 - ctx.smoothing)
        return gradient, None, None


def smoothed_cross_entropy(logits: torch.Tensor, gold: torch.Tensor, smoothing: float = 0.0):
    """logits [N, V] (half precision is computed in float32), gold ids [N] ->
    (mean label-smoothed cross-entropy, number of rows whose gold logit is the maximum)."""
    if logits.dtype not in (torch.float32, torch.float64):
        logits = logits.float()
    loss, gold_shifted = _SmoothedCrossEntropy.apply(logits, gold, float(smoothing))
    return loss, int((gold_shifted >= 0).sum())
