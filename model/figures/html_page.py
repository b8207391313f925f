"""The interactive page: one self-contained HTML file of a Trace that any browser opens with no server and no
network (what BertViz, Inseq and CircuitsVis users share), written by the ``export`` command (``--out page.html``)
and the window's Export menu (*Interactive page (HTML)…*). No Qt here.

The page holds the trace's attention as JSON (every kind, layer and head, the axis labels as the app displays
them, ``display_labels``), its own script and style inline (``html_page.js``, ``html_page.css`` beside this file),
and draws the focus heatmap (a head, the mean, max or rollout over heads, the current step's row outlined) and the
grid of every layer x head, with selectors for kind, layer and head, a step slider (rows of later steps hidden,
as the app's stepping hides them), hover read-outs, a colour bar and a caption. The heatmap is an HTML table whose
cells carry their values (``data-value``), so a headless browser's DOM holds the numbers shown. The initial view
comes from the request, and the URL's query or hash (``page.html#kind=cross&layer=2&head=1&step=3``, layers and
heads from 1) overrides it; the page keeps its hash up to date, so a link reopens the same view.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from model.attribution.measures import measure_caption
from model.data.token_labels import HIGHLIGHT, display_labels, pieces_text
from model.decoding.trace import Trace, word_groups
from model.figures.attention import FigureOptions
from model.files import atomic_output, check_output
from model.inspection.selection import AttentionMatrix, heads_for, map_titles
from model.inspection.view import ExploreView
from model.kinds import AttentionKind, SelectionError
from model.provenance.embed import page_with_record
from model.provenance.record import Record

PAGE_SUFFIX = ".html"
PAGE_VIEWS = ("focus", "grid")  # the views the page draws (it draws both)
COLOUR_STOPS = 33  # samples of the colour map; the page interpolates between them
DECIMALS = 6  # values are written rounded to this many decimals (within 5e-7 of the trace's float32)
HERE = Path(__file__).resolve().parent
SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    """``value`` as JSON that can sit inside a <script> element: no "<", ">" or "&" (so a token such as
    ``</script>`` or ``<!--`` cannot end or change the element) and no line separators, each written as a
    \\u escape that JSON.parse reads back as the same character."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "".join(SCRIPT_ESCAPES.get(character, character) for character in text)


def rounded(values: np.ndarray) -> list:
    """A float array as nested lists rounded to DECIMALS; a NaN or infinite value becomes None (null)."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    result = np.round(np.where(finite, values, 0.0), DECIMALS) + 0.0  # + 0.0: no "-0.0"
    if finite.all():
        return result.tolist()
    cells = result.astype(object)
    cells[~finite] = None
    return cells.tolist()


def colour_stops(options: FigureOptions) -> list[list[int]]:
    """The figure options' colour map (viridis by default) as COLOUR_STOPS RGB triples, 0-255; an unknown name
    is refused (FigureError) as the figures refuse it."""
    colours = options.colours()(np.linspace(0.0, 1.0, COLOUR_STOPS))[:, :3]  # [stops, 3]
    return np.round(colours * 255).astype(int).tolist()


def rows_at_steps(tokens: list[str], piece_tokens: list[str], n_steps: int, level: str) -> list[int]:
    """How many query rows a kind that follows decoding shows after each step 0..n_steps: the step itself
    for pieces; at word level, the words begun within the first ``step`` pieces of ``piece_tokens``."""
    if level != "word" or not piece_tokens:
        return [min(step, len(tokens)) for step in range(n_steps + 1)]
    groups, _ = word_groups(piece_tokens)
    return [int(groups[step - 1]) + 1 if step else 0 for step in range(n_steps + 1)]


def map_title(kind: AttentionKind, layer: int, head: int | str, measure: str) -> str:
    """The focus view's title for a choice, as the window and the figures title it."""
    title = AttentionMatrix(np.zeros((0, 0), np.float32), [], [], kind, layer, head, 0, measure).title
    return title[0].upper() + title[1:]


def kind_data(trace: Trace, pieces: Trace, kind: AttentionKind) -> dict[str, Any]:
    """One kind's part of the page: its labels, choices, titles, rows per step and every layer x head map."""
    weights = trace.matrix(kind)  # [layers, heads, queries, keys]
    n_layers, n_heads = weights.shape[:2]
    queries, keys = trace.axis_labels(kind)
    layer_titles, head_titles = map_titles(trace, kind)
    choices: list[int | str] = [0] if head_titles == ["all heads"] else heads_for(kind, n_heads)
    steps: list[int] | None = None
    if kind.follows_decoding:
        piece_queries = pieces.axis_labels(kind)[0]
        steps = rows_at_steps(list(queries), list(piece_queries), pieces.n_steps, trace.level)
    return {
        "name": kind.value,
        "label": kind.label[0].upper() + kind.label[1:],
        "axis_names": list(kind.axis_names),
        "causal": kind.causal,  # decoder self-attention: its keys are its queries, cut at the same step
        "queries": display_labels(list(queries), trace.level),
        "keys": display_labels(list(keys), trace.level),
        "rows_at_step": steps,  # None: every row at every step (encoder self-attention)
        "layer_titles": layer_titles,
        "head_titles": head_titles,
        "choices": choices,
        "titles": [[map_title(kind, layer, choice, trace.measure) for choice in choices] for layer in range(n_layers)],
        "weights": rounded(weights),
    }


def source_line(trace: Trace) -> str:
    """The caption's line naming the sentence, as the figures' captions name it."""
    read = pieces_text(trace.source_tokens, "piece")
    source = trace.source_text or read
    if not trace.source_tokens and trace.decoder_input_tokens:  # a decoder-only model: its prompt
        return f"Prompt: “{source}”"
    if len(read) < 0.9 * len(" ".join(source.split())):  # the model read only the start
        source = f"{read} … (cut to the model's {len(trace.source_tokens)} pieces)"
    return f"Source: “{source}”"


def output_lines(trace: Trace) -> list[str]:
    """The caption's output line after each step 0..n_steps (what decoding had produced by then); none for a model
    that does not decode (encoder-only)."""
    if not any(kind.follows_decoding for kind in trace.kinds):
        return [""]
    if not trace.source_tokens and trace.decoder_input_tokens:  # a decoder-only model: its prompt, then its text
        prompt = trace.decoder_input_tokens[:1]
        return [f"Text: “{pieces_text(prompt + trace.target_tokens[:step])}”" for step in range(trace.n_steps + 1)]
    steps = range(1, trace.n_steps + 1)
    return ["Output: nothing yet (step 0)"] + [f"Output: “{pieces_text(trace.target_tokens[:step])}”" for step in steps]


def value_lines(trace: Trace) -> list[str]:
    """What the colours are, after each step 0..n_steps: attention weights, or a measure's shares with the source
    share of the step's prediction (as the window's caption gives it)."""
    if not trace.measure:
        return ["Colours: attention weights, 0 to 1 (each query's row sums to 1)"] * (trace.n_steps + 1)
    return [measure_caption(trace.at_step(step)) for step in range(trace.n_steps + 1)]


def detail_lines(trace: Trace, shown: Trace, options: FigureOptions) -> list[str]:
    """The caption's lines that do not change with the step: the model, knocked-out heads, the level."""
    where = [f"model {options.model_name}"] if options.model_name else []
    if trace.masked_heads:
        where.append(f"heads knocked out: {', '.join(trace.masked_heads)}")
    if shown.level == "word":
        where.append("word level: keys summed over a word's pieces, queries averaged; the slider steps through pieces")
    elif any(label.startswith("·") for kind in shown.kinds for label in display_labels(list(shown.axis_labels(kind)[1]))):
        where.append("·x: a piece continuing the word before it")
    return [" · ".join(where)] if where else []


def page_data(trace: Trace, view: ExploreView, options: FigureOptions) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-able data: ``trace`` whole (every step), at word level when
    ``view`` asks for it, with ``view``'s kind, layer, head and step as the initial choice."""
    if not trace.kinds:
        raise SelectionError("this trace holds no attention to show")
    shown = trace.word_level() if view.word_level else trace
    kind = AttentionKind.parse(view.kind)
    step = trace.n_steps if view.step is None else view.step
    if not 0 <= step <= trace.n_steps:
        raise SelectionError(f"step must be between 0 and {trace.n_steps}, not {step}")
    step_tokens = display_labels(trace.target_tokens)
    return {
        "model": options.model_name,
        "source": source_line(trace),
        "outputs": output_lines(trace),
        "values": value_lines(trace),
        "details": detail_lines(trace, shown, options),
        "value_label": trace.value_label,
        "level": shown.level,
        "n_steps": trace.n_steps,
        "step_tokens": step_tokens,
        "highlight": HIGHLIGHT,
        "colormap": {"name": options.colormap, "stops": colour_stops(options)},
        "initial": {"kind": kind.value, "layer": view.layer, "head": view.head, "step": step},
        "kinds": [kind_data(shown, trace, each) for each in shown.kinds],
    }


def page_html(trace: Trace, view: ExploreView, options: FigureOptions) -> str:
    """The whole page as text: data, script and style inline, nothing fetched."""
    data = page_data(trace, view, options)
    title = "Attention: " + (trace.source_text or pieces_text(trace.source_tokens) or pieces_text(trace.decoder_input_tokens))
    if options.model_name:
        title += f" ({options.model_name})"
    step = data["initial"]["step"]
    caption = [data["source"], data["outputs"][min(step, len(data["outputs"]) - 1)], data["values"][step], *data["details"]]
    script = (HERE / "html_page.js").read_text(encoding="utf-8")
    style = (HERE / "html_page.css").read_text(encoding="utf-8")
    return TEMPLATE.format(
        title=html.escape(title),
        caption="".join(f"<p>{html.escape(line)}</p>" for line in caption if line),
        style=style,
        data=script_json(data),
        script=script.replace("</", "<\\/"),  # never ends its element early
    )


def save_page(
    trace: Trace, view: ExploreView, options: FigureOptions, path: str | Path, inputs: tuple = (), record: Record | None = None
) -> Path:
    """The page of ``trace`` written atomically to ``path`` (which must end in .html), ``record`` (what drew it) in
    its head; an earlier file stays as it was when anything fails."""
    path = check_output(path, inputs)
    text = page_with_record(page_html(trace, view, options), record)
    with atomic_output(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Transformer Explorer">
<title>{title}</title>
<style>
{style}</style>
</head>
<body>
<header>
<h1 id="page-title">{title}</h1>
<div id="caption">{caption}</div>
</header>
<noscript><p class="note">This page draws its views with JavaScript: allow scripts to see them.</p></noscript>
<p id="error" class="note" hidden></p>
<nav id="controls">
<label>Kind <select id="kind"></select></label>
<label>Layer <select id="layer"></select></label>
<label>Head <select id="head"></select></label>
<label id="step-control">Step <input type="range" id="step" min="0" value="0"> <output id="step-label"></output></label>
</nav>
<main>
<section id="focus-panel">
<h2 id="focus-title"></h2>
<div class="focus-body">
<div class="axis-name query-axis" id="query-axis"></div>
<div class="focus-table">
<div class="axis-name" id="key-axis"></div>
<table id="focus"></table>
<p id="empty" class="note" hidden></p>
</div>
<div id="colour-bar"><div class="bar"></div><div class="ticks"></div><div class="axis-name bar-name"></div></div>
</div>
<p id="readout">Hover a cell: its query, key and value.</p>
</section>
<section id="grid-panel">
<h2 id="grid-title"></h2>
<p class="note">Click a map to show it in the focus view.</p>
<div id="grid"></div>
</section>
</main>
<div id="tooltip" role="tooltip" hidden></div>
<footer>Made by Transformer Explorer: a self-contained page (no network). The address keeps the view:
<code>#kind=cross&amp;layer=2&amp;head=mean&amp;step=3</code> (layers and heads from 1).</footer>
<script type="application/json" id="trace-data">{data}</script>
<script>
{script}</script>
</body>
</html>
"""
