"""Traces of model families with fewer kinds of attention: an encoder-only trace (encoder self-attention,
no steps) and a decoder-only trace (decoder self-attention, no source). The core's selection, view state,
word level, files, statistics, figures and exports show what a trace has and refuse what it lacks with a
clear message. Also: the typed kinds, the model-family interface and the user-error base class."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model.decoding.trace import Trace
from model.errors import UserError
from model.family import Bundle
from model.figures.export import ExportRequest, export_all, export_view
from model.inspection.heads import all_head_statistics
from model.inspection.selection import heads_for, select
from model.inspection.view import ExploreView
from model.kinds import AttentionKind, KindError, SelectionError, StopReason, current_row
from model.network import Network
from tests.conftest import assert_figure


def _rows(rng: np.random.Generator, shape: tuple[int, ...], causal: bool = False) -> np.ndarray:
    scores = rng.random(shape).astype(np.float32) + 0.01  # [layers, heads, Q, K]
    if causal:
        scores = scores * np.tril(np.ones(shape[-2:], np.float32))
    return scores / scores.sum(-1, keepdims=True)


def encoder_only_trace() -> Trace:
    """What an encoder-only model (a BERT-like classifier) gives: encoder self-attention, nothing decoded."""
    tokens = ["▁the", "▁black", "▁c", "at", "▁sleeps", "</s>"]
    return Trace(
        encoder_self=_rows(np.random.default_rng(0), (2, 3, 6, 6)),
        decoder_self=None,
        cross=None,
        source_tokens=tokens,
        target_tokens=[],
        decoder_input_tokens=[],
        source_text="the black cat sleeps",
    )


def decoder_only_trace() -> Trace:
    """What a decoder-only model (a GPT-2-like generator) gives: causal self-attention over its tokens."""
    inputs = ["<s>", "▁once", "▁up", "on", "▁a"]
    produced = ["▁once", "▁up", "on", "▁a", "▁time"]
    return Trace(
        encoder_self=None,
        decoder_self=_rows(np.random.default_rng(1), (3, 2, 5, 5), causal=True),
        cross=None,
        source_tokens=[],
        target_tokens=produced,
        decoder_input_tokens=inputs,
        chosen_ids=np.arange(5, dtype=np.int64),
        forced=np.zeros(5, bool),
        log_probabilities=np.full(5, -0.5, np.float32),
        target_text="once upon a time",
    )


@pytest.mark.parametrize("make, kind", [(encoder_only_trace, AttentionKind.ENCODER), (decoder_only_trace, AttentionKind.DECODER)])
def test_a_trace_with_one_kind_shows_it_and_refuses_the_others(make, kind, tmp_path):
    trace = make()
    assert trace.kinds == (kind,) and trace.has(kind) and not trace.has(AttentionKind.CROSS)
    for other in set(AttentionKind) - {kind}:
        with pytest.raises(SelectionError, match="this model has no"):
            trace.matrix(other)
    for head in heads_for(kind, trace.matrix(kind).shape[1]):
        matrix = select(trace, kind, 1, head)
        assert matrix.values.shape == trace.matrix(kind).shape[2:] and np.isfinite(matrix.values).all()
    assert select(trace, kind, 0, 0).current_row == (None if kind is AttentionKind.ENCODER else 4)
    # The Explore view's state falls back to what the trace has, and says why.
    view, note = ExploreView(kind=AttentionKind.CROSS, layer=7, head=9).fitted(trace)
    assert view.kind is kind and view.layer == trace.matrix(kind).shape[0] - 1 and view.head == "mean"
    assert "no cross-attention" in note
    # Steps, words and files keep the missing kinds missing.
    words = view.shown_trace(trace.at_step(trace.n_steps)).word_level()
    assert words.kinds == (kind,) and words.matrix(kind).shape[-1] <= trace.matrix(kind).shape[-1]
    np.testing.assert_allclose(words.matrix(kind).sum(-1)[..., :1], 1.0, rtol=1e-5)
    trace.save_npz(tmp_path / "t.npz")
    loaded = Trace.load_npz(tmp_path / "t.npz")
    assert loaded.kinds == (kind,)
    np.testing.assert_array_equal(loaded.matrix(kind), trace.matrix(kind))
    # Statistics cover the kind it has; exports write it and only it.
    statistics = all_head_statistics(trace)
    assert list(statistics) == [kind] and len(statistics[kind]) == trace.matrix(kind).shape[0]
    written = export_all(trace, tmp_path / "all", formats=(".csv", ".png"))
    assert written and all(path.name.startswith(kind.value) or path.name == "index.csv" for path in written)
    for view_name in ("focus", "grid", "lines"):
        path = export_view(trace, ExportRequest(view=view_name, kind=kind, layer=0, head=0), tmp_path / f"{view_name}.svg")
        assert_figure(path, texts=("cat",) if kind is AttentionKind.ENCODER else ("once",))  # an SVG of its tokens
    with pytest.raises(SelectionError, match="this model has no"):
        export_view(trace, ExportRequest(view="focus", kind=AttentionKind.CROSS), tmp_path / "cross.png")
    assert not (tmp_path / "cross.png").exists()


def test_attention_kind_is_one_vocabulary():
    for text, kind in (
        ("encoder", AttentionKind.ENCODER),
        ("encoder_self", AttentionKind.ENCODER),
        ("dec", AttentionKind.DECODER),
        ("cross", AttentionKind.CROSS),
    ):
        assert AttentionKind.parse(text) is kind
        assert AttentionKind.parse(kind) is kind
    assert [kind.field for kind in AttentionKind] == ["encoder_self", "decoder_self", "cross"]
    assert f"{AttentionKind.CROSS}" == str(AttentionKind.CROSS) == "cross" == AttentionKind.CROSS
    assert AttentionKind.DECODER.causal and not AttentionKind.ENCODER.causal
    assert current_row(AttentionKind.ENCODER, 5) is None and current_row(AttentionKind.CROSS, 5) == 4
    with pytest.raises(KindError, match="encoder, decoder or cross"):
        AttentionKind.parse("self")
    assert json.dumps({"stopped": StopReason.EARLY_STOP}) == '{"stopped": "early stop"}'


def test_the_transformer_is_a_model_family(copy_bundle):
    bundle, _ = copy_bundle
    assert isinstance(bundle.model, Network) and isinstance(bundle, Bundle)
    assert bundle.family.name == "transformer" and set(bundle.family.capabilities.kinds) == set(AttentionKind)


def test_a_checkpoint_of_an_unknown_family_is_refused(copy_bundle, tmp_path):
    import struct

    from model.io import checkpoint

    path = checkpoint.save(copy_bundle[0], tmp_path / "m.safetensors")
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    header = data[8 : 8 + size].replace(b'"family":"transformer"', b'"family":"encoder-rnn"')
    assert len(header) == size  # same length: only the family's name differs
    (tmp_path / "other.safetensors").write_bytes(data[:8] + header + data[8 + size :])
    with pytest.raises(checkpoint.CheckpointError, match="family 'encoder-rnn'"):
        checkpoint.load(tmp_path / "other.safetensors")


def test_every_error_a_user_can_cause_is_a_user_error_and_not_a_value_error():
    from model.cli.options import CommandError
    from model.data.corpora import CorpusError
    from model.data.tokenizer import TokenizerError
    from model.decoding.stepper import DecodingError
    from model.device import DeviceError
    from model.figures.layout import FigureError
    from model.files import OutputError
    from model.io.checkpoint import CheckpointError
    from model.io.shipped import ModelNotFoundError
    from model.nn.config import ConfigError
    from model.training.trainer import TrainingOptionsError

    for error in (
        CommandError,
        CorpusError,
        TokenizerError,
        DecodingError,
        DeviceError,
        FigureError,
        CheckpointError,
        OutputError,
        ModelNotFoundError,
        ConfigError,
        TrainingOptionsError,
        SelectionError,
        KindError,
    ):
        assert issubclass(error, UserError) and not issubclass(error, ValueError), error
