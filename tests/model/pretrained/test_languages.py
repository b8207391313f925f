"""A multilingual model's languages (issue 41: NLLB/M2M100/mBART language codes): a tiny NLLB-layout folder built
here (M2M100's modules, NLLB's tokenizer with three language codes, French forced first by its generation config).
The source language's code marks the input, the target language's code is the forced first token of every decoding
(the Stepper's trace shows it as given), and the app's translation equals the library's own ``generate`` with the same
languages; ``--source-lang``/``--target-lang`` choose them on the command line, and a code the model lacks, or a
model without codes, is one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.cli import main
from model.decoding.greedy import greedy_decode
from model.decoding.stepper import DecodingOptions, Stepper
from model.errors import UserError

TEXT = "The house is small ."


@pytest.fixture(scope="module")
def nllb_folder(tmp_path_factory) -> str:
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.tiny import build  # deferred: the hf extra may be absent (skipped above)

    return str(build("nllb", tmp_path_factory.mktemp("nllb") / "nllb"))


@pytest.fixture
def nllb(nllb_folder):
    from model.io.models import open_model  # deferred: as the fixture above

    return open_model(nllb_folder)


def _library_translation(bundle, source: str, target: str, steps: int) -> list[int]:
    """The library alone: its tokenizer marking ``source``, its generate forcing ``target`` first."""
    tokenizer = bundle.source_tokenizer.tokenizer
    tokenizer.src_lang = source
    inputs = tokenizer(TEXT, return_tensors="pt")
    with torch.inference_mode():
        out = bundle.model.hf_model.generate(
            **inputs,
            forced_bos_token_id=tokenizer.convert_tokens_to_ids(target),
            do_sample=False,
            num_beams=1,
            max_new_tokens=steps,
            min_length=0,
        )
    return out[0, 1:].tolist()  # without the decoder start


def test_the_languages_of_the_folder_and_the_forced_first_token(nllb):
    assert nllb.languages == ["eng_Latn", "fra_Latn", "deu_Latn"]
    assert (nllb.source_language, nllb.target_language) == ("eng_Latn", "fra_Latn")
    tokenizer = nllb.source_tokenizer.tokenizer
    assert nllb.source_ids(TEXT)[0][0] == tokenizer.convert_tokens_to_ids("eng_Latn")  # the source's code first
    stepper = Stepper(nllb, TEXT, DecodingOptions(max_steps=6))
    stepper.run()
    trace = stepper.trace()
    french = tokenizer.convert_tokens_to_ids("fra_Latn")
    assert stepper.target_ids()[0] == french and trace.n_given == 1 and bool(trace.forced[0]) and not trace.forced[1:].any()
    assert stepper.target_ids() == _library_translation(nllb, "eng_Latn", "fra_Latn", 6)[: len(stepper.target_ids())]


@pytest.mark.parametrize("source,target", [("deu_Latn", "eng_Latn"), ("fra_Latn", "deu_Latn")])
def test_chosen_languages_decode_as_the_library_does(nllb, source, target):
    nllb.choose_languages(source, target)
    assert (nllb.source_language, nllb.target_language) == (source, target)
    tokenizer = nllb.source_tokenizer.tokenizer
    source_ids = nllb.source_ids(TEXT)[0]
    assert source_ids[0] == tokenizer.convert_tokens_to_ids(source)
    stepper = Stepper(nllb, TEXT, DecodingOptions(max_steps=6))
    stepper.run()
    expected = _library_translation(nllb, source, target, 6)
    assert stepper.target_ids() == expected[: len(stepper.target_ids())] and expected[0] == tokenizer.convert_tokens_to_ids(target)
    greedy = greedy_decode(nllb.model, torch.tensor([source_ids]), max_target=7)[0]  # evaluation's decoding forces it too
    assert greedy[: len(stepper.target_ids())] == [t for t in stepper.target_ids() if t != nllb.config.eos_id][: len(greedy)]


def test_a_code_the_model_lacks_and_a_model_without_codes_are_one_line(nllb, copy_bundle):
    with pytest.raises(UserError, match="not one of this model's language codes") as error:
        nllb.choose_languages(target="xx_YY")
    assert "\n" not in str(error.value) and nllb.target_language == "fra_Latn"  # nothing changed
    with pytest.raises(UserError, match="has no language codes"):
        copy_bundle[0].choose_languages(source="eng_Latn")
    assert copy_bundle[0].languages == [] and copy_bundle[0].source_language is None


def test_the_command_line_chooses_the_languages(nllb_folder, tmp_path, capsys):
    out = tmp_path / "trace.npz"
    arguments = ["--model", nllb_folder, "--source-lang", "deu_Latn", "--target-lang", "eng_Latn"]
    assert main(["trace", *arguments, "--text", TEXT, "--out", str(out), "--max-steps", "4"]) == 0
    capsys.readouterr()
    trace = np.load(out)
    assert str(trace["target_tokens"][0]) == "eng_Latn" and str(trace["source_tokens"][0]) == "deu_Latn"
    assert main(["translate", "--model", nllb_folder, "--target-lang", "xx_YY", TEXT]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'xx_YY' is not one of this model's language codes (eng_Latn, fra_Latn, deu_Latn)" in err[0]
