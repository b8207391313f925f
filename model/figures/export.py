"""What the app's Export menu and the ``export`` command write: one view of a Trace as a figure
(PNG, SVG, PDF), as data (CSV, NPY) or as an interactive page (HTML, ``html_page.py``), and "Export all" —
every kind x layer x head and the aggregates, figures and data, with an ``index.csv`` naming each file. No Qt here.

An ``ExportRequest`` holds every setting (view, kind, layer, head, step, word level, figure size,
fonts, colours, caption); the same request gives the same files from the window and the command line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

import matplotlib
import numpy as np

from model.decoding.candidates import candidate_rows
from model.decoding.trace import Trace
from model.figures.attention import FigureOptions, focus_figure, grid_figure, lines_figure, trace_details
from model.figures.candidates import candidates_figure
from model.figures.html_page import PAGE_SUFFIX, PAGE_VIEWS, save_page
from model.figures.layout import FIGURE_RC, Caption
from model.figures.saving import FIGURE_SUFFIXES, save_figure
from model.files import OutputError, atomic_output, check_output
from model.inspection.selection import AttentionMatrix, SelectionError, heads_for, select, source_shares_through, write_csv
from model.inspection.view import ExploreView, shown_trace
from model.kinds import AttentionKind
from model.provenance.embed import figure_metadata, write_sidecar
from model.provenance.record import Record

VIEWS = ("focus", "grid", "lines", "candidates")
DATA_SUFFIXES = (".csv", ".npy")
SUFFIXES = FIGURE_SUFFIXES + DATA_SUFFIXES + (PAGE_SUFFIX,)


@dataclass
class ExportRequest(ExploreView):
    """What the Explore view shows (kind, layer, head, step, level), and how to draw or write it."""

    view: str = "focus"  # focus, grid, lines or candidates
    figure: FigureOptions = field(default_factory=FigureOptions)
    dpi: float = 300  # PNG only
    heads: list[int] | None = None  # lines view: the heads drawn (None: all)

    def validate(self) -> None:
        if self.view not in VIEWS:
            raise SelectionError(f"view must be one of {', '.join(VIEWS)}, not {self.view!r}")
        self.kind = AttentionKind.parse(self.kind)


def request_trace(trace: Trace, request: ExportRequest) -> Trace:
    """The trace a request's view shows: at its step, and at word level unless the view is the
    candidates (next-token candidates are pieces, whatever the level). A focus view of a rolled-out measure (ALTI+)
    gives each prediction's source share through its layer."""
    shown = shown_trace(trace, request.step, request.word_level and request.view != "candidates")
    if request.view == "focus":
        shown = replace(shown, source_share=source_shares_through(shown, request.layer))
    return shown


def step_candidates(trace: Trace) -> tuple[int, list[str], np.ndarray, np.ndarray, int | None]:
    """(step index, tokens, probabilities, ids, chosen row) of the distribution the view shows: the last
    step's, or at step 0 the first step's (when the trace knows it)."""
    if trace.n_steps and len(trace.candidate_ids) != trace.n_steps:  # a pass that kept no candidates
        return trace.n_steps - 1, [], np.zeros(0, np.float32), np.zeros(0, np.int64), None
    if trace.n_steps:
        ids = np.asarray(trace.candidate_ids[-1])
        chosen = np.nonzero(ids == int(trace.chosen_ids[-1]))[0]
        return (
            trace.n_steps - 1,
            list(trace.candidate_tokens[-1]),
            np.asarray(trace.candidate_probabilities[-1]),
            ids,
            int(chosen[0]) if chosen.size else None,
        )
    return (
        0,
        list(trace.next_candidate_tokens),
        np.asarray(trace.next_candidate_probabilities),
        np.asarray(trace.next_candidate_ids),
        None,
    )


def view_table(trace: Trace, request: ExportRequest) -> tuple[np.ndarray, np.ndarray, list[str], list[str], str]:
    """(NPY array, CSV table, row labels, column labels, corner) of a view; labels are the raw pieces."""
    if request.view == "candidates":
        _, tokens, probabilities, _, _ = step_candidates(trace)
        return probabilities, probabilities[:, None], tokens, ["probability"], "token"
    if request.view == "focus":
        matrix = select(trace, request.kind, request.layer, request.head)
        return matrix.values, matrix.values, matrix.query_labels, matrix.key_labels, "query \\ key"
    weights = trace.matrix(request.kind)  # [layers, heads, queries, keys]
    queries, keys = trace.axis_labels(request.kind)
    if request.view == "lines":
        select(trace, request.kind, request.layer, 0)  # a clear error for a layer the trace lacks
        weights = weights[request.layer]  # [heads, queries, keys]
        rows = [f"head {h + 1} | {q}" for h in range(weights.shape[0]) for q in queries]
        return weights, weights.reshape(-1, weights.shape[-1]), rows, list(keys), "head | query \\ key"
    rows = [
        f"layer {layer + 1} head {h + 1} | {q}"
        for layer in range(weights.shape[0])
        for h in range(weights.shape[1])
        for q in queries
    ]
    return weights, weights.reshape(-1, weights.shape[-1]), rows, list(keys), "layer head | query \\ key"


def draw(trace: Trace, request: ExportRequest):
    """The matplotlib Figure of a view (``trace`` already cut to the step and level shown)."""
    options = request.figure
    if request.view == "focus":
        return focus_figure(select(trace, request.kind, request.layer, request.head), trace, options)
    if request.view == "grid":
        return grid_figure(trace, request.kind, options)
    if request.view == "lines":
        select(trace, request.kind, request.layer, 0)
        focused = request.head if isinstance(request.head, int) else None
        return lines_figure(trace, request.kind, request.layer, options, request.heads, focused)
    index, tokens, probabilities, _, chosen = step_candidates(trace)
    if not tokens:
        raise SelectionError("no candidates at this step: decoding has not started or has finished")
    rows = candidate_rows(probabilities)
    other = max(0.0, 1.0 - float(probabilities[:rows].sum()))
    return candidates_figure(
        index, tokens[:rows], probabilities[:rows], chosen if chosen is not None and chosen < rows else None, trace, options, other
    )


def save_table(
    values: np.ndarray, table: np.ndarray, row_labels: list[str], column_labels: list[str], path: str | Path, corner: str = ""
) -> Path:
    """NPY (the array exactly) or CSV (labels in the first row and column), written atomically."""
    path = Path(path)
    suffix = path.suffix.lower()
    with atomic_output(path) as temporary:
        if suffix == ".npy":
            buffer = io.BytesIO()  # numpy writes a real file through C stdio, which drops a write that fails at close
            np.save(buffer, np.asarray(values), allow_pickle=False)
            temporary.write_bytes(buffer.getvalue())
        elif suffix == ".csv":
            write_csv(table, row_labels, column_labels, temporary, corner)
        else:
            raise OutputError(f"data is saved as .csv or .npy, not {suffix or 'no extension'}")
    return path


def export_view(trace: Trace, request: ExportRequest, path: str | Path, inputs: tuple = (), record: Record | None = None) -> Path:
    """One view of the full ``trace`` into ``path``: a figure, data or the interactive page by the suffix; ``record``
    (what drew it, model/provenance/) kept in it, or beside data."""
    request.validate()
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise OutputError(f"the output must end in {', '.join(SUFFIXES)}, not {path.name!r}")
    check_output(path, inputs)
    shown = request_trace(trace, request)
    if suffix == PAGE_SUFFIX:
        if request.view not in PAGE_VIEWS:
            raise SelectionError(f"the page (.html) shows the focus and grid views, not the {request.view} view")
        request.matrix(shown)  # a layer, head or kind the trace lacks: the same message as a figure's
        return save_page(trace, request, request.figure, path, inputs, record)
    if suffix in DATA_SUFFIXES:
        values, table, rows, columns, corner = view_table(shown, request)
        written = save_table(values, table, rows, columns, path, corner)
        write_sidecar(written, record)
        return written
    return save_figure(draw(shown, request), path, request.dpi, record)


def file_stem(kind: AttentionKind, layer: int, head: int | str) -> str:
    return f"{kind}_L{layer + 1}_{'H' + str(head + 1) if isinstance(head, int) else head}"


class ExportStopped(Exception):
    """Export all was stopped between two figures (its ``stop()`` said so). ``written``: the files it had finished,
    each whole (every file is written atomically); no ``index.csv`` is written for a stopped export."""

    def __init__(self, written: list[Path]):
        super().__init__(f"stopped after {len(written)} files")
        self.written = written


def export_all(
    trace: Trace,
    folder: str | Path,
    request: ExportRequest | None = None,
    formats: tuple[str, ...] = (".png", ".csv", ".npy"),
    stop: Callable[[], bool] | None = None,
    record_for: Callable[[ExportRequest], Record | None] | None = None,
) -> list[Path]:
    """Every kind x layer x head and aggregate (mean, max, rollout) of the trace at the request's step
    and level, plus each kind's layer x head grid, into ``folder``; ``index.csv`` names every file.
    A file that cannot be written (a full disk) stops it with one OutputError, once every PNG being written
    in the background has finished: none writes on, and no temporary file is left. ``stop()`` is asked before
    each figure: once it says True, the PNGs not yet begun are dropped, those being written finish, and
    ``ExportStopped`` names the files written. The PNG writer threads are this call's own: none outlives it.
    ``record_for(request of one file's view)``: that file's record (model/provenance/), in it or beside it."""
    request = request or ExportRequest()
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder}: is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{folder}: cannot be created ({error.strerror or error})") from None
    shown = shown_trace(trace, request.step, request.word_level)
    # PNG compression releases the GIL: two threads encode while the next figure is drawn.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="png-writer") as writers:
        run = _ExportRun(shown, folder, request, formats, writers, stop or (lambda: False), record_for or (lambda _view: None))
        try:
            for kind in shown.kinds:
                run.export_kind(kind)
        except _Stopped:
            raise ExportStopped(run.finish_stopped()) from None
        finally:
            wait(run.pending.values())  # the first error is the one reported; the writers still running end first
    for job in run.pending.values():
        job.result()  # an error writing any PNG is raised here
    index_path = folder / "index.csv"
    with atomic_output(index_path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", "kind", "layer", "head", "step", "level", "format", "description"])
        writer.writerows(run.index)
    return [folder / row[0] for row in run.index] + [index_path]


class _Stopped(Exception):
    """Inside Export all: its ``stop()`` said True between two figures."""


@dataclass
class _ExportRun:
    """One Export all call: the trace shown, where and how it writes, its own PNG writers, the PNGs pending (by
    path) and a row of ``index`` per file."""

    shown: Trace
    folder: Path
    request: ExportRequest
    formats: tuple[str, ...]
    writers: Executor
    stop: Callable[[], bool]
    record_for: Callable[[ExportRequest], Record | None]
    pending: dict[Path, Future] = field(default_factory=dict)
    index: list[list[str]] = field(default_factory=list)

    def check(self) -> None:
        """Between two figures: ``_Stopped`` once the caller's ``stop()`` says so."""
        if self.stop():
            raise _Stopped

    def finish_stopped(self) -> list[Path]:
        """After a stop: the PNGs not yet begun dropped, the others finished; the files written."""
        dropped = {path for path, job in self.pending.items() if job.cancel()}
        wait(self.pending.values())
        for path, job in self.pending.items():
            if path not in dropped:
                job.result()  # an error writing a PNG is still the error reported
        return [self.folder / row[0] for row in self.index if self.folder / row[0] not in dropped]

    def export_kind(self, kind: AttentionKind) -> None:
        """Export all's files of one kind: every layer x head and aggregate, then its grids; a row of ``index`` each."""
        shown, request = self.shown, self.request
        weights = shown.matrix(kind)  # [layers, heads, queries, keys]
        n_layers, n_heads = weights.shape[:2]
        frames = None
        for layer in range(n_layers):
            for head in heads_for(kind, n_heads):
                self.check()
                matrix = select(shown, kind, layer, head)
                stem = file_stem(kind, layer, head)
                record = self.record_for(replace(request, view="focus", kind=kind, layer=layer, head=head))
                for suffix in self.formats:
                    path = self.folder / f"{stem}{suffix}"
                    if suffix == ".npy" or suffix == ".csv":
                        save_table(matrix.values, matrix.values, matrix.query_labels, matrix.key_labels, path, "query \\ key")
                        write_sidecar(path, record)
                    elif matrix.values.size and suffix == ".png":
                        if frames is None or frames.key != (kind, matrix.values.shape):
                            frames = _FocusFrames(matrix, shown, request)
                        self.pending[path] = frames.save(matrix, path, self.writers, record)
                    elif matrix.values.size:  # SVG and PDF are drawn whole
                        save_figure(focus_figure(matrix, shown, request.figure), path, request.dpi, record)
                    else:
                        continue
                    row = [str(layer + 1), _head_name(head), str(shown.n_steps), shown.level, suffix[1:], matrix.title]
                    self.index.append([path.name, kind, *row])
        for suffix in (suffix for suffix in self.formats if suffix in FIGURE_SUFFIXES):
            if weights.shape[2]:
                self.check()
                path = self.folder / f"{kind}_grid{suffix}"
                record = self.record_for(replace(request, view="grid", kind=kind))
                save_figure(grid_figure(shown, kind, request.figure), path, request.dpi, record)
                description = f"{kind.label}: every layer and head"
                self.index.append([path.name, kind, "all", "all", str(shown.n_steps), shown.level, suffix[1:], description])


def _head_name(head: int | str) -> str:
    return str(head + 1) if isinstance(head, int) else head


class _FocusFrames:
    """Export all's PNGs: one focus figure per kind, its labels, colour bar and caption drawn once;
    each head then writes only its cells (coloured through the same lookup table as matplotlib's
    colour map) and its title over that background. A 6 x 8 model's ~200 figures take seconds."""

    def __init__(self, matrix: AttentionMatrix, trace: Trace, request: ExportRequest):
        # deferred: matplotlib's Agg canvas only when a figure is drawn (the window starts without matplotlib)
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        caption = Caption(_title(matrix), trace_details(trace, request.figure))
        self.figure = focus_figure(matrix, trace, request.figure, caption=caption)
        self.key = (matrix.kind, matrix.values.shape)
        image = self.figure.heatmap_image
        assert image is not None and image.axes is not None  # a focus figure always has its heatmap
        self.image, self.title, self.axes = image, self.figure.caption_texts[0], image.axes
        self.image.set_animated(True)  # left out of the background
        self.title.set_animated(True)
        self.figure.set_dpi(request.dpi)
        self.figure.patch.set_facecolor("white")
        self.canvas = FigureCanvasAgg(self.figure)
        with matplotlib.rc_context(FIGURE_RC):
            self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.figure.bbox)
        self.dpi = request.dpi
        self.lookup = (self.image.cmap(np.linspace(0, 1, self.image.cmap.N)) * 255).round().astype(np.uint8)  # [N, 4]
        n_queries, n_keys = matrix.values.shape
        x0, y0, x1, y1 = self.axes.bbox.extents  # pixels, from the bottom left
        height = self.canvas.get_width_height(physical=True)[1]
        self.columns = np.round(np.linspace(x0, x1, n_keys + 1)).astype(int)  # [K + 1] pixel edges
        self.rows = np.round(height - np.linspace(y1, y0, n_queries + 1)).astype(int)  # [Q + 1] from the top
        self.column_widths, self.row_heights = np.diff(self.columns), np.diff(self.rows)  # pixels per cell

    def save(self, matrix: AttentionMatrix, path: Path, writers: Executor, record: Record | None = None) -> Future:
        """Draw ``matrix`` over the background and hand its PNG to ``writers`` (the export's own threads)."""
        # deferred: Pillow only when a PNG is written
        from PIL import Image

        self.canvas.restore_region(self.background)
        low, high = self.image.get_clim()  # the colour scale the figure was drawn with
        scaled = (np.asarray(matrix.values, dtype=np.float64) - low) / (high - low)  # [Q, K]
        index = np.clip((scaled * self.image.cmap.N).astype(np.int64), 0, self.image.cmap.N - 1)
        pixels = np.asarray(self.canvas.buffer_rgba())  # [height, width, 4], the canvas itself
        cells = self.lookup[index]  # [Q, K, 4]
        pixels[self.rows[0] : self.rows[-1], self.columns[0] : self.columns[-1]] = np.repeat(
            np.repeat(cells, self.row_heights, axis=0), self.column_widths, axis=1
        )
        self.title.set_text(_title(matrix))
        with matplotlib.rc_context(FIGURE_RC):
            for artist in [*self.axes.spines.values(), *self.axes.patches, self.title]:
                self.figure.draw_artist(artist)
        width, height = self.canvas.get_width_height(physical=True)
        picture = Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        rgb = picture.convert("RGB")  # a copy: the canvas can be redrawn while it is written
        return writers.submit(_write_png, rgb, path, self.dpi, record)


def _write_png(picture, path: Path, dpi: float, record: Record | None = None) -> None:
    """A PNG of ``picture``, its record (model/provenance/) in its text chunk, as every figure of the app keeps it."""
    from PIL.PngImagePlugin import PngInfo  # deferred: Pillow only when a PNG is written

    info = PngInfo()
    for key, value in figure_metadata(".png", record).items():
        info.add_text(key, value)
    with atomic_output(path) as temporary:
        picture.save(temporary, format="png", dpi=(dpi, dpi), compress_level=1, pnginfo=info)


def _title(matrix: AttentionMatrix) -> str:
    return matrix.title[0].upper() + matrix.title[1:]
