"""The figure of a circuit (model/circuits/): its node-link diagram beside its faithfulness curve, with a caption
that says the pair, the metric, the scores' method, the norm treatment and the circuit's faithfulness.

The diagram (model/circuits/layout.py): layers as rows, the encoder on the left and the decoder on the right, the
circuit's edges as lines whose width grows with |score| and whose colour says the sign (blue: the edge carries what
makes the clean prediction, its patch lowers the metric; red: the other way); every node of the graph is drawn, the
circuit's filled. The curve: the share of the clean–corrupted difference kept against the number of edges (log scale),
the target dashed and the circuit marked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from model.circuits.export import DATA_SUFFIXES, write_circuit_data
from model.circuits.layout import circuit_lines, line_paths, line_widths, node_positions
from model.circuits.result import CircuitResult
from model.data.token_labels import pieces_text
from model.figures.attention import MARGIN, FigureOptions, new_figure, place_axes
from model.figures.layout import LINE, MIN_FONT_SIZE, Caption, draw_caption, text_width
from model.figures.saving import FigureError, save_figure
from model.provenance.embed import write_sidecar
from model.provenance.record import Record

CARRIES, AGAINST = "#2166ac", "#b2182b"  # a negative score (the edge carries the clean prediction), a positive one
NODE_COLOURS = {"encoder": "#4d9221", "decoder": "#762a83"}
# What the diagram's marks mean (the figure's note, the window's line over its diagram).
LEGEND = (
    "Lines: blue carries the clean prediction, red works against it, wider by |score|; dashed: into a cross-attention "
    "head's queries. Nodes: circles are heads (a decoder layer's cross-attention heads a third of a row above its "
    "self-attention heads), squares the embeddings, feed-forward blocks and logits; filled: in the circuit. Curve: "
    "dashed, the target share; the large dot, the circuit chosen."
)


def circuit_caption(result: CircuitResult, options: FigureOptions) -> Caption:
    labels = result.labels
    clean, compared = labels.compared()
    circuit = result.circuit
    edges = len(result.graph.edges)
    details = [
        f"Clean: “{pieces_text(labels.clean)}”  Corrupted: “{pieces_text(labels.corrupted)}”",
        f"Metric: {result.options.metric} “{clean}” vs “{compared}” at step {result.step + 1} (clean "
        f"{result.setup.clean_metric:.2f}, corrupted {result.setup.corrupted_metric:.2f}); scores: {result.method_name()}",
        f"Norms: {result.setup.norm_treatment}",
    ]
    read = result.source_reads()
    if read:
        details.append("Cross-attention reads the source at " + ", ".join(f"“{piece}” ({count} edges)" for piece, count in read))
    agreement = result.agreement()
    if agreement is not None:
        details.append(f"Scores against exact edge patching: Spearman ρ {agreement[0]:.2f} (signed), {agreement[1]:.2f} (|score|)")
    if options.model_name:
        details.append(f"model {options.model_name}")
    title = (
        f"Circuit of “{clean}” over “{compared}” at step {result.step + 1}: {circuit.size} of {edges} edges keep "
        f"{circuit.faithfulness:.0%} of the difference"
    )
    notes = [LEGEND]
    if circuit.disagrees:
        notes.append("The scores and the evaluation disagree: read the curve.")
    return Caption(title, details, notes)


def circuit_figure(result: CircuitResult, options: FigureOptions | None = None) -> Figure:
    """The diagram (left, two thirds of the width) and the curve (right)."""
    options = options or FigureOptions()
    size, width = options.font_size, options.width * 72.0
    small = max(MIN_FONT_SIZE, size * 0.85)
    caption = circuit_caption(result, options)
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    rows = result.graph.parts.n_decoder_layers + 2
    diagram_height = max(140.0, rows * 42.0)
    height = MARGIN + caption_height + 6 + diagram_height + small * LINE * 3.2 + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    bottom = MARGIN + small * LINE * 3.2  # the curve's tick labels and its axis's name
    labels = text_width("embedding", small) + 6  # the rows' names
    diagram_width = (width - 2 * MARGIN) * 0.64 - labels
    draw_diagram(place_axes(figure, MARGIN + labels, bottom, diagram_width, diagram_height), result, small)
    left = MARGIN + labels + diagram_width + small * 4
    draw_curve(place_axes(figure, left, bottom, width - left - MARGIN, diagram_height), result, small)
    return figure


def draw_diagram(axes, result: CircuitResult, font_size: float) -> None:
    graph = result.graph
    positions = node_positions(graph)
    lines = circuit_lines(graph, result.scores, result.circuit.edges)
    for line, line_width, path in zip(lines, line_widths(lines), line_paths(lines, positions)):
        colour = CARRIES if line.score < 0 else AGAINST
        style = "--" if line.input == "q" else "-"
        axes.plot(path[:, 0], path[:, 1], style, color=colour, linewidth=line_width * 0.5, alpha=0.75, solid_capstyle="round")
    in_circuit = {node.name for node in result.nodes_in_circuit()}
    for name, node in graph.nodes.items():
        x, y = positions[name]
        colour = NODE_COLOURS[node.side] if node.kind != "logits" else "black"
        filled = name in in_circuit
        marker = "s" if node.kind in ("embed", "mlp", "logits") else "o"
        axes.scatter([x], [y], s=22 if filled else 10, marker=marker, facecolors=colour if filled else "white",
                     edgecolors=colour, linewidths=0.6, zorder=3)  # fmt: skip
        if filled:  # a head by its letter and number (its layer is the row's); the others by name
            text = node.label.split(" ")[-1] if node.head is not None else node.label.replace("source ", "source\n")
            text = text.replace("target ", "target\n")
            axes.annotate(text, (x, y), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                          fontsize=font_size * 0.75, zorder=4, linespacing=0.9)  # fmt: skip
    parts = graph.parts
    axes.text(0, -0.45, "encoder", fontsize=font_size, color=NODE_COLOURS["encoder"], ha="left", va="top")
    decoder_left = min(x for name, (x, _y) in positions.items() if name.startswith("decoder"))
    axes.text(decoder_left, -0.45, "decoder", fontsize=font_size, color=NODE_COLOURS["decoder"], ha="left", va="top")
    layers = max(parts.n_encoder_layers, parts.n_decoder_layers)
    axes.set_yticks([0, *(layer + 1 for layer in range(layers))])
    axes.set_yticklabels(["embedding", *(f"layer {layer + 1}" for layer in range(layers))])
    axes.tick_params(labelsize=font_size, length=0)
    axes.set_xticks([])
    for spine in axes.spines.values():
        spine.set_visible(False)
    xs = [x for x, _y in positions.values()]
    axes.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    axes.set_ylim(-0.7, parts.n_decoder_layers + 1.4)


def draw_curve(axes, result: CircuitResult, font_size: float) -> None:
    sizes = np.array([point.size for point in result.curve])
    kept = np.array([point.faithfulness for point in result.curve])
    axes.plot(np.maximum(sizes, 1), kept, "-o", color="black", markersize=2.5, linewidth=0.8)
    axes.axhline(result.options.target, color="grey", linestyle="--", linewidth=0.6)
    circuit = result.circuit
    axes.plot([max(circuit.size, 1)], [circuit.faithfulness], "o", color=CARRIES, markersize=5)
    axes.set_xscale("log")
    axes.set_xlabel("edges in the circuit", fontsize=font_size)
    axes.set_ylabel("share of the difference kept", fontsize=font_size)
    axes.tick_params(labelsize=font_size * 0.9)
    low = min(0.0, float(kept.min()) - 0.05) if kept.size else 0.0
    axes.set_ylim(low, max(1.05, float(kept.max()) + 0.05) if kept.size else 1.05)


SUFFIXES = (".png", ".svg", ".pdf", *DATA_SUFFIXES)


def save_circuit(
    result: CircuitResult, path: str | Path, options: FigureOptions | None = None, dpi: float = 300, record: Record | None = None
) -> Path:
    """``result`` to ``path`` by its suffix: its figure (.png, .svg, .pdf) or its data (.csv, .json, .graphml), written
    atomically, with ``record`` (what drew it: in the figure, beside the data); a FigureError of one line for another
    suffix. The command line and the window write through here."""
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise FigureError(f"a circuit is saved as {', '.join(SUFFIXES)}, not {suffix or 'no extension'}")
    if suffix in DATA_SUFFIXES:
        written = write_circuit_data(result, path)
        write_sidecar(written, record)
        return written
    return save_figure(circuit_figure(result, options), path, dpi, record)
