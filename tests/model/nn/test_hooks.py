"""The Transformer's hook points (model/nn/hooks.py): identities that a forward hook reads or replaces in the model's own
pass; every one is named; the per-head outputs are formed only when hooked; the one-token steps carry none."""

from __future__ import annotations

import pytest
import torch

from model.nn import attention
from model.nn.hooks import HookPoint
from model.nn.packing import PackedRows
from tests.model.interventions.models import SOURCES, TARGETS, padded, tiny


def test_a_hook_point_is_the_identity_until_hooked():
    point = HookPoint("x")
    value = torch.randn(2, 3)
    assert point(value) is value and not point.hooked and list(point.parameters()) == []
    handle = point.register_forward_hook(lambda _module, _args, output: output * 2)
    assert point.hooked and torch.equal(point(value), value * 2)
    handle.remove()
    assert not point.hooked and point(value) is value


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_every_hook_point_is_named_and_adds_no_state(norm):
    model = tiny(norm)
    points = model.hook_points()
    in_model = [module for module in model.modules() if isinstance(module, HookPoint)]
    assert len(in_model) == len(points) and {id(point) for point in in_model} == {id(point) for point in points.values()}
    assert all(point.name == name for name, point in points.items())
    assert not any("hook" in key for key in model.state_dict())


def test_a_forward_hook_changes_the_model_s_own_forward_and_leaves_it_after():
    model = tiny("pre")
    source, target = padded(SOURCES), padded(TARGETS)
    with torch.no_grad():
        plain = model(source, target)
        handle = model.hook_points()["decoder.1.mlp_out"].register_forward_hook(lambda _m, _a, output: torch.zeros_like(output))
        zeroed = model(source, target)
        handle.remove()
        again = model(source, target)
    assert float((zeroed - plain).abs().max()) > 1e-3 and torch.equal(again, plain)


def _counting_heads(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = attention.head_outputs

    def counted(module, context):
        calls.append(1)
        return original(module, context)

    monkeypatch.setattr(attention, "head_outputs", counted)
    return calls


def test_each_head_s_output_is_formed_only_when_hooked(monkeypatch):
    calls = _counting_heads(monkeypatch)
    model = tiny("post")
    source, target = padded(SOURCES), padded(TARGETS)
    with torch.no_grad():
        plain = model(source, target)
        model.inspect(source, target)
        assert calls == []
        read = []
        point = model.hook_points()["decoder.0.cross.head_out"]
        handle = point.register_forward_hook(lambda _m, _a, output: read.append(output))
        hooked = model(source, target)
        handle.remove()
    assert len(calls) == 1 and read[0].shape == (2, 4, target.shape[1], 32)
    assert torch.equal(hooked, plain)  # only read: the output is the projection's own


def test_the_packed_training_pass_reads_heads_too():
    model = tiny("pre")
    source, target = padded(SOURCES), padded(TARGETS)
    rows = PackedRows(target != 0)
    read = []
    handle = model.hook_points()["decoder.1.self.head_out"].register_forward_hook(lambda _m, _a, out: read.append(out))
    with torch.no_grad():
        packed = model(source, target, rows=rows)  # [N, d_model]
    handle.remove()
    with torch.no_grad():
        assert torch.equal(packed, model(source, target, rows=rows))
    assert read[0].shape == (2, 4, target.shape[1], 32)


def test_one_token_steps_carry_no_hook_points():
    model = tiny("pre")
    seen: list[str] = []
    handles = [
        point.register_forward_hook(lambda _m, _a, output, name=name: seen.append(name))
        for name, point in model.hook_points().items()
        if name.startswith("decoder.0.")
    ]
    with torch.no_grad():
        memory, mask, _ = model.encode(padded(SOURCES[:1]))
        model.decode_step(torch.tensor([2]), model.start_cache(memory, mask))
    for handle in handles:
        handle.remove()
    assert seen == []
