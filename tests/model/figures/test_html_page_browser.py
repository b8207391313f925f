"""The interactive page as a browser draws it: headless Chromium (Debian's ``chromium``) loads the page with a
selection in its address (kind, layer, head, step), runs its script and dumps the DOM; the focus heatmap's cells
there must carry the selected matrix of the trace at that step (a head, the mean, max or rollout over heads), with
the labels the app shows, the step's row outlined and later rows hidden, and the grid one map per layer x head.

Without a chromium binary these tests are skipped and say so (under TE_REQUIRE_REFERENCE=1, as in CI, which
installs it, they fail instead)."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from model.data.token_labels import display_labels
from model.decoding.stepper import DecodingOptions, Stepper
from model.figures.attention import FigureOptions
from model.figures.html_page import save_page
from model.inspection.selection import parse_head, select
from model.inspection.view import ExploreView
from tests.conftest import reference_required
from tests.model.figures.test_figures import synthetic_trace

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    message = "no chromium binary found (Debian: apt-get install chromium; .ci/run installs it): the page is not loaded"
    if reference_required():  # CI: the browser must run
        pytest.fail(message)
    pytest.skip(message)


class FocusReader(HTMLParser):
    """What the dumped DOM shows: the focus table's attributes, its cells (row, column, value), its labels (and
    which are hidden), the outlined row, the grid's maps, and whether the script finished."""

    def __init__(self):
        super().__init__()
        self.focus: dict[str, str] = {}
        self.cells: list[tuple[int, int, float]] = []
        self.queries: list[tuple[str, bool]] = []  # (label, shown)
        self.keys: list[tuple[str, bool]] = []
        self.current: list[int] = []  # rows outlined (tr.current), counted from 0
        self.maps: list[tuple[int, int]] = []
        self.ready = ""
        self.tags: set[str] = set()
        self._body = False  # in the focus table's body
        self._row = -1
        self._label: list | None = None
        self._text: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = {name: value or "" for name, value in attrs}
        self.tags.add(tag)
        classes = attributes.get("class", "").split()
        if tag == "html":
            self.ready = attributes.get("data-ready", "")
        elif tag == "table" and attributes.get("id") == "focus":
            self.focus = attributes
        elif tag == "tbody" and self.focus and not self.maps:
            self._body = True
        elif tag == "tr" and self._body:
            self._row += 1
            if "current" in classes:
                self.current.append(self._row)
        elif tag == "td" and "cell" in classes:
            self.cells.append((int(attributes["data-row"]), int(attributes["data-col"]), float(attributes["data-value"])))
        elif tag == "th" and ("query" in classes or "key" in classes):
            shown = "visibility: hidden" not in attributes.get("style", "")
            self._label = [self.queries if "query" in classes else self.keys, "", shown]
        elif tag == "canvas":
            self.maps.append((int(attributes["data-layer"]), int(attributes["data-head"])))
        elif attributes.get("id") in ("focus-title", "grid-title"):
            self._in = attributes["id"]
            self._text[self._in] = ""

    def handle_endtag(self, tag):
        if tag == "th" and self._label is not None:
            self._label[0].append((self._label[1], self._label[2]))
            self._label = None
        elif tag == "h2":
            self._in = None
        elif tag == "tbody":
            self._body = False

    def handle_data(self, data):
        if self._label is not None:
            self._label[1] += data
        if self._in:
            self._text[self._in] += data

    def title(self, name: str) -> str:
        return self._text.get(name, "")


def load(page: Path, address: str, tmp_path: Path) -> FocusReader:
    """The page's DOM after its script ran, as headless Chromium dumps it, read by FocusReader."""
    command = [
        browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,1000",
        "--dump-dom",
        page.resolve().as_uri() + address,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    reader = FocusReader()
    reader.feed(result.stdout)
    assert reader.ready == "yes", "the page's script did not finish: " + result.stdout[-2000:]
    return reader


@pytest.fixture(scope="module")
def page(copy_bundle, tmp_path_factory):
    """(the page of a tiny copy model's trace, the trace): opening on decoder self-attention, layer 1, head 1."""
    stepper = Stepper(copy_bundle[0], "a b c d", DecodingOptions())
    stepper.run()
    trace = stepper.trace()
    path = tmp_path_factory.mktemp("page") / "page.html"
    save_page(trace, ExploreView(kind="decoder", layer=0, head=0), FigureOptions(model_name="copy"), path)
    return path, trace


@pytest.mark.parametrize(
    "address,kind,layer,head,step",
    [
        ("?kind=cross&layer=2&head=1&step=3", "cross", 2, "1", 3),
        ("?kind=cross&layer=2&head=mean&step=3", "cross", 2, "mean", 3),
        ("#kind=decoder&layer=1&head=max&step=2", "decoder", 1, "max", 2),
        ("#kind=encoder&layer=2&head=rollout&step=1", "encoder", 2, "rollout", 1),
        ("", "decoder", 1, "1", None),  # the request's view: the whole translation
    ],
)
def test_the_browser_shows_the_selected_matrix_at_the_step(page, tmp_path, address, kind, layer, head, step):
    path, trace = page
    dom = load(path, address, tmp_path)
    steps = trace.n_steps if step is None else step
    expected = select(trace, kind, layer - 1, parse_head(head), step=steps)
    assert dom.focus["data-kind"] == kind and dom.focus["data-layer"] == str(layer) and dom.focus["data-head"] == head
    assert dom.focus["data-step"] == str(steps)
    rows, columns = expected.values.shape
    shown = np.full((len(dom.queries), len(dom.keys)), np.nan)
    for row, column, value in dom.cells:
        shown[row, column] = value
    assert len(dom.cells) == rows * columns  # rows (and decoder keys) of later steps are hidden
    np.testing.assert_allclose(shown[:rows, :columns], expected.values, rtol=0, atol=1e-6)
    full_queries, full_keys = trace.axis_labels(kind)
    assert [label for label, _ in dom.queries] == display_labels(full_queries)
    assert [label for label, shown in dom.queries if shown] == display_labels(expected.query_labels)
    assert [label for label, shown in dom.keys if shown] == display_labels(expected.key_labels)
    assert dom.current == ([] if kind == "encoder" else [rows - 1])
    assert dom.title("focus-title") == expected.title[0].upper() + expected.title[1:]
    n_layers, n_heads = trace.matrix(kind).shape[:2]
    assert dom.maps == [(layer_, head_) for layer_ in range(n_layers) for head_ in range(n_heads)]
    assert dom.title("grid-title").endswith(": every layer and head")


def test_in_the_browser_a_token_stays_text(tmp_path):
    trace = synthetic_trace(6)
    trace.source_tokens[2] = "</script><b>x"
    path = save_page(trace, ExploreView(kind="cross", layer=1, head="mean"), FigureOptions(), tmp_path / "nasty.html")
    dom = load(path, "#step=0", tmp_path)
    assert [label for label, _ in dom.keys] == display_labels(trace.source_tokens) and "·</script><b>x" in dom.keys[2][0]
    assert "b" not in dom.tags  # the label's "<b>" is text, not an element
    assert dom.cells == [] and dom.focus["data-step"] == "0"  # step 0: no rows yet
