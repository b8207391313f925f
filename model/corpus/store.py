"""The corpus index's tables in DuckDB (``index.duckdb``): sentences, tokens, head_stats, and chunks (the index's
own record of which chunks are finished). Each chunk's rows go in one transaction, so a chunk is in the database
entirely or not at all; a finished index also exports each table as Parquet for other tools.

``sentences``: sentence_id (from 0, in corpus order), chunk, source, reference ("" when the corpus has none), output
(the greedy translation), n_source and n_target (the pieces of each side, </s> and <s> included).
``tokens``: side ("encoder" or "decoder"), row_id (the token's row in that side's arrays), sentence_id, position
(from 0), token (the piece at that position: for the decoder, the one it was fed) and next_token (the decoder's piece
predicted there; NULL for the source).
``head_stats``: sentence_id, kind, layer and head (from 1), the statistics of the heads table (model/inspection/
heads.py: entropy in nats, normalised_entropy 0-1, distance, self/previous/next/first/last/punctuation shares,
max_weight, peak_spread), role and role_score.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from model.corpus.checks import check_regular
from model.corpus.extract import STAT_COLUMNS
from model.corpus.layout import PARQUET, TABLES, CorpusIndexError
from model.files import atomic_output

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sentences (sentence_id INTEGER, chunk INTEGER, source VARCHAR, reference VARCHAR, "
    "output VARCHAR, n_source INTEGER, n_target INTEGER)",
    "CREATE TABLE IF NOT EXISTS tokens (side VARCHAR, row_id BIGINT, sentence_id INTEGER, position INTEGER, "
    "token VARCHAR, next_token VARCHAR)",
    "CREATE TABLE IF NOT EXISTS head_stats (sentence_id INTEGER, kind VARCHAR, layer INTEGER, head INTEGER, "
    + ", ".join(f"{name} DOUBLE" for name in STAT_COLUMNS)
    + ", role VARCHAR)",
    "CREATE TABLE IF NOT EXISTS chunks (chunk INTEGER PRIMARY KEY, first_sentence INTEGER, n_sentences INTEGER, "
    "first_encoder_row BIGINT, encoder_rows BIGINT, first_decoder_row BIGINT, decoder_rows BIGINT)",
)
CHUNK_COLUMNS = ("chunk", "first_sentence", "n_sentences", "first_encoder_row", "encoder_rows", "first_decoder_row", "decoder_rows")


def describe_database_error(error: Exception) -> str:
    """Why DuckDB failed, in words: a full disk says so."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if "No space left" in text or "disk is full" in text.lower():
        return "the disk is full"
    return text


LOCKED = {  # nothing stored in an index runs with access to anything outside it (set before the first statement)
    "enable_external_access": False,
    "lock_configuration": True,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}


def connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the index's database; one clear line when it (or DuckDB's log beside it) is missing, not a
    regular file, damaged or being written elsewhere. ``Store`` then checks its tables (``check_schema``).

    Read-only, it is opened with external access disabled and the configuration locked, so that no view, macro or
    query can read a file outside the database. For writing (indexing), external access is disabled as soon as the
    database is open, except for the index's ``parquet/`` folder, which the finished index exports its tables to."""
    if read_only and not path.exists():
        raise CorpusIndexError(f"{path}: missing; build the index again")
    wal = path.with_name(path.name + ".wal")  # DuckDB's log of a writer that did not close (read with the database)
    for part in (path, wal):
        if os.path.lexists(part):
            check_regular(part)  # a FIFO would block DuckDB's open forever
    try:
        if read_only:
            connection = duckdb.connect(str(path), read_only=True, config=dict(LOCKED))
        else:
            connection = duckdb.connect(
                str(path), config={key: LOCKED[key] for key in ("autoload_known_extensions", "autoinstall_known_extensions")}
            )
            try:  # allowed_directories cannot be given at connect time; nothing of the index has run yet
                connection.execute("SET allowed_directories = ?", [[f"{path.parent.resolve() / PARQUET}{os.sep}"]])
                connection.execute("SET enable_external_access = false")
                connection.execute("SET lock_configuration = true")
            except duckdb.Error:
                connection.close()
                raise
    except duckdb.Error as error:
        text = describe_database_error(error)
        if "lock" in text.lower() and "configuration" not in text.lower():
            raise CorpusIndexError(f"{path}: another program is writing this index now; wait until it has finished") from None
        raise CorpusIndexError(f"{path}: cannot be opened as an index database ({text}); build the index again") from None
    return connection


@functools.cache
def expected_columns() -> tuple[tuple[str, str, str], ...]:
    """(table, column, type) of every column the index's tables have, in order, as DuckDB names them."""
    with duckdb.connect(":memory:", config=dict(LOCKED)) as connection:
        for statement in SCHEMA:
            connection.execute(statement)
        return tuple(connection.execute(COLUMNS).fetchall())


COLUMNS = (
    "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE NOT internal AND database_name = current_database() "
    "ORDER BY table_name, column_index"
)
OTHER_OBJECTS = (
    "SELECT 'a view', view_name FROM duckdb_views() WHERE NOT internal UNION ALL "
    "SELECT 'a function', function_name FROM duckdb_functions() WHERE NOT internal UNION ALL "
    "SELECT 'a computed column', table_name || '.' || column_name FROM duckdb_columns() WHERE column_default IS NOT NULL "
    "UNION ALL SELECT 'a table', schema_name || '.' || table_name FROM duckdb_tables() "
    "WHERE NOT internal AND (database_name <> current_database() OR schema_name <> 'main')"
)


def check_schema(connection: duckdb.DuckDBPyConnection, path: Path, new: bool = False) -> None:
    """Refuse a database that holds anything but the index's four tables with their columns: a view, a macro, a
    computed column or a table of another shape would run or be read in place of the index's data. With ``new``, an
    empty database (one being made) passes too."""
    try:
        other = connection.execute(OTHER_OBJECTS).fetchall()
        columns = tuple(connection.execute(COLUMNS).fetchall())
    except duckdb.Error as error:
        raise CorpusIndexError(f"{path}: cannot be read as an index database ({describe_database_error(error)})") from None
    if other:
        what, name = other[0]
        raise CorpusIndexError(
            f"{path}: holds {what} ({str(name)[:80]}) that no corpus index has; it is refused: build the index again"
        )
    if columns != expected_columns() and not (new and not columns):
        tables = sorted({row[0] for row in columns})
        raise CorpusIndexError(
            f"{path}: its tables ({', '.join(tables)[:120] or 'none'}) are not those of a corpus index; build the index again"
        )


def _column(values: Any) -> Any:
    """A column as DuckDB reads it fastest: a NumPy array (text as an object array)."""
    array = np.asarray(values)
    return array.astype(object) if array.dtype.kind == "U" else array


class Store:
    """The index's database, open for writing (indexing) or reading."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.connection = connect(path, read_only)
        try:
            check_schema(self.connection, path, new=not read_only)  # before anything of the index is read or written
            if not read_only:
                with self.failures("creating the tables"):
                    for statement in SCHEMA:
                        self.connection.execute(statement)
                    self.connection.execute("CHECKPOINT")  # a stopped writer's log (index.duckdb.wal) written in
                check_schema(self.connection, path)
        except BaseException:
            self.close()
            raise

    @contextmanager
    def failures(self, doing: str) -> Iterator[None]:
        """DuckDB's errors while ``doing`` something as one CorpusIndexError naming the database."""
        try:
            yield
        except duckdb.Error as error:
            raise CorpusIndexError(f"{self.path}: failed while {doing} ({describe_database_error(error)})") from None

    def finished_chunks(self) -> list[dict[str, int]]:
        """The chunks committed, in order."""
        with self.failures("reading the finished chunks"):
            rows = self.connection.execute(f"SELECT {', '.join(CHUNK_COLUMNS)} FROM chunks ORDER BY chunk").fetchall()
        return [dict(zip(CHUNK_COLUMNS, row)) for row in rows]

    def commit_chunk(self, chunk: dict[str, int], tables: dict[str, dict[str, Any]]) -> None:
        """One chunk's rows (``tables``: table -> column -> values) and its record, in one transaction."""
        connection = self.connection
        try:
            connection.execute("BEGIN TRANSACTION")
            for table, columns in tables.items():
                names = ", ".join(columns)
                connection.register("incoming", {name: _column(values) for name, values in columns.items()})
                connection.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM incoming")
                connection.unregister("incoming")
            connection.execute(
                f"INSERT INTO chunks VALUES ({', '.join('?' for _ in CHUNK_COLUMNS)})", [chunk[name] for name in CHUNK_COLUMNS]
            )
            connection.execute("COMMIT")
        except duckdb.Error as error:
            try:
                connection.execute("ROLLBACK")
            except duckdb.Error:
                pass  # the failure may have closed the transaction (or the database) already
            raise OSError(f"the index database could not be written ({describe_database_error(error)})") from error

    def export_parquet(self, folder: Path) -> list[Path]:
        """Each table as ``folder/TABLE.parquet``, written atomically."""
        folder.mkdir(exist_ok=True)
        written = []
        for table in TABLES:
            path = folder / f"{table}.parquet"
            with atomic_output(path) as temporary, self.failures(f"writing {path.name}"):
                os.unlink(temporary)  # DuckDB writes the file itself
                order = "sentence_id, kind, layer, head" if table == "head_stats" else "1, 2"
                quoted = str(temporary).replace("'", "''")
                self.connection.execute(f"COPY (SELECT * FROM {table} ORDER BY {order}) TO '{quoted}' (FORMAT PARQUET)")
            written.append(path)
        return written

    def close(self) -> None:
        try:
            self.connection.close()
        except duckdb.Error:
            pass
