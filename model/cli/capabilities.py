"""``capabilities [--model M] [--markdown]``: which tool serves which model, and why not: the registry's own answer.

Every cell is what the tool's own check says when it is asked of a network, the same call the tool makes before it
computes (the stepper's ``beam_unavailable``, ``check_heads``, ``check_importance``, the measures' ``unsupported``,
``check_gradable_family``, the neuron view's ``check_model``, the hooked pass's ``check_tool``, the corpus index's
``check_network``): so the table claims nothing the code does not keep. The network is the model given (``--model``),
or else one small network of each family built here: the app's own families from their options' defaults, and each
Hugging Face layout from a tiny folder of random weights (model/pretrained/tiny.py, built in a temporary folder;
nothing is downloaded). A cell is "Y", or a footnote number whose line below the table is the one line the tool gives
for that model.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from model.attribution.importance import check_importance
from model.attribution.measures import unsupported
from model.corpus.extract import check_network
from model.decoding.stepper import beam_unavailable
from model.errors import UserError
from model.family import INTERVENTION_TOOLS, Family, InterventionTool, capabilities_of, families, family_of
from model.grading.cases import check_gradable_family
from model.interventions.hooked import check_tool
from model.io.models import open_model
from model.network import Network
from model.neuron.vectors import check_model as check_neuron_model
from model.nn.masking import Head, check_heads

SAMPLE_VOCABULARY = 24  # pieces of each side of a sample network of the app's own families
SAMPLE_LABELS = ("tagging", ["A", "B"])  # a labelling family's sample task


def _beam(model: Network) -> None:
    why = beam_unavailable(capabilities_of(model))  # the stepper's own check
    if why:
        raise UserError(why)


def _knock_out(model: Network) -> None:
    check_heads(model, (Head(capabilities_of(model).kinds[0], 0, 0),))


def _measures(model: Network) -> None:
    why = unsupported(model, "alti")  # what every measure beyond attention needs (the ``attribute`` command's check)
    if why:
        raise UserError(why)


def _intervention(tool: InterventionTool) -> Callable[[Network], object]:
    return lambda model: check_tool(model, tool)


CHECKS: dict[str, Callable[[Network], object]] = {  # each tool's own check, by the name the table shows
    "attention views": lambda model: None,  # every family has a kind of attention
    "beam search": _beam,
    "head knock-out": _knock_out,
    "head importance": check_importance,
    "contribution measures": _measures,
    "report card": lambda model: check_gradable_family(family_of(model)),
    "neuron view": check_neuron_model,
    **{str(tool): _intervention(tool) for tool in INTERVENTION_TOOLS},
    "corpus index": check_network,
}


@dataclass(frozen=True)
class Row:
    """One model's answers: its name in the table, and per tool '' (served) or the tool's one line."""

    name: str
    reasons: dict[str, str]


def row_of(name: str, model: Network) -> Row:
    """What each tool's check says of ``model``."""
    reasons = {}
    for tool, check in CHECKS.items():
        try:
            check(model)
            reasons[tool] = ""
        except UserError as error:
            reasons[tool] = str(error)
    return Row(name, reasons)


def _own_sample(family: Family) -> Network:
    """A network of one of the app's own families, from its options' defaults."""
    labels = SAMPLE_LABELS if family.capabilities.labels else None
    config = family.build_config({}, SAMPLE_VOCABULARY, SAMPLE_VOCABULARY, labels=(labels[0], list(labels[1])) if labels else None)
    return family.network_class(config)


def _pretrained_samples(folder: str) -> Iterator[tuple[str, Network]]:
    """(layout, network) of each Hugging Face layout the tiny builder knows, built in ``folder``."""
    # deferred: the hf extra's builder, only when the table is asked for without a model
    from model.pretrained.tiny import LAYOUTS, build

    for layout in LAYOUTS:
        yield layout, open_model(str(build(layout, f"{folder}/{layout}"))).model


def sample_rows() -> list[Row]:
    """A row per family of the app's own, then per Hugging Face layout (with the hf extra installed)."""
    rows = [row_of(family.title, _own_sample(family)) for family in families() if family.capabilities.trainable]
    try:
        # deferred: the hf extra is optional; without it the table lists the app's own families only
        import transformers  # noqa: F401
    except ImportError:
        return rows
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the library's advice on tokenizers and generation configs of the tiny models
        rows += [row_of(f"{family_of(model).title}: {layout}", model) for layout, model in _pretrained_samples(folder)]
    return rows


def table(rows: list[Row], markdown: bool = False) -> str:
    """The rows as a table (plain text or Markdown) of Y or a footnote number, then the footnotes."""
    notes: dict[str, int] = {}
    cells = [[row.name] + [_cell(row.reasons[tool], notes) for tool in CHECKS] for row in rows]
    header = ["model", *CHECKS]
    lines = _markdown(header, cells) if markdown else _plain(header, cells)
    lines += ["", *(f"{number}. {reason}" for reason, number in notes.items())]
    return "\n".join(lines)


def _cell(reason: str, notes: dict[str, int]) -> str:
    if not reason:
        return "Y"
    return str(notes.setdefault(reason, len(notes) + 1))


def _markdown(header: list[str], cells: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(" --- " for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in cells),
    ]


def _plain(header: list[str], cells: list[list[str]]) -> list[str]:
    widths = [max(len(row[index]) for row in [header, *cells]) for index in range(len(header))]
    return ["  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in [header, *cells]]


def add_capabilities_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="one model (a file, a shipped name, a Hugging Face folder): its row only")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")


def run_capabilities(args: argparse.Namespace) -> int:
    if args.model:
        bundle = open_model(args.model)
        rows = [row_of(bundle.describe() if bundle.path is None else str(args.model), bundle.model)]
    else:
        rows = sample_rows()
    print(table(rows, args.markdown))
    return 0
