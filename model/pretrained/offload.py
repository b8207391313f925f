"""Models larger than the memory available: a Hugging Face folder opened with its layers offloaded by ``accelerate``.

The plan is the library's own mechanism (accelerate's ``device_map``, ``max_memory`` and offload folder), with one
rule of ours: everything that is not one of the model's layers (the embeddings, the final norms, the output layer:
what the tools read outside the pass, such as the logit lens's unembedding) stays on the first device; the layers
fill the memory left in order (a GPU first where there is one, then CPU memory) and the rest are **streamed from
disk**: accelerate's hooks load a layer's weights just before it runs and drop them after, so every hook of the
hooked pass fires where its module runs, with its weights in place. Safetensors weights are read in place from the
folder's own files (converted to the type analysed as each layer loads); pickled ``.bin`` weights are first written
into a temporary offload folder (removed when the process ends), which is checked first: a folder that cannot be
written or a disk without room for the offloaded layers is one line.

``parse_memory("6GB")`` reads a size as accelerate does (GB = 10⁹ bytes, GiB = 2³⁰). ``OffloadPlan.describe()`` is the
line the status bar and the CLI print; ``resident(module)`` holds an offloaded layer's weights in place while code
outside the pass reads them (a layer's norms or projections).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch

from model.pretrained.hub import PretrainedError

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
UNITS |= {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
PRECISION = {  # what a number computed in the type can be trusted to (float32: the references' 1e-5)
    torch.float32: "float32",
    torch.float16: "float16: about 3 significant digits (relative error up to ~1e-3)",
    torch.bfloat16: "bfloat16: about 2 significant digits (relative error up to ~1e-2)",
}
STACK_LISTS = ("layers", "layer", "h", "block")  # the names the library's stacks give their lists of layers
M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 4 * 2**20  # glibc's mallopt option, and blocks from 4 MiB mapped on their own
FREED_FROM = 2**30  # streamed from disk at each pass: from here freed blocks go back (page faults cost less than that)
RESERVE = 0.15  # of the memory budget left for activations, the tokenizer and the app itself


class OffloadError(PretrainedError):
    """A model that cannot be offloaded as asked: one line saying why."""


def parse_memory(text: str) -> int:
    """Bytes of a size such as "6GB", "6 GiB", "512MB" or "8G"; an OffloadError for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B?)\s*", text.upper())
    if not match or match.group(2) not in UNITS:
        raise OffloadError(f"--max-memory {text!r}: give a size such as 6GB, 6GiB or 512MB")
    value = float(match.group(1)) * UNITS[match.group(2)]
    if value < 1:
        raise OffloadError(f"--max-memory {text}: give a size above zero, such as 6GB")
    return int(value)


def parse_dtype(name: str | None) -> torch.dtype:
    """The type analysed in (float32 unless asked); an OffloadError naming the choices."""
    if name is None:
        return torch.float32
    if name not in DTYPES:
        raise OffloadError(f"--dtype {name}: choose one of {', '.join(DTYPES)}")
    return DTYPES[name]


def precision_note(dtype: torch.dtype) -> str:
    """What a number computed in ``dtype`` is good to, said beside results."""
    return PRECISION[dtype]


def size_text(n_bytes: float) -> str:
    """A size as people read it: GiB, MiB below one GiB, KiB below one MiB."""
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.1f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB" if n_bytes >= 2**20 else f"{n_bytes / 2**10:.0f} KiB"


@dataclass
class MemoryOptions:
    """How a Hugging Face folder is opened: the type analysed, the memory its weights may take, where converted
    weights of offloaded layers go (``--dtype``, ``--max-memory``, ``--offload-folder``)."""

    max_memory: int | None = None  # bytes (None: what is available)
    dtype: torch.dtype = torch.float32
    offload_folder: str | None = None  # None: the system's temporary folder
    report: Callable[[str], None] | None = None  # told the plan of each model offloaded (the CLI prints it)
    # each network offloaded under these options: its decoding steps' durations (the list it keeps them in; never the
    # network itself, which the window replaces as it opens others)
    opened: list[list[float]] = field(default_factory=list)

    @classmethod
    def parse(cls, max_memory: str | None = None, dtype: str | None = None, folder: str | None = None,
              report: Callable[[str], None] | None = None) -> MemoryOptions:  # fmt: skip
        """From the command line's words; an OffloadError (one line) for a size or type it cannot read."""
        return cls(None if max_memory is None else parse_memory(max_memory), parse_dtype(dtype), folder, report)

    def step_costs(self) -> list[str]:
        """A line for each offloaded network that decoded steps: what a step cost (the command line prints them)."""
        lines = []
        for seconds in self.opened:
            if seconds:
                mean = sum(seconds) / len(seconds)
                lines.append(f"offloaded model: a decoding step took {mean:.2f} s (the last {len(seconds)} steps)")
        return lines

    def notes(self, plan: OffloadPlan | None) -> list[str]:
        """The info panel's lines: the plan, and the precision of a 16-bit analysis."""
        notes = [] if plan is None else [plan.describe()]
        if self.dtype != torch.float32:
            notes.append(f"analysed in {precision_note(self.dtype)}: every number it shows is that precise")
        return notes


OPENING: ContextVar[MemoryOptions | None] = ContextVar("memory options", default=None)


@contextlib.contextmanager
def opening(options: MemoryOptions) -> Iterator[None]:
    """While the block runs, a Hugging Face folder opened without options of its own is opened with ``options`` (the
    command line's ``--max-memory``, ``--dtype`` and ``--offload-folder``, for whichever command opens it)."""
    token = OPENING.set(options)
    try:
        yield
    finally:
        OPENING.reset(token)


PROCESS_DEFAULT: list[MemoryOptions] = [MemoryOptions()]  # the window's, for every thread (a ContextVar is per thread)


def set_process_default(options: MemoryOptions) -> None:
    """Every Hugging Face folder this process opens (in any thread: the window opens models in jobs) is opened with
    ``options`` unless ``opening`` says otherwise (``transformer-explorer FOLDER --max-memory 6GB``)."""
    PROCESS_DEFAULT[0] = options


def current_options() -> MemoryOptions:
    """The options in force (``opening``), else the process's (``set_process_default``): float32, the memory available."""
    return OPENING.get() or PROCESS_DEFAULT[0]


@dataclass
class OffloadPlan:
    """Where each part of a model lives: accelerate's ``device_map`` and what it means for a user."""

    device_map: dict[str, Any]
    budget: int  # bytes of (CPU) memory the weights may take
    folder: Path | None  # where converted weights are written (None: read from the model's own files)
    n_layers: int
    layers_on: dict[str, int] = field(default_factory=dict)  # device -> layers placed there ("disk" included)
    resident_bytes: int = 0  # weights kept in memory
    disk_bytes: int = 0  # weights streamed from disk at each pass

    @property
    def offloaded(self) -> bool:
        return self.layers_on.get("disk", 0) > 0

    def short(self) -> str:
        """A few words for the status bar: how many layers run from disk."""
        return f"offloaded, {self.layers_on.get('disk', 0)} of {self.n_layers} layers streamed from disk"

    def from_pretrained_arguments(self) -> dict[str, Any]:
        """What ``from_pretrained`` is given to place the model so (accelerate's dispatch)."""
        arguments: dict[str, Any] = {"device_map": self.device_map, "low_cpu_mem_usage": True}
        if self.folder is not None:
            arguments |= {"offload_folder": str(self.folder), "offload_state_dict": True}
        return arguments

    def describe(self) -> str:
        """One line: how many layers run from where, and what stays in memory."""
        placed = ", ".join(f"{count} in {'GPU' if device not in ('cpu', 'disk') else 'CPU'} memory"
                           for device, count in self.layers_on.items() if device != "disk" and count)  # fmt: skip
        on_disk = self.layers_on.get("disk", 0)
        return (
            f"offloaded: {on_disk} of {self.n_layers} layers streamed from disk as they run ({size_text(self.disk_bytes)})"
            f"{', ' + placed if placed else ''}; {size_text(self.resident_bytes)} of weights in memory "
            f"(budget {size_text(self.budget)})"
        )


def require_accelerate() -> Any:
    try:
        # deferred: the optional "large" extra, imported only when a model is offloaded
        import accelerate  # type: ignore[import-untyped]
    except ImportError:
        raise OffloadError(
            "opening a model larger than memory needs accelerate: pip install 'transformer-explorer[large]'"
        ) from None
    return accelerate


def _layer_names(network: torch.nn.Module, layers: list[torch.nn.Module] | None = None) -> list[str]:
    """The model's layers, in order, by name: ``layers`` where its family's layout names them (model/pretrained/layouts.py);
    else the library's own declaration, its modules of the classes it never splits, or, where it names none, the items
    of its stacks' module lists (``layers``, ``layer``, ``h``, ``block``)."""
    if layers is not None:
        named = {id(module): name for name, module in network.named_modules()}
        return [named[id(layer)] for layer in layers]
    classes = set(getattr(network, "_no_split_modules", None) or [])
    names: list[str] = []
    for name, module in network.named_modules():
        if any(name.startswith(f"{kept}.") for kept in names):
            continue
        if type(module).__name__ in classes:
            names.append(name)
        elif not classes and isinstance(module, torch.nn.ModuleList) and name.rpartition(".")[2] in STACK_LISTS:
            names += [f"{name}.{index}" for index in range(len(module))]
    return names


def plan_offload(meta_network: torch.nn.Module, dtype: torch.dtype, budget: int, first_device: str = "cpu",
                 gpu_budget: int = 0, layer_modules: list[torch.nn.Module] | None = None) -> OffloadPlan:  # fmt: skip
    """The device map of a model (built on the meta device) whose weights in ``dtype`` get ``budget`` bytes of CPU
    memory (and ``gpu_budget`` of the GPU ``first_device`` where it is one): what is not a layer on the first device,
    the layers (``layer_modules``, its layout's; or the library's declaration) in order on the GPU while it has room,
    then in CPU memory, the rest on disk."""
    sizes = _module_sizes(meta_network, dtype)
    layers = _layer_names(meta_network, layer_modules)
    if not layers:
        raise OffloadError(f"{type(meta_network).__name__}: the library names no layers to offload for this model")
    inside = tuple(f"{name}." for name in layers)
    non_layer = sum(_bytes(t, dtype) for name, t in [*meta_network.named_parameters(), *meta_network.named_buffers()]
                    if not name.startswith(inside))  # fmt: skip
    rooms = ([(first_device, gpu_budget - non_layer)] if first_device != "cpu" else []) + [
        ("cpu", int(budget * (1 - RESERVE)) - (non_layer if first_device == "cpu" else 0))
    ]
    if first_device == "cpu" and rooms[0][1] < 0:
        raise OffloadError(
            f"the model's embeddings and output layer alone take {size_text(non_layer)}, more than the memory given "
            f"({size_text(budget)}): give more with --max-memory"
        )
    device_map: dict[str, Any] = {}
    layers_on: dict[str, int] = {}
    room_index, used = 0, 0
    for name in layers:
        while room_index < len(rooms) and used + sizes[name] > rooms[room_index][1]:
            room_index, used = room_index + 1, 0
        device = rooms[room_index][0] if room_index < len(rooms) else "disk"
        used += sizes[name] if device != "disk" else 0
        device_map[name] = device
        layers_on[device] = layers_on.get(device, 0) + 1
    for name in _non_layer_modules(meta_network, layers):
        device_map[name] = first_device
    disk = sum(sizes[name] for name in layers if device_map[name] == "disk")
    resident_bytes = non_layer + sum(sizes[name] for name in layers if device_map[name] != "disk")
    return OffloadPlan(device_map, budget, None, len(layers), layers_on, resident_bytes, disk)


LayoutLayers = Callable[[Any, str], list[torch.nn.Module] | None]  # (a library model, its model type) -> its layers


def plan_for(transformers: Any, hf_config: Any, auto_class: str, options: MemoryOptions, budget: int, device: str,
             in_place: bool, layout_layers: LayoutLayers | None = None) -> OffloadPlan:  # fmt: skip
    """The plan for a folder's model (its config, the auto class that builds it) under ``budget`` bytes of CPU memory
    (and the GPU's free memory when ``device`` is one); where layers go to disk and their weights cannot be read in
    place (``in_place``: safetensors files), an offload folder is made for them. ``layout_layers``: the layers as the
    family's layout names them (model/pretrained/networks.py; None where its layout is not served)."""
    accelerate = require_accelerate()
    with accelerate.init_empty_weights():  # shapes only: nothing allocated
        meta_network = getattr(transformers, auto_class).from_config(hf_config, dtype=options.dtype)
    meta_network.tie_weights()  # a tied embedding and output layer counted once, as loading ties them
    gpu_budget = int(torch.cuda.mem_get_info(torch.device(device))[0] * (1 - RESERVE)) if device != "cpu" else 0
    layers = None if layout_layers is None else layout_layers(meta_network, hf_config.model_type)  # the family's
    plan = plan_offload(meta_network, options.dtype, budget, device, gpu_budget, layers)
    if plan.offloaded:
        plan.folder = None if in_place else offload_folder(options.offload_folder, plan.disk_bytes)
        if plan.disk_bytes >= FREED_FROM:
            return_freed_memory()  # the layers streamed through memory give it back after each pass
    return plan


def _bytes(tensor: torch.Tensor, dtype: torch.dtype) -> int:
    """What ``tensor`` takes once loaded in ``dtype`` (a floating tensor is converted; others keep their type)."""
    return tensor.numel() * (dtype.itemsize if tensor.is_floating_point() else tensor.element_size())


def _module_sizes(network: torch.nn.Module, dtype: torch.dtype) -> dict[str, int]:
    """Bytes of each module's parameters and buffers in ``dtype`` (a tied weight once), by module name ("": all).
    (accelerate's ``compute_module_sizes`` counts a float32 analysis of float16 weights at 2 bytes a value.)"""
    sizes: dict[str, int] = {}
    for name, tensor in [*network.named_parameters(), *network.named_buffers()]:
        parts = name.split(".")[:-1]
        for end in range(len(parts) + 1):
            prefix = ".".join(parts[:end])
            sizes[prefix] = sizes.get(prefix, 0) + _bytes(tensor, dtype)
    return sizes


def _non_layer_modules(network: torch.nn.Module, layers: list[str]) -> list[str]:
    """The modules that hold the parameters and buffers outside every layer, each named once (a tied weight under
    every name: accelerate checks that its names share a device)."""
    inside = tuple(f"{name}." for name in layers)
    owners: list[str] = []
    for name, _ in [*network.named_parameters(remove_duplicate=False), *network.named_buffers()]:
        if name.startswith(inside):
            continue
        owner = name.rpartition(".")[0] or name  # a tensor of the model itself (BART's final_logits_bias): its own name
        if owner not in owners:
            owners.append(owner)
    return owners


def offload_folder(base: str | Path | None, needed: int) -> Path:
    """A new folder for converted weights under ``base`` (the system's temporary folder by default), removed when
    the process ends; an OffloadError when it cannot be written or its disk has less than ``needed`` bytes free."""
    root = Path(base).expanduser() if base else Path(tempfile.gettempdir())
    try:
        root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="transformer-explorer-offload-", dir=root))
    except OSError as error:
        raise OffloadError(f"{root}: the offload folder cannot be written ({error.strerror or error}); "
                           "choose another with --offload-folder") from None  # fmt: skip
    free = shutil.disk_usage(folder).free
    if free < needed:
        shutil.rmtree(folder, ignore_errors=True)
        raise OffloadError(
            f"{root}: the offload folder's disk has {size_text(free)} free and the offloaded layers need {size_text(needed)}; "
            "free some room or choose another disk with --offload-folder"
        )
    atexit.register(shutil.rmtree, folder, True)
    return folder


def take_turns(modules: list[torch.nn.Module]) -> None:
    """Passes through ``modules`` (an offloaded model and its stacks) take turns, one thread at a time: accelerate's
    hooks put a layer's weights in place and take them away around each run, which two threads at once would undo
    under each other. A job shares the window's offloaded model (no copy of its weights), so a step decoded while a
    job runs waits for the job's pass."""
    turn = threading.RLock()
    for module in modules:
        forward = module.forward

        def in_turn(*args: Any, _forward: Any = forward, **kwargs: Any) -> Any:
            with turn:
                return _forward(*args, **kwargs)

        module.forward = in_turn


def return_freed_memory() -> bool:
    """From now on in this process, blocks of MMAP_THRESHOLD bytes or more are each mapped on their own and given back
    to the system when freed (glibc's ``mallopt(M_MMAP_THRESHOLD)``). An offloaded model's layers pass through memory
    at every pass, 17 MB a weight at NLLB-3.3B's size; glibc's threshold otherwise grows to 32 MB after the first such
    block is freed, and the freed weights then stay in its heap: the process's resident memory grew by 3.3 GB in one
    patching setup (8.8 GB, against 5.9 GB with this). True where it took effect (Linux with glibc)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):  # not glibc: its allocator is its own
        return False


@contextlib.contextmanager
def quiet_dispatch() -> Iterator[None]:
    """accelerate's own warning that offloaded weights are on the meta device is not for users (the plan's line says
    where each layer is): held back while a model is placed."""
    logger = logging.getLogger("accelerate.big_modeling")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def is_offloaded(module: torch.nn.Module) -> bool:
    """Whether any of ``module``'s weights live on disk or another device until it runs (accelerate's hooks)."""
    return any(hasattr(part, "_hf_hook") for part in module.modules())


def tensor_of(module: torch.nn.Module, name: str) -> torch.Tensor | None:
    """``module``'s own parameter or buffer ``name`` with its values (None where it has none): read from the
    offloaded weights (disk or CPU) when the module keeps only its shape until it runs, as code outside the pass
    that reads a layer's norm or projection needs."""
    tensor = getattr(module, name, None)
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "meta":
        return tensor
    hook = getattr(module, "_hf_hook", None)
    weights = getattr(hook, "weights_map", None)
    if weights is None:
        raise OffloadError(f"{type(module).__name__}.{name}: offloaded, and its hook keeps no weights to read it from")
    device = getattr(hook, "execution_device", None) or "cpu"
    return torch.as_tensor(weights[name]).to(device)


def parameters_with_values(network: Any) -> Iterator[torch.Tensor]:
    """Every parameter of ``network`` in its own order, each with its values (``tensor_of``), one at a time. Only an
    offloaded network (a pretrained one: its ``module_tree()`` holds its modules) keeps parameters without values."""
    if not any(param.device.type == "meta" for param in network.parameters()):
        yield from network.parameters()
        return
    tree = network.module_tree()
    owners = {id(param): (module, local) for module in tree.modules() for local, param in module.named_parameters(recurse=False)}
    for param in network.parameters():
        module, local = owners[id(param)]
        yield param if param.device.type != "meta" else cast(torch.Tensor, tensor_of(module, local))


@contextlib.contextmanager
def resident(module: torch.nn.Module) -> Iterator[None]:
    """While the block runs: ``module``'s weights in place even where it is offloaded (the offloaded layer that holds
    it loaded, as when it runs); nothing to do for a model in memory."""
    accelerate = require_accelerate() if is_offloaded(module) else None
    if accelerate is None:
        yield
        return
    with accelerate.utils.align_module_device(module):
        yield


os.environ.setdefault("ACCELERATE_DISABLE_RICH", "1")  # plain messages, never rich's terminal codes
