"""What the attention views show: raw weights or a contribution measure, computed off the window's thread.

The Explore tab's "Reading" box sets the measure here. Each time the session publishes a trace, the measure of
that decoding is looked up or computed in one worker thread (the newest request wins; an older one still running
is answered but not shown); ``changed`` tells the views to draw again, ``busy`` what is being computed. Views then
ask ``shown(trace)`` for the measured trace (model/attribution/measures.py): the shares of the measure in place
of the weights, or None while it is being computed.

Saliency rows (gradient × input, integrated gradients) depend only on the prefix they predict from, so they are
kept per prefix: stepping forward computes one new row, and the current step's row is computed first and shown
before the others. The contrastive saliency ("why this token and not that one") is computed the same way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, Signal

from explorer.runtime import for_light_work
from explorer.workers import describe_error

CACHE_SIZE = 64  # measured decodings kept (stepping back and forth redraws at once)
IN_WORKER = ("value-zeroing", "attn-grad", "grad-input", "ig")  # the others take a few ms: computed at once
ROWS_PER_PART = 4  # saliency rows computed together after the current step's (then shown, then the next part)


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


class MeasureSession(QObject):
    changed = Signal()  # a measured trace is ready for the trace shown (or the measure changed)
    busy = Signal(str)  # what is being computed ("" when nothing)
    contrast_ready = Signal(object)  # Contrast, or None when cleared
    message = Signal(str)

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.measure = "attention"
        self._results: dict[tuple, object] = {}  # (model id, source, chosen, measure) -> MeasureResult
        self._rows: dict[tuple, tuple] = {}  # saliency rows: (model id, source, prefix + token, measure) -> row
        self._wanted: tuple | None = None  # the key the views wait for
        self._jobs: list = []  # pending work, newest last (only the newest runs)
        self._condition = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="measures", daemon=True)
        self._thread.start()
        session.trace_changed.connect(self._on_trace_changed)
        session.model_changed.connect(self._on_model_changed)

    # --- what is asked ---------------------------------------------------------------------------
    def set_measure(self, name: str) -> None:
        self.measure = name
        self._request()
        self.changed.emit()

    def shown(self, trace):
        """The measured trace for ``trace`` (the session's), or None while it is computed or for raw weights."""
        if self.measure == "attention" or trace is None:
            return None
        key = self._key(trace, self.measure)
        result = self._results.get(key) if key is not None else None
        if result is None:
            return None
        from model.attribution.measures import measured_trace

        return measured_trace(trace, result)

    def request_contrast(self, step_index: int, token_id: int) -> None:
        """Why the token chosen at ``step_index`` and not ``token_id``: computed in the worker."""
        session = self.session
        trace, stepper = session.trace, session.stepper
        if trace is None or stepper is None or not 0 <= step_index < trace.n_steps:
            return
        chosen_id = int(trace.chosen_ids[step_index])
        if token_id == chosen_id:
            self.message.emit("Pick a token other than the chosen one to ask why it was not chosen.")
            return
        from model.attribution.measures import unsupported

        reason = unsupported(stepper.model, "grad-input")
        if reason:
            self.message.emit(f"Contrastive saliency: {reason}.")
            return
        method = "ig" if self.measure == "ig" else "grad-input"
        job = ("contrast", stepper.model, list(stepper.source_ids), trace, step_index, token_id, method)
        self._submit(job, f"Why “{trace.target_tokens[step_index]}” and not another token…")

    def clear_contrast(self) -> None:
        self.contrast_ready.emit(None)

    def stop(self, wait_ms: int = 30000) -> None:
        """End the worker (the window is closing): the job running finishes its current batch first."""
        with self._condition:
            self._stopping = True
            self._jobs.clear()
            self._condition.notify()
        self._thread.join(wait_ms / 1000)

    # --- session signals ---------------------------------------------------------------------------
    def _on_trace_changed(self, _trace) -> None:
        self._request()

    def _on_model_changed(self, _bundle) -> None:
        self._results.clear()
        self._rows.clear()
        self.contrast_ready.emit(None)

    # --- work --------------------------------------------------------------------------------------
    def _key(self, trace, measure: str) -> tuple | None:
        stepper = self.session.stepper
        if stepper is None:
            return None
        return (id(stepper.model), tuple(stepper.source_ids), tuple(int(i) for i in trace.chosen_ids), measure)

    def _request(self) -> None:
        from model.attribution.measures import MEASURES, unsupported

        trace, stepper = self.session.trace, self.session.stepper
        if self.measure == "attention" or trace is None or stepper is None or not trace.n_steps:
            self._wanted = None
            self.busy.emit("")
            return
        if unsupported(stepper.model, self.measure):
            self._wanted = None
            return
        key = self._key(trace, self.measure)
        self._wanted = key
        if key not in self._results and MEASURES[self.measure].single:
            known = self._known_rows(key, stepper.model, list(stepper.source_ids), trace, self.measure)
            if known is not None and not known[1]:  # every row computed before (stepping back): no work
                self._results[key] = known[0]
        if key not in self._results and self.measure not in IN_WORKER:
            from model.attribution.measures import compute_measure

            try:  # a few milliseconds: drawn with this very refresh, no worker round trip
                self._store(key, compute_measure(stepper.model, list(stepper.source_ids), list(trace.chosen_ids), self.measure))
            except Exception as error:  # noqa: BLE001 - a failure is a message in the window, never a crash
                self.message.emit(f"The measure could not be computed: {describe_error(error)}")
        if key in self._results:
            self.busy.emit("")
            return
        job = ("measure", stepper.model, list(stepper.source_ids), trace, self.measure, key)
        self._submit(job, f"Computing {MEASURES[self.measure].label}…")

    def _submit(self, job: tuple, what: str) -> None:
        with self._condition:
            self._jobs.append(job)
            self._condition.notify()
        self.busy.emit(what)

    def _work(self) -> None:
        for_light_work()
        while True:
            with self._condition:
                while not self._jobs and not self._stopping:
                    self._condition.wait()
                if self._stopping:
                    return
                contrasts = [job for job in self._jobs if job[0] == "contrast"]
                measures = [job for job in self._jobs if job[0] == "measure"]
                self._jobs.clear()
            try:
                if contrasts:
                    self._run_contrast(*contrasts[-1][1:])
                if measures:
                    self._run_measure(*measures[-1][1:])
            except Exception as error:  # noqa: BLE001 - a failure is a message in the window, never a crash
                self.message.emit(f"The measure could not be computed: {describe_error(error)}")
            with self._condition:
                idle = not self._jobs
            if idle:
                self.busy.emit("")

    def _run_measure(self, model, source_ids: list[int], trace, name: str, key: tuple) -> None:
        from model.attribution.measures import MEASURES, compute_measure, merge_rows

        chosen = [int(i) for i in trace.chosen_ids]
        if not MEASURES[name].single:
            self._store(key, compute_measure(model, source_ids, chosen, name))
            return
        # Saliency: rows already computed for the same prefix are reused; the current step's row comes first.
        result, missing = self._known_rows(key, model, source_ids, trace, name)
        earlier = missing[:-1]
        parts = [missing[-1:]] + [earlier[i : i + ROWS_PER_PART] for i in range(0, len(earlier), ROWS_PER_PART)]
        for part in parts:
            if not part:
                continue
            if self._superseded(key):
                return
            found = compute_measure(model, source_ids, chosen, name, steps=part)
            merge_rows(result, found, part)
            for step in part:
                self._rows[(key[0], key[1], tuple(chosen[: step + 1]), name)] = (found,)
            self._store(key, _copy(result))

    def _known_rows(self, key: tuple, model, source_ids: list[int], trace, name: str):
        """(a saliency result holding every row computed before for these prefixes, the steps still missing)."""
        from model.attribution.measures import compute_measure, merge_rows

        chosen = [int(i) for i in trace.chosen_ids]
        result = compute_measure(model, source_ids, chosen, name, steps=[])  # zeros: nothing computed
        missing = []
        for step in range(len(chosen)):
            row = self._rows.get((key[0], key[1], tuple(chosen[: step + 1]), name))
            if row is None:
                missing.append(step)
            else:
                merge_rows(result, row[0], [step])
        return result, missing

    def _superseded(self, key: tuple) -> bool:
        with self._condition:
            return self._stopping or (key != self._wanted and bool(self._jobs))

    def _store(self, key: tuple, result) -> None:
        if len(self._results) >= CACHE_SIZE:
            self._results.pop(next(iter(self._results)))
        self._results[key] = result
        if key == self._wanted:
            self.changed.emit()

    def _run_contrast(self, model, source_ids, trace, step: int, token_id: int, method: str) -> None:
        import torch

        from model.attribution.gradients import saliency

        chosen = [int(i) for i in trace.chosen_ids]
        inputs = torch.tensor([[model.config.bos_id] + chosen[:-1]])
        found = saliency(model, torch.tensor([source_ids]), inputs, [step], [chosen[step]], [token_id], method=method)
        other = self.session.bundle.target_tokenizer.piece(token_id) if self.session.bundle is not None else str(token_id)
        self.contrast_ready.emit(
            Contrast(
                step,
                trace.target_tokens[step],
                other,
                method,
                list(trace.source_tokens),
                found.source[0],
                list(trace.decoder_input_tokens[: step + 1]),
                found.target[0, : step + 1],
            )
        )


def _copy(result):
    """A copy of a MeasureResult whose arrays the worker goes on filling."""
    from dataclasses import replace

    return replace(
        result,
        values={kind: array.copy() for kind, array in result.values.items()},
        shares={kind: array.copy() for kind, array in result.shares.items()},
        source_share=result.source_share.copy(),
        completeness_gap=result.completeness_gap.copy(),
    )
