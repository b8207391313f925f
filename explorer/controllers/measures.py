"""What the attention views show: raw weights or a contribution measure, computed off the window's thread.

The Explore tab's "Reading" box sets the measure here. Each time the Explore controller publishes a trace, the
measure of that decoding is looked up or computed in a job of the runner's "measure" channel (the newest request
supersedes the older, which stops at its next part; a job starts once the one it supersedes has ended); ``changed``
tells the views to draw again, ``busy`` what is being computed. Views then ask ``shown(trace)`` for the measured
trace (model/attribution/measures.py): the shares of the measure in place of the weights, or None while it is
being computed. ``availability(kind)`` says which measures the model defines for a kind (the Reading box's items).

Every measure reads the decoding the Explore tab shows (explorer/controllers/followed.py): its source ids, its output
tokens (forced, a beam hypothesis, sampled) and the model that decoded them (heads knocked out as the trace records
them); the views level it to words as they level the weights.

Saliency rows (gradient × input, integrated gradients) depend only on the prefix they predict from, so they are
kept per prefix: stepping forward computes one new row, and the current step's row is computed first and shown
before the others. The contrastive saliency ("why this token and not that one") runs on the "contrast" channel.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from psygnal import Signal

from explorer.controllers.explore import ExploreController
from explorer.controllers.followed import followed_decoding
from explorer.controllers.runner import LOG, Job, Runner, user_message
from model.attribution.gradients import saliency
from model.attribution.measures import MEASURES, NAMES, MeasureResult, compute_measure, measured_trace, merge_rows, unsupported
from model.decoding.trace import Trace
from model.family import capabilities_of
from model.kinds import AttentionKind

CACHE_SIZE = 64  # measured decodings kept (stepping back and forth redraws at once)
IN_WORKER = ("value-zeroing", "attn-grad", "grad-input", "ig")  # the others take a few ms: computed at once...
# ...on a model this small; a larger one's forward pass takes long enough to freeze the window (a Llama-style 1 B model's:
# seconds on 2 cores), so every measure of it is computed in a job
AT_ONCE_PARAMETERS = 30_000_000
ROWS_PER_PART = 4  # gradient × input rows computed together after the current step's (then shown, then the next part)
# Integrated gradients: one row a part. A row takes about a second or two (its integration refines until it has
# converged) and rows of different steps share no batch, so a part of one row costs nothing and lets a newer
# request supersede the job sooner.
IG_ROWS_PER_PART = 1
MEASURE, CONTRAST = "measure", "contrast"  # the runner's channels


@dataclass
class Contrast:
    """The saliency of log p(chosen) − log p(other) at one step, over source pieces and the decoder's inputs."""

    step: int  # 0-based
    chosen: str
    other: str
    method: str  # grad-input or ig
    source_tokens: list[str]
    source_values: np.ndarray  # [S] signed: > 0 speaks for the chosen token
    prefix_tokens: list[str]
    prefix_values: np.ndarray  # [step + 1]
    # Integrated gradients: the completeness gap (a share), the points used, whether the integration converged.
    completeness_gap: float = float("nan")
    points: int = 0
    converged: bool = True


class MeasureController:
    """Events: ``changed()`` (a measured trace is ready for the trace shown, or the measure changed), ``busy(text)``
    (what is being computed, "" when nothing), ``contrast_ready(Contrast or None)``, ``message(text)``,
    ``running_changed(bool)``."""

    changed = Signal()
    busy = Signal(str)
    contrast_ready = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.measure = "attention"
        self._results: dict[tuple, MeasureResult] = {}  # (model id, source, chosen, measure) -> MeasureResult
        self._rows: dict[tuple, MeasureResult] = {}  # saliency rows: (model id, source, prefix + token, measure) -> row
        self._wanted: tuple | None = None  # the key the views wait for
        self._was_running = False
        explore.trace_changed.connect(self._request)
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)  # another snapshot of the model's training

    @property
    def running(self) -> bool:
        return self.runner.is_running(MEASURE) or self.runner.is_running(CONTRAST)

    # --- what is asked ---------------------------------------------------------------------------
    def set_measure(self, name: str) -> None:
        self.measure = name
        self._request(self.explore.trace)
        self.changed.emit()

    def availability(self, kind: AttentionKind) -> dict[str, str]:
        """Why each measure cannot be shown for ``kind`` with the model explored ('' when it can; all '' without one)."""
        model = self._model()
        return {name: unsupported(model, name, kind) if model is not None else "" for name in NAMES}

    def shown(self, trace: Trace | None) -> Trace | None:
        """The measured trace for ``trace`` (the controller's), or None while it is computed or for raw weights."""
        if self.measure == "attention" or trace is None:
            return None
        key = self._key(trace, self.measure)
        result = self._results.get(key) if key is not None else None
        return None if result is None else measured_trace(trace, result)

    def request_contrast(self, step_index: int, token_id: int) -> None:
        """Why the token chosen at ``step_index`` and not ``token_id``: computed in a job."""
        explore = self.explore
        trace, stepper, decoding = explore.trace, explore.stepper, followed_decoding(explore)
        if trace is None or stepper is None or decoding is None or not 0 <= step_index < trace.n_steps:
            return
        chosen_id = int(trace.chosen_ids[step_index])
        if token_id == chosen_id:
            self.message.emit("Pick a token other than the chosen one to ask why it was not chosen.")
            return
        reason = unsupported(decoding.model, "grad-input")
        if reason:
            self.message.emit(f"Contrastive saliency: {reason}.")
            return
        method = "ig" if self.measure == "ig" else "grad-input"
        other = decoding.bundle.target_tokenizer.piece(token_id)
        model, source_ids = decoding.model, list(decoding.source_ids)
        self._start(
            CONTRAST,
            lambda job: contrast(model, source_ids, trace, step_index, token_id, other, method),
            f"Why “{trace.target_tokens[step_index]}” and not another token…",
            on_done=self.contrast_ready.emit,
        )

    def clear_contrast(self) -> None:
        self.contrast_ready.emit(None)

    # --- the controller's events -------------------------------------------------------------------
    def _on_model_changed(self, _bundle: Any) -> None:
        self._results.clear()
        self._rows.clear()
        self.contrast_ready.emit(None)

    # --- work --------------------------------------------------------------------------------------
    def _model(self) -> Any:
        stepper, bundle = self.explore.stepper, self.explore.bundle
        return stepper.model if stepper is not None else (bundle.model if bundle is not None else None)

    def _key(self, trace: Trace, measure: str) -> tuple | None:
        """(model id, source ids, ``trace``'s chosen ids, measure): what a measured decoding is kept under."""
        decoding = followed_decoding(self.explore)
        if decoding is None:
            return None
        return (id(decoding.model), decoding.source_ids, tuple(int(i) for i in trace.chosen_ids), measure)

    def _request(self, trace: Trace | None) -> None:
        decoding, measure = followed_decoding(self.explore), self.measure
        if measure == "attention" or trace is None or decoding is None or self._nothing_to_measure(trace, decoding.model):
            self._wanted = None
            self.runner.cancel(MEASURE, drop=True)  # nothing is waited for
            self._on_job_ended()
            return
        if unsupported(decoding.model, measure):
            self._wanted = None
            return
        key = self._key(trace, measure)
        assert key is not None
        self._wanted = key
        model, source_ids = decoding.model, list(decoding.source_ids)
        if key not in self._results and _by_step(model, measure):
            result, missing = self._known_rows(key, model, source_ids, trace, measure)
            if not missing:  # every row computed before (stepping back): no work
                self._results[key] = result
        at_once = measure not in IN_WORKER and model.parameter_count() <= AT_ONCE_PARAMETERS
        if key not in self._results and at_once:
            try:  # a few milliseconds: drawn with this very refresh, no worker round trip
                self._store(key, compute_measure(model, source_ids, list(trace.chosen_ids), measure))
            except Exception as error:  # noqa: BLE001 - a failure is a message in the window, never a crash
                LOG.error("internal error computing the %s measure", measure, exc_info=error)
                self.message.emit(f"The measure could not be computed: {user_message(error)}")
        if key in self._results:
            self.runner.cancel(MEASURE, drop=True)  # a job for another decoding is no longer wanted
            self._on_job_ended()
            return
        self._start(MEASURE, lambda job: self._measure(job, model, source_ids, trace, key), f"Computing {MEASURES[measure].label}…")

    @staticmethod
    def _nothing_to_measure(trace: Trace, model: Any) -> bool:
        """A trace with no steps yet, of a model that decodes (an encoder-only model's text is measured as it is)."""
        return not trace.n_steps and capabilities_of(model).architecture.has_decoder

    def _start(self, channel: str, work: Any, what: str, on_done: Any = None) -> None:
        self.runner.submit(
            channel,
            work,
            on_done=on_done,
            on_error=lambda text: self.message.emit(f"The measure could not be computed: {text}"),
            on_end=self._on_job_ended,
            after_previous=True,
        )
        self.busy.emit(what)
        self._set_running()

    def _on_job_ended(self) -> None:
        if not self.running:
            self.busy.emit("")
        self._set_running()

    def _set_running(self) -> None:
        if self.running != self._was_running:
            self._was_running = self.running
            self.running_changed.emit(self.running)

    def _measure(self, job: Job, model: Any, source_ids: list[int], trace: Trace, key: tuple) -> None:
        """In the job's thread: the measure of one decoding, delivered part by part (saliency rows)."""
        name = key[3]
        chosen = [int(i) for i in trace.chosen_ids]
        if not _by_step(model, name):
            label, unit = MEASURES[name].label, "pieces" if MEASURES[name].single else "layers"

            def progress(done: int, total: int) -> None:  # a measure in parts (value zeroing: its layers)
                job.check()  # a newer request stops this one between two parts
                job.deliver(self.busy.emit, f"{label}: {done}/{total} {unit}…")  # short: the row is full

            job.deliver(self._store, key, compute_measure(model, source_ids, chosen, name, progress=progress))
            return
        # Saliency: rows already computed for the same prefix are reused; the current step's row comes first.
        result, missing = self._known_rows(key, model, source_ids, trace, name)
        earlier = missing[:-1]
        size = IG_ROWS_PER_PART if name == "ig" else ROWS_PER_PART
        parts = [missing[-1:]] + [earlier[i : i + size] for i in range(0, len(earlier), size)]
        for part in parts:
            if not part:
                continue
            job.check()
            found = compute_measure(model, source_ids, chosen, name, steps=part, between_batches=job.check)  # stops mid-row
            merge_rows(result, found, part)
            rows = {(key[0], key[1], tuple(chosen[: step + 1]), name): found for step in part}
            job.deliver(self._store, key, _copy(result), rows)

    def _known_rows(
        self, key: tuple, model: Any, source_ids: list[int], trace: Trace, name: str
    ) -> tuple[MeasureResult, list[int]]:
        """(a saliency result holding every row computed before for these prefixes, the steps still missing)."""
        chosen = [int(i) for i in trace.chosen_ids]
        result = compute_measure(model, source_ids, chosen, name, steps=[])  # zeros: nothing computed
        missing = []
        for step in range(len(chosen)):
            row = self._rows.get((key[0], key[1], tuple(chosen[: step + 1]), name))
            if row is None:
                missing.append(step)
            else:
                merge_rows(result, row, [step])
        return result, missing

    def _store(self, key: tuple, result: MeasureResult, rows: dict[tuple, MeasureResult] | None = None) -> None:
        """On the window's thread: a result (and the saliency rows it holds) kept; the views told when they wait for it."""
        self._rows.update(rows or {})
        if len(self._results) >= CACHE_SIZE:
            self._results.pop(next(iter(self._results)))
        self._results[key] = result
        if key == self._wanted:
            self.changed.emit()


def _by_step(model: Any, measure: str) -> bool:
    """Whether ``measure`` is computed row by row, each a decoded step's (a saliency of a model that decodes); an
    encoder-only model's saliency has no steps: every piece's row at once, told piece by piece."""
    return MEASURES[measure].single and capabilities_of(model).architecture.has_decoder


def contrast(model: Any, source_ids: list[int], trace: Trace, step: int, token_id: int, other: str, method: str) -> Contrast:
    """Why the token chosen at ``step`` and not ``token_id`` (the piece ``other``): the contrastive saliency."""
    chosen = [int(i) for i in trace.chosen_ids]
    inputs = torch.tensor([[model.config.bos_id] + chosen[:-1]])
    found = saliency(model, torch.tensor([source_ids]), inputs, [step], [chosen[step]], [token_id], method=method)
    result = Contrast(
        step,
        trace.target_tokens[step],
        other,
        method,
        list(trace.source_tokens),
        found.source[0],
        list(trace.decoder_input_tokens[: step + 1]),
        found.target[0, : step + 1],
    )
    if method == "ig":
        result.completeness_gap, result.points = float(found.completeness_gap[0]), int(found.points[0])
        result.converged = bool(found.converged[0])
    return result


def _copy(result: MeasureResult) -> MeasureResult:
    """A copy of a MeasureResult whose arrays the worker goes on filling."""
    return replace(
        result,
        values={kind: array.copy() for kind, array in result.values.items()},
        shares={kind: array.copy() for kind, array in result.shares.items()},
        source_share=result.source_share.copy(),
        completeness_gap=result.completeness_gap.copy(),
        integration_points=result.integration_points.copy(),
        integration_converged=result.integration_converged.copy(),
    )
