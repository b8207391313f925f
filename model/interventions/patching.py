"""Activation patching: which activations carry the difference between a clean and a corrupted source.

The clean source is translated greedily; both sources are then decoded along that output (teacher-forced), so their
decoder inputs are the same and only what comes from the source differs. At one target ``step`` the metric is the
logit difference m = logit(clean next token) − logit(compared token), the compared token being the corrupted run's
own choice at that step unless one is given. A patched run's metric is reported normalised,
(m_patched − m_corrupted) / (m_clean − m_corrupted): 1 = the clean run's value, 0 = the corrupted run's.

* Denoising patches one clean activation into the corrupted run: the share of the clean behaviour it restores.
* Noising patches one corrupted activation into the clean run: 1 = no harm done, 0 = all of the clean behaviour lost.

Grids (each a ``PatchingGrid`` of rows × columns): every head's output, all positions, of encoder self-attention,
decoder self-attention and cross-attention (layers × heads); the residual stream at each source position (encoder:
the embeddings, then after each layer × positions) and at each target position up to the step (decoder); each
feed-forward block's output, all positions (layers × 1). Every cell is one row of a batch, so a whole set of grids
goes in as few batched passes as ``MAX_ROWS`` allows.

Attribution patching is the first-order preview (Nanda, "Attribution Patching", 2023; Syed et al. 2023): a cell's
patched metric is estimated as m_base + (donor activation − base activation) · ∂m/∂activation at the base run, with
one forward and one backward pass for every grid. It is exact wherever m is linear in the patched activation.

The app's Transformer and a pretrained encoder-decoder (hooked on the library's modules, model/interventions/
library.py) have the same hook points, so the same grids. A decoder-only model (model/interventions/decoder_library.py)
has no source: its prompts are the start of the decoder's inputs, so a clean and a corrupted prompt of equal length
are compared along the clean continuation, the decoder's inputs differ where the prompts do, and its grids are the
decoder's (its heads, its residual stream at every position, its feed-forward blocks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from model.family import Bundle
from model.interventions.hooked import InterventionError, Patch, adapter_of, hook_names
from model.interventions.patching_setup import GRADIENT_ROOTS, PairLabels, PatchingSetup, logit_difference, prepare_bundle_patching
from model.interventions.served_pass import run_hooked
from model.kinds import ShownName
from model.network import Network, stack_layers

DIRECTIONS = ("denoising", "noising")
METHODS = ("exact", "attribution")


class Component(ShownName):
    """What one grid patches; its value is the name shown and saved (a str: "cross heads")."""

    ENCODER_HEADS = "encoder heads"
    DECODER_HEADS = "decoder heads"
    CROSS_HEADS = "cross heads"
    ENCODER_RESIDUAL = "encoder residual"
    DECODER_RESIDUAL = "decoder residual"
    ENCODER_FEED_FORWARD = "encoder feed-forward"
    DECODER_FEED_FORWARD = "decoder feed-forward"

    @classmethod
    def parse(cls, name: str) -> Component:
        """The component named ``name``; an InterventionError (one line) naming the choices when none is."""
        try:
            return cls(name)
        except ValueError:
            raise InterventionError(f"a component is one of {', '.join(COMPONENTS)}, not {name!r}") from None

    @property
    def place(self) -> str:
        """Its name's first word: "encoder", "decoder" or "cross"."""
        return self.value.split(" ", 1)[0]

    @property
    def side(self) -> str:
        """The side whose hook points it patches: "encoder" or "decoder" (cross-attention is the decoder's)."""
        return "encoder" if self.value.startswith("encoder") else "decoder"

    @property
    def attention(self) -> str:
        """A head grid's attention in its hook names: "cross" or "self"."""
        return "cross" if self is Component.CROSS_HEADS else "self"

    @property
    def part(self) -> str:
        """What of each layer it patches: "heads", "residual" or "feed-forward"."""
        return self.value.split(" ", 1)[1]


COMPONENTS = tuple(Component)
MAX_ROWS = 256  # patched runs in one batch
LOGITS_BYTES = 2**28  # at most this much of a batch's logits [rows, T, V] at once (a 256k vocabulary's: a few rows)


@dataclass(frozen=True)
class Cell:
    """One patched activation: a hook, one of its heads (None: all) and one of its positions (None: all)."""

    hook: str
    head: int | None = None
    position: int | None = None


@dataclass
class PatchingGrid:
    """One component's grid: ``values[row, column]`` normalised (1 = the clean metric, 0 = the corrupted)."""

    component: Component
    values: np.ndarray  # [rows, columns] float32
    metrics: np.ndarray  # [rows, columns] the patched (or estimated) logit differences themselves
    rows: list[str]  # "L1", … or "embeddings", "after L1", …
    columns: list[str]  # "H1", …, position labels, or "all positions"


@dataclass
class PatchingResult:
    """Every grid of one patching run, with what was compared where."""

    method: str  # "exact" or "attribution"
    direction: str  # "denoising" or "noising"
    step: int  # the target step (from 0) whose next token is compared
    clean_id: int  # the clean run's next token at the step
    compared_id: int  # the token it is compared with (the corrupted run's choice unless given)
    clean_metric: float  # m in the clean run
    corrupted_metric: float  # m in the corrupted run
    labels: PairLabels  # the sources' and the decoder's pieces, and the two tokens compared
    grids: dict[Component, PatchingGrid] = field(default_factory=dict)


GridCells = tuple[list[str], list[str], list[list[Cell]]]  # (row labels, column labels, cells [rows][columns])


def _head_grid(model: Network, component: Component, n_layers: int) -> GridCells:
    prefix = component.side
    heads = range(adapter_of(model).head_count(prefix))
    cells = [[Cell(f"{prefix}.{layer}.{component.attention}.head_out", head) for head in heads] for layer in range(n_layers)]
    return [f"L{layer + 1}" for layer in range(n_layers)], [f"H{head + 1}" for head in heads], cells


def _residual_grid(n_layers: int, side: str, columns: list[str]) -> GridCells:
    hooks = [f"{side}.0.resid_pre"] + [f"{side}.{layer}.resid_post" for layer in range(n_layers)]
    cells = [[Cell(hook, None, position) for position in range(len(columns))] for hook in hooks]
    return ["embeddings"] + [f"after L{layer + 1}" for layer in range(n_layers)], columns, cells


def _first_hook(component: Component) -> str:
    """The hook point of the component's first cell: the model has the component where it has that point."""
    if component.part == "heads":
        return f"{component.side}.0.{component.attention}.head_out"
    return f"{component.side}.0.{'resid_pre' if component.part == 'residual' else 'mlp_out'}"


def components_of(model: Network) -> tuple[Component, ...]:
    """The grids ``model`` has (a decoder-only model's are the decoder's), in COMPONENTS' order."""
    names = set(hook_names(model))
    return tuple(component for component in COMPONENTS if _first_hook(component) in names)


def _apart(clean: list[str], corrupted: list[str]) -> list[str]:
    """Per position, the clean piece, or "clean/corrupted" where the two differ."""
    return [c if c == k else f"{c}/{k}" for c, k in zip(clean, corrupted)]


def grid_cells(setup: PatchingSetup, components: tuple[str, ...] | None = None) -> dict[Component, GridCells]:
    """Each component's (row labels, column labels, cells [rows][columns]); ``components`` by name (``Component``;
    None: every one the model has). An InterventionError (one line) for a component the model lacks."""
    model, labels, config = setup.model, setup.labels, setup.model.config
    positions = _apart(labels.clean, labels.corrupted)
    grids: dict[Component, GridCells] = {}
    has = components_of(model)
    for component in map(Component.parse, components if components is not None else has):
        if component not in has:
            raise InterventionError(f"this model has no {component} to patch: its grids are {', '.join(has)}")
        prefix = component.side
        n_layers = stack_layers(config, prefix)
        if component.part == "heads":
            grids[component] = _head_grid(model, component, n_layers)
        elif component.part == "residual":
            decoded = _apart(labels.target, labels.corrupted_target or labels.target)
            grids[component] = _residual_grid(n_layers, prefix, positions if prefix == "encoder" else decoded)
        else:  # feed-forward
            rows = [f"L{layer + 1}" for layer in range(n_layers)]
            grids[component] = (rows, ["all positions"], [[Cell(f"{prefix}.{layer}.mlp_out")] for layer in range(n_layers)])
    return grids


def _metric(setup: PatchingSetup, logits: torch.Tensor) -> torch.Tensor:
    """logits [B, V] at the step -> m [B]."""
    return logit_difference(logits, setup.clean_id, setup.compared_id)


def _row_patches(cells: list[Cell], donor: dict[str, torch.Tensor]) -> list[Patch]:
    """One Patch per hook for a batch whose row r patches cells[r] with the donor's activation."""
    masks: dict[str, torch.Tensor] = {}
    for row, cell in enumerate(cells):
        value = donor[cell.hook]  # [1, (H,) L, d_model]
        if cell.hook not in masks:
            masks[cell.hook] = torch.zeros((len(cells),) + value.shape[1:-1] + (1,), dtype=torch.bool, device=value.device)
        every = slice(None)
        head = () if value.dim() == 3 else (every if cell.head is None else cell.head,)
        masks[cell.hook][(row,) + head + (every if cell.position is None else cell.position,)] = True
    return [Patch(hook, donor[hook], mask=mask) for hook, mask in masks.items()]


def _sources(setup: PatchingSetup, direction: str) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """(the base run's source [1, S], its decoder inputs [1, step + 1], the donor's activations) for a direction."""
    if direction not in DIRECTIONS:
        raise InterventionError(f"the direction is one of {', '.join(DIRECTIONS)}, not {direction!r}")
    if direction == "denoising":
        return setup.corrupted_source, setup.corrupted_inputs, setup.clean_activations
    return setup.clean_source, setup.target_inputs, setup.corrupted_activations


def _shared_memory(setup: PatchingSetup, base: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor | None:
    """The base run's encoder output [1, S, d_model], which runs patching only the decoder read instead of each running
    the encoder again (the same memory; most of a long source's cost); None for a model without an encoder."""
    if "encoder.memory" not in hook_names(setup.model):
        return None
    return run_hooked(setup.model, base, inputs, output=False).memory  # [1, S, d_model]


def _patched_metrics(setup: PatchingSetup, cells: list[Cell], sources: tuple, memory: torch.Tensor | None) -> list[torch.Tensor]:
    """The metrics of ``cells``' patched runs, MAX_ROWS to a batch (fewer where their logits would pass LOGITS_BYTES),
    reading ``memory`` where given."""
    base, inputs, donor = sources
    per_row = max(inputs.shape[1] * setup.model.config.target_vocab_size * 4, 1)  # a row's float32 logits [T, V]
    batch = max(1, min(MAX_ROWS, LOGITS_BYTES // per_row))
    metrics = []
    for start in range(0, len(cells), batch):
        chunk = cells[start : start + batch]
        rows = len(chunk)
        shared = None if memory is None else memory.expand(rows, -1, -1)  # [rows, S, d_model]
        run = run_hooked(setup.model, base.expand(rows, -1), inputs.expand(rows, -1), patches=_row_patches(chunk, donor),
                         memory=shared)  # fmt: skip
        metrics.append(_metric(setup, run.logits(setup.model, setup.step)))  # [rows]
    return metrics


@torch.inference_mode()
def exact_metrics(setup: PatchingSetup, cells: list[Cell], direction: str) -> np.ndarray:
    """The metric of each cell's patched run [len(cells)]: the cells that patch only the decoder first, on the base
    run's encoder output computed once, then the others, each run whole."""
    sources = _sources(setup, direction)
    decoder_only = [index for index, cell in enumerate(cells) if cell.hook.startswith("decoder.")]
    others = [index for index, cell in enumerate(cells) if not cell.hook.startswith("decoder.")]
    memory = _shared_memory(setup, *sources[:2]) if decoder_only else None
    if memory is None:
        decoder_only, others = [], decoder_only + others
    metrics = _patched_metrics(setup, [cells[index] for index in decoder_only], sources, memory)
    metrics += _patched_metrics(setup, [cells[index] for index in others], sources, None)
    if not metrics:
        return np.zeros(0, np.float32)
    values = torch.cat(metrics).float().cpu().numpy()  # [cells] in the order measured
    ordered = np.empty_like(values)
    ordered[decoder_only + others] = values
    return ordered


def attribution_metrics(setup: PatchingSetup, cells: list[Cell], direction: str) -> np.ndarray:
    """Each cell's first-order estimate of its patched metric [len(cells)], from one forward and backward pass."""
    base_source, inputs, donor = _sources(setup, direction)
    hooks = sorted({cell.hook for cell in cells})
    names = set(hook_names(setup.model))
    roots = [root for root in GRADIENT_ROOTS if root in names]  # a decoder-only model has no encoder
    with torch.inference_mode(False), torch.enable_grad():
        run = run_hooked(setup.model, base_source, inputs, capture=hooks, gradient_roots=roots)
        base_metric = _metric(setup, run.logits(setup.model, setup.step)).sum()  # [] (one row)
        activations = [run.activations[hook] for hook in hooks]
        gradients = torch.autograd.grad(base_metric, activations, allow_unused=True)
    base_value = float(base_metric.detach())
    estimates = []
    for cell in cells:
        index = hooks.index(cell.hook)
        gradient = gradients[index]
        if gradient is None:  # the metric does not depend on it
            estimates.append(base_value)
            continue
        change = (donor[cell.hook] - activations[index].detach()) * gradient  # [1, (H,) L, d_model]
        if change.dim() == 4 and cell.head is not None:
            change = change[:, cell.head]
        if cell.position is not None:
            change = change[..., cell.position, :]
        estimates.append(base_value + float(change.sum()))
    return np.array(estimates, dtype=np.float32)


def patch_grids(
    setup: PatchingSetup, method: str = "exact", direction: str = "denoising", components: tuple[str, ...] | None = None
) -> PatchingResult:
    """Every grid of ``components`` (None: every one the model has) by ``method`` ("exact" or "attribution") in
    ``direction``."""
    if method not in METHODS:
        raise InterventionError(f"the method is one of {', '.join(METHODS)}, not {method!r}")
    grids = grid_cells(setup, components)
    flat = [cell for _, _, cells in grids.values() for row in cells for cell in row]
    measure: Callable[[PatchingSetup, list[Cell], str], np.ndarray] = exact_metrics if method == "exact" else attribution_metrics
    metrics = measure(setup, flat, direction)  # [cells]
    span = setup.clean_metric - setup.corrupted_metric
    result = PatchingResult(
        method, direction, setup.step, setup.clean_id, setup.compared_id, setup.clean_metric, setup.corrupted_metric, setup.labels
    )
    start = 0
    for component, (rows, columns, _) in grids.items():
        grid_metrics = metrics[start : start + len(rows) * len(columns)].reshape(len(rows), len(columns))
        start += grid_metrics.size
        values = ((grid_metrics - setup.corrupted_metric) / span).astype(np.float32)
        result.grids[component] = PatchingGrid(component, values, grid_metrics, rows, columns)
    return result


def activation_patching(
    bundle: Bundle, clean_text: str, corrupted_text: str, step: int | None = None, direction: str = "denoising"
) -> PatchingResult:
    """Every grid, exactly, for two sentences (see the module's docstring)."""
    return patch_grids(prepare_bundle_patching(bundle, clean_text, corrupted_text, step), "exact", direction)


def attribution_patching(
    bundle: Bundle, clean_text: str, corrupted_text: str, step: int | None = None, direction: str = "denoising"
) -> PatchingResult:
    """Every grid by the first-order estimate, for two sentences (see the module's docstring)."""
    return patch_grids(prepare_bundle_patching(bundle, clean_text, corrupted_text, step), "attribution", direction)
