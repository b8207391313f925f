"""``capabilities [--model M] [--markdown]``: which tool serves which model, and why not: the registry's own answer.

Every cell is what the tool's own check says when it is asked of a network (model/capabilities.py: the same call the
tool makes before it computes), so the table claims nothing the code does not keep. The network is the model given
(``--model``), or else one small network of each family built here: the app's own families from their options'
defaults, and each Hugging Face layout from a tiny folder of random weights (model/pretrained/tiny.py, built in a
temporary folder; nothing is downloaded). A cell is "Y", or a footnote number whose line below the table is the one
line the tool gives for that model.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from collections.abc import Iterator

from model.capabilities import CHECKS, Row, row_of
from model.family import Family, families, family_of
from model.io.models import open_model
from model.network import Network

SAMPLE_VOCABULARY = 24  # pieces of each side of a sample network of the app's own families
SAMPLE_LABELS = ("tagging", ["A", "B"])  # a labelling family's sample task


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
