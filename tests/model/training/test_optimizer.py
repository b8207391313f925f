"""FlatAdam: the same updates as torch.optim.Adam after clip_grad_norm_, on one flat buffer that the
model's parameters are views of; checkpoints still save; moving the model afterwards is a clear error."""

import dataclasses
import subprocess
import sys

import pytest
import torch

from model.io import checkpoint
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer
from model.training.optimizer import FlatAdam
from tests.conftest import ROOT, TINY_MODEL


def tiny_model(seed=0, **options):
    torch.manual_seed(seed)
    return Transformer(TransformerConfig(source_vocab_size=30, target_vocab_size=30, **{**TINY_MODEL, **options}))


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("clip_norm", [0.0, 0.05, 1e6])
def test_updates_equal_torch_adam_after_clipping(fused, clip_norm):
    reference, flat = tiny_model(), tiny_model()
    torch_adam = torch.optim.Adam(reference.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    flat_adam = FlatAdam(flat)
    flat_adam.fused = fused
    generator = torch.Generator().manual_seed(1)
    for step in range(1, 6):
        rate = 1e-3 * step
        for group in torch_adam.param_groups:
            group["lr"] = rate
        flat_adam.lr = rate
        for p, q in zip(reference.parameters(), flat.parameters()):
            p.grad = torch.randn(p.shape, generator=generator) * 0.1
            q.grad = p.grad.clone()
        expected_norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), clip_norm) if clip_norm else None
        torch_adam.step()
        norm = flat_adam.step(clip_norm)
        if expected_norm is not None:
            assert norm.item() == pytest.approx(expected_norm.item(), rel=1e-5)
        flat_adam.zero_grad()
        assert all(q.grad is None for q in flat.parameters())
    initial = tiny_model().state_dict()
    for name, p in reference.named_parameters():
        assert not torch.equal(p, initial[name]), name  # every parameter was updated
    for (name, p), q in zip(reference.named_parameters(), flat.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=name)


def test_parameters_are_views_of_one_buffer_and_the_model_still_saves(copy_bundle, tmp_path):
    bundle, _ = copy_bundle
    model = Transformer(bundle.config)
    model.load_state_dict(bundle.model.state_dict())
    optimizer = FlatAdam(model)
    assert optimizer.flat_parameters.numel() == model.parameter_count()
    assert all(p.untyped_storage().data_ptr() == optimizer.flat_parameters.untyped_storage().data_ptr() for p in model.parameters())
    with torch.no_grad():
        optimizer.flat_parameters.add_(1.0)  # the model sees the change
    assert torch.equal(model.source_embedding.weight, bundle.model.source_embedding.weight + 1.0)
    path = checkpoint.save(dataclasses.replace(bundle, model=model), tmp_path / "views.safetensors")
    loaded = checkpoint.load(path)
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name


def test_a_gradient_missing_from_one_parameter_counts_as_zero():
    model = tiny_model()
    optimizer = FlatAdam(model, lr=0.1)
    parameters = list(model.parameters())
    before = [p.detach().clone() for p in parameters]
    parameters[0].grad = torch.ones_like(parameters[0])
    optimizer.step()
    assert not torch.equal(parameters[0], before[0])
    assert all(torch.equal(p, b) for p, b in zip(parameters[1:], before[1:]))


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_a_gradient_that_is_not_finite_takes_no_step(bad):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    optimizer = FlatAdam(model, lr=0.1)
    model(torch.randn(5, 4)).sum().backward()
    optimizer.step(1.0)  # one good step
    before = [t.clone() for t in (optimizer.flat_parameters, optimizer.exp_avg, optimizer.exp_avg_sq, optimizer.steps)]
    optimizer.zero_grad()
    model(torch.randn(5, 4)).sum().backward()
    model[0].weight.grad[0, 0] = bad
    norm = optimizer.step(1.0)
    assert not torch.isfinite(norm) and optimizer.skipped == 1
    after = (optimizer.flat_parameters, optimizer.exp_avg, optimizer.exp_avg_sq, optimizer.steps)
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    assert torch.isfinite(optimizer.flat_parameters).all()


def test_moving_the_model_afterwards_is_a_clear_error():
    model = tiny_model()
    optimizer = FlatAdam(model)
    model.to(torch.float64)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    with pytest.raises(RuntimeError, match="moved after the optimizer was built"):
        optimizer.step()


def test_building_it_does_not_import_the_compiler():
    """torch.optim.Adam's first construction imports torch._dynamo (about 2 s): the first training of
    every session paid it."""
    code = (
        "import sys, torch; from model.training.trainer import make_optimizer; from model.nn.transformer import Transformer;"
        "from model.nn.config import TransformerConfig as C;"
        "make_optimizer(Transformer(C(source_vocab_size=20, target_vocab_size=20, d_model=16, n_heads=2, d_ff=32)));"
        "print('torch._dynamo' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "False", result.stderr
