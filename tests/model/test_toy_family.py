"""A family defined only in the tests (tests/toy_family.py: cross-attention alone, no positions) works through the
core — registry, stepper, traces, beam search, checkpoints, exports, training from the command line's ``train`` (its
config built from its own options) and the command line's ``trace`` — without any project file naming it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.cli.commands import main as cli_main
from model.decoding.stepper import DecodingOptions, Stepper, full_pass_trace
from model.decoding.trace import Trace
from model.family import FamilyError, family_named, family_of
from model.figures.export import ExportRequest, export_view
from model.inspection.position_reports import positional_report
from model.io import checkpoint
from model.kinds import AttentionKind
from model.nn.masking import Head, MaskError, masked_model
from model.training.presets import builtin_preset, family_preset, measure_step_seconds
from tests.toy_family import TOY_NAME, ToyConfig, ToyNetwork, toy_bundle, toy_family_registered

SENTENCE = "the small cat sees a red house"


@pytest.fixture
def toy():
    with toy_family_registered():
        yield toy_bundle()


def test_the_toy_family_is_known_by_name_and_by_its_network(toy):
    assert family_named(TOY_NAME).network_class is ToyNetwork
    assert family_of(toy.model).name == TOY_NAME and toy.family.capabilities.kinds == (AttentionKind.CROSS,)
    assert ("Layers", "bag-of-embeddings encoder, one cross-attention layer") in toy.info()
    assert ("Positions", "none") in toy.info()


def test_the_family_is_forgotten_once_unregistered():
    bundle = toy_bundle()
    with pytest.raises(FamilyError, match="ToyNetwork"):
        family_of(bundle.model)


def test_stepping_matches_one_full_pass_and_holds_only_cross_attention(toy):
    stepper = Stepper(toy, SENTENCE, DecodingOptions(max_steps=6, stop_at_eos=False))
    stepper.run()
    trace = stepper.trace()
    assert trace.kinds == (AttentionKind.CROSS,) and trace.encoder_self is None and trace.decoder_self is None
    assert trace.cross.shape == (1, 2, 6, len(stepper.source_ids))
    np.testing.assert_allclose(trace.cross.sum(-1), 1.0, atol=1e-6)
    full = full_pass_trace(toy, stepper.source_ids, stepper.target_ids())
    np.testing.assert_allclose(trace.cross, full.cross, atol=1e-5)
    # What-if and going back: forcing step 2 to another token changes the rows from step 2 on only.
    other = int(trace.candidate_ids[1, 1])
    stepper.force(1, other)
    stepper.run()
    forced = stepper.trace()
    np.testing.assert_allclose(forced.cross[:, :, :2], trace.cross[:, :, :2], atol=1e-6)
    assert forced.chosen_ids[1] == other and bool(forced.forced[1])


def test_beam_search_follows_the_family_cache(toy):
    stepper = Stepper(toy, SENTENCE, DecodingOptions(strategy="beam", beam_width=3, max_steps=5, stop_at_eos=False))
    stepper.run()
    beam = stepper.beam
    assert beam is not None and len(beam.hypotheses) >= 3  # the width's final beams, and those ended earlier
    scores = [beam.nodes[end].score for end in beam.hypotheses]
    assert scores == sorted(scores, reverse=True)
    assert stepper.target_ids() == beam.token_ids(beam.hypotheses[0])
    stepper.follow_hypothesis(1)
    stepper.run()
    assert stepper.target_ids() == beam.token_ids(beam.hypotheses[1])


def test_capabilities_it_lacks_are_refused_with_the_reason(toy):
    with pytest.raises(MaskError, match="toy cross-attention model"):
        masked_model(toy.model, (Head(AttentionKind.CROSS, 0, 0),))
    assert positional_report(toy) is None  # no positions at all


def test_a_checkpoint_round_trip_and_the_trace_command(toy, tmp_path, capsys):
    path = checkpoint.save(toy, tmp_path / "toy.safetensors")
    loaded = checkpoint.load(path)
    assert loaded.family is toy.family and isinstance(loaded.model, ToyNetwork)
    for name, tensor in toy.model.state_dict().items():
        assert torch.equal(tensor, loaded.model.state_dict()[name])
    out = tmp_path / "toy.npz"
    code = cli_main(["trace", "--model", str(path), "--text", SENTENCE, "--max-steps", "4", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    saved = Trace.load_npz(out)
    stepper = Stepper(loaded, SENTENCE, DecodingOptions(max_steps=4))
    stepper.run()
    expected = stepper.trace()
    assert saved.kinds == (AttentionKind.CROSS,) and saved.target_tokens == expected.target_tokens
    np.testing.assert_allclose(saved.cross, expected.cross, atol=1e-6)


def test_exports_of_its_only_kind(toy, tmp_path):
    stepper = Stepper(toy, SENTENCE, DecodingOptions(max_steps=4))
    stepper.run()
    trace = stepper.trace()
    for suffix in ("png", "svg", "csv"):
        path = export_view(
            trace, ExportRequest(kind=AttentionKind.CROSS, layer=0, head=1, view="focus"), tmp_path / f"focus.{suffix}"
        )
        data = path.read_bytes()
        if suffix == "png":
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
        elif suffix == "svg":
            assert b"<svg" in data and b"head 2" in data
        else:
            rows = data.decode("utf-8").strip().splitlines()
            assert len(rows) == 1 + trace.n_steps  # a header, then one row per step


def _train_args(out, *extra: str) -> list[str]:
    return [
        "train", "--family", TOY_NAME, "--corpus", "copy", "--corpus-size", "200", "--vocab-size", "60", "--max-steps", "4",
        "--batch-size", "16", "--valid-decode", "4", "--no-timeline", "--quiet", "--out", str(out), *extra,
    ]  # fmt: skip


def test_it_trains_from_the_command_line_saves_and_reopens(toy, tmp_path, capsys):
    """``train --family toy-cross`` ended in a traceback: the copy corpus's preset (made for the Transformer) gave
    the toy's config the Transformer's fields. Its config is built from its own options now."""
    out = tmp_path / "trained.model"
    code = cli_main(_train_args(out, "--d-model", "8"))
    assert code == 0, capsys.readouterr().err
    loaded = checkpoint.load(out)
    assert loaded.family is family_named(TOY_NAME) and isinstance(loaded.model, ToyNetwork)
    assert loaded.config == ToyConfig(source_vocab_size=loaded.config.source_vocab_size,
                                      target_vocab_size=loaded.config.target_vocab_size, d_model=8)  # fmt: skip
    assert [row[0] for row in loaded.history["steps"]] == [1, 2, 3, 4]  # four steps taken, each with its loss
    assert all(np.isfinite(row[1]) for row in loaded.history["steps"])
    untrained = ToyNetwork(loaded.config)
    assert any(not torch.equal(tensor, untrained.state_dict()[name]) for name, tensor in loaded.model.state_dict().items())
    stepper = Stepper(loaded, "a b c", DecodingOptions(max_steps=3, stop_at_eos=False))  # the reopened model decodes
    stepper.run()
    assert stepper.trace().cross.shape[:3] == (1, 2, 3)


def test_another_familys_option_is_refused_in_one_line(toy, tmp_path, capsys):
    code = cli_main(_train_args(tmp_path / "refused.model", "--encoder-layers", "2"))
    err = capsys.readouterr().err
    assert code != 0 and "--encoder-layers is not an option of the toy-cross family" in err and "Traceback" not in err
    assert not (tmp_path / "refused.model").exists()


def test_its_preset_keeps_only_its_own_options_and_a_step_is_measured(toy):
    """The Train tab measures a step of the chosen family when it is shown: the toy's network had no ``forward``
    (``_forward_unimplemented() got an unexpected keyword argument 'rows'``)."""
    preset = family_preset(builtin_preset("copy"), TOY_NAME)
    assert preset.family == TOY_NAME and preset.model == {"d_model": builtin_preset("copy").model["d_model"]}
    assert preset.tokenizer == builtin_preset("copy").tokenizer and preset.training == builtin_preset("copy").training
    assert measure_step_seconds({"d_model": 8}, 40, batch_pairs=4, pieces=5, steps=1, family=TOY_NAME) > 0


def test_its_forward_is_the_full_pass_the_trainer_reads(toy):
    """What the trainer calls, ``model(source, target, rows=...)``, gives the hidden states whose scores ``inspect``
    gives: all positions, or the real ones packed."""
    from model.nn.packing import PackedRows

    network = toy.model
    source = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])  # [B, S]
    target = torch.tensor([[2, 5, 6, 7], [2, 8, 0, 0]])  # [B, T]
    hidden = network(source, target)  # [B, T, d_model]
    logits, weights = network.inspect(source, target)
    torch.testing.assert_close(network.logits(hidden), logits)
    real = target != 0
    torch.testing.assert_close(network(source, target, rows=PackedRows(real)), hidden[real])
    assert weights.cross[0].shape == (2, 2, 4, 4)
