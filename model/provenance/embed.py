"""Where a file keeps its record (model/provenance/record.py), and reading it back, each format by its own standard:

* PNG: a text chunk ``TransformerExplorer`` (matplotlib's metadata, read with Pillow);
* SVG: the Dublin Core description of its ``<metadata>`` (matplotlib's SVG metadata, read as XML);
* PDF: the document information's ``Subject`` (matplotlib's PDF metadata, read with pypdf);
* HTML: a ``<script type="application/json" id="transformer-explorer-record">`` in the page's head;
* CSV, NPY, NPZ (side data): a sidecar ``FILE.record.json`` beside the file, written atomically.

A file without a record, with a damaged one or one of a newer format is a RecordError of one line; nothing is written
over the file that is read.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from PIL import Image
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from model.files import atomic_output
from model.provenance.record import Record, RecordError, parse_record

PNG_KEY = "TransformerExplorer"
PDF_KEY = "Subject"
SVG_KEY = "Description"  # Dublin Core: matplotlib writes it as <dc:description>
HTML_ID = "transformer-explorer-record"
SIDECAR = ".record.json"
EMBEDDED = (".png", ".svg", ".pdf", ".html")
DC = "{http://purl.org/dc/elements/1.1/}"


def figure_metadata(suffix: str, record: Record | None) -> dict[str, str]:
    """The matplotlib ``metadata`` entry that holds ``record`` in a figure of ``suffix`` (none without a record)."""
    if record is None:
        return {}
    key = {".png": PNG_KEY, ".svg": SVG_KEY, ".pdf": PDF_KEY}[suffix]
    return {key: record.to_json()}


def page_with_record(page: str, record: Record | None) -> str:
    """An HTML page with ``record`` in its head (the page as it is without one)."""
    if record is None:
        return page
    data = record.to_json().replace("</", "<\\/")  # a JSON string cannot end the script early
    tag = f'<script type="application/json" id="{HTML_ID}">{data}</script>\n'
    return page.replace("</head>", tag + "</head>", 1) if "</head>" in page else tag + page


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + SIDECAR)


def write_sidecar(path: str | Path, record: Record | None) -> Path | None:
    """``record`` beside the data file ``path`` (none without a record, or beside no file)."""
    if record is None or not Path(path).is_file():
        return None
    side = sidecar_path(path)
    with atomic_output(side) as temporary:
        temporary.write_text(record.to_json() + "\n", encoding="utf-8")
    return side


def read_record(path: str | Path) -> Record:
    """The record ``path`` carries; a RecordError of one line when it has none or it cannot be read."""
    path = Path(path)
    where = path.name
    if not path.is_file():
        raise RecordError(f"{where}: no such file")
    suffix = path.suffix.lower()
    text = _embedded(path, suffix) if suffix in EMBEDDED else _sidecar(path)
    if text is None:
        raise RecordError(f"{where}: it carries no record (not written by Transformer Explorer, or before records existed)")
    return parse_record(text, where)


def _sidecar(path: Path) -> str | None:
    side = sidecar_path(path)
    return side.read_text(encoding="utf-8") if side.is_file() else None


def _embedded(path: Path, suffix: str) -> str | None:
    try:
        if suffix == ".png":
            return _png(path)
        if suffix == ".svg":
            return _svg(path)
        if suffix == ".pdf":
            return _pdf(path)
        return _html(path)
    except (OSError, ValueError, ElementTree.ParseError) as error:
        raise RecordError(f"{path.name}: it cannot be read as {suffix[1:].upper()} ({type(error).__name__})") from None


def _png(path: Path) -> str | None:
    with Image.open(path) as image:
        return getattr(image, "text", {}).get(PNG_KEY)


def _svg(path: Path) -> str | None:
    root = ElementTree.parse(path).getroot()
    for element in root.iter(f"{DC}description"):
        if element.text and element.text.lstrip().startswith("{"):
            return element.text
    return None


def _pdf(path: Path) -> str | None:
    try:
        info = PdfReader(path).metadata
    except PdfReadError as error:
        raise ValueError(str(error)) from None
    value = info.get(f"/{PDF_KEY}") if info is not None else None
    return str(value) if value is not None and str(value).lstrip().startswith("{") else None


def _html(path: Path) -> str | None:
    page = path.read_text(encoding="utf-8", errors="replace")
    found = re.search(rf'<script type="application/json" id="{HTML_ID}">(.*?)</script>', page, re.S)
    return found.group(1).replace("<\\/", "</") if found else None
