"""Whether a figure drawn again is the figure on file (``reproduce``, model/cli/reproduce.py): each format compared by
what a reader sees of it.

* SVG: the same elements in the same order, with the same attributes and text (the record, which names the app's
  version, left out of the comparison);
* PNG: the same size, the largest pixel difference, and the structural similarity (SSIM, scikit-image's);
* PDF: the same pages, sizes and text (pypdf);
* HTML, CSV, NPY and the rest: the same content, the record left out.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from pypdf import PdfReader
from skimage.metrics import structural_similarity

from model.provenance.embed import DC, HTML_ID

SSIM_TARGET = 0.995  # a PNG drawn again is the same figure at or above this


@dataclass(frozen=True)
class Comparison:
    same: bool
    says: str  # one line: what was compared and how it came out


def compare_files(original: Path, again: Path) -> Comparison:
    """``again`` (drawn from ``original``'s record) against ``original``, by their format."""
    suffix = original.suffix.lower()
    if suffix == ".svg":
        return _svg(original, again)
    if suffix == ".png":
        return _png(original, again)
    if suffix == ".pdf":
        return _pdf(original, again)
    if suffix == ".html":
        return _text(
            _without_page_record(original.read_text(encoding="utf-8")),
            _without_page_record(again.read_text(encoding="utf-8")),
            "page",
        )
    same = original.read_bytes() == again.read_bytes()
    return Comparison(same, f"the same {suffix[1:].upper()} content" if same else f"the {suffix[1:].upper()} content differs")


def _elements(path: Path) -> list[tuple[str, tuple[tuple[str, str], ...], str]]:
    """Every element of an SVG in document order: (tag, attributes, text), its record's description left out."""
    root = ElementTree.parse(path).getroot()
    return [
        (element.tag, tuple(sorted(element.attrib.items())), (element.text or "").strip())
        for element in root.iter()
        if element.tag != f"{DC}description"
    ]


def _svg(original: Path, again: Path) -> Comparison:
    first, second = _elements(original), _elements(again)
    if first == second:
        return Comparison(True, f"the same SVG structure and text ({len(first)} elements)")
    differing = next((index for index, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
    where = first[differing][0].split("}")[-1] if differing < len(first) else "the end"
    return Comparison(
        False, f"the SVG differs from element {differing + 1} ({where}); {len(first)} elements on file, {len(second)} drawn"
    )


def _png(original: Path, again: Path) -> Comparison:
    with Image.open(original) as one, Image.open(again) as two:
        first, second = np.asarray(one.convert("RGB")), np.asarray(two.convert("RGB"))  # [H, W, 3]
    if first.shape != second.shape:
        return Comparison(
            False, f"the PNG is {first.shape[1]}×{first.shape[0]} px on file and {second.shape[1]}×{second.shape[0]} drawn"
        )
    largest = int(np.abs(first.astype(np.int16) - second.astype(np.int16)).max())
    similarity = float(structural_similarity(first, second, channel_axis=-1, data_range=255))
    same = similarity >= SSIM_TARGET
    return Comparison(
        same, f"PNG: largest pixel difference {largest}, SSIM {similarity:.4f} ({'at least' if same else 'below'} {SSIM_TARGET})"
    )


def _pdf(original: Path, again: Path) -> Comparison:
    pages = [PdfReader(path).pages for path in (original, again)]
    shapes = [[(float(page.mediabox.width), float(page.mediabox.height)) for page in group] for group in pages]
    texts = [[page.extract_text() for page in group] for group in pages]
    same = shapes[0] == shapes[1] and texts[0] == texts[1]
    return Comparison(
        same, f"the same PDF pages, sizes and text ({len(shapes[0])} page)" if same else "the PDF's pages, sizes or text differ"
    )


def _without_page_record(page: str) -> str:
    return re.sub(rf'<script type="application/json" id="{HTML_ID}">.*?</script>\n?', "", page, flags=re.S)


def _text(first: str, second: str, what: str) -> Comparison:
    same = first == second
    return Comparison(same, f"the same {what}" if same else f"the {what} differs")
