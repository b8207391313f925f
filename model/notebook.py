"""The app's views in a Jupyter notebook (issue 44): one small entry point over the core, whose results show themselves.

    from model import notebook
    explorer = notebook.load("default")                 # a shipped model's name, a model file, a Hugging Face folder
    decoded = explorer.decode("the black cat sees the small dog")      # every decoding option: beam=, sample=, ...
    decoded                                             # the interactive page inline: every kind, layer, head, step
    decoded.attention("cross")                          # NumPy [layers, heads, target, source]
    decoded.frame("cross", layer=3, head=2)             # a pandas DataFrame: target pieces × source pieces
    decoded.measure("alti+").attention("cross")         # a contribution measure's shares, the same shape
    decoded.figure(kind="cross", layer=3)               # the exported figure, as a matplotlib figure
    decoded.export("focus.pdf", kind="cross", layer=3)  # exactly the ``export`` command's file, with its record
    explorer.patching("the cat sees the dog", "the cats see the dog").frame()
    explorer.lens("the black cat sees the small dog").frame()
    explorer.circuit("the cat sees the dog", "the cats see the dog")     # its figure inline, its graph as networkx
    explorer.timeline("the cat sees the dog", snapshots=[0, 3, 7])       # the strip over training, its curves

Nothing is fetched: the page inline is the exported page (its script and style in it), shown in an ``<iframe>`` so
that its script runs. Each result keeps the core's own object (``.trace``, ``.result``) for anything more.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from model.attribution.measures import measured_trace, trace_measure
from model.circuits.result import CircuitResult, Options, find_circuit_of
from model.cli.recorded import export_record
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.errors import UserError
from model.family import Bundle
from model.figures.attention import FigureOptions
from model.figures.circuit import circuit_figure
from model.figures.export import ExportRequest, draw, export_view, request_trace
from model.figures.html_page import page_html
from model.figures.interventions import lens_figure, patching_figure
from model.figures.saving import figure_png
from model.inspection.selection import parse_head
from model.interventions.logit_lens import LogitLensResult, bundle_logit_lens
from model.interventions.patching import PatchingResult, activation_patching
from model.interventions.tables import lens_rows, patching_rows
from model.io.models import open_model
from model.kinds import AttentionKind
from model.pretrained.offload import MemoryOptions, opening
from model.timeline.curve_files import curve_rows
from model.timeline.curves import CurveOptions, head_curves
from model.timeline.figures import snapshot_strip
from model.timeline.source import SnapshotSource, choose_snapshots, open_timeline
from model.timeline.traces import SnapshotTrace, snapshot_traces
from model.timeline.views import default_view

try:  # the notebook extra (pip install ".[notebook]"): tables as DataFrames
    import pandas
except ImportError:  # pragma: no cover - the tables say how to get it
    pandas = None


def _frame(rows: list[dict[str, Any]] | np.ndarray, **labels: Any) -> Any:
    if pandas is None:
        raise UserError('tables as DataFrames need pandas: pip install ".[notebook]"')
    return pandas.DataFrame(rows, **labels)


def _figure_html(figure: Figure) -> str:
    """A figure as an inline PNG (no file, nothing fetched)."""
    encoded = base64.b64encode(figure_png(figure, 110)).decode("ascii")
    return f'<img src="data:image/png;base64,{encoded}" style="max-width:100%">'


def load(name: str, device: str = "cpu", max_memory: str | None = None, dtype: str | None = None) -> Explorer:
    """A model by a shipped model's name, a model file, a Hugging Face folder or cached id (as the command line);
    ``max_memory`` ("6GB") and ``dtype`` ("float16") as the command line's ``--max-memory`` and ``--dtype``: a folder
    larger than memory is opened with its layers streamed from disk (model/pretrained/offload.py)."""
    with opening(MemoryOptions.parse(max_memory, dtype)):
        return Explorer(open_model(name, device), name)


@dataclass(repr=False)
class Explorer:
    bundle: Bundle
    name: str  # as the user named it: what the records and captions say

    def decode(self, text: str, beam: int | None = None, sample: bool = False, temperature: float = 1.0, top_k: int = 0,
               top_p: float = 1.0, seed: int = 0, masked_heads: tuple = (), max_steps: int | None = None) -> Decoded:  # fmt: skip
        """``text`` decoded to its end: greedy, a beam of ``beam``, or sampled; ``masked_heads`` (model.nn.masking.Head)
        knocked out."""
        strategy = "beam" if beam else ("sample" if sample else "greedy")
        options = DecodingOptions(strategy=strategy, beam_width=beam or 4, temperature=temperature, top_k=top_k,
                                  top_p=top_p, seed=seed, masked_heads=tuple(masked_heads), max_steps=max_steps)  # fmt: skip
        stepper = Stepper(self.bundle, text, options)
        stepper.run()
        return Decoded(self, text, stepper.trace(), options)

    def patching(self, clean: str, corrupted: str, step: int | None = None, direction: str = "denoising") -> Patching:
        return Patching(activation_patching(self.bundle, clean, corrupted, step, direction), self.name)

    def lens(self, text: str, k: int = 5) -> Lens:
        return Lens(bundle_logit_lens(self.bundle, text, k), self.name, text)

    def circuit(self, clean: str, corrupted: str, step: int | None = None, **options: Any) -> Circuit:
        return Circuit(find_circuit_of(self.bundle, clean, corrupted, step, Options(**options)), self.name)

    def timeline(self, text: str, snapshots: list[int] | None = None, aer_pairs: int = 0) -> Timeline:
        """``text`` decoded by each snapshot of the model's training (``snapshots``, from 0; all by default), every one
        forced along the final model's translation, as the ``timeline`` command does (``aer_pairs``: the curves'
        AER, none by default: it is the slow part)."""
        source = open_timeline(self.name)
        traces = snapshot_traces(source, text, choose_snapshots(source, snapshots), "final", None, DecodingOptions())
        return Timeline(source, traces, self.name, aer_pairs)

    def __repr__(self) -> str:  # the model's modules are not printed: a published model's run to 10⁵ lines
        return f"<Explorer {self.name!r}: {self.bundle.describe()}>"

    def _repr_html_(self) -> str:
        return f"<b>{html.escape(self.name)}</b>: {html.escape(self.bundle.describe())}"


@dataclass(repr=False)
class Decoded:
    explorer: Explorer
    text: str
    trace: Trace
    options: DecodingOptions
    measure_name: str = ""  # a contribution measure in place of the weights ("" for the weights)

    def attention(self, kind: str = "cross", layer: int | None = None) -> np.ndarray:
        """[layers, heads, queries, keys] of ``kind`` ("encoder", "decoder", "cross"), or one ``layer``'s (from 1)."""
        matrix = self.trace.matrix(AttentionKind.parse(kind))
        return matrix if layer is None else matrix[layer - 1]

    def frame(self, kind: str = "cross", layer: int = 1, head: int | str = "mean") -> Any:
        """One layer's head (from 1), or its mean, max or rollout, as a DataFrame: queries × keys, labelled."""
        request = self._request("focus", kind, layer, head)
        matrix = request.matrix(request_trace(self.trace, request))  # the focus view's: its labels as drawn
        return _frame(matrix.values, index=matrix.query_labels, columns=matrix.key_labels)

    def measure(self, name: str) -> Decoded:
        """The same decoding with the contribution measure ``name`` (model/attribution/) in place of the weights."""
        source = [int(i) for i in self.explorer.bundle.source_ids(self.text)[0]]
        result = trace_measure(self.explorer.bundle.model, source, self.trace, name)
        return replace(self, trace=measured_trace(self.trace, result), measure_name=name)

    def _request(self, view: str, kind: str, layer: int, head: int | str, **figure: Any) -> ExportRequest:
        chosen = parse_head(str(head)) if isinstance(head, str) else head - 1
        options = FigureOptions(model_name=Path(self.explorer.name).stem, **figure)
        request = ExportRequest(kind=AttentionKind.parse(kind), layer=layer - 1, head=chosen, view=view, figure=options)
        request.validate()
        return request

    def figure(self, view: str = "focus", kind: str = "cross", layer: int = 1, head: int | str = "mean", **figure: Any) -> Figure:
        """The figure the ``export`` command draws of this view (``figure``: FigureOptions' fields: width, colormap…)."""
        request = self._request(view, kind, layer, head, **figure)
        return draw(request_trace(self.trace, request), request)

    def export(self, path: str | Path, view: str = "focus", kind: str = "cross", layer: int = 1, head: int | str = "mean",
               **figure: Any) -> Path:  # fmt: skip
        """The file the ``export`` command writes for this view, with the same record (what the command line cannot
        draw, a measure or sampling, named in it)."""
        request = self._request(view, kind, layer, head, **figure)
        beam = self.options.beam_width if self.options.strategy == "beam" else None
        record = export_record(request, self.explorer.bundle, self.explorer.name, self.text, beam)
        beyond = [f"the measure {self.measure_name!r}" if self.measure_name else "",
                  f"sampling (seed {self.options.seed})" if self.options.strategy == "sample" else ""]  # fmt: skip
        if any(beyond):
            record.beyond_the_command("; ".join(part for part in beyond if part))
        return export_view(self.trace, request, path, record=record)

    def __repr__(self) -> str:
        measure = f", {self.measure_name}" if self.measure_name else ""
        steps = len(self.trace.target_tokens)
        how = f"{self.options.strategy}, {steps} steps{measure}; {self.explorer.name}"
        return f"<Decoded {self.text!r} → {self.trace.target_text!r} ({how})>"

    def _repr_html_(self) -> str:
        options = FigureOptions(model_name=Path(self.explorer.name).stem)
        page = page_html(self.trace, ExportRequest(), options)
        return f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:640px;border:0"></iframe>'


class _FigureResult:
    """A result shown inline as its figure, its table as a DataFrame."""

    def rows(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def figure(self) -> Figure:
        raise NotImplementedError

    def frame(self) -> Any:
        """Its table (what its command writes as CSV), as a DataFrame."""
        return _frame(self.rows())

    def _repr_html_(self) -> str:
        return _figure_html(self.figure())


@dataclass(repr=False)
class Patching(_FigureResult):
    result: PatchingResult
    model: str

    def __repr__(self) -> str:
        result = self.result
        metrics = f"metric clean {result.clean_metric:.3f}, corrupted {result.corrupted_metric:.3f}"
        return f"<Patching ({result.method}, {result.direction}) at step {result.step + 1}: {metrics}; {self.model}>"

    def rows(self) -> list[dict[str, Any]]:
        return patching_rows(self.result)  # one row per cell of every grid

    def figure(self) -> Figure:
        return patching_figure(self.result, options=FigureOptions(model_name=Path(self.model).stem))


@dataclass(repr=False)
class Lens(_FigureResult):
    result: LogitLensResult
    model: str
    text: str

    def __repr__(self) -> str:
        return f"<Lens of {self.text!r}: {len(self.result.readings)} readings × {len(self.result.chosen_ids)} steps; {self.model}>"

    def rows(self) -> list[dict[str, Any]]:
        return lens_rows(self.result)  # one row per reading and step

    def figure(self) -> Figure:
        return lens_figure(self.result, FigureOptions(model_name=Path(self.model).stem), self.text)


@dataclass(repr=False)
class Circuit:
    result: CircuitResult
    model: str

    def __repr__(self) -> str:
        return "<Circuit; " + self.model + "\n  " + "\n  ".join(self.result.describe()[:8]) + ">"

    @property
    def graph(self) -> Any:
        """The networkx graph (model/circuits/graph.py)."""
        return self.result.graph.graph

    def frame(self) -> Any:
        """One row per edge: its score, exact change (NaN unchecked) and whether the circuit keeps it."""
        exact = self.result.exact if self.result.exact is not None else np.full(len(self.result.scores), np.nan)
        rows = [{"edge": self.result.edge_label(i), "score": float(s), "exact": float(e), "in circuit": bool(c)}
                for i, (s, e, c) in enumerate(zip(self.result.scores, exact, self.result.circuit.edges))]  # fmt: skip
        return _frame(rows)

    def figure(self) -> Figure:
        return circuit_figure(self.result, FigureOptions(model_name=Path(self.model).stem))

    def _repr_html_(self) -> str:
        summary = "".join(f"<div>{html.escape(line)}</div>" for line in self.result.describe()[:8])
        return summary + _figure_html(self.figure())


@dataclass(repr=False)
class Timeline(_FigureResult):
    source: SnapshotSource
    traces: list[SnapshotTrace]
    model: str
    aer_pairs: int = 0

    def __repr__(self) -> str:
        return f"<Timeline of {len(self.traces)} snapshots of {self.model}>"

    def rows(self) -> list[dict[str, Any]]:
        """Each snapshot, kind, layer and head's curves (what ``timeline --out FILE.csv`` writes)."""
        return curve_rows(head_curves(self.source, self.traces, CurveOptions(self.aer_pairs)))

    def figure(self) -> Figure:
        """The strip of small multiples: the grid of the final trace's cross-attention (or its one kind) per snapshot."""
        view = default_view(self.traces[-1].trace)
        return snapshot_strip(self.traces, view, FigureOptions(model_name=Path(self.model).stem))
