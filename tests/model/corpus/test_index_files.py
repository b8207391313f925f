"""Every file of a corpus index and of the corpus it reads, broken as a user's disk or hand might break it: each is one
message naming the file, and nothing else is lost. Also what a corpus file may be (text, TSV, a Moses pair) and the
layers and heads an index may hold."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer, parse_index_heads, parse_layers
from model.corpus.search import index_token
from model.corpus.sources import IndexCorpus, read_sentences
from model.data.corpora import CorpusError
from tests.model.corpus.conftest import build


@pytest.fixture
def copied(built_index, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(built_index, folder)
    return folder


def _one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def test_a_missing_or_damaged_manifest_is_one_message(copied, tmp_path):
    with pytest.raises(CorpusIndexError) as caught:
        CorpusIndex(tmp_path / "nowhere")
    assert "no such folder" in _one_line(caught)
    (copied / "manifest.json").write_text('{"model": "tiny", "model_dig', encoding="utf-8")  # cut short
    with pytest.raises(CorpusIndexError) as caught:
        CorpusIndex(copied)
    assert "manifest.json: damaged or truncated" in _one_line(caught)
    (copied / "manifest.json").unlink()
    with pytest.raises(CorpusIndexError) as caught:
        CorpusIndex(copied)
    assert "not a corpus index (it has no manifest.json)" in _one_line(caught)


def test_a_missing_or_damaged_database_is_one_message(copied):
    database = copied / "index.duckdb"
    database.write_bytes(database.read_bytes()[:5000])
    with pytest.raises(CorpusIndexError) as caught:
        CorpusIndex(copied)
    assert "index.duckdb: cannot be opened as an index database" in _one_line(caught)
    database.unlink()
    with pytest.raises(CorpusIndexError) as caught:
        CorpusIndex(copied)
    assert "index.duckdb: missing" in _one_line(caught)


def test_a_missing_or_truncated_array_is_one_message_when_it_is_read(copied):
    array = copied / "arrays" / "resid.encoder.L2.npy"
    array.write_bytes(array.read_bytes()[:1000])
    with CorpusIndex(copied) as index:
        with pytest.raises(CorpusIndexError) as caught:
            index_token(index, Layer("encoder", 2), sentence_id=0, position=0)
        assert "resid.encoder.L2.npy: truncated or damaged" in _one_line(caught)
        assert index.layer_vectors(Layer("encoder", 1)).shape[0] == index.n_rows("encoder")  # the others still read
    array.unlink()
    with CorpusIndex(copied) as index, pytest.raises(CorpusIndexError) as caught:
        index.layer_vectors(Layer("encoder", 2))
    assert "resid.encoder.L2.npy: missing" in _one_line(caught)
    np.save(array, np.zeros((3, 16), np.float16))  # whole, but not this index's
    with CorpusIndex(copied) as index, pytest.raises(CorpusIndexError) as caught:
        index.layer_vectors(Layer("encoder", 2))
    assert "an array of shape (3, 16) where the index expects" in _one_line(caught)


def test_a_missing_projection_is_one_message(copied, tiny):
    (copied / "projection.npz").unlink()
    with CorpusIndex(copied) as index, pytest.raises(CorpusIndexError) as caught:
        index.projection(Layer("encoder", 2))
    assert "projection.npz: missing" in _one_line(caught)


def test_corpus_files_text_tsv_and_moses_are_read_and_a_binary_file_is_refused(tmp_path, tiny):
    text = tmp_path / "sentences.txt"
    text.write_text("the cat sees the dog\n\nthe dog sees the cat\nthe cat sees the dog\n", encoding="utf-8")
    assert [pair.source for pair in read_sentences(IndexCorpus(str(text)))] == ["the cat sees the dog", "the dog sees the cat"]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("the cat\tle chat\tCC-BY\nthe dog\tle chien\n", encoding="utf-8")
    assert [(p.source, p.target) for p in read_sentences(IndexCorpus(str(tsv), limit=1))] == [("the cat", "le chat")]
    source, target = tmp_path / "train.en", tmp_path / "train.fr"
    source.write_text("the cat\nthe dog\n", encoding="utf-8")
    target.write_text("le chat\nle chien\n", encoding="utf-8")
    assert [p.target for p in read_sentences(IndexCorpus(str(source), str(target)))] == ["le chat", "le chien"]
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CorpusError) as caught:
        read_sentences(IndexCorpus(str(binary)))
    assert "model.bin:3: not UTF-8 text (byte 0x80 at column 115); save the file as UTF-8" in _one_line(caught)
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"the cat\x00\x00\n")
    with pytest.raises(CorpusError) as caught:
        read_sentences(IndexCorpus(str(nul)))
    assert "not a text file (it holds NUL bytes)" in _one_line(caught)
    with pytest.raises(CorpusError) as caught:
        read_sentences(IndexCorpus("nothing.txt"))
    assert "nothing.txt: no such file, and not a built-in corpus" in _one_line(caught)
    with pytest.raises(CorpusError):
        build(tiny, tmp_path / "index", corpus=IndexCorpus(str(binary)))
    assert not (tmp_path / "index").exists()  # refused before anything is written


def test_layers_and_heads_are_read_from_their_names_and_checked_against_the_model():
    assert [str(layer) for layer in parse_layers("3,decoder:0", 3, 3)] == ["decoder:0", "decoder:3", "encoder:3"]
    assert len(parse_layers("all", 3, 2)) == 5 and len(parse_layers("encoder", 3, 2)) == 3
    assert [str(head) for head in parse_index_heads("cross:3:2,decoder:1", 3, 3, 2)] == ["decoder:1:1", "decoder:1:2", "cross:3:2"]
    assert parse_index_heads("none", 3, 3, 4) == () and len(parse_index_heads("all", 3, 3, 4)) == 36
    for text, message in (("encoder:4", "layers 1 to 3"), ("middle:1", "SIDE:LAYER"), ("encoder:x", "whole number")):
        with pytest.raises(CorpusIndexError, match=message):
            parse_layers(text, 3, 3)
    for text, message in (("cross:4", "layers 1 to 3 of heads 1 to 4"), ("self:1", "the kind is encoder, decoder or cross")):
        with pytest.raises(CorpusIndexError, match=message):
            parse_index_heads(text, 3, 3, 4)
