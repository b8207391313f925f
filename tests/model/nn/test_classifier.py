"""Seed 004's encoder-only classifier: its attention equals an independent softmax(QK^T / sqrt(d_k) + mask) in
NumPy from the same weights (tagger and sentence classifier, padded batches), its head has the seed's shapes, the
stepper's trace equals one full pass, and a few steps of training on labels lower the loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.nn.classifier import ClassifierConfig, EncoderClassifier
from model.nn.config import ConfigError


def _model(task: str, norm: str = "post", seed: int = 0) -> EncoderClassifier:
    torch.manual_seed(seed)
    config = ClassifierConfig(
        vocab_size=40, class_names=["A", "B", "C"], task=task, n_layers=2, d_model=16, n_heads=4, d_ff=32, norm_placement=norm
    )
    return EncoderClassifier(config).eval()


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


def numpy_attention(model: EncoderClassifier, ids: np.ndarray) -> list[np.ndarray]:
    """Every layer's attention [B, H, S, S], computed in NumPy from the module's weights: embeddings x sqrt(d_model)
    + positions, then per layer softmax(Q K^T / sqrt(d_k) + mask) with the padded keys masked, the residuals, the
    post-norms and the feed-forward network (written here, not called from the module)."""
    config = model.config
    p = {name: value.detach().double().numpy() for name, value in model.state_dict().items()}
    table = model.positional_table.detach().double().numpy()
    x = p["embedding.weight"][ids] * np.sqrt(config.d_model) + table[: ids.shape[1]]  # [B, S, d]
    keep = ids != config.pad_id  # [B, S]
    heads, d_k = config.n_heads, config.d_k
    found = []
    for layer in range(config.n_layers):
        prefix = f"layers.{layer}."
        qkv = x @ p[prefix + "self_attention.qkv_projection.weight"].T  # [B, S, 3d]
        q, k, v = (part.reshape(*ids.shape, heads, d_k).transpose(0, 2, 1, 3) for part in np.split(qkv, 3, axis=-1))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # [B, H, S, S]
        scores = np.where(keep[:, None, None, :], scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        found.append(weights)
        context = (weights @ v).transpose(0, 2, 1, 3).reshape(*ids.shape, -1)  # [B, S, d]
        attended = context @ p[prefix + "self_attention.out_projection.weight"].T
        x = _layer_norm(x + attended, p[prefix + "norms.0.weight"], p[prefix + "norms.0.bias"])
        hidden = np.maximum(x @ p[prefix + "feed_forward.expand.weight"].T + p[prefix + "feed_forward.expand.bias"], 0)
        forward = hidden @ p[prefix + "feed_forward.contract.weight"].T + p[prefix + "feed_forward.contract.bias"]
        x = _layer_norm(x + forward, p[prefix + "norms.1.weight"], p[prefix + "norms.1.bias"])
    return found


@pytest.mark.parametrize("task", ["tagging", "sentence"])
def test_attention_equals_an_independent_softmax_of_scaled_scores(task):
    model = _model(task)
    ids = np.array([[5, 9, 12, 7, 3, 0, 0], [6, 8, 10, 11, 13, 14, 3]])  # the first padded
    with torch.no_grad():
        _, weights = model.inspect(torch.from_numpy(ids))
    expected = numpy_attention(model, ids)
    assert len(weights.encoder_self) == 2 and weights.decoder_self == [] and weights.cross == []
    for ours, theirs in zip(weights.encoder_self, expected):
        assert np.abs(ours.double().numpy() - theirs).max() <= 1e-5
        assert np.allclose(ours.sum(-1).numpy(), 1.0, atol=1e-6)
    assert float(weights.encoder_self[0][0, :, :, 5:].abs().max()) == 0.0  # padded keys: exactly zero


def test_the_heads_shapes_are_the_seeds():
    ids = torch.tensor([[5, 9, 12, 3], [6, 8, 3, 0]])
    assert _model("tagging")(ids).shape == (2, 4, 3)  # [batch, seq_len, classes], seed 004's TransformerClassifier
    assert _model("sentence")(ids).shape == (2, 3)  # pooled: one class per sentence
    # The pooled mean ignores padding: the padded sentence scores as it does alone.
    alone = _model("sentence")(torch.tensor([[6, 8, 3]]))
    assert torch.allclose(_model("sentence")(ids)[1], alone[0], atol=1e-5)


def test_config_is_checked():
    with pytest.raises(ConfigError, match="at least two distinct classes"):
        ClassifierConfig(class_names=["only"])
    with pytest.raises(ConfigError, match="task"):
        ClassifierConfig(task="regression")
    with pytest.raises(ConfigError, match="divisible"):
        ClassifierConfig(d_model=30, n_heads=4)
    config = ClassifierConfig(class_names=["x", "y", "z"], task="sentence")
    assert ClassifierConfig.from_dict(config.to_dict()) == config
    assert config.n_classes == 3 and config.n_encoder_layers == config.n_layers and config.n_decoder_layers == 0


def test_a_few_steps_of_training_lower_the_loss():
    from model.training.step import make_optimizer, training_step

    model = _model("tagging")
    optimizer = make_optimizer(model)
    optimizer.lr = 3e-3
    generator = torch.Generator().manual_seed(0)
    source = torch.randint(4, 40, (16, 6), generator=generator)
    labels = (source % 3) + 1  # the class is the piece id modulo 3 (+1: 0 means no label)
    losses = [training_step(model, optimizer, source, labels, 0.0, 1.0)[0] for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]
