"""Corpus files (model/data/corpora/files.py): every line ending, old Mac (CR), Windows (CRLF) and mixed,
ends a line, in TSV files and in Moses pairs of files."""

from __future__ import annotations

from model.data.corpora.files import read_moses, read_tsv


def test_every_line_ending_ends_a_line(tmp_path):
    old_mac = tmp_path / "mac.tsv"
    old_mac.write_bytes(b"one two\tun deux\rthree\ttrois\rfour\tquatre\r")
    assert [(p.source, p.target) for p in read_tsv(old_mac).pairs] == [
        ("one two", "un deux"),
        ("three", "trois"),
        ("four", "quatre"),
    ]
    mixed = tmp_path / "mixed.tsv"
    mixed.write_bytes(b"a\tb\r\nc\td\re\tf\n\ng\th")
    assert [(p.source, p.target) for p in read_tsv(mixed).pairs] == [("a", "b"), ("c", "d"), ("e", "f"), ("g", "h")]
    source, target = tmp_path / "s.txt", tmp_path / "t.txt"
    source.write_bytes(b"x\ry\rz\r")
    target.write_bytes(b"X\nY\r\nZ")
    assert [(p.source, p.target) for p in read_moses(source, target).pairs] == [("x", "X"), ("y", "Y"), ("z", "Z")]
