"""The suite's rule for the seeds' reference code (tests/conftest.py ``import_reference``): a test that needs
it skips, saying why, when ../shared/reference is absent, and fails instead when TE_REQUIRE_REFERENCE=1 (as
CI sets it), so a CI run can never pass without making the comparisons."""

from __future__ import annotations

import pytest

import tests.conftest as conftest


@pytest.fixture
def no_reference(monkeypatch, tmp_path):
    """A checkout without shared/ beside it."""
    monkeypatch.setattr(conftest, "REFERENCE", tmp_path / "shared" / "reference")
    monkeypatch.delenv("TE_REFERENCE", raising=False)
    monkeypatch.delenv("TE_REQUIRE_REFERENCE", raising=False)


def test_absent_reference_code_skips_with_the_reason(no_reference):
    with pytest.raises(pytest.skip.Exception, match=r"the seeds' reference code is not at \.\./shared/reference"):
        conftest.import_reference("seed_postnorm")


@pytest.mark.parametrize("value", ["1", "true"])
def test_absent_reference_code_fails_when_it_is_required(no_reference, monkeypatch, value):
    monkeypatch.setenv("TE_REQUIRE_REFERENCE", value)
    with pytest.raises(pytest.fail.Exception, match="the seeds' reference code is not at"):
        conftest.import_reference("seed_postnorm")


@pytest.mark.parametrize("value", ["", "0"])
def test_require_reference_off_still_skips(no_reference, monkeypatch, value):
    monkeypatch.setenv("TE_REQUIRE_REFERENCE", value)
    with pytest.raises(pytest.skip.Exception):
        conftest.import_reference("seed_postnorm")


def test_a_reference_module_is_imported_from_the_folder(monkeypatch, tmp_path):
    (tmp_path / "seed_tiny.py").write_text("ANSWER = 42\n", encoding="utf-8")
    monkeypatch.setattr(conftest, "REFERENCE", tmp_path)
    assert conftest.import_reference("seed_tiny").ANSWER == 42
