"""The fused label-smoothed cross-entropy equals F.cross_entropy, in value and gradient, and counts
the pieces whose gold logit is the highest."""

import pytest
import torch
import torch.nn.functional as F

from model.training.loss import _SmoothedCrossEntropy, smoothed_cross_entropy


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("magnitude", [1.0, 80.0])
def test_loss_and_gradient_equal_torch_cross_entropy(smoothing, magnitude):
    generator = torch.Generator().manual_seed(3)
    logits = (torch.randn(50, 37, generator=generator) * magnitude).requires_grad_()
    gold = torch.randint(0, 37, (50,), generator=generator)
    expected = F.cross_entropy(logits, gold, label_smoothing=smoothing)
    (expected_gradient,) = torch.autograd.grad(2.5 * expected, logits)
    loss, correct = smoothed_cross_entropy(logits, gold, smoothing)
    (gradient,) = torch.autograd.grad(2.5 * loss, logits)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    torch.testing.assert_close(gradient, expected_gradient, rtol=1e-5, atol=1e-7)
    assert correct == int((logits.argmax(-1) == gold).sum())
    assert torch.isfinite(loss)


def test_correct_counts_rows_whose_gold_scores_highest():
    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.5], [0.0, 0.0, 9.0], [1.0, 1.5, 0.2]])
    loss, correct = smoothed_cross_entropy(logits, torch.tensor([1, 0, 1, 0]), 0.1)
    assert correct == 2
    assert loss.item() == pytest.approx(F.cross_entropy(logits, torch.tensor([1, 0, 1, 0]), label_smoothing=0.1).item(), rel=1e-6)


def test_gradient_is_exact_in_double_precision():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 5, dtype=torch.float64, generator=generator, requires_grad=True)
    gold = torch.tensor([0, 4, 2, 2, 1, 3])
    assert torch.autograd.gradcheck(lambda x: _SmoothedCrossEntropy.apply(x, gold, 0.1)[0], (logits,))


def test_half_precision_logits_are_computed_in_float32():
    logits = torch.randn(8, 11).to(torch.bfloat16).requires_grad_()
    gold = torch.arange(8)
    loss, _ = smoothed_cross_entropy(logits, gold, 0.1)
    loss.backward()
    assert loss.dtype == torch.float32 and logits.grad.dtype == torch.bfloat16
    expected = F.cross_entropy(logits.detach().float(), gold, label_smoothing=0.1)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
