"""One chunk of the corpus index as rows: its batches' readings (model/corpus/extract.py) joined into the arrays, the
rows of the tables sentences, tokens and head_stats (model/corpus/store.py) and the chunk's record, with the sentence
ids and token rows that continue the chunks before it."""

from __future__ import annotations

from typing import Any

from model.corpus.extract import STAT_COLUMNS, BatchReading, SentenceTokens


def _token_rows(sentences: list[SentenceTokens], first_id: int, first_rows: dict[str, int]) -> dict[str, list]:
    columns: dict[str, list] = {name: [] for name in ("side", "row_id", "sentence_id", "position", "token", "next_token")}
    for side in ("encoder", "decoder"):
        row = first_rows[side]
        for offset, sentence in enumerate(sentences):
            tokens = sentence.source_tokens if side == "encoder" else sentence.decoder_tokens
            following: list[str | None] = list(sentence.next_tokens) if side == "decoder" else [None] * len(tokens)
            for position, (token, next_token) in enumerate(zip(tokens, following)):
                columns["side"].append(side)
                columns["row_id"].append(row)
                columns["sentence_id"].append(first_id + offset)
                columns["position"].append(position)
                columns["token"].append(token)
                columns["next_token"].append(next_token)
                row += 1
    return columns


def chunk_tables(
    reading: BatchReading, chunk: int, first_sentence: int, previous: dict[str, int] | None
) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """(tables: table -> column -> values, the chunk's record) of chunk ``chunk`` read as ``reading``, whose first
    sentence is ``first_sentence``; ``previous`` is the record of the chunk before it (None for the first)."""
    first_rows = {
        side: previous[f"first_{side}_row"] + previous[f"{side}_rows"] if previous else 0 for side in ("encoder", "decoder")
    }
    sentences = reading.sentences
    ids = list(range(first_sentence, first_sentence + len(sentences)))
    table_sentences: dict[str, list] = {
        "sentence_id": ids,
        "chunk": [chunk] * len(ids),
        "source": [sentence.source for sentence in sentences],
        "reference": [sentence.reference for sentence in sentences],
        "output": [sentence.output for sentence in sentences],
        "n_source": [len(sentence.source_tokens) for sentence in sentences],
        "n_target": [len(sentence.decoder_tokens) for sentence in sentences],
    }
    stats = {name: reading.stats[name] for name in ("kind", "layer", "head", *STAT_COLUMNS, "role")}
    stats = {"sentence_id": first_sentence + reading.stats["sentence"], **stats}
    record = dict(
        chunk=chunk,
        first_sentence=first_sentence,
        n_sentences=len(sentences),
        first_encoder_row=first_rows["encoder"],
        encoder_rows=sum(table_sentences["n_source"]),
        first_decoder_row=first_rows["decoder"],
        decoder_rows=sum(table_sentences["n_target"]),
    )
    tables = {"sentences": table_sentences, "tokens": _token_rows(sentences, first_sentence, first_rows), "head_stats": stats}
    return tables, record
