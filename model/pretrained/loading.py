"""Opening a pretrained model safely: offline, eager attention, float32, never anyone's code.

- weights: safetensors are preferred; pickled ``.bin`` files are first read by ``torch.load(weights_only=True)``
  (which refuses any pickle that would build objects or call functions) and then handed to the library,
  which also loads them ``weights_only``; a payload is refused with a message and never runs;
- ``trust_remote_code`` is never enabled: a model that needs its own Python code is refused;
- memory: the parameters are counted from the weight files' headers before anything is built, and a
  model that would not fit in the memory available is refused;
- attention: ``attn_implementation="eager"``, because the fused SDPA and flash paths return no weights.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from model.family import Architecture, Family, family_of
from model.pretrained.families import (
    DECODER_ONLY,
    ENCODER_DECODER,
    ENCODER_ONLY,
    DecoderNetwork,
    EncoderNetwork,
    PretrainedConfig,
    Seq2SeqNetwork,
    read_config,
)
from model.pretrained.hub import PretrainedError, require_transformers, resolve_pretrained, weight_files
from model.pretrained.tokenizer import PretrainedTokenizer

MEMORY_MARGIN = 1.5  # the model, its copy while loading, activations: ask for this much more than its weights
HEADS = (  # (how a class name ends, the auto class, the head)
    ("ForMaskedLM", "AutoModelForMaskedLM", "masked-lm"),
    ("ForPreTraining", "AutoModelForMaskedLM", "masked-lm"),
    ("ForSequenceClassification", "AutoModelForSequenceClassification", "sequence-classification"),
    ("ForTokenClassification", "AutoModelForTokenClassification", "token-classification"),
)
EXAMPLES = {
    ENCODER_DECODER: "The house is wonderful.",
    ENCODER_ONLY: "The capital of France is [MASK].",
    DECODER_ONLY: "The house is",
}


@dataclass
class PretrainedBundle:
    """A pretrained network with its tokenizer: a ``Bundle`` (model/family.py), as the app's own ``ModelBundle``."""

    model: Any  # a families.PretrainedNetwork
    source_tokenizer: PretrainedTokenizer
    target_tokenizer: PretrainedTokenizer
    path: str | None = None  # the folder it was opened from
    name: str = ""  # the id or folder name the user gave
    prefix: str = ""  # the model's own source prefix (T5's task prefix), put before the example sentence
    notes: list[str] = field(default_factory=list)  # the model's conventions, shown in the info panel
    corpus: Any = None  # no corpus, history or training of ours
    history: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)

    @property
    def config(self) -> PretrainedConfig:
        return self.model.config

    @property
    def family(self) -> Family:
        """Its adapter's family: not trainable, so it stays in its folder (the app's model files hold its own)."""
        return family_of(self.model)

    @property
    def shape(self) -> Architecture:
        return self.config.shape

    @property
    def examples(self) -> list[str]:
        text = EXAMPLES[self.shape]
        if self.shape == ENCODER_ONLY and self.source_tokenizer.tokenizer.mask_token:
            text = text.replace("[MASK]", self.source_tokenizer.tokenizer.mask_token)
        return [self.prefix + text]

    def describe(self) -> str:
        return (
            f"{self.name}: {self.config.describe()}, {self.model.parameter_count():,} parameters, "
            f"{self.config.attention_implementation} attention, {self.source_tokenizer.name}"
        )

    def source_ids(self, text: str) -> tuple[list[int], int, int]:
        """(the ids the model reads, with its tokenizer's special tokens, cut to fit; the pieces the text has;
        the pieces kept)."""
        ids = self.source_tokenizer.model_input(text)
        n_pieces = len(self.source_tokenizer.encode(text))
        if len(ids) > self.config.max_len:
            keep_last = ids[-1] in self.source_tokenizer.special_ids
            ids = ids[: self.config.max_len - 1] + [ids[-1]] if keep_last else ids[: self.config.max_len]
        kept = n_pieces - max(0, len(self.source_tokenizer.model_input(text)) - len(ids))
        return ids, n_pieces, kept

    def info(self) -> list[tuple[str, str]]:
        """(label, value) rows for the info panel and `transformer-explorer info`."""
        config = self.config
        rows = [
            ("Model", self.name),
            ("Folder", str(self.path)),
            ("Family", f"{config.shape.value} ({config.model_type}, {config.architecture})"),
            ("Layers", f"{config.n_encoder_layers} encoder, {config.n_decoder_layers} decoder"),
            ("Heads", f"{config.n_encoder_heads} encoder, {config.n_heads} {'decoder' if config.n_decoder_layers else 'encoder'}"),
            ("Sizes", f"d_model {config.d_model}, d_ff {config.d_ff}, {config.max_len} positions"),
            ("Parameters", f"{self.model.parameter_count():,}"),
            ("Attention", f"{config.attention_implementation} (forced: the fused SDPA/flash paths return no weights)"),
            ("Positions", config.positional_encoding),
            ("Tokenizer", self.source_tokenizer.describe()),
        ]
        if config.labels:
            rows.append(("Classes", ", ".join(config.labels)))
        rows += [("Note", note) for note in self.notes]
        return rows


def _safetensors_parameters(path: Path) -> int:
    """Number of values in a safetensors file, read from its header (no weight is loaded)."""
    with open(path, "rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        if size > 100 * 1024 * 1024:
            raise PretrainedError(f"{path}: damaged safetensors file (its header claims {size:,} bytes)")
        header = json.loads(handle.read(size))
    total = 0
    for name, entry in header.items():
        if name != "__metadata__":
            count = 1
            for dimension in entry.get("shape", []):
                count *= int(dimension)
            total += count
    return total


def available_memory() -> int | None:
    """Bytes of memory available now (Linux's MemAvailable), None where it cannot be read."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def check_weights(folder: Path) -> int:
    """The float32 bytes the model needs; refuses a pickle payload and a model too large for memory."""
    files = weight_files(folder)
    if not files:
        raise PretrainedError(f"{folder}: no weights (model.safetensors or pytorch_model.bin) in the folder")
    safetensors = [p for p in files if p.suffix == ".safetensors"]
    try:
        needed = 4 * sum(_safetensors_parameters(p) for p in safetensors)
    except (OSError, ValueError, struct.error) as error:
        raise PretrainedError(f"{folder}: damaged safetensors weights ({error})") from None
    if not safetensors:
        for path in files:
            try:  # only tensors, numbers and plain containers: any other pickle opcode is refused before it runs
                state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise PretrainedError(
                    f"{path.name}: refused — it is a pickle that asks to run code or build objects, not plain weights "
                    f"({first[:200]}). The app loads .bin weights only as plain tensors; use the model's safetensors weights."
                ) from None
            needed += 4 * sum(t.numel() for t in state.values() if isinstance(t, torch.Tensor)) if isinstance(state, dict) else 0
    free = available_memory()
    if free is not None and needed * MEMORY_MARGIN > free:
        raise PretrainedError(
            f"{folder.name}: too large for the memory available — it needs about {needed * MEMORY_MARGIN / 2**30:.1f} GiB "
            f"in float32, and {free / 2**30:.1f} GiB is free"
        )
    return needed


def _shape_and_class(hf_config: Any) -> tuple[Architecture, str, str]:
    """(shape, auto class name, head) from the config's declared architecture."""
    architecture = str((getattr(hf_config, "architectures", None) or [""])[0])
    if getattr(hf_config, "is_encoder_decoder", False):
        return ENCODER_DECODER, "AutoModelForSeq2SeqLM", "lm"
    if architecture.endswith(("LMHeadModel", "ForCausalLM")) or (not architecture and getattr(hf_config, "is_decoder", False)):
        return DECODER_ONLY, "AutoModelForCausalLM", "lm"
    for ending, auto_class, head in HEADS:
        if architecture.endswith(ending):
            return ENCODER_ONLY, auto_class, head
    if hf_config.model_type in ("gpt2", "gpt_neo", "gptj", "opt", "llama", "mistral", "qwen2", "phi"):
        return DECODER_ONLY, "AutoModelForCausalLM", "lm"
    return ENCODER_ONLY, "AutoModel", "none"


def load_pretrained(name_or_path: str, device: str | torch.device = "cpu") -> PretrainedBundle:
    """Open a save_pretrained folder or a cached model id; a PretrainedError (never a traceback) when it cannot."""
    transformers = require_transformers()
    folder = resolve_pretrained(name_or_path)
    common: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False}
    try:
        hf_config = transformers.AutoConfig.from_pretrained(folder, **common)
    except (ValueError, KeyError, OSError, json.JSONDecodeError) as error:
        raise PretrainedError(f"{name_or_path}: its config.json cannot be used ({_first_line(error)})") from None
    shape, auto_class, head = _shape_and_class(hf_config)
    check_weights(folder)
    try:
        with warnings.catch_warnings():  # "install sacremoses" and the like: advice for the library's developers
            warnings.simplefilter("ignore")
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **common)
    except (ValueError, KeyError, OSError, TypeError, ImportError) as error:
        raise PretrainedError(f"{name_or_path}: its tokenizer cannot be opened ({_first_line(error)})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hf_model = getattr(transformers, auto_class).from_pretrained(
                folder, attn_implementation="eager", torch_dtype=torch.float32, weights_only=True, use_safetensors=None, **common
            )
    except (ValueError, KeyError, OSError, RuntimeError, TypeError, pickle.UnpicklingError) as error:
        raise PretrainedError(
            f"{name_or_path}: the app has no implementation for this model ({hf_config.model_type}, "
            f"{auto_class}), or its weights do not fit its config ({_first_line(error)})"
        ) from None
    hf_model.to(device).eval()
    implementation = getattr(hf_model.config, "_attn_implementation", "eager")
    if implementation != "eager":
        raise PretrainedError(
            f"{name_or_path}: its attention cannot run on the eager path ({implementation}), which alone returns weights"
        )
    architecture = type(hf_model).__name__
    max_hint = getattr(tokenizer, "model_max_length", None)
    generation = getattr(hf_model, "generation_config", None)
    hint = max_hint if isinstance(max_hint, int) else None
    config = read_config(hf_config, shape, architecture, len(tokenizer), hint, generation, classes=head.endswith("classification"))
    config.attention_implementation = implementation
    if shape == ENCODER_DECODER:
        network: Any = Seq2SeqNetwork(hf_model, config)
    elif shape == DECODER_ONLY:
        network = DecoderNetwork(hf_model, config)
    else:
        network = EncoderNetwork(hf_model, config, head, tokenizer.mask_token_id)
    wrapped = PretrainedTokenizer(tokenizer)
    prefix, notes = _conventions(hf_config, tokenizer, shape, head, config.forced_bos_id)
    name = name_or_path if not Path(name_or_path).expanduser().is_dir() else Path(name_or_path).expanduser().resolve().name
    return PretrainedBundle(network, wrapped, wrapped, str(folder), name, prefix, notes)


def _conventions(hf_config: Any, tokenizer: Any, shape: Architecture, head: str, forced_bos: int | None) -> tuple[str, list[str]]:
    """(the source prefix the model expects, notes on its conventions for the info panel)."""
    notes, prefix = [], ""
    tasks = getattr(hf_config, "task_specific_params", None) or {}
    for task, params in sorted(tasks.items()):
        if isinstance(params, dict) and params.get("prefix"):
            notes.append(f"task prefix for {task}: “{params['prefix'].strip()}” (type it before the sentence)")
            if not prefix and task.startswith("translation"):
                prefix = str(params["prefix"])
    codes = list(getattr(tokenizer, "supported_language_codes", None) or [])
    if codes:
        notes.append(
            f"target language token at the start of the source, one of {', '.join(codes[:8])}{'…' if len(codes) > 8 else ''}"
        )
        prefix = prefix or f"{codes[0]} "
    if forced_bos is not None:
        notes.append(f"the first target token is forced to “{tokenizer.convert_ids_to_tokens(forced_bos)}”, as its generation does")
    if shape == ENCODER_ONLY and head == "masked-lm":
        notes.append(f"type {tokenizer.mask_token} where a word should be guessed: its candidates are shown")
    if shape == DECODER_ONLY:
        notes.append("the text is a prompt: its tokens are given (marked as forced steps), then the model continues it")
    return prefix, notes


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:300]


def environment_summary() -> str:
    """Which transformers is installed, for messages and the benchmark."""
    transformers = require_transformers()
    return f"transformers {transformers.__version__}, torch {torch.__version__}, {os.cpu_count()} CPUs"
