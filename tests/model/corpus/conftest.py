"""A tiny corpus index shared by the corpus tests: 30 toy-fr sentences read by the tiny toy-fr model, in chunks of 8."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.sources import IndexCorpus
from model.runtime import set_cpu_threads

CORPUS = IndexCorpus("toy-fr", limit=30, seed=3)
OPTIONS = IndexOptions(heads="decoder:1,cross", chunk_size=8, batch_size=4, pca_sentences=12, dims=16)


def build(bundle, folder: Path, **changes):
    """An index of the shared corpus and options (``changes`` replace options or give progress and stop), built on one
    core (small batches run fastest so, and a session fixture comes before the autouse one below)."""
    set_cpu_threads(1)
    options = IndexOptions(**{**OPTIONS.__dict__, **{k: v for k, v in changes.items() if k in OPTIONS.__dict__}})
    extra = {k: v for k, v in changes.items() if k not in OPTIONS.__dict__}
    corpus = extra.pop("corpus", CORPUS)
    return IndexBuilder(bundle, "tiny", corpus, folder, options, **extra).run()


@pytest.fixture(scope="session")
def tiny(toy_fr_bundle):
    """The tiny toy-fr model (tests/conftest.py)."""
    return toy_fr_bundle[0]


@pytest.fixture(scope="session")
def other_model(copy_bundle):
    """Another tiny model, of another digest."""
    return copy_bundle[0]


@pytest.fixture(scope="session")
def built_index(tiny, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus") / "index"
    build(tiny, folder)
    return folder


@pytest.fixture(autouse=True)
def _one_core():
    """Small batches run fastest on one core (and leave the other to the rest of the machine)."""
    set_cpu_threads(1)
