"""A hostile ``index.duckdb``: an index folder is a file people share, so opening one runs nothing stored in it. Views
over ``read_text``, ``read_csv_auto`` or ``glob`` in place of the index's tables, a macro, a computed column or a table
of another shape are refused in one line, and no file outside the index is read: the secret beside it never shows,
and (where strace exists) the searching process never opens it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import duckdb
import pytest

from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer
from model.corpus.search import head_query, index_token, nearest_tokens
from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.model.corpus.conftest import build

SENTENCES = "k.sentence_id, k.chunk, {text} AS source, k.reference, {text} AS output, k.n_source, k.n_target"
HOSTILE = {
    "sentences over read_text": [
        "ALTER TABLE sentences RENAME TO kept_sentences",
        "CREATE VIEW sentences AS SELECT " + SENTENCES.format(text="t.content") + " FROM kept_sentences k, read_text('{secret}') t",
    ],
    "tokens filtered on read_csv_auto": [
        "ALTER TABLE tokens RENAME TO kept_tokens",
        "CREATE VIEW tokens AS SELECT * FROM kept_tokens WHERE (SELECT count(*) FROM read_csv_auto('{secret}')) >= 0",
    ],
    "head_stats filtered on glob": [
        "ALTER TABLE head_stats RENAME TO kept_stats",
        "CREATE VIEW head_stats AS SELECT * FROM kept_stats WHERE (SELECT count(*) FROM glob('{folder}/*')) >= 0",
    ],
    "a macro": ["CREATE MACRO secret() AS TABLE SELECT * FROM read_text('{secret}')"],
    "a computed column": ["ALTER TABLE sentences ADD COLUMN extra VARCHAR DEFAULT 'x'"],
    "text in tokens.row_id": ["ALTER TABLE tokens ALTER row_id TYPE VARCHAR", "UPDATE tokens SET row_id = 'row ' || row_id"],
    "a table missing": ["DROP TABLE head_stats"],
    "another schema": ["CREATE SCHEMA other", "CREATE TABLE other.t (a INTEGER)"],
}
REFUSED = ("holds a view", "holds a function", "holds a computed column", "holds a table", "are not those of a corpus index")


@pytest.fixture
def secret(tmp_path) -> Path:
    """A file outside the index that nothing may read."""
    folder = tmp_path / "outside"
    folder.mkdir()
    path = folder / "secret.txt"
    path.write_text(f"a,b\nTOP-SECRET-{uuid.uuid4().hex},1\n", encoding="utf-8")
    return path


def tamper(folder: Path, statements: list[str], secret: Path) -> None:
    """Run ``statements`` on the index's database as a hostile sender would, with its own unlocked connection."""
    with duckdb.connect(str(folder / "index.duckdb")) as connection:
        for statement in statements:
            connection.execute(statement.format(secret=secret, folder=secret.parent))


def use(index: CorpusIndex) -> None:
    """What ``search`` does with an index: a head query and a token's nearest tokens."""
    head_query(index, Head(AttentionKind.CROSS, 0, 0), "previous >= 0")
    nearest_tokens(index, index_token(index, Layer("encoder", 2), sentence_id=0, position=0), k=3)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_database_is_refused_in_one_line_and_reads_nothing_outside(built_index, tmp_path, secret, case):
    folder = tmp_path / "index"
    shutil.copytree(built_index, folder)
    tamper(folder, HOSTILE[case], secret)
    with pytest.raises(CorpusIndexError) as caught:
        with CorpusIndex(folder) as index:
            use(index)
    message = str(caught.value)
    assert "\n" not in message and any(refused in message for refused in REFUSED), message
    assert "TOP-SECRET" not in message


def test_resuming_a_hostile_index_is_refused_before_anything_runs(built_index, tiny, tmp_path, secret):
    folder = tmp_path / "index"
    shutil.copytree(built_index, folder)
    tamper(folder, HOSTILE["sentences over read_text"], secret)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["complete"], manifest["counts"] = False, {}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(CorpusIndexError, match="index.duckdb: holds a view") as caught:
        build(tiny, folder)
    assert "TOP-SECRET" not in str(caught.value)


def test_the_index_is_opened_with_external_access_disabled_and_the_configuration_locked(built_index, secret):
    with CorpusIndex(built_index) as index:
        settings = dict(
            index.query("SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', 'lock_configuration')")[
                1
            ]
        )
        assert settings == {"enable_external_access": "false", "lock_configuration": "true"}
        with pytest.raises(CorpusIndexError, match="disabled by configuration"):
            index.query(f"SELECT * FROM read_text('{secret}')")
        with pytest.raises(CorpusIndexError, match="locked"):
            index.query("SET enable_external_access = true")


STRACED = """
import sys
from model.cli.commands import main
for arguments in (["--head", "cross:1:1", "--where", "previous >= 0"], ["--token", "the", "--layer", "encoder:2"]):
    print("exit", main(["search", sys.argv[1], *arguments]), flush=True)
"""


def test_searching_a_hostile_index_opens_no_file_outside_it(built_index, tmp_path, secret):
    """The three views at once, searched by the command line in a process whose every file opening strace records."""
    if shutil.which("strace") is None or subprocess.run(["strace", "-o", "/dev/null", "true"], check=False).returncode:
        pytest.skip("strace is not installed (or may not trace here): the in-process tests above still run")
    folder = tmp_path / "index"
    shutil.copytree(built_index, folder)
    statements = [statement for case in list(HOSTILE)[:3] for statement in HOSTILE[case]]
    tamper(folder, statements, secret)
    log = tmp_path / "strace.log"
    command = ["strace", "-f", "-e", "trace=open,openat,openat2,stat,newfstatat,statx", "-o", str(log)]
    result = subprocess.run(
        [*command, sys.executable, "-c", STRACED, str(folder)], capture_output=True, text=True, timeout=300, check=False
    )
    opened = log.read_text(encoding="utf-8", errors="replace")
    assert str(folder / "index.duckdb") in opened  # the trace saw the index opened
    assert str(secret.parent) not in opened and "TOP-SECRET" not in result.stdout + result.stderr
    assert result.stdout.split() == ["exit", "1", "exit", "1"], result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and all("index.duckdb: holds a view" in line for line in lines), result.stderr
