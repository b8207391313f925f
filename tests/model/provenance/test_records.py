"""The record a figure or table carries of what drew it (model/provenance/, issue 44): it round-trips through every
format by that format's own reader (Pillow, XML, pypdf, the page's script, a sidecar) (the commands':
tests/cli/test_records_cli.py), and a file without one, a damaged one or
one of a newer format is one line that changes nothing."""

from __future__ import annotations

import json

import matplotlib
import pytest
from matplotlib.figure import Figure
from PIL import Image

from model.figures.saving import save_figure
from model.provenance.embed import page_with_record, read_record, sidecar_path, write_sidecar
from model.provenance.record import FORMAT, VERSION, Record, RecordError

matplotlib.use("Agg")
TEXT = "the cat — «é» </script> & co"


def _record() -> Record:
    return Record(["export", "--model", "default", "--text", TEXT], {"source": "default", "sha256": "ab" * 32},
                  {"sha256": "cd" * 32}, {"text": TEXT, "forced": []}, {"view": "focus", "layer": 3})  # fmt: skip


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_a_figure_keeps_its_record_in_its_own_metadata(tmp_path, suffix):
    record, path = _record(), tmp_path / f"figure{suffix}"
    save_figure(Figure(figsize=(2, 1)), path, 100, record)
    assert read_record(path).to_json() == record.to_json()
    assert not sidecar_path(path).exists()
    if suffix == ".png":  # a PNG text chunk any reader lists
        with Image.open(path) as image:
            assert json.loads(image.text["TransformerExplorer"])["format"] == FORMAT


def test_a_page_and_side_data_keep_their_record(tmp_path):
    record = _record()
    page = tmp_path / "page.html"
    page.write_text(page_with_record("<html><head><title>t</title></head><body></body></html>", record), encoding="utf-8")
    assert read_record(page).to_json() == record.to_json()
    table = tmp_path / "table.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    write_sidecar(table, record)
    assert read_record(table).to_json() == record.to_json() and table.read_text(encoding="utf-8") == "a,b\n1,2\n"


def test_the_same_figure_gives_the_same_file(tmp_path):
    for name in ("one.pdf", "two.pdf"):
        save_figure(Figure(figsize=(2, 1)), tmp_path / name, 100, _record())
    assert (tmp_path / "one.pdf").read_bytes() == (tmp_path / "two.pdf").read_bytes()


def test_no_record_a_damaged_one_and_a_newer_one_are_one_line(tmp_path):
    bare = tmp_path / "bare.png"
    save_figure(Figure(figsize=(2, 1)), bare, 100)
    with pytest.raises(RecordError, match="carries no record"):
        read_record(bare)
    table = tmp_path / "t.csv"
    table.write_text("a\n", encoding="utf-8")
    sidecar_path(table).write_text("{not json", encoding="utf-8")
    with pytest.raises(RecordError, match="damaged"):
        read_record(table)
    newer = json.loads(_record().to_json()) | {"version": VERSION + 1}
    sidecar_path(table).write_text(json.dumps(newer), encoding="utf-8")
    with pytest.raises(RecordError, match="newer than this app reads"):
        read_record(table)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(RecordError) as error:
        read_record(broken)
    assert "\n" not in str(error.value) and broken.read_bytes() == b"%PDF-1.4 not really"


@pytest.mark.parametrize(
    "change, why",
    [
        ({"model": "x"}, "model not what a record holds there"),
        ({"input": "x", "view": 5}, "input, view not what a record holds there"),
        ({"versions": [1]}, "versions not what a record holds there"),
        ({"app": {"x": 1}}, "app not what a record holds there"),
        ({"version": "1"}, 'its format number is "1", not a whole number'),
        ({"version": True}, "its format number is true, not a whole number"),
    ],
)
def test_a_record_with_a_part_of_the_wrong_type_is_damaged_in_one_line(tmp_path, change, why):
    table = tmp_path / "t.csv"
    table.write_text("a\n", encoding="utf-8")
    sidecar_path(table).write_text(json.dumps(json.loads(_record().to_json()) | change), encoding="utf-8")
    with pytest.raises(RecordError) as error:
        read_record(table)
    assert str(error.value) == f"t.csv: its record is damaged ({why})"


def test_unset_options_are_left_out_of_the_description():
    record = _record()
    record.view["height in"] = None
    assert not any(line.startswith("height in") for line in record.describe())
