"""The records of what the commands draw (model/provenance/): each file's command, in one canonical form, with the
model's and tokenizers' digests and the view's options.

A command's arguments are written back by ``command_of`` (each option given that differs from its default, in the
parser's order, ``--out`` left out). Where the window or a notebook writes the same kind of file, one builder serves
both, so the same view carries the same record: ``export_record`` (a view of a decoding), ``lens_record``,
``patch_record``, ``circuit_command``/``circuit_record``, ``neuron_record``, ``positional_record``,
``lengths_record`` and ``timeline_record``. A window's caption names the snapshot shown: ``--model-name`` carries it
(``figure_flags``), and a multilingual model's languages are written out (``language_flags``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from model.circuits.result import CircuitResult, Options
from model.family import Bundle
from model.figures.attention import FigureOptions
from model.figures.export import ExportRequest
from model.figures.layout import DEFAULT_WIDTH
from model.grading.methods import CARD_IG_POINTS
from model.inspection.positional import PositionalReport
from model.interventions.patching import PatchingResult
from model.lengths.experiment import LengthSettings
from model.provenance.record import BEYOND, Record, record_of
from model.timeline.animation import FRAME_SECONDS, FRAME_WIDTH

LEFT_OUT = ("out", "help", "all")


def model_reference(bundle: Bundle) -> str:
    """How a record written in the window names the model the command should open: its file or folder; a model never
    saved, by its description (which the command cannot open: the record says so)."""
    return str(bundle.path) if getattr(bundle, "path", None) else bundle.describe()


def caption_name(args) -> str:
    """How a command's figure captions name its model: ``--model-name`` when given, else ``model_name`` of --model."""
    return getattr(args, "model_name", None) or model_name(args.model)


def model_name(name: str) -> str:
    """How captions name the model: a file's stem, a folder's name, or the id as given."""
    path = Path(name).expanduser()
    return path.stem if path.is_file() else path.name if path.is_dir() else name


# where the file goes is not what it shows


def command_of(parser: argparse.ArgumentParser, args: argparse.Namespace, name: str) -> list[str]:
    """``name`` and its arguments as ``args`` holds them: options that differ from their defaults, in order."""
    command = [name]
    for action in parser._actions:  # argparse's own list of what it parses
        if action.dest in LEFT_OUT or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if not action.option_strings:  # a positional argument
            command += [str(part) for part in (value if isinstance(value, list) else [value])]
            continue
        if value == action.default or value is None:
            continue
        flag = action.option_strings[-1]
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            command.append(flag)
        else:
            command += [flag, ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return command


def command_record(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    name: str,
    bundle: Bundle | None,
    view: dict[str, Any],
    text: str = "",
) -> Record:
    """The record of a file ``name`` draws with ``args`` from ``bundle``."""
    return record_of(command_of(parser, args, name), bundle, str(getattr(args, "model", "")), view, text)


def command_parser(name: str, add_arguments: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """A parser of command ``name`` alone (what ``command_of`` reads its options and defaults from)."""
    parser = argparse.ArgumentParser(prog=f"transformer-explorer {name}")
    add_arguments(parser)
    return parser


def record_for(name: str, add_arguments: Callable[[argparse.ArgumentParser], None], args: argparse.Namespace,
               bundle: Bundle | None, view: dict[str, Any] | None = None, text: str = "") -> Record:  # fmt: skip
    """The record of what command ``name`` (its arguments added by ``add_arguments``) writes with ``args``."""
    return command_record(command_parser(name, add_arguments), args, name, bundle, dict(view or {}), text)


def language_flags(bundle: Bundle) -> list[str]:
    """A multilingual model's languages as the commands take them (``--source-lang``, ``--target-lang``); none for
    another model."""
    if not bundle.languages:
        return []
    pairs = (("--source-lang", bundle.source_language), ("--target-lang", bundle.target_language))
    return [part for flag, code in pairs if code for part in (flag, code)]


def export_command(
    request: ExportRequest, model: str, text: str, beam: int | None = None, mask_heads: str = "", languages: list[str] | None = None
) -> list[str]:
    """The ``export`` command that draws ``request``'s view of ``text`` decoded by ``model`` (greedy, or a beam of
    ``beam``; ``mask_heads`` knocked out, as ``--mask-heads`` spells them): each option that differs from the
    command's default, in one order. The command line and the window's Export menu both record it, so the same view
    carries the same record."""
    figure = request.figure
    head = request.head + 1 if isinstance(request.head, int) else request.head
    options: list[tuple[str, object, object]] = [  # (flag, value, the command's default)
        ("--view", request.view, "focus"), ("--kind", str(request.kind), "cross"), ("--layer", request.layer + 1, 1),
        ("--head", head, "mean"), ("--heads", ",".join(str(h + 1) for h in request.heads or []), ""),
        ("--step", request.step, None), ("--beam", beam, None), ("--mask-heads", mask_heads, ""),
        ("--width", f"{figure.width:g}in", f"{DEFAULT_WIDTH:g}in"),
        ("--height", f"{figure.height:g}in" if figure.height else None, None),
        ("--font-size", f"{figure.font_size:g}", "8"), ("--colormap", figure.colormap, "viridis"),
        ("--dpi", f"{request.dpi:g}", "300"),
        ("--model-name", figure.model_name, model_name(model) if figure.model_name else figure.model_name),
    ]  # fmt: skip
    command = ["export", "--model", model, *(languages or []), "--text", text]
    command += [part for flag, value, default in options if value != default for part in (flag, str(value))]
    flags = (("--word-level", request.word_level), ("--no-caption", not figure.caption), ("--outline-step", figure.outline_step))
    return command + [flag for flag, on in flags if on]


def export_view_record(request: ExportRequest, beam: int | None, mask_heads: str) -> dict[str, Any]:
    """What shaped an export's view, for its record: the view, its selection and step, the figure's settings."""
    figure = request.figure
    head = request.head + 1 if isinstance(request.head, int) else str(request.head)  # as the command counts, from 1
    return {
        "view": request.view, "kind": str(request.kind), "layer": request.layer + 1, "head": head,
        "step": request.step, "word level": request.word_level, "colour map": figure.colormap, "width in": figure.width,
        "height in": figure.height, "font pt": figure.font_size, "caption": figure.caption, "dpi": float(request.dpi),
        "decoding": f"beam {beam}" if beam else "greedy", "heads knocked out": mask_heads or "none",
    }  # fmt: skip


def export_record(request: ExportRequest, bundle: Bundle, model: str, text: str, beam: int | None = None,
                  mask_heads: str = "", snapshot: str = "") -> Record:  # fmt: skip
    """The record of an ``export`` of ``request``'s view (the command line's and the window's)."""
    command = export_command(request, model, text, beam, mask_heads, language_flags(bundle))
    return record_of(command, bundle, model, export_view_record(request, beam, mask_heads), text, snapshot=snapshot)


def export_records(base: Record, model: str, text: str, beam: int | None, mask_heads: str,
                   languages: list[str]) -> Callable[[ExportRequest], Record]:  # fmt: skip
    """Export all's records, one per file's view, from the record of its first (``base``: its digests computed once)."""

    def record(request: ExportRequest) -> Record:
        view = export_view_record(request, beam, mask_heads)
        beyond = base.view.get(BEYOND)
        command = export_command(request, model, text, beam, mask_heads, languages)
        return replace(base, command=command, view=view | ({BEYOND: beyond} if beyond else {}))

    return record


def circuit_command(
    model: str, clean: str, corrupted: str, step: int | None, options: Options, languages: list[str] | None = None
) -> list[str]:
    """The ``circuit`` command of a pair typed (``step`` from 0; None: the first difference) with ``options``, each
    option that differs from the command's default, in its order: what the command line records, and the window."""
    defaults = Options()
    command = ["circuit", "--model", model, *(languages or []), "--clean", clean, "--corrupt", corrupted]
    chosen = [("--step", None if step is None else step + 1, None), ("--method", options.method, defaults.method),
              ("--over", options.over, defaults.over), ("--ig-steps", options.steps, defaults.steps),
              ("--metric", options.metric, defaults.metric), ("--target", options.target, defaults.target)]  # fmt: skip
    command += [part for flag, value, default in chosen if value != default for part in (flag, str(value))]
    command += ["--no-positions"] if not options.split_positions else []
    return command + ({True: ["--exact"], False: ["--no-exact"], None: []}[options.exact])


def circuit_record(result: CircuitResult, bundle: Bundle, model: str, command: list[str], clean: str, corrupted: str) -> Record:
    """The record of a circuit's file: ``command`` (the ``circuit`` command of its pair), the pair, the options."""
    options = result.options
    view = {"view": "circuit", "step": result.step + 1, "method": result.method_name(), "metric": options.metric,
            "target": options.target, "keys/values per source position": options.split_positions,
            "corrupted sentence": corrupted, "circuit edges": result.circuit.size}  # fmt: skip
    return record_of(command, bundle, model, view, clean)


def figure_flags(options: FigureOptions, dpi: float, model: str = "") -> list[str]:
    """The figure options of ``add_figure_arguments`` (model/cli/export.py) that differ from their defaults (the
    caption's name of the model, when it is not ``model_name`` of ``model``: a window names the snapshot shown)."""
    chosen = [("--width", f"{options.width:g}in", f"{DEFAULT_WIDTH:g}in"), ("--font-size", f"{options.font_size:g}", "8"),
              ("--colormap", options.colormap, "viridis"), ("--dpi", f"{dpi:g}", "300")]  # fmt: skip
    flags = [part for flag, value, default in chosen if value != default for part in (flag, value)]
    if options.model_name and model and options.model_name != model_name(model):
        flags += ["--model-name", options.model_name]
    return flags + ([] if options.caption else ["--no-caption"])


def _changed(options: list[tuple[str, object, object]]) -> list[str]:
    return [part for flag, value, default in options if value != default for part in (flag, str(value))]


def lens_record(bundle: Bundle, model: str, text: str, tool: str = "logit-lens", step: int = 1, top_k: int = 5,
                versus: str | None = None, figure: FigureOptions | None = None, dpi: float = 300) -> Record:  # fmt: skip
    """The record of a ``lens`` file (``tool``: logit-lens, attribution, decoder-lens; ``step`` from 1): the command
    line's and the Interventions view's Save…, from one builder."""
    command = ["lens", "--model", model, *language_flags(bundle), "--text", text]
    command += _changed([("--tool", tool, "logit-lens"), ("--step", step, 1), ("--top-k", top_k, 5), ("--versus", versus, None)])
    command += figure_flags(figure or FigureOptions(), dpi, model)
    view = {"view": tool, "step": step, "top k": top_k, "versus": versus or "the chosen token"}
    return record_of(command, bundle, model, view, text)


def patch_record(bundle: Bundle, model: str, result: PatchingResult, clean: str, corrupted: str, step: int | None = None,
                 grids: str | None = None, figure: FigureOptions | None = None, dpi: float = 300) -> Record:  # fmt: skip
    """The record of a ``patch`` file of ``result`` (``step`` as asked, from 1; None: the first difference; ``grids``
    drawn): the command line's and the Interventions view's Save…, from one builder."""
    command = ["patch", "--model", model, *language_flags(bundle), "--clean", clean, "--corrupt", corrupted]
    command += _changed([("--step", step, None), ("--direction", result.direction, "denoising"),
                         ("--method", result.method, "exact"), ("--grids", grids, None)])  # fmt: skip
    command += figure_flags(figure or FigureOptions(), dpi, model)
    view = {"view": "patching", "method": result.method, "direction": result.direction, "step": result.step + 1,
            "corrupted sentence": corrupted, "grids": grids or "default"}  # fmt: skip
    return record_of(command, bundle, model, view, clean)


def neuron_record(bundle: Bundle, model: str, text: str, kind: str, layer: int, head: int, query: int,
                  target: str | None = None, figure: FigureOptions | None = None, dpi: float = 300) -> Record:  # fmt: skip
    """The record of a ``neuron`` file: one head's query row (``layer``, ``head``, ``query`` from 1; ``target`` given
    to the decoder, None: its greedy translation), the command line's and the neuron view's, from one builder; the
    kind and query always written out, as the view shows them."""
    command = ["neuron", "--model", model, *language_flags(bundle), "--text", text]
    command += _changed([("--target", target, None)]) + ["--kind", kind]
    command += _changed([("--layer", layer, 1), ("--head", head, 1)]) + ["--query", str(query)]
    command += figure_flags(figure or FigureOptions(), dpi, model)
    view = {"view": "neuron", "kind": kind, "layer": layer, "head": head, "query": query}
    return record_of(command, bundle, model, view, text)


def default_dimensions(report: PositionalReport) -> list[int]:
    """The dimensions the positional view draws by default: six of the table's (a relative bias: every head)."""
    d_model = report.table.shape[1]
    return list(range(d_model)) if report.relative else [d for d in (0, 1, 8, 9, 32, 33) if d < d_model]


def positional_record(bundle: Bundle, model: str, report: PositionalReport, positions: int, dimensions: list[int],
                      figure: FigureOptions | None = None, dpi: float = 300) -> Record:  # fmt: skip
    """The record of ``export --view positional`` (the command line's and the Positional tab's, from one builder)."""
    chosen = ",".join(map(str, dimensions))
    command = ["export", "--model", model, *language_flags(bundle), "--view", "positional"]
    command += _changed([("--positions", positions, 64), ("--dimensions", chosen, ",".join(map(str, default_dimensions(report))))])
    command += figure_flags(figure or FigureOptions(), dpi, model)
    return record_of(command, bundle, model, {"view": "positional", "positions": positions, "dimensions": chosen})


def lengths_record(settings: LengthSettings, dpi: float = 300) -> Record:
    """The record of a ``lengths`` file of ``settings`` (the command line's and the Lengths page's, from one builder):
    the experiment trains its own models, so it names none."""
    defaults = LengthSettings()
    schemes = "all" if settings.schemes == defaults.schemes else ",".join(settings.schemes)
    command = ["lengths"] + _changed([
        ("--corpus", settings.corpus, defaults.corpus), ("--train-max", settings.train_max, defaults.train_max),
        ("--train-min", settings.train_min, defaults.train_min), ("--test-max", settings.test_max, defaults.test_max),
        ("--positions", schemes, "all"), ("--steps", settings.steps, defaults.steps),
        ("--train-pairs", settings.train_pairs, defaults.train_pairs), ("--per-length", settings.per_length, defaults.per_length),
        ("--seed", settings.seed, defaults.seed), ("--max-len", settings.max_len, defaults.max_len),
    ])  # fmt: skip
    command += (["--randomised-positions"] if settings.randomised else []) + _changed([("--dpi", f"{dpi:g}", "300")])
    view = {"view": "lengths", "schemes": ", ".join(settings.schemes), "corpus": settings.corpus}
    return record_of(command, None, "", view)


TIMELINE_DPI = {"gif": 100.0, "strip": 300.0, "diff": 300.0, "curves": 200.0}  # the command's default per output


def timeline_record(bundle: Bundle, model: str, text: str, what: str, kind: str, layer: int | None = None,
                    head: int | str | None = None, snapshots: str | None = None, diff: tuple[int, int] | None = None,
                    curves_figure: bool = False, figure: FigureOptions | None = None, dpi: float | None = None,
                    frame_seconds: float = FRAME_SECONDS) -> Record:  # fmt: skip
    """The record of a ``timeline`` file (``what``: gif, strip, diff or curves; ``layer`` from 0, ``head`` from 0 or an
    aggregate): the command line's and the Over training exports', from one builder; the kind always written out."""
    command = ["timeline", "--model", model, "--text", text, "--view", kind]
    if layer is not None:
        command += ["--layer", str(layer + 1)]
        command += [] if head is None else ["--head", str(head + 1) if isinstance(head, int) else head]
    command += _changed([("--snapshots", snapshots, None)]) + (["--diff", str(diff[0]), str(diff[1])] if diff else [])
    command += ["--curves"] if curves_figure else []
    options = figure or FigureOptions()
    width = FRAME_WIDTH if what == "gif" else DEFAULT_WIDTH
    usual = TIMELINE_DPI[what]
    command += _changed([("--width", f"{options.width:g}in", f"{width:g}in"), ("--font-size", f"{options.font_size:g}", "8"),
                         ("--colormap", options.colormap, "viridis"), ("--dpi", f"{dpi or usual:g}", f"{usual:g}"),
                         ("--frame-seconds", f"{frame_seconds:g}", f"{FRAME_SECONDS:g}")])  # fmt: skip
    view = {"view": what, "kind": kind, "layer": None if layer is None else layer + 1, "snapshots": snapshots or "all"}
    return record_of(command, bundle, model, view, text)


@dataclass(frozen=True)
class CardRequest:
    """What a report card grades and how (the ``report-card`` command's options; the window's Grade sets some)."""

    corpus: str | None = None
    n: int = 100
    methods: tuple[str, ...] = ()  # none named: every method
    sanity_pairs: int = 10
    shuffled_model: str | None = None
    train_shuffled: int | None = None
    ig_points: int = CARD_IG_POINTS
    lime_samples: int = 64
    shap_samples: int = 64
    seed: int = 0
    target: str | None = None  # a Moses pair's target file
    skip_malformed: bool = False


def report_card_record(bundle: Bundle, model: str, card: CardRequest, dpi: float = 300) -> Record:
    """The record of a ``report-card`` file (the command line's and the Report card tab's, from one builder)."""
    usual = CardRequest()
    command = ["report-card", "--model", model] + _changed([
        ("--corpus", card.corpus, None), ("--target", card.target, None)])  # fmt: skip
    command += ["--skip-malformed"] if card.skip_malformed else []
    command += _changed([
        ("--n", card.n, usual.n), ("--methods", ",".join(card.methods), ""), ("--sanity-pairs", card.sanity_pairs, 10),
        ("--shuffled-model", card.shuffled_model, None), ("--train-shuffled", card.train_shuffled, None),
        ("--ig-points", card.ig_points, usual.ig_points), ("--lime-samples", card.lime_samples, 64),
        ("--shap-samples", card.shap_samples, 64), ("--seed", card.seed, 0), ("--dpi", f"{dpi:g}", "300"),
    ])  # fmt: skip
    view = {"view": "report card", "methods": ", ".join(card.methods) or "every one", "sentences": card.n, "seed": card.seed}
    return record_of(command, bundle, model, view)
