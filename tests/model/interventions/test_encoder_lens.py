"""The logit lens of encoder-only models (model/interventions/logit_lens.py ``encoder_logit_lens``): each layer's stream
read by the model's own head, against the test's own reading of the models:

* the app's tagger (post-norm) and a sentence classifier (pre-norm, pooled): each layer's output, captured by the
  test's own PyTorch forward hooks on the layers, through the encoder's final norm and the model's ``classify``;
* Hugging Face BERT (masked-LM and sequence-classification heads), RoBERTa and DistilBERT: the library's own forward
  of a copy of the model cut after layer l (its pooler and head included) gives reading "after layer l" within 1e-5;
* the last reading is the model's own output, and the chosen tag (class, word) at each place is its top one.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from model.interventions.hooked import InterventionError
from model.interventions.logit_lens import bundle_encoder_lens, bundle_logit_lens, encoder_logit_lens
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.nn.classifier import ClassifierConfig, EncoderClassifier

TEXT = "the black cat sees the small dog"


def _after_layers(lens) -> list[int]:
    """The readings' rows of the embeddings and of each layer's output, in order."""
    return [0] + [row for row, reading in enumerate(lens.readings) if reading.endswith("feed-forward")]


def _own_readings(model: EncoderClassifier, ids: torch.Tensor) -> torch.Tensor:
    """The embeddings and each layer's output (the test's forward hooks), each through the final norm and the head:
    [L + 1, P, C] probabilities."""
    outputs: list[torch.Tensor] = []
    handles = [model.layers[0].register_forward_pre_hook(lambda _m, args: outputs.append(args[0]))]
    for layer in model.layers:
        handles.append(layer.register_forward_hook(lambda _m, _a, out: outputs.append(out[0] if isinstance(out, tuple) else out)))
    try:
        with torch.no_grad():
            model(ids)
    finally:
        for handle in handles:
            handle.remove()
    with torch.no_grad():
        scores = [model.classify(model.final_norm(stream), ids) for stream in outputs]  # each [1, S, C] or [1, C]
    return torch.stack([score.reshape(-1, score.shape[-1]) for score in scores]).softmax(-1)


def _check_own(model: EncoderClassifier, ids: list[int]) -> None:
    lens = encoder_logit_lens(model.eval(), ids, k=3)
    expected = _own_readings(model, torch.tensor([ids]))  # [L + 1, P, C]
    chosen = expected[-1].argmax(-1)  # [P]
    got = lens.chosen_probabilities[_after_layers(lens)]  # [L + 1, P]
    assert np.allclose(got, expected.gather(-1, chosen[None, :, None].expand(len(expected), -1, 1))[..., 0].numpy(), atol=1e-5)
    assert lens.chosen_ids.tolist() == chosen.tolist() and (lens.chosen_ranks[-1] == 0).all()


def test_the_tagger_s_readings_are_its_layers_outputs_through_its_head():
    bundle = checkpoint.load(resolve_model("tagger"))
    ids = bundle.source_ids(TEXT)[0]
    _check_own(bundle.model, ids)
    lens = bundle_logit_lens(bundle, TEXT)  # what the lens command reads
    assert lens.reads_text and lens.place == "position" and lens.predicted == "tag"
    assert lens.decoder_input_tokens == bundle.source_tokenizer.pieces(ids) and lens.columns_title == "position: the tag predicted"
    assert lens.readings == ["embeddings", "L1 self-attention", "L1 feed-forward", "L2 self-attention", "L2 feed-forward"]
    assert set(lens.chosen_tokens) <= set(bundle.model.config.class_names)


def test_a_pre_norm_sentence_classifier_is_read_through_its_final_norm_on_the_sentence():
    torch.manual_seed(0)
    config = ClassifierConfig(vocab_size=40, n_layers=3, task="sentence", norm_placement="pre", class_names=["no", "yes", "maybe"])
    model = EncoderClassifier(config)
    ids = [5, 9, 11, 3, 2]
    _check_own(model, ids)
    lens = encoder_logit_lens(model.eval(), ids)
    assert lens.final_norm and lens.place == "sentence" and lens.decoder_input_tokens == ["the sentence"]
    assert lens.candidate_probabilities.shape == (7, 1, 3) and lens.columns_title == "the sentence: the class predicted"


def _cut(network, layers: int):
    """A copy of the library's model with only its first ``layers`` layers."""
    model = copy.deepcopy(network.hf_model)
    stack = model.base_model.get_submodule(network.modules.layers)
    del stack[layers:]
    return model


@pytest.fixture(scope="module")
def encoders(tiny_bundles, tmp_path_factory) -> dict:
    from model.pretrained.loading import load_pretrained
    from model.pretrained.tiny import build

    root = tmp_path_factory.mktemp("encoders")
    built = {layout: load_pretrained(str(build(layout, root / layout))) for layout in ("distilbert", "roberta")}
    return {"bert-mlm": tiny_bundles["bert-mlm"], "bert-classifier": tiny_bundles["bert-classifier"], **built}


@pytest.mark.parametrize("layout", ["bert-mlm", "bert-classifier", "distilbert", "roberta"])
def test_each_library_layer_read_by_its_head_is_the_library_s_own_model_cut_there(encoders, layout):
    bundle = encoders[layout]
    network = bundle.model
    ids = bundle.source_ids(TEXT)[0]
    lens = bundle_encoder_lens(bundle, TEXT, k=4)
    source = torch.tensor([ids])
    for row, layers in zip(_after_layers(lens), range(network.config.n_encoder_layers + 1)):
        with torch.no_grad():
            logits = _cut(network, layers)(input_ids=source, attention_mask=torch.ones_like(source)).logits  # [1, (S,) C]
        probabilities = logits.reshape(-1, logits.shape[-1]).softmax(-1)  # [P, C]
        chosen = torch.from_numpy(lens.chosen_ids)
        expected = probabilities.gather(-1, chosen[:, None])[:, 0].numpy()  # [P]
        assert np.allclose(lens.chosen_probabilities[row], expected, atol=1e-5), (layout, layers)
        top = probabilities.topk(min(4, probabilities.shape[-1]), dim=-1)
        assert np.allclose(lens.candidate_probabilities[row], top.values.numpy(), atol=1e-5)
    assert lens.chosen_ids.tolist() == probabilities.argmax(-1).tolist()  # the last reading is the model's own output
    assert lens.place == ("sentence" if layout == "bert-classifier" else "position")
    assert lens.predicted == ("class" if layout == "bert-classifier" else "word")


def test_a_bare_encoder_has_no_head_to_read(encoders, monkeypatch):
    network = encoders["bert-mlm"].model
    monkeypatch.setattr(network, "head", "none")  # as a folder saved with no head (BertModel) opens
    with pytest.raises(InterventionError, match="a bare encoder with no head"):
        encoder_logit_lens(network, [2, 5, 3])
