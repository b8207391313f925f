"""Shared fixtures: tiny corpora and models trained once per test session (seconds on 2 cores)."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
# The seeds' reference implementations: shared/ beside the checkout (as CI has it), or $TE_REFERENCE.
REFERENCE = Path(os.environ.get("TE_REFERENCE", ROOT.parent / "shared" / "reference"))


def _one_core_per_test_worker() -> None:
    """Parallel test workers (pytest-xdist) share the cores: each gets its share for torch, read by the app's
    ``default_cpu_threads`` as its default. Two workers with a two-thread OpenMP team each, on two cores (and
    beside the training processes some tests start), made every parallel operation wait for a time slice: a
    test of 0.2 s alone took 82 s in the suite."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


_one_core_per_test_worker()

import model.training.trainer as trainer_module  # noqa: E402
from model.data.corpora import CorpusSpec  # noqa: E402
from model.io import checkpoint  # noqa: E402
from model.io.shipped import resolve_model  # noqa: E402
from model.runtime import CoreFollower  # noqa: E402
from model.training.pipeline import TokenizerOptions, prepare  # noqa: E402
from model.training.trainer import Trainer, TrainingOptions  # noqa: E402

TINY_MODEL = dict(n_encoder_layers=2, n_decoder_layers=2, d_model=32, n_heads=4, d_ff=64, dropout=0.0, max_len=64)


TINY_RNN = dict(cell="gru", attention="bahdanau", local_window=0, d_embed=16, d_hidden=32, dropout=0.0, max_len=64)


def tiny_bundle(corpus: str = "copy", size: int = 400, steps: int = 0, family: str = "transformer", **model_options):
    """An untrained (or briefly trained) tiny model of ``family`` with tokenizers for a built-in corpus."""
    options = {**(TINY_RNN if family == "rnn" else TINY_MODEL), **model_options}
    spec = CorpusSpec(corpus, size=size, seed=1)
    bundle, splits = prepare(spec, TokenizerOptions(vocab_size=200), options, seed=0, family=family)
    if steps:
        trainer = Trainer(
            bundle.model,
            bundle.source_tokenizer,
            bundle.target_tokenizer,
            splits,
            TrainingOptions(epochs=100, max_steps=steps, batch_size=32, warmup_steps=300, valid_decode_limit=20),
            torch.device("cpu"),
            history=bundle.history,
        )
        # One core, whatever else runs: the model is then the same in every run (a thread count that follows the
        # machine's load changes the order of the sums, and a briefly trained model's AER by 0.05 or more).
        with mock.patch.object(trainer_module, "CoreFollower", lambda: CoreFollower(most=1)):
            trainer.run()
    bundle.model.eval()
    return bundle, splits


@pytest.fixture(autouse=True)
def _every_core_after_each_test():
    """Opening a model in the window sets its thread (here, the test's) to one core for torch; the next
    test gets every core back."""
    yield
    from model.runtime import set_cpu_threads

    set_cpu_threads()


@pytest.fixture(scope="module")
def default_bundle():
    """The shipped default model (3+3 layers, 4 heads, English -> French), opened once per test module."""
    return checkpoint.load(resolve_model("default"))


@pytest.fixture(scope="session")
def copy_bundle():
    """A tiny copy model after 150 steps: enough to have real weights, not to be good."""
    return tiny_bundle("copy", size=600, steps=150)


@pytest.fixture(scope="session")
def toy_fr_bundle():
    return tiny_bundle("toy-fr", size=600, steps=20)


@pytest.fixture(scope="session")
def toy_fr_rnn_bundle():
    """Seed 002's RNN with Bahdanau attention on toy-fr, briefly trained (the side-by-side view's second model)."""
    return tiny_bundle("toy-fr", size=600, steps=20, family="rnn")


def reference_required() -> bool:
    """CI sets TE_REQUIRE_REFERENCE=1: what needs the seeds' reference code (or the renderers) must then run,
    and fails where it would skip."""
    return os.environ.get("TE_REQUIRE_REFERENCE", "").strip().lower() in ("1", "true", "yes")


def import_reference(name: str):
    """The seeds' reference module ``name`` (shared/reference/NAME.py beside the checkout, or in $TE_REFERENCE).

    When it is absent the calling test is skipped with the reason, or fails under TE_REQUIRE_REFERENCE=1."""
    import importlib.util

    path = REFERENCE / f"{name}.py"
    if not path.is_file():
        where = str(REFERENCE) if "TE_REFERENCE" in os.environ else "../shared/reference"
        message = (
            f"the seeds' reference code is not at {where} ({path} not found: put shared/ beside the checkout or set TE_REFERENCE)"
        )
        if reference_required():  # CI: the comparison must run
            pytest.fail(message, pytrace=False)
        pytest.skip(message)

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def saved_model(bundle, folder: Path, name: str = "model.safetensors") -> Path:
    """``bundle`` saved as ``folder/name`` (a model file for the command line or the window to open)."""
    from model.io import checkpoint

    path = folder / name
    checkpoint.save(bundle, path)
    return path


# --- written figures: a valid file of the expected size and content, not just "some bytes" --------------------
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels of the PNG at ``path``; fails unless it is a complete PNG."""
    from PIL import Image

    data = Path(path).read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    assert data.endswith(b"IEND\xaeB`\x82"), f"{path} is a truncated PNG"
    with Image.open(path) as image:
        image.load()  # every chunk decodes
        return image.size


def svg_root(path: Path):
    """The parsed root of the SVG at ``path`` (fails unless it is well-formed SVG)."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
    return root


def pdf_pages(path: Path) -> list[tuple[float, float]]:
    """The page sizes in points of the PDF at ``path``: it starts with %PDF-, ends with %%EOF and, where
    poppler is installed, renders (pdftoppm) with that many pages."""
    import re
    import shutil
    import subprocess
    import tempfile

    data = Path(path).read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF"), f"{path} is not a complete PDF"
    boxes = [tuple(float(v) for v in box) for box in re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)]
    assert boxes, f"{path} has no page"
    if shutil.which("pdftoppm"):
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run(["pdftoppm", "-png", "-r", "20", str(path), f"{folder}/page"], check=True, timeout=120)
            assert len(list(Path(folder).glob("page*.png"))) == len(boxes)
    return boxes


def pdf_text(path: Path) -> str | None:
    """The PDF's text as poppler reads it (None where pdftotext is not installed)."""
    import shutil
    import subprocess

    if not shutil.which("pdftotext"):
        return None
    return subprocess.run(["pdftotext", "-raw", str(path), "-"], capture_output=True, text=True, check=True, timeout=120).stdout


def assert_figure(path: Path, width: float = 6.9, dpi: float = 300, texts: tuple[str, ...] = ()) -> None:
    """``path`` is a complete figure in the format its suffix names, ``width`` inches wide (PNG: at ``dpi``), and
    where the format keeps text as text (SVG, PDF through pdftotext) it holds every one of ``texts``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".png":
        pixels_wide, pixels_high = png_size(path)
        assert pixels_wide == round(width * dpi) and pixels_high >= 100, (pixels_wide, pixels_high)
    elif suffix == ".svg":
        root = svg_root(path)
        assert root.get("width") == f"{width * 72:g}pt", root.get("width")
        content = Path(path).read_text(encoding="utf-8")
        missing = [text for text in texts if text not in content]
        assert not missing, missing
    elif suffix == ".pdf":
        pages = pdf_pages(path)
        assert len(pages) == 1 and pages[0][0] == pytest.approx(width * 72), pages
        text = pdf_text(path)
        if text is not None:
            missing = [t for t in texts if t not in text]
            assert not missing, missing
    else:
        raise AssertionError(f"not a figure suffix: {suffix}")


# --- pretrained-layout models (model/pretrained/tiny.py), for tests/model/pretrained and tests/explorer ----------
PRETRAINED_FAMILIES = ("t5", "marian", "bart", "bert-mlm", "bert-classifier", "gpt2", "llama")
PRE_NORM_LAYOUTS = ("mbart", "m2m100", "pegasus")  # the encoder-decoders of model/interventions/library.py's PreNormPass


@pytest.fixture(scope="session")
def tiny_folders(tmp_path_factory) -> dict[str, str]:
    """One save_pretrained folder per family: random weights, tokenizers trained here on toy-fr sentences.
    Skips the test without the hf extra."""
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.tiny import build

    root = tmp_path_factory.mktemp("pretrained")
    return {family: str(build(family, root / family)) for family in PRETRAINED_FAMILIES}


@pytest.fixture(scope="session")
def bare_encoder_folder(tiny_folders, tmp_path_factory) -> str:
    """A BERT folder with no head (the library's ``BertModel``: a bare encoder), the tiny masked-LM's tokenizer."""
    import shutil

    from transformers import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("bare") / "bert"
    shutil.copytree(tiny_folders["bert-mlm"], folder)
    config = BertConfig.from_pretrained(folder)
    config.architectures = ["BertModel"]
    BertModel(config).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def pre_norm_bundles(tmp_path_factory) -> dict:
    """A tiny mBART, M2M100 and Pegasus (random weights, byte-level tokenizers trained here), opened."""
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.loading import load_pretrained
    from model.pretrained.tiny import build

    root = tmp_path_factory.mktemp("pre-norm")
    return {layout: load_pretrained(str(build(layout, root / layout))) for layout in PRE_NORM_LAYOUTS}


@pytest.fixture(scope="session")
def tiny_bundles(tiny_folders):
    from model.pretrained.loading import load_pretrained

    return {family: load_pretrained(folder) for family, folder in tiny_folders.items()}


@pytest.fixture(scope="session")
def encoder_decoders(tiny_bundles, pre_norm_bundles) -> dict:
    """Every Hugging Face encoder-decoder layout's tiny model, opened, by layout: T5, Marian, BART, mBART, M2M100 and
    Pegasus."""
    return {"t5": tiny_bundles["t5"], "marian": tiny_bundles["marian"], "bart": tiny_bundles["bart"], **pre_norm_bundles}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: a module whose tests take tens of seconds together; run first")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long modules first, each kept whole (its module fixtures built once): with ``-n 2`` the workers then
    share out the many short tests at the end, instead of one worker starting a 30-second test as the other
    finishes (the suite's wall time was 24 s above half its work)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)  # stable: the order within stays


def budget_with_disk(folder: str) -> int:
    """The largest memory budget (bytes) under which the model keeps its embeddings in memory and layers on disk."""
    import transformers

    from model.pretrained import loading
    from model.pretrained.loading import _open_config
    from model.pretrained.offload import MemoryOptions, OffloadError, plan_for

    hf_config, shape, auto_class, _ = _open_config(loading.Path(folder), folder, transformers)
    total = loading.check_weights(loading.Path(folder), hf_config, shape)[0]  # float32 bytes, as loading counts them
    for percent in range(90, 5, -5):  # below the whole model: it does not fit
        share = percent / 100
        try:
            plan = plan_for(transformers, hf_config, auto_class, MemoryOptions(), int(total * share), "cpu", True)
        except OffloadError:
            break
        if plan.offloaded:
            return int(total * share)
    raise AssertionError(f"{folder}: no budget puts some layers in memory and some on disk")
