"""A catalogue of damaged or edited pretrained folders (issue 28): each one, opened by `translate` and by `trace`,
ends in one line naming the folder's file and what is wrong with it: never a traceback, never a hang (a config
asking for a million layers is refused from the config itself), and the folder is left byte for byte as it was.

Every refusal comes before the model is built: building it fails the test (which is also what keeps a
regression from hanging here rather than failing)."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from model.cli.commands import main

Tamper = Callable[[Path], None]
AUTO_CLASSES = (
    "AutoModel",
    "AutoModelForSeq2SeqLM",
    "AutoModelForCausalLM",
    "AutoModelForMaskedLM",
    "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification",
)
TOO_FAR = 100_000  # a token id beyond every tiny vocabulary (400 pieces)


# --- tamperings ---------------------------------------------------------------------------------------------------
def _header(folder: Path) -> tuple[dict, bytes]:
    raw = (folder / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + length]), raw[8 + length :]


def _write_header(folder: Path, header: object, data: bytes) -> None:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + data)


def header(change: Callable[[dict, list[str], int], object]) -> Tamper:
    """Rewrite model.safetensors's header: change(header, tensor names in data order, data bytes) returns the new one."""

    def tamper(folder: Path) -> None:
        entries, data = _header(folder)
        names = sorted((k for k in entries if k != "__metadata__"), key=lambda k: entries[k]["data_offsets"])
        new = change(entries, names, len(data))
        _write_header(folder, entries if new is None else new, data)

    return tamper


def _set(entries: dict, name: str, key: str, value: object) -> None:
    entries[name][key] = value


def _past_end(entries: dict, names: list[str], size: int) -> None:
    begin, end = entries[names[0]]["data_offsets"]
    entries[names[0]]["data_offsets"] = [size + 8 - (end - begin), size + 8]


def _overlap(entries: dict, names: list[str], size: int) -> None:
    begin, end = entries[names[1]]["data_offsets"]
    entries[names[1]]["data_offsets"] = [begin - 4, end - 4]


def _double_shape(entries: dict, names: list[str], size: int) -> None:
    shape = entries[names[0]]["shape"]
    entries[names[0]]["shape"] = [shape[0] * 2, *shape[1:]]


def write(name: str, content: str | bytes) -> Tamper:
    def tamper(folder: Path) -> None:
        (folder / name).write_bytes(content.encode() if isinstance(content, str) else content)

    return tamper


def edit(name: str, **changes: object) -> Tamper:
    """Set keys of a JSON file (created when the folder has none)."""

    def tamper(folder: Path) -> None:
        path = folder / name
        data = json.loads(path.read_text()) if path.exists() else {}
        data.update(changes)
        path.write_text(json.dumps(data))

    return tamper


def truncate(folder: Path) -> None:
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _drop_unk_from_vocab_txt(folder: Path) -> None:
    words = [word for word in (folder / "vocab.txt").read_text().split("\n") if word and word != "[UNK]"]
    (folder / "vocab.txt").write_text("".join(f"{word}\n" for word in words))


def without_unk(folder: Path) -> None:
    """[UNK] taken out of the WordPiece vocabulary (tokenizer.json and vocab.txt) and of tokenizer_config.json."""
    _drop_unk_from_vocab_txt(folder)
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    del vocab["[UNK]"]
    tokenizer["model"]["vocab"] = {piece: i for i, piece in enumerate(sorted(vocab, key=vocab.get))}
    tokenizer["added_tokens"] = [t for t in tokenizer["added_tokens"] if t["content"] != "[UNK]"]
    for token in tokenizer["added_tokens"]:
        token["id"] = tokenizer["model"]["vocab"][token["content"]]
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["added_tokens_decoder"] = {k: v for k, v in config["added_tokens_decoder"].items() if v["content"] != "[UNK]"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


def only_vocab_txt_without_unk(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()
    _drop_unk_from_vocab_txt(folder)


def layers(count: int) -> Tamper:
    """Every layer count config.json sets, set to count."""

    def tamper(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        names = ("num_layers", "num_decoder_layers", "num_hidden_layers", "n_layer", "encoder_layers", "decoder_layers")
        config.update({name: count for name in names if name in config})
        (folder / "config.json").write_text(json.dumps(config))

    return tamper


MILLION = layers(1_000_000)
OUT_OF_VOCABULARY = "not a token id of the model's vocabulary"
CASES = [  # (id, family, tampering, what stderr says)
    # 1-5: model.safetensors
    ("1-header-list", "t5", header(lambda e, n, s: [1, 2]), "model.safetensors: the header is not a JSON object (a list)"),
    ("1-header-list-gpt2", "gpt2", header(lambda e, n, s: []), "model.safetensors: the header is not a JSON object"),
    ("1-header-not-json", "bart", header(lambda e, n, s: b"{not json"), "model.safetensors: the header is not JSON"),
    ("1-empty-file", "gpt2", write("model.safetensors", b""), "model.safetensors: the file holds 0 bytes"),
    ("2-entry-string", "t5", header(lambda e, n, s: e.update({n[0]: "F32"})), "is not an object"),
    ("2-entry-string-bert", "bert-mlm", header(lambda e, n, s: e.update({n[3]: "x"})), "is not an object (a str)"),
    ("2-unknown-dtype", "bert-mlm", header(lambda e, n, s: _set(e, n[0], "dtype", "Q7")), "has an unknown dtype 'Q7'"),
    ("3-shape-list", "t5", header(lambda e, n, s: _set(e, n[0], "shape", [[1, 2], 3])), "a shape that is not a list of whole"),
    ("3-shape-negative", "bart", header(lambda e, n, s: _set(e, n[0], "shape", [-1, 32])), "a shape that is not a list of whole"),
    ("4-offsets-past-end", "t5", header(_past_end), "point past the end of its"),
    ("4-offsets-overlap", "bart", header(_overlap), "its data overlaps the tensor before it"),
    ("4-offsets-wrong-size", "gpt2", header(_double_shape), "its data_offsets give it"),
    ("4-offsets-not-a-pair", "marian", header(lambda e, n, s: _set(e, n[0], "data_offsets", [0])), "are not [begin, end]"),
    ("5-truncated", "t5", truncate, "model.safetensors: the file is cut short"),
    ("5-truncated-marian", "marian", truncate, "model.safetensors: the file is cut short"),
    # 6-7: config.json
    ("6-config-list", "t5", write("config.json", "[1, 2, 3]"), "config.json: holds a list, where a JSON object is expected"),
    ("6-config-list-bert", "bert-mlm", write("config.json", "[]"), "config.json: holds a list"),
    ("6-config-empty", "gpt2", write("config.json", ""), "config.json: the file is empty"),
    ("6-config-not-json", "bart", write("config.json", "{oops"), "config.json: not valid JSON"),
    ("6-architectures-number", "t5", edit("config.json", architectures=5), "config.json: architectures is 5"),
    ("6-heads-zero", "bert-mlm", edit("config.json", num_attention_heads=0), "config.json: num_attention_heads is 0"),
    ("6-width-text", "gpt2", edit("config.json", n_embd="big"), "config.json: n_embd is big"),
    (
        "7-prefix-number",
        "t5",
        edit("config.json", task_specific_params={"translation_en_to_de": {"prefix": 5}}),
        "config.json: task_specific_params → translation_en_to_de → prefix is 5, not text",
    ),
    ("7-tasks-list", "t5", edit("config.json", task_specific_params=[1]), "config.json: task_specific_params holds a list"),
    # 8-10: tokenizer.json and the other tokenizer files
    ("8-tokenizer-empty", "t5", write("tokenizer.json", ""), "tokenizer.json: the file is empty"),
    ("8-tokenizer-empty-bart", "bart", write("tokenizer.json", ""), "tokenizer.json: the file is empty"),
    ("8-tokenizer-empty-bert", "bert-mlm", write("tokenizer.json", ""), "tokenizer.json: the file is empty"),
    ("8-tokenizer-empty-gpt2", "gpt2", write("tokenizer.json", ""), "tokenizer.json: the file is empty"),
    ("9-tokenizer-not-json", "t5", write("tokenizer.json", "this is { not json"), "tokenizer.json: not valid JSON"),
    ("9-tokenizer-not-json-gpt2", "gpt2", write("tokenizer.json", b"\xff\xfe"), "tokenizer.json: not UTF-8"),
    (
        "10-tokenizer-wrong-shape",
        "t5",
        write("tokenizer.json", '{"version": "1.0", "model": 5}'),
        "tokenizer.json: not a tokenizer",
    ),
    ("10-tokenizer-no-model", "bert-mlm", write("tokenizer.json", "{}"), "tokenizer.json: not a tokenizer"),
    ("10-tokenizer-list", "bart", write("tokenizer.json", "[]"), "tokenizer.json: holds a list"),
    ("10-tokenizer-config-list", "gpt2", write("tokenizer_config.json", "[1]"), "tokenizer_config.json: holds a list"),
    ("10-special-tokens-string", "t5", write("special_tokens_map.json", '"x"'), "special_tokens_map.json: holds a string"),
    ("10-marian-vocab-list", "marian", write("vocab.json", "[1, 2]"), "vocab.json: holds a list"),
    # 11: SentencePiece models (Marian has no tokenizer.json)
    ("11-spm-corrupt", "marian", write("source.spm", b"\x00garbage" * 10), "source.spm: not a SentencePiece model"),
    ("11-spm-empty", "marian", write("target.spm", b""), "target.spm: not a SentencePiece model"),
    # 12: a WordPiece vocabulary without its unknown piece
    ("12-wordpiece-no-unk", "bert-mlm", without_unk, "tokenizer.json: the WordPiece vocabulary has no [UNK] piece"),
    ("12-vocab-txt-no-unk", "bert-classifier", only_vocab_txt_without_unk, "vocab.txt: the WordPiece vocabulary has no [UNK]"),
    # 13: token ids outside the vocabulary (generation_config.json and config.json)
    ("13-start-t5", "t5", edit("generation_config.json", decoder_start_token_id=TOO_FAR), "decoder_start_token_id is 100000"),
    ("13-start-bart", "bart", edit("generation_config.json", decoder_start_token_id=TOO_FAR), "decoder_start_token_id is 100000"),
    ("13-start-negative", "t5", edit("generation_config.json", decoder_start_token_id=-5), "decoder_start_token_id is -5"),
    ("13-eos-t5", "t5", edit("generation_config.json", eos_token_id=TOO_FAR), "generation_config.json: eos_token_id is 100000"),
    ("13-eos-list-t5", "t5", edit("generation_config.json", eos_token_id=[1, TOO_FAR]), "eos_token_id is 100000"),
    ("13-pad-t5", "t5", edit("generation_config.json", pad_token_id=TOO_FAR), "generation_config.json: pad_token_id is 100000"),
    ("13-bos-gpt2", "gpt2", edit("generation_config.json", bos_token_id=TOO_FAR), "generation_config.json: bos_token_id is 100000"),
    ("13-eos-gpt2", "gpt2", edit("generation_config.json", eos_token_id=TOO_FAR), "generation_config.json: eos_token_id is 100000"),
    ("13-forced-bos-bart", "bart", edit("generation_config.json", forced_bos_token_id=TOO_FAR), "forced_bos_token_id is 100000"),
    ("13-bad-words-marian", "marian", edit("generation_config.json", bad_words_ids=[[TOO_FAR]]), "bad_words_ids is 100000"),
    ("13-pad-bert-config", "bert-mlm", edit("config.json", pad_token_id=TOO_FAR), "config.json: pad_token_id is 100000"),
    ("13-generation-list", "t5", write("generation_config.json", "[]"), "generation_config.json: holds a list"),
    ("13-generation-empty", "bart", write("generation_config.json", ""), "generation_config.json: the file is empty"),
    # 14: a config asking for more layers than any model has, or than its weights hold
    ("14-million-layers-t5", "t5", MILLION, "config.json: num_layers asks for 1,000,000 layers"),
    ("14-million-layers-bart", "bart", MILLION, "config.json: encoder_layers asks for 1,000,000 layers"),
    ("14-million-layers-marian", "marian", MILLION, "config.json: encoder_layers asks for 1,000,000 layers"),
    ("14-million-layers-bert", "bert-mlm", MILLION, "config.json: num_hidden_layers asks for 1,000,000 layers"),
    ("14-million-layers-gpt2", "gpt2", MILLION, "config.json: n_layer asks for 1,000,000 layers"),
    ("14-layers-disagree-t5", "t5", layers(3), "config.json: num_decoder_layers is 3, and model.safetensors holds 2 decoder"),
    (
        "14-layers-disagree-bart",
        "bart",
        edit("config.json", encoder_layers=1),
        "encoder_layers is 1, and model.safetensors holds 2",
    ),
    ("14-layers-disagree-gpt2", "gpt2", layers(3), "config.json: n_layer is 3, and model.safetensors holds 2 decoder layers"),
    ("14-layers-disagree-bert", "bert-classifier", layers(1), "num_hidden_layers is 1, and model.safetensors holds 2 encoder"),
]


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every file under folder, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture
def never_built(monkeypatch):
    """Building a model fails the test: every refusal here must come from the files, before the library builds."""
    transformers = pytest.importorskip("transformers")

    def built(*args, **kwargs):
        raise AssertionError("the model was built: the tampered folder was not refused beforehand")

    for name in AUTO_CLASSES:
        monkeypatch.setattr(getattr(transformers, name), "from_pretrained", built)


@pytest.mark.parametrize("family, tamper, expected", [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_a_tampered_folder_gets_one_line_and_stays_as_it_was(capsys, tmp_path, tiny_folders, never_built, family, tamper, expected):
    folder = tmp_path / "model"
    shutil.copytree(tiny_folders[family], folder)
    tamper(folder)
    before = snapshot(folder)
    out = tmp_path / "trace.npz"
    for command in (
        ["translate", "--model", folder, "the small cat"],
        ["trace", "--model", folder, "--text", "the cat", "--out", out],
    ):
        started = time.monotonic()
        code = main([str(part) for part in command])
        captured = capsys.readouterr()
        assert time.monotonic() - started < 60  # a million layers is refused from the config, not built
        assert code != 0
        assert "Traceback" not in captured.out + captured.err
        assert captured.err.startswith(f"transformer-explorer {command[0]}: error: ") and captured.err.count("\n") == 1, (
            captured.err
        )
        assert expected in captured.err, captured.err
        if expected.endswith("is 100000"):
            assert OUT_OF_VOCABULARY in captured.err
    assert not out.exists()
    assert snapshot(folder) == before  # byte-identical, nothing new left behind


def test_the_catalogue_covers_every_case_of_the_issue():
    assert {case[0].split("-")[0] for case in CASES} == {str(n) for n in range(1, 15)}
    assert len({case[0] for case in CASES}) == len(CASES)


def test_an_untouched_folder_still_opens(tiny_folders):
    from model.pretrained.loading import load_pretrained

    for family in ("t5", "marian", "bert-classifier"):
        assert load_pretrained(tiny_folders[family]).config.n_encoder_layers == 2
