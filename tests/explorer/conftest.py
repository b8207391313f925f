"""Fixtures of the GUI tests: ``open_window(bundle=None, build=True)`` opens the app's main window as every
GUI test does (tests/explorer/gui_helpers.py: its own settings file, 1300x850, shown, the closing questions
answered), ``window`` is one such window with no model. After the test, whether it passed, failed or raised,
every window the fixture opened is shut: its training stopped and joined, closed, its tasks finished, deleted.
``translated_copy`` is a window with the tiny copy model open and a sentence translated. ``russian_bundle`` is a
model whose source side is Russian, for the sentences a model cannot read (the window's
tests and the Explore controller's both use it).

Every test that uses Qt (``qtbot``) runs under the app's garbage-collection policy whether or not it opens a main
window (explorer/runtime.py's ``WindowThreadCollector``): Python's cyclic collector runs on the test's thread only,
and collects there after the test. Left automatic, a job thread of a test with controllers and a view but no window
(the importance view's) could collect an earlier test's widgets in its own thread, where Qt crashes: a worker of
the suite died that way in CI."""

from __future__ import annotations

import pytest

from explorer.runtime import COLLECTOR
from tests.explorer.gui_helpers import new_window, shut

RUSSIAN = ["кошка", "собака", "дом", "красный", "большой", "видит", "ест", "яблоко", "не", "и", "мир", "сад"]


@pytest.fixture(autouse=True)
def collected_on_the_test_thread(request):
    """A Qt test's garbage is collected on its own thread, never a job's (the window's policy, as if one were open)."""
    if "qtbot" not in request.fixturenames:
        yield
        return
    COLLECTOR.start()
    try:
        yield
    finally:
        COLLECTOR.stop()


@pytest.fixture
def open_window(qtbot, tmp_path):
    """A factory of main windows (all sharing tmp_path/settings.ini, as a user's successive windows do),
    each one shut after the test."""
    opened = []

    def open_(bundle=None, *, build: bool = True, settings=None):
        window = new_window(qtbot, tmp_path, bundle, build=build, settings=settings)
        opened.append(window)
        return window

    yield open_
    problems = []
    while opened:  # the last opened first; every window is shut even when shutting one went wrong
        problems += shut(opened.pop())
    assert not problems, "; ".join(problems)


@pytest.fixture
def window(open_window):
    """A main window with its own settings file and no model; shut after the test."""
    return open_window()


@pytest.fixture
def translated_copy(qtbot, tmp_path, window, copy_bundle):
    """(window, its Explore tab, the messages it shows): the tiny copy model open (saved to a file, as a user opens
    one), figures at 60 dpi, and "a b c d" translated."""
    from tests.conftest import saved_model

    window.open_model(str(saved_model(copy_bundle[0], tmp_path)))
    qtbot.waitUntil(lambda: window.explore.bundle is not None, timeout=10000)
    window.settings.setValue("export/dpi", 60)
    tab = window.explore_tab
    tab.controls.source.setText("a b c d")
    tab.controls.translate_button.click()
    qtbot.waitUntil(lambda: window.explore.trace is not None, timeout=10000)
    messages: list[str] = []
    window.explore.message.connect(messages.append)
    return window, tab, messages


@pytest.fixture
def russian_bundle(tmp_path):
    """(model, corpus file, its lines): a model of a TSV corpus whose source side is Russian, so English is unknown
    to its source tokenizer."""
    import random

    from model.data.corpora import CorpusSpec
    from model.training.pipeline import TokenizerOptions, prepare
    from tests.conftest import TINY_MODEL

    rng = random.Random(3)
    lines = [(" ".join(rng.choice(RUSSIAN) for _ in range(rng.randint(2, 5))), f"s{i} t{i}") for i in range(300)]
    corpus = tmp_path / "ru-pairs.tsv"
    corpus.write_text("".join(f"{source}\t{target}\n" for source, target in lines), encoding="utf-8")
    bundle, _ = prepare(CorpusSpec(str(corpus)), TokenizerOptions(vocab_size=60, joint=False), TINY_MODEL)
    bundle.model.eval()
    return bundle, corpus, lines
