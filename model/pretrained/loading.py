"""Opening a pretrained model safely: offline, eager attention, float32, never anyone's code.

- weights: safetensors are preferred; pickled ``.bin`` files are first read by ``torch.load(weights_only=True)``
  (which refuses any pickle that would build objects or call functions) and then handed to the library,
  which also loads them ``weights_only``; a payload is refused with a message and never runs;
- ``trust_remote_code`` is never enabled: a model that needs its own Python code is refused;
- checks: every file is checked before the library reads it (validation.py, weights.py): a damaged or
  edited folder gets one message naming its file, never a traceback;
- memory: the parameters are counted from the weight files' headers and from what the config would
  build, before anything is built; a model that would not fit in the memory available (or in ``--max-memory``) is
  opened with its layers offloaded by accelerate (model/pretrained/offload.py), and refused with the figures where
  even that cannot be; ``--dtype`` analyses a 16-bit model in its own type (float32 otherwise);
- attention: ``attn_implementation="eager"``, because the fused SDPA and flash paths return no weights.
"""

from __future__ import annotations

import os
import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

import model.pretrained.families  # noqa: F401 - registers the pretrained families: whoever opens a folder has them
from model.family import Architecture, Family, family_of
from model.pretrained.config import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY, PretrainedConfig, read_config
from model.pretrained.hub import PretrainedError, require_transformers, resolve_pretrained, weight_files
from model.pretrained.languages import check_code, code_id, language_codes
from model.pretrained.networks import DecoderNetwork, EncoderNetwork, PretrainedNetwork, Seq2SeqNetwork
from model.pretrained.offload import MemoryOptions, OffloadPlan, current_options, plan_for, quiet_dispatch, size_text, take_turns
from model.pretrained.tokenizer import PretrainedTokenizer
from model.pretrained.validation import (
    check_config,
    check_layers,
    check_tokenizer,
    check_tokenizer_files,
    config_parameters,
    read_json_files,
)
from model.pretrained.weights import layer_stacks, read_safetensors

COMMON: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False}  # never the network, never their code
HALF_TYPES = ("F16", "BF16", "FLOAT16", "BFLOAT16")  # safetensors' and torch's names of 16-bit weights
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
        return (  # how it is held first: on a narrow status bar the sizes are what is cut
            f"{self.name}{self.memory_note()}: {self.config.describe()}, {self.model.parameter_count():,} parameters, "
            f"{self.config.attention_implementation} attention, {self.source_tokenizer.name}"
        )

    def memory_note(self) -> str:
        """Empty for a model in memory analysed in float32; else how it is held and computed, and what a step costs."""
        notes = [] if self.config.offload is None else [self.config.offload.short()]
        if self.config.dtype is not None and self.config.dtype != torch.float32:
            notes.append(f"computed in {str(self.config.dtype).removeprefix('torch.')}")
        cost = self.model.step_cost() if notes else None
        if cost is not None:
            notes.append(f"a decoding step takes {cost:.2f} s")
        return f" ({', '.join(notes)})" if notes else ""

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

    @property
    def languages(self) -> list[str]:
        """The language codes the model reads and writes (NLLB's, M2M100's, mBART-50's); [] for a monolingual one."""
        return language_codes(self.source_tokenizer.tokenizer)

    @property
    def source_language(self) -> str | None:
        return str(self.source_tokenizer.tokenizer.src_lang) if self.languages else None

    @property
    def target_language(self) -> str | None:
        """The language whose code decoding forces first (the generation config's, or the one chosen)."""
        forced = self.config.forced_bos_id
        tokenizer = self.target_tokenizer.tokenizer
        return next((code for code in self.languages if forced is not None and code_id(tokenizer, code) == forced), None)

    def choose_languages(self, source: str | None = None, target: str | None = None) -> None:
        """Read ``source`` (its code marks the input) and write ``target`` (its code is forced first); None keeps
        that side. A UserError (one line) for a code the model does not have, or a model with none."""
        codes = self.languages
        for code, side in ((source, "source"), (target, "target")):
            if code is not None:
                check_code(codes, code, side)
        if source is not None:
            self.source_tokenizer.tokenizer.src_lang = source
        if target is not None:
            self.config.forced_bos_id = code_id(self.target_tokenizer.tokenizer, target)
            if hasattr(self.target_tokenizer.tokenizer, "tgt_lang"):
                self.target_tokenizer.tokenizer.tgt_lang = target

    def target_ids(self, text: str) -> list[int]:
        """The decoder start, the forced first token (a language code) where generation forces one, the target's
        pieces cut to fit, EOS: what the library's ``labels`` shifted right are, and what decoding starts from."""
        start = [self.config.bos_id] + ([] if self.config.forced_bos_id is None else [self.config.forced_bos_id])
        return start + self.target_tokenizer.encode(text)[: self.config.max_len - len(start) - 1] + [self.config.eos_id]

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


def _read_weights(folder: Path) -> tuple[int, list[str], set[str]]:
    """(values the weight files hold, their tensors' names, the types they are stored in: "F16", "BF16", "F32" or
    torch's names); refuses a damaged safetensors file and a pickle payload."""
    files = weight_files(folder)
    if not files:
        raise PretrainedError(f"{folder}: no weights (model.safetensors or pytorch_model.bin) in the folder")
    safetensors = [read_safetensors(p) for p in files if p.suffix == ".safetensors"]
    if safetensors:
        entries = [entry for tensors in safetensors for entry in tensors.values()]
        return sum(t.values for t in entries), [n for tensors in safetensors for n in tensors], {t.dtype for t in entries}
    values, names, stored = 0, [], set()
    for path in files:
        try:  # only tensors, numbers and plain containers: any other pickle opcode is refused before it runs
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise PretrainedError(
                f"{path.name}: refused — it is a pickle that asks to run code or build objects, not plain weights "
                f"({first[:200]}). The app loads .bin weights only as plain tensors; use the model's safetensors weights."
            ) from None
        tensors = {str(k): t for k, t in state.items() if isinstance(t, torch.Tensor)} if isinstance(state, dict) else {}
        values += sum(t.numel() for t in tensors.values())
        names += list(tensors)
        stored |= {str(t.dtype).removeprefix("torch.") for t in tensors.values()}
    return values, names, stored


def check_weights(folder: Path, hf_config: Any, shape: Architecture) -> tuple[int, set[str]]:
    """(the float32 bytes the model needs, from its weights and from what its config would build; the types its weights
    are stored in); refuses damaged weights, a pickle payload and a config whose layers are not the weights'."""
    values, names, stored = _read_weights(folder)
    files = weight_files(folder)
    check_layers(hf_config, shape, layer_stacks(names), files[0].name if len(files) == 1 else f"{len(files)} weight files")
    return 4 * max(values, config_parameters(hf_config, shape)), stored


NETWORKS: dict[Architecture, type[PretrainedNetwork]] = {  # the family's network of each shape
    ENCODER_DECODER: Seq2SeqNetwork,
    DECODER_ONLY: DecoderNetwork,
    ENCODER_ONLY: EncoderNetwork,
}


def fits_in_memory(needed: int, options: MemoryOptions) -> bool:
    """Whether weights of ``needed`` bytes (in the type analysed) fit in what is given (``--max-memory``) or available."""
    if options.max_memory is not None:
        return needed <= options.max_memory
    free = available_memory()
    return free is None or needed * MEMORY_MARGIN <= free


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


def _open_config(folder: Path, name: str, transformers: Any) -> tuple[Any, Architecture, str, str]:
    """(the transformers config, shape, auto class, head), every JSON file of the folder and the config checked."""
    files = read_json_files(folder)
    if "config.json" not in files:
        raise PretrainedError(f"{name}: a folder without a config.json, so not a saved pretrained model")
    try:
        hf_config = transformers.AutoConfig.from_pretrained(folder, **COMMON)
    except (ValueError, KeyError, OSError, TypeError, AttributeError) as error:
        raise PretrainedError(f"{name}: its config.json cannot be used ({_first_line(error)})") from None
    check_config(files, hf_config)
    shape, auto_class, head = _shape_and_class(hf_config)
    return hf_config, shape, auto_class, head


def _open_tokenizer(folder: Path, name: str, transformers: Any, vocab_size: int) -> Any:
    check_tokenizer_files(folder)
    try:
        with warnings.catch_warnings():  # "install sacremoses" and the like: advice for the library's developers
            warnings.simplefilter("ignore")
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **COMMON)
    except (ValueError, KeyError, OSError, TypeError, ImportError) as error:
        raise PretrainedError(f"{name}: its tokenizer cannot be opened ({_first_line(error)})") from None
    check_tokenizer(tokenizer, folder, vocab_size)
    return tokenizer


def _open_model(folder: Path, name: str, transformers: Any, hf_config: Any, auto_class: str, options: MemoryOptions,
                offload: OffloadPlan | None) -> Any:  # fmt: skip
    placement = {} if offload is None else offload.from_pretrained_arguments()
    try:
        with warnings.catch_warnings(), quiet_dispatch():
            warnings.simplefilter("ignore")
            return getattr(transformers, auto_class).from_pretrained(
                folder, attn_implementation="eager", dtype=options.dtype, weights_only=True, use_safetensors=None,
                **placement, **COMMON,
            )  # fmt: skip
    except (ValueError, KeyError, OSError, RuntimeError, TypeError, pickle.UnpicklingError, SafetensorError) as error:
        if offload is not None:  # the library could not place it so: a model in memory opens, this one cannot be offloaded
            raise PretrainedError(
                f"{name}: its layers could not be offloaded ({_first_line(error)}); open it with more memory "
                f"(--max-memory above {offload.resident_bytes + offload.disk_bytes:,} bytes)"
            ) from None
        raise PretrainedError(
            f"{name}: the app has no implementation for this model ({hf_config.model_type}, "
            f"{auto_class}), or its weights do not fit its config ({_first_line(error)})"
        ) from None


def _placement(folder: Path, name: str, transformers: Any, hf_config: Any, shape: Architecture, auto_class: str,
               needed: int, options: MemoryOptions, device: str | torch.device) -> OffloadPlan | None:  # fmt: skip
    """None when the model fits in memory (or on the device); else the offloading plan, or a PretrainedError with the
    figures where no plan can be made."""
    in_type = needed * options.dtype.itemsize // 4
    if str(device) == "cpu":
        if fits_in_memory(in_type, options):
            return None
    elif options.max_memory is None and in_type * MEMORY_MARGIN <= torch.cuda.mem_get_info(torch.device(device))[0]:
        return None  # it fits on the GPU: moved there whole
    free = available_memory()
    budget = options.max_memory if options.max_memory is not None else int((free or 0) / MEMORY_MARGIN)
    try:
        in_place = all(path.suffix == ".safetensors" for path in weight_files(folder))  # read where they are
        plan = plan_for(transformers, hf_config, auto_class, options, budget, str(device), in_place, NETWORKS[shape].layout_layers)
    except PretrainedError as error:
        asked = options.max_memory is not None
        given = f"--max-memory {size_text(budget)}" if asked else f"{size_text(free or 0)} free"
        raise PretrainedError(
            f"{name}: too large for the memory available — it needs about {size_text(in_type * MEMORY_MARGIN)} in "
            f"{str(options.dtype).removeprefix('torch.')}, and {given}; {error}"
        ) from None
    return plan if plan.offloaded or str(device) != "cpu" else None  # every layer fits after all: opened as usual


def load_pretrained(name_or_path: str, device: str | torch.device = "cpu", memory: MemoryOptions | None = None) -> PretrainedBundle:
    """Open a save_pretrained folder or a cached model id; a PretrainedError (never a traceback) when it cannot:
    each file is checked before the library reads it (model/pretrained/validation.py, weights.py). ``memory``: the
    type analysed, and the memory the weights may take (beyond it, their layers are offloaded: offload.py)."""
    options = memory or current_options()
    transformers = require_transformers()
    folder = resolve_pretrained(name_or_path)
    hf_config, shape, auto_class, head = _open_config(folder, name_or_path, transformers)
    needed, stored = check_weights(folder, hf_config, shape)
    vocab_size = int(getattr(hf_config, "vocab_size", None) or 0)
    tokenizer = _open_tokenizer(folder, name_or_path, transformers, vocab_size or 2**62)
    offload = _placement(folder, name_or_path, transformers, hf_config, shape, auto_class, needed, options, device)
    hf_model = _open_model(folder, name_or_path, transformers, hf_config, auto_class, options, offload)
    if offload is None:
        hf_model.to(device)
    else:
        stacks = (getattr(hf_model, name, None) for name in ("get_encoder", "get_decoder"))
        take_turns([hf_model, *(stack() for stack in stacks if stack is not None)])
    hf_model.eval()
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
    config.offload, config.dtype = offload, options.dtype
    config.reads_masks = shape == ENCODER_ONLY and head == "masked-lm" and tokenizer.mask_token_id is not None
    config.classifies = shape == ENCODER_ONLY and head in ("sequence-classification", "token-classification")
    network: Any = NETWORKS[shape].of_library_model(hf_model, config, head, tokenizer.mask_token_id)
    wrapped = PretrainedTokenizer(tokenizer)
    prefix, notes = _conventions(hf_config, tokenizer, shape, head, config.forced_bos_id)
    halves = sorted(kind for kind in stored if kind.upper() in HALF_TYPES)
    if halves and options.dtype == torch.float32:  # opened in float32 all the same: exact analyses, twice the memory
        notes.append(
            f"its weights are stored in {', '.join(halves)}: opened in float32 for exact analysis ({needed / 2**30:.2f} GiB)"
        )
    notes += options.notes(offload)
    if offload is not None:
        options.opened.append(network.step_seconds)
        if options.report is not None:
            options.report(f"{name_or_path}: {offload.describe()}")
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
