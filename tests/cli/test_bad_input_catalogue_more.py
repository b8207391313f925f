"""More of the catalogue of bad inputs (issue 28): what made a command hang or crash. ``heads --n`` beyond what
the corpus gives; a FIFO, a device or a folder where any command reads a file (corpus, --target, classify
--file); digits Python's isdigit() takes and int() refuses ('²') or int() takes and the CLI should not ('٣').
Each case ends as the first catalogue's do (tests/cli/test_bad_input_catalogue.py, whose workspace and snapshot
are used here): a non-zero exit, one message naming the problem, no traceback, every file byte-identical.

Then what the fixes promise: ``classify --file`` prints its first results before the file has been read to its
end, a batch at a time, exactly as one text at a time would; ``heads`` shows progress and measures what a small
file gives; the help of ``heads`` and ``evaluate`` names only what they accept; the line reader's edge cases.

A FIFO of the workspace is fed by a writer thread while each test runs (``fed_fifos``), so a command that wrongly
opened it would read a few lines and end (and fail its case) rather than wait forever.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import torch

import model.attribution.importance as importance_module
import model.cli.labels as labels_module
import model.data.lines as lines_module
from model.cli.commands import main
from model.cli.labels import print_labels
from model.data.corpora import DEFAULT_SIZES, CorpusSpec, load_corpus
from model.data.lines import TextLines
from model.device import DeviceError, resolve_device
from model.files import InputError
from model.io.models import open_model
from tests.cli.test_bad_input_catalogue import TEXT, snapshot, workspace  # noqa: F401  (workspace: the fixture)

MANY_PAIRS = "".join(f"w{i} x{i}\tx{i} w{i}\n" for i in range(300))  # 300 distinct pairs: a test split of a few


@pytest.fixture(scope="module")
def place(workspace):  # noqa: F811  (the imported fixture)
    """The first catalogue's workspace, with a corpus file whose test split is small and a file of texts."""
    (workspace / "many-pairs.tsv").write_text(MANY_PAIRS, encoding="utf-8")
    (workspace / "texts.txt").write_text("The small cat sleeps.\nWe are happy .\n", encoding="utf-8")
    return workspace


def _feed(fifo: Path) -> None:
    try:
        with open(fifo, "w", encoding="utf-8") as writer:  # waits for a reader
            writer.write("a line without a tab\n")
    except OSError:  # the reader that let it go has already closed
        pass


@pytest.fixture(autouse=True)
def fed_fifos(place):
    """Each FIFO of the workspace gets a writer for the test; at its end a reader that never waits lets an unused
    writer finish."""
    threads = []
    for fifo in place.glob("*fifo*"):
        thread = threading.Thread(target=_feed, args=(fifo,), daemon=True)
        thread.start()
        threads.append((fifo, thread))
    yield
    for fifo, thread in threads:
        if thread.is_alive():
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            thread.join()
            os.close(reader)


@pytest.fixture(autouse=True)
def bounded_generation(monkeypatch):
    """A regression must not generate a billion pairs: asking for more than a built-in corpus gives is an error here."""
    generate = importance_module.generate_builtin

    def bounded(name: str, n: int, seed: int):
        assert n <= DEFAULT_SIZES[name], f"{n:,} pairs of {name} were about to be generated"
        return generate(name, n, seed)

    monkeypatch.setattr(importance_module, "generate_builtin", bounded)


M = ["--model", "model.safetensors"]
CASES: list[tuple[list[str], str]] = [
    # heads: --n beyond what the corpus gives, a corpus it cannot measure on
    (["heads", *M, "--corpus", "copy", "--n", "1000000000", "--importance", "i.csv"], "give --n 20000 or fewer"),
    (["heads", *M, "--corpus", "toy-fr", "--n", "60001", "--importance", "i.csv"], "at most 60,000 fresh pairs"),
    (["heads", *M, "--corpus", "many-pairs.tsv", "--n", "1000", "--importance", "i.csv"], "pairs; give --n"),
    (["heads", *M, "--corpus", "toy-fr-tags", "--importance", "i.csv"], "tagging corpus"),
    (["heads", *M, "--corpus", "toy-fr-negation", "--aer-table", "a.csv"], "classification corpus"),
    # a FIFO or a device where a file is read (a folder was refused before; see below)
    (["heads", *M, "--corpus", "a-fifo", "--importance", "i.csv"], "not a regular file (a fifo)"),
    (["classify", "--model", "tagger", "--file", "a-fifo"], "not a regular file (a fifo)"),
    (["classify", "--model", "tagger", "--file", "/dev/null"], "not a regular file (a character device)"),
    (["train", "--corpus", "a-fifo", "--out", "new.safetensors"], "not a regular file (a fifo)"),
    (["train", "--corpus", "a-fifo", "--task", "tagging", "--out", "new.safetensors"], "not a regular file (a fifo)"),
    (["train", "--corpus", "source.txt", "--target", "a-fifo", "--out", "new.safetensors"], "not a regular file (a fifo)"),
    (["train", "--corpus", "/dev/null", "--out", "new.safetensors"], "not a regular file (a character device)"),
    (["evaluate", *M, "--corpus", "a-fifo"], "not a regular file (a fifo)"),
    (["evaluate", *M, "--corpus", "source.txt", "--target", "a-fifo"], "not a regular file (a fifo)"),
    (["evaluate", *M, "--corpus", "/dev/null"], "not a regular file (a character device)"),
    # digits: '²' (isdigit() yes, int() no) and '٣' (int() yes)
    (["translate", *M, "--mask-heads", "cross:²:1", TEXT], "KIND:LAYER:HEAD"),
    (["trace", *M, "--text", TEXT, "--out", "t.npz", "--mask-heads", "encoder:¹:1"], "KIND:LAYER:HEAD"),
    (["attribute", *M, "--text", TEXT, "--out", "a.png", "--mask-heads", "cross:²:1"], "KIND:LAYER:HEAD"),
    (["export", *M, "--text", TEXT, "--out", "x.png", "--mask-heads", "decoder:1:³"], "KIND:LAYER:HEAD"),
    (["export", *M, "--text", TEXT, "--out", "x.png", "--head", "²"], "head must be a number"),
    (["export", *M, "--text", TEXT, "--out", "x.png", "--view", "lines", "--heads", "٣"], "--heads must be head numbers"),
    (["export", *M, "--view", "positional", "--dimensions", "٣", "--out", "p.png"], "--dimensions must be numbers"),
    # the line reader that replaced the old one reports what it did (these passed before; they guard the rewrite)
    (["classify", "--model", "tagger", "--file", "a-folder"], "is a folder"),
    (["evaluate", *M, "--corpus", "source.txt", "--target", "a-folder"], "is a folder"),
    (["classify", "--model", "tagger", "--file", "latin1.tsv"], "latin1.tsv:1: not UTF-8"),
    (["classify", "--model", "tagger", "--file", "blank.tsv"], "empty"),
    (["classify", "--model", "tagger", "--file", "no-such.txt"], "no such file"),
    (["train", "--corpus", "latin1.tsv", "--out", "new.safetensors"], "latin1.tsv:1: not UTF-8"),
]


@pytest.mark.parametrize("args,expected", CASES, ids=[" ".join(args)[:80] for args, _ in CASES])
def test_every_bad_input_is_one_clear_message_and_nothing_changes(place, monkeypatch, capsys, args, expected):
    monkeypatch.chdir(place)
    before = snapshot(place)
    code = main(list(args))
    captured = capsys.readouterr()
    assert code != 0, captured.out
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert expected.lower() in captured.err.lower(), captured.err
    assert snapshot(place) == before  # every file byte-identical, nothing new left behind


def test_heads_names_how_many_pairs_a_file_gives(place, monkeypatch, capsys):
    monkeypatch.chdir(place)
    available = len(load_corpus(CorpusSpec("many-pairs.tsv")).test)
    assert 0 < available < 1000
    assert main(["heads", *M, "--corpus", "many-pairs.tsv", "--n", "1000", "--importance", "i.csv"]) == 1
    err = capsys.readouterr().err
    assert f"has {available} pairs; give --n {available} or fewer" in err and err.count("\n") == 1


def test_heads_measures_what_a_small_file_gives_and_shows_progress(place, tmp_path, capsys):
    model, corpus, out = str(place / "model.safetensors"), str(place / "many-pairs.tsv"), str(tmp_path / "importance.csv")
    assert main(["heads", "--model", model, "--corpus", corpus, "--importance", out]) == 0
    captured = capsys.readouterr()
    available = len(load_corpus(CorpusSpec(corpus)).test)
    assert f"over {available} sentences" in captured.out  # the default 200 is more than the split: all of it
    assert "importance" in captured.err and "100%" in captured.err  # a progress bar on stderr
    assert main(["heads", "--model", model, "--corpus", "copy", "--n", "3", "--quiet", "--importance", out]) == 0
    assert capsys.readouterr().err == ""


def test_help_names_only_what_the_command_accepts(capsys):
    assert main(["heads", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--task" not in text and "tagging" not in text and "toy-fr-tags" not in text
    assert "{toy-fr,copy,reverse,sort,PATH}" in text
    assert main(["evaluate", "--help"]) == 0
    assert "--task" not in capsys.readouterr().out  # evaluate has no --task either
    assert main(["train", "--help"]) == 0
    assert "--task tagging" in capsys.readouterr().out  # train has it


@pytest.fixture(scope="module")
def tagger():
    return open_model("tagger")


def test_classify_prints_its_first_results_before_the_input_ends(tagger, capsys):
    pulled: list[int] = []
    printed_when: list[tuple[int, int]] = []  # (texts pulled from the input, lines printed) after each batch

    def texts():
        for number in range(200):
            pulled.append(number)
            yield f"the cat number {number} sleeps ."

    lines: list[str] = []

    def on_printed(count: int) -> None:
        lines.extend(capsys.readouterr().out.splitlines())
        printed_when.append((len(pulled), len(lines)))

    print_labels(tagger, texts(), many=True, on_printed=on_printed)
    first_pulled, first_printed = printed_when[0]
    assert first_printed == labels_module.BATCH and first_pulled < 200  # printed while most of the input was unread
    assert [p for p, _ in printed_when] == sorted(p for p, _ in printed_when) and len(lines) == 200
    assert lines[0].startswith("the/") and "number/" in lines[0]


class _Stop(Exception):
    pass


def test_classify_file_prints_before_the_file_is_read_to_its_end(tmp_path, monkeypatch, capsys):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"the small cat number {i} sleeps .\n" for i in range(40_000)), encoding="utf-8")
    opened: list[TextLines] = []

    class Recorded(TextLines):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            opened.append(self)

    seen: list[tuple[int, int]] = []  # (bytes read from the file, lines printed) when a batch is classified
    predict = labels_module.predict

    def watched(*args, **kwargs):
        seen.append((opened[0].handle.tell(), len(capsys.readouterr().out.splitlines())))
        if len(seen) == 3:
            raise _Stop  # enough seen: the rest of the file is never classified
        return predict(*args, **kwargs)

    monkeypatch.setattr(labels_module, "TextLines", Recorded)
    monkeypatch.setattr(labels_module, "predict", watched)
    with pytest.raises(_Stop):
        main(["classify", "--model", "tagger", "--quiet", "--file", str(path)])
    size = path.stat().st_size
    assert seen[1][1] == labels_module.BATCH  # the first batch was printed before the second was classified...
    assert seen[1][0] < size and seen[2][0] < size  # ...and the file had not been read to its end


def test_classify_a_batch_at_a_time_reads_each_text_as_alone(tmp_path, capsys):
    texts = ["The small cat sleeps.", "We are happy .", "Her dog does not eat the big fish that the cats see ."]
    path = tmp_path / "three.txt"
    path.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    assert main(["classify", "--model", "tagger", "--json", "--quiet", "--file", str(path)]) == 0
    together = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    alone = []
    for text in texts:
        assert main(["classify", "--model", "tagger", "--json", text]) == 0
        alone.append(json.loads(capsys.readouterr().out))
    assert [row["labels"] for row in together] == [row["labels"] for row in alone]
    flat = [[p for row in rows for p in row["probabilities"]] for rows in (together, alone)]
    assert flat[0] == pytest.approx(flat[1], abs=1e-4)


def test_a_closed_output_pipe_ends_classify_quietly(monkeypatch, capsys, place):
    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    assert main(["classify", "--model", "tagger", "--quiet", "--file", str(place / "texts.txt")]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 16])
def test_the_line_reader_reads_every_ending_across_chunks(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(lines_module, "CHUNK_BYTES", chunk)
    path = tmp_path / "lines.txt"
    path.write_bytes("\ufeffone\r\ntwo\rthree\n\nfür\r\n".encode())
    assert list(TextLines(path)) == ["one", "two", "three", "", "für"]
    path.write_bytes(b"ok\nbad \xff here\n")
    with pytest.raises(InputError, match=r"lines.txt:2: not UTF-8 text \(byte 0xff at column 5\)"):
        list(TextLines(path))


def test_the_line_reader_never_opens_what_could_block(place):
    for path, message in ((place / "a-fifo", "a FIFO"), (Path("/dev/zero"), "a character device"), (place, "is a folder")):
        with pytest.raises(InputError, match=message):
            TextLines(path)


def test_a_superscript_device_number_is_refused_not_a_crash(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a machine with one GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for name in ("cuda:²", "cuda:٣"):
        with pytest.raises(DeviceError, match="does not exist"):
            resolve_device(name)
