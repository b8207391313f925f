"""Building a corpus index: what it holds and that it holds it right (the trace's tokens and the heads table's
statistics), cancelling and resuming (the same index as one run), a full disk (finished chunks kept), and the files it
writes checked as a reader would."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

from model.corpus import chunks, extract
from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer
from model.corpus.sources import read_sentences
from model.decoding.stepper import Stepper
from model.inspection.heads import all_head_statistics
from model.io.digest import model_digest
from model.kinds import AttentionKind
from tests.model.corpus.conftest import CORPUS, build


def tables(folder: Path) -> dict[str, list]:
    with duckdb.connect(str(folder / "index.duckdb"), read_only=True) as connection:
        return {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
            for table in ("sentences", "tokens", "head_stats", "chunks")
        }


def arrays(folder: Path) -> dict[str, np.ndarray]:
    return {path.name: np.load(path) for path in sorted((folder / "arrays").glob("*.npy"))}


def decoded_one_by_one(bundle) -> list:
    """Each sentence of the corpus decoded on its own by the Explore view's stepper (not the index's batched pass):
    (source, reference, output, source pieces, decoder input pieces, pieces produced)."""
    rows = []
    for pair in read_sentences(CORPUS):
        stepper = Stepper(bundle, pair.source)
        stepper.run()
        trace = stepper.trace()
        rows.append(
            (pair.source, pair.target, stepper.translation(), trace.source_tokens, trace.decoder_input_tokens, trace.target_tokens)
        )
    return rows


def test_an_index_holds_every_sentence_token_and_head_of_the_corpus(built_index, tiny):
    manifest = json.loads((built_index / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["complete"] and manifest["model_digest"] == model_digest(tiny)
    config = tiny.config
    expected = decoded_one_by_one(tiny)
    held = tables(built_index)
    assert held["sentences"] == [
        (i, i // 8, source, reference, output, len(pieces), len(fed))  # chunks of 8 sentences
        for i, (source, reference, output, pieces, fed, _) in enumerate(expected)
    ]
    encoder_rows = [(i, position, piece, None) for i, row in enumerate(expected) for position, piece in enumerate(row[3])]
    decoder_rows = [(i, p, piece, row[5][p]) for i, row in enumerate(expected) for p, piece in enumerate(row[4])]
    for side, rows in (("encoder", encoder_rows), ("decoder", decoder_rows)):
        ordered = sorted((row for row in held["tokens"] if row[0] == side), key=lambda row: row[1])  # by row_id
        assert [row[1] for row in ordered] == list(range(len(rows)))  # the arrays' rows, sentences in order
        assert [row[2:] for row in ordered] == rows
    with CorpusIndex(built_index) as index:
        assert index.n_sentences == 30 == manifest["counts"]["sentences"]
        assert (index.n_rows("encoder"), index.n_rows("decoder")) == (len(encoder_rows), len(decoder_rows))
        for layer in index.manifest.layer_list:  # every layer of both sides, reduced to 16 dimensions
            assert index.layer_vectors(layer).shape == (index.n_rows(layer.side), 16)
        assert len(index.manifest.head_list) == 3 * config.n_heads  # decoder layer 1, cross-attention's two layers
        queries, keys = index.head_vectors(index.manifest.head_list[-1])  # a cross head: decoder queries, source keys
        assert queries.shape == (len(decoder_rows), config.d_model // config.n_heads) and keys.shape[0] == len(encoder_rows)
        heads_per_sentence = 3 * 2 * config.n_heads
        assert index.query("SELECT count(*) FROM head_stats")[1] == [(30 * heads_per_sentence,)]
    with duckdb.connect() as connection:  # the Parquet copies hold the same rows
        for table in ("sentences", "tokens", "head_stats"):
            parquet = str(built_index / "parquet" / f"{table}.parquet")
            assert connection.execute(f"SELECT * FROM '{parquet}' ORDER BY ALL").fetchall() == held[table]
    assert not (built_index / "chunks").exists()


def test_the_index_reads_each_sentence_as_the_explore_trace_and_the_heads_table_do(built_index, tiny):
    pairs = read_sentences(CORPUS)
    with CorpusIndex(built_index) as index:
        for sentence_id in (0, 7, 29):
            stepper = Stepper(tiny, pairs[sentence_id].source)
            stepper.run()
            trace = stepper.trace()
            assert index.sentence_tokens("encoder", sentence_id) == trace.source_tokens
            assert index.sentence_tokens("decoder", sentence_id) == trace.decoder_input_tokens
            expected = all_head_statistics(trace)
            for kind in AttentionKind:
                _, rows = index.query(
                    "SELECT previous_share, last_share, normalised_entropy, peak_spread, role FROM head_stats "
                    "WHERE sentence_id = ? AND kind = ? ORDER BY layer, head",
                    [sentence_id, kind.value],
                )
                flat = [stats for layer in expected[kind] for stats in layer]
                np.testing.assert_allclose(
                    [row[:4] for row in rows],
                    [(s.previous_share, s.last_share, s.normalised_entropy, s.peak_spread) for s in flat],
                    atol=1e-5,
                )
                assert [row[4] for row in rows] == [s.role for s in flat]


def test_cancelling_then_resuming_gives_the_index_of_one_run(built_index, tiny, tmp_path):
    folder = tmp_path / "resumed"
    seen = []

    def stop() -> bool:
        return len(seen) >= 2  # after the second chunk has been committed (progress comes before each chunk)

    first = build(tiny, folder, stop=stop, progress=lambda report: seen.append(report.done) if report.phase == "indexing" else None)
    assert first.cancelled and not first.complete and first.indexed == 8
    with CorpusIndex(folder) as partial:  # usable as far as it goes
        assert partial.n_sentences == 8 and partial.layer_vectors(Layer("encoder", 2)).shape[0] == partial.n_rows("encoder")
    second = build(tiny, folder)
    assert second.complete and second.resumed_from == 8 and second.indexed == 30
    assert tables(folder) == tables(built_index)
    ours, theirs = arrays(folder), arrays(built_index)
    assert ours.keys() == theirs.keys()
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)


def test_a_full_disk_stops_with_one_message_and_keeps_the_finished_chunks(built_index, tiny, tmp_path, monkeypatch):
    folder = tmp_path / "full"
    written = chunks.write_arrays

    def fill_up(handle, arrays):
        if Path(handle.name).name.startswith(".00002.npz"):  # the third chunk's arrays
            raise OSError(errno.ENOSPC, "No space left on device")
        written(handle, arrays)

    monkeypatch.setattr(chunks, "write_arrays", fill_up)
    with pytest.raises(CorpusIndexError) as caught:
        build(tiny, folder)
    message = str(caught.value)
    assert "the disk is full" in message and "the 16 sentences indexed before are kept" in message and "\n" not in message
    assert sorted(entry.name for entry in (folder / "chunks").iterdir()) == ["00000.npz", "00001.npz"]
    with CorpusIndex(folder) as partial:
        assert partial.n_sentences == 16
    monkeypatch.setattr(chunks, "write_arrays", written)
    assert build(tiny, folder).complete
    assert tables(folder) == tables(built_index)


def test_a_folder_of_something_else_or_another_index_is_refused(built_index, tiny, other_model, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(CorpusIndexError, match="is not empty and holds no corpus index"):
        build(tiny, tmp_path / "busy")
    with pytest.raises(CorpusIndexError, match="holds an index made with other settings \\(layers"):
        build(tiny, built_index, layers="encoder:2")
    with pytest.raises(CorpusIndexError, match="holds an index built with another model"):
        build(other_model, built_index)
    assert build(tiny, built_index).complete  # the same command again: nothing to do


def test_the_pca_s_sentences_are_decoded_once(tiny, tmp_path, monkeypatch):
    """The PCA is fitted on the first sentences, read; their chunks read them again without decoding them again."""
    decoded_rows = []
    decode = extract.greedy_decode

    def counted(model, source_ids, *args):
        decoded_rows.append(source_ids.shape[0])
        return decode(model, source_ids, *args)

    monkeypatch.setattr(extract, "greedy_decode", counted)
    result = build(tiny, tmp_path / "index")
    assert result.complete and sum(decoded_rows) == CORPUS.limit  # 30 sentences, of which the PCA read 12 first
