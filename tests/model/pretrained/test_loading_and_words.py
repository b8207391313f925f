"""Opening pretrained models safely (a pickle payload never runs, a missing id says how to fetch it, no folder
without a config), their sizes and info, word grouping for each tokenizer, and each family's positions."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from model.pretrained.hub import PretrainedError, cached_models, resolve_pretrained
from model.pretrained.loading import load_pretrained


class Payload:
    """A pickle that, when unpickled by anything that runs code, writes a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "the payload ran"))


def test_a_bin_pickle_payload_is_refused_and_never_runs(tiny_folders, tmp_path):
    folder = tmp_path / "evil"
    shutil.copytree(tiny_folders["bert-mlm"], folder)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "ran.txt"
    with open(folder / "pytorch_model.bin", "wb") as handle:
        pickle.dump({"weight": Payload(marker)}, handle)
    with pytest.raises(PretrainedError, match="refused"):
        load_pretrained(str(folder))
    assert not marker.exists()


def test_plain_bin_weights_load_through_weights_only(tiny_folders, tiny_bundles, tmp_path):
    import torch

    folder = tmp_path / "bin"
    shutil.copytree(tiny_folders["gpt2"], folder)
    (folder / "model.safetensors").unlink()
    torch.save(tiny_bundles["gpt2"].model.hf_model.state_dict(), folder / "pytorch_model.bin")
    bundle = load_pretrained(str(folder))
    assert bundle.model.parameter_count() == tiny_bundles["gpt2"].model.parameter_count()


@pytest.mark.parametrize("stored", ["float16", "bfloat16"])
def test_half_precision_weights_open_in_float32_and_say_so(tiny_folders, tiny_bundles, tmp_path, stored):
    """A model saved in float16 or bfloat16 (as many published ones are) opens in float32 for exact analysis; the info
    panel's notes say how it was stored and the memory float32 takes."""
    import torch
    from safetensors.torch import save_file

    folder = tmp_path / stored
    shutil.copytree(tiny_folders["t5"], folder)
    state = tiny_bundles["t5"].model.hf_model.state_dict()
    half = {name: tensor.to(getattr(torch, stored)).contiguous() for name, tensor in state.items() if "lm_head" not in name}
    save_file(half, str(folder / "model.safetensors"), metadata={"format": "pt"})
    bundle = load_pretrained(str(folder))
    assert all(parameter.dtype == torch.float32 for parameter in bundle.model.parameters())
    note = next(note for note in bundle.notes if "stored in" in note)
    assert ("BF16" if stored == "bfloat16" else "F16") in note and "opened in float32 for exact analysis" in note and "GiB" in note
    assert not any("stored in" in note for note in tiny_bundles["t5"].notes)


def test_a_missing_id_says_how_to_fetch_it():
    with pytest.raises(PretrainedError) as error:
        resolve_pretrained("Helsinki-NLP/opus-mt-en-fr")
    message = str(error.value)
    assert "hf download Helsinki-NLP/opus-mt-en-fr" in message and "never downloads" in message
    assert "\n" not in message  # one line: the command line prints the first line of an error


def test_the_cache_is_listed_and_ids_resolve(tiny_folders, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    snapshot = cache / "models--tiny-org--tiny-t5" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_folders["t5"], snapshot)
    (cache / "models--tiny-org--tiny-t5" / "refs").mkdir()
    (cache / "models--tiny-org--tiny-t5" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    models = cached_models()
    assert [m.model_id for m in models] == ["tiny-org/tiny-t5"]
    assert models[0].architecture == "T5ForConditionalGeneration" and models[0].size_bytes > 0
    bundle = load_pretrained("tiny-org/tiny-t5")
    assert bundle.name == "tiny-org/tiny-t5" and bundle.config.model_type == "t5"


def test_folders_that_are_not_models_get_a_message(tmp_path):
    with pytest.raises(PretrainedError, match="config.json"):
        resolve_pretrained(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "no-such-family"}))
    with pytest.raises(PretrainedError, match="config.json cannot be used"):
        load_pretrained(str(tmp_path))


def test_remote_code_is_never_trusted(tiny_folders, tmp_path):
    folder = tmp_path / "remote"
    shutil.copytree(tiny_folders["bert-mlm"], folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="my-own-model", auto_map={"AutoConfig": "my_code.MyConfig"})
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "my_code.py").write_text(f"open({str(tmp_path / 'ran.txt')!r}, 'w').write('ran')\n")
    with pytest.raises(PretrainedError):
        load_pretrained(str(folder))
    assert not (tmp_path / "ran.txt").exists()


def test_a_model_too_large_for_memory_is_refused(tiny_folders, monkeypatch):
    import model.pretrained.loading as loading

    monkeypatch.setattr(loading, "available_memory", lambda: 1000)
    with pytest.raises(PretrainedError, match="too large for the memory"):
        load_pretrained(tiny_folders["t5"])


def test_info_names_family_sizes_attention_and_tokenizer(tiny_bundles):
    for bundle in tiny_bundles.values():
        info = dict(bundle.info())
        assert info["Parameters"].replace(",", "").isdigit()
        assert info["Attention"].startswith("eager")
        assert bundle.config.attention_implementation == "eager"
        assert info["Tokenizer"]
    assert dict(tiny_bundles["t5"].info())["Family"].startswith("encoder-decoder")
    assert tiny_bundles["t5"].prefix == "translate English to French: "
    assert tiny_bundles["bert-mlm"].source_tokenizer.scheme == "wordpiece"
    assert tiny_bundles["gpt2"].source_tokenizer.scheme == "byte-level"
    assert tiny_bundles["marian"].source_tokenizer.scheme == "sentencepiece"


@pytest.mark.parametrize(
    "family, text, words",
    [
        ("t5", "the frog plays", ["the", "frog", "plays", "</s>"]),
        ("marian", "the frog plays", ["the", "frog", "plays", "</s>"]),
        ("bert-mlm", "the frog plays", ["[CLS]", "the", "frog", "plays", "[SEP]"]),
        ("bart", "the frog plays", ["<s>", "the", "frog", "plays", "</s>"]),
        ("gpt2", "the frog plays café", ["the", "frog", "plays", "café"]),
    ],
)
def test_pieces_group_into_the_words_typed(tiny_bundles, family, text, words):
    from model.decoding.stepper import DecodingOptions, Stepper

    bundle = tiny_bundles[family]
    trace = Stepper(bundle, text, DecodingOptions(max_steps=3)).trace()
    pieces = trace.source_tokens or [trace.decoder_input_tokens[0]] + trace.target_tokens[: trace.n_given]
    from model.decoding.trace import word_groups

    assert word_groups(pieces)[1] == words
    word_trace = trace.word_level()
    for kind in word_trace.kinds:
        matrix = word_trace.matrix(kind)
        if matrix.size:
            np.testing.assert_allclose(matrix.sum(-1), 1.0, atol=1e-5)


def test_byte_level_pieces_print_as_text(tiny_bundles):
    from model.data.token_labels import display_labels

    tokenizer = tiny_bundles["gpt2"].source_tokenizer
    pieces = tokenizer.pieces(tokenizer.encode("the café"))
    assert "".join(display_labels(pieces)).replace("·", "") in ("thecafé", "the café")
    assert all("Ã" not in label for label in display_labels(pieces))
    assert tokenizer.piece_to_id(pieces[-1]) is not None


@pytest.mark.parametrize(
    "family, kind", [("t5", "relative"), ("marian", "sinusoidal"), ("bert-mlm", "learned"), ("gpt2", "learned")]
)
def test_positions_of_each_family(tiny_bundles, family, kind):
    from model.inspection.position_reports import positional_report

    report = positional_report(tiny_bundles[family], 40)
    assert report.kind == kind
    if kind == "relative":
        heads = tiny_bundles[family].config.n_heads
        assert report.table.shape == (41, heads) and report.similarity.shape == (41, heads)
        assert report.row_labels[0] == "-20" and report.row_labels[20] == "0"
        # the decoder is causal: keys after the query all share one bucket
        assert np.allclose(report.similarity[21:], report.similarity[21])
    elif kind == "sinusoidal":
        assert np.nanmax(report.rotation_error) < 1e-4 and report.unrotated_error.max() > 0.1
    else:
        assert report.table.shape == (40, 32) and np.isnan(report.rotation_error).all()


def test_a_rotary_model_s_positions_are_its_rotation_and_scores_depend_on_the_offset_only(tiny_bundles):
    """The Llama layout: no table is added; the report holds the angles its rotary embedding turns a head's pairs by,
    which the library's own rotary module gives (cos and sin of p·w per dimension, its rotate-half layout), the rotation
    check is exact, and a query and a key rotated at positions (i, j) score as at (i + s, j + s)."""
    import torch

    from model.inspection.position_reports import positional_report

    bundle = tiny_bundles["llama"]
    report = positional_report(bundle, 40)
    assert bundle.config.positional_encoding == "rotary" and report.kind == "rotary"
    assert np.nanmax(report.rotation_error) < 1e-5 and report.unrotated_error.max() > 0.1
    hf_model = bundle.model.hf_model
    head = hf_model.config.hidden_size // hf_model.config.num_attention_heads
    rotary = hf_model.model.rotary_emb  # the library's own: cos and sin [1, positions, head] in rotate-half layout
    probe = torch.zeros(1, 40, head)
    cos, sin = rotary(probe, torch.arange(40)[None])
    half = head // 2
    assert report.table.shape == (40, head)
    np.testing.assert_allclose(report.table[:, 0::2], sin[0, :, :half].numpy(), atol=1e-5)  # (sin, cos) pairs
    np.testing.assert_allclose(report.table[:, 1::2], cos[0, :, :half].numpy(), atol=1e-5)
    generator = torch.Generator().manual_seed(0)
    query, key = torch.randn(head, generator=generator), torch.randn(head, generator=generator)

    def turned(vector: torch.Tensor, position: int) -> torch.Tensor:  # the library's rotate-half rotation
        rotated_half = torch.cat([-vector[half:], vector[:half]])
        return vector * cos[0, position] + rotated_half * sin[0, position]

    scores = [float(turned(query, i) @ turned(key, j)) for i, j in ((3, 1), (10, 8), (30, 28))]
    assert np.allclose(scores, scores[0], atol=1e-5)  # the offset, 2, decides the score
