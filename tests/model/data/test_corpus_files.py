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


def test_a_file_the_model_was_not_trained_on_is_scored_whole_and_its_own_file_by_its_held_out_split(tmp_path):
    from model.data.corpora import CorpusSpec, evaluation_pairs, load_corpus

    trained = tmp_path / "trained.tsv"
    trained.write_text("".join(f"a{i} b{i}\tc{i} d{i}\n" for i in range(400)), encoding="utf-8")
    other = tmp_path / "held-out.tsv"
    other.write_text("".join(f"e{i}\tf{i}\n" for i in range(37)), encoding="utf-8")
    trained_on = CorpusSpec(str(trained))
    pairs, what = evaluation_pairs(CorpusSpec(str(other)), trained_on)
    assert [p.source for p in pairs] == [f"e{i}" for i in range(37)]
    assert what == f"all 37 pairs of {other} (a file the model was not trained on)"
    same = CorpusSpec(str(tmp_path / "." / "trained.tsv"))  # the same file, named another way
    pairs, what = evaluation_pairs(same, trained_on)
    test = load_corpus(trained_on).test
    assert pairs == test and 0 < len(test) < 400
    assert what == f"the held-out test split of {trained}, the file the model was trained on ({len(test)} pairs)"
    pairs, what = evaluation_pairs(CorpusSpec("copy", size=200), CorpusSpec(str(trained)))  # a built-in: its test split
    assert pairs == load_corpus(CorpusSpec("copy", size=200)).test and what.startswith("the held-out test split of copy")
