"""Decoding options that cannot decode (model/decoding/stepper.py): each refusal names the option at fault, and
a sampling distribution broken after validation is a DecodingError, not a crash."""

from __future__ import annotations

import pytest

from model.decoding.stepper import DecodingError, DecodingOptions, Stepper


def test_decoding_options_name_the_option_at_fault():
    messages = {}
    for field, value in [
        ("beam_width", -2),
        ("top_k", -1),
        ("n_candidates", 0),
        ("length_penalty", float("nan")),
        ("max_steps", 0),
        ("seed", 2**70),
        ("temperature", 1e-45),
        ("top_p", float("nan")),
    ]:
        with pytest.raises(DecodingError) as caught:
            DecodingOptions(**{field: value}).validate()
        messages[field] = str(caught.value)
    assert messages["beam_width"] == "beam width must be at least 1, got -2"
    assert messages["top_k"] == "top-k must be 0 (every token) or more, got -1"
    assert messages["n_candidates"] == "candidates must be at least 1, got 0"
    assert messages["max_steps"] == "max steps must be at least 1, got 0"
    assert messages["temperature"] == "temperature must be between 0.01 and 100.0, got 1e-45"
    assert messages["top_p"] == "top-p must be in (0, 1], got nan"
    assert "alpha" in messages["length_penalty"] and "2**63" not in messages["seed"]
    DecodingOptions(strategy="sample", temperature=0.01, top_p=1.0, seed=2**63 - 1).validate()  # the limits pass


def test_a_broken_sampling_distribution_is_a_decoding_error(copy_bundle):
    stepper = Stepper(copy_bundle[0], "a b c", DecodingOptions(strategy="sample"))
    stepper.options.temperature = 1e-45  # past validation, as a caller changing the options later could
    with pytest.raises(DecodingError, match="not a valid probability distribution"):
        stepper.step()
    assert stepper.steps == []
