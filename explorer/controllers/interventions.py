"""Causal interventions on the explored model and sentence, computed in jobs of the runner.

The readings of the decoding the Explore tab shows (model/interventions/given.py): the logit lens, DecoderLens and
direct logit attribution of its source ids and output tokens (a what-if's forced tokens, the beam hypothesis chosen, a
sampled output) through the model that decoded them (heads knocked out as the trace records them), in one job of the
"interventions" channel, each reported as it is ready (``ready(tool, result)``). They follow the decoding only while
the Interventions view is shown (``set_active``): another decoding or model then supersedes the job under way; hidden,
the view is marked stale and computed when it is shown again. A step of the Explore tab moves the highlighted step
(``step_changed``, the trace's step mapped by explorer/controllers/followed.py); a step back reads the first steps of
the decoding computed, so nothing is computed again. A tool that cannot follow the decoding's mode (DecoderLens
decodes greedily by design; every tool reads pieces, not words) says so in one line (``message``).

Activation patching of a clean and a corrupted sentence runs in the "interventions-patching" channel: attribution
patching first (the fast first-order preview, reported as ``ready(PATCHING, result)`` with its method "attribution"),
then the exact result, which replaces it. It computes on its own: the view says which pair, direction and step it
shows (``want_patch``) and, while its Patching sub-tab is shown (``set_active(True, patching=True)``), a pair, a
direction, a step or a model it has not patched yet is patched at once, superseding a stale job (an empty sentence
waits, silently, to be typed); ``patch`` patches now, whatever was patched before. A clean sentence that is the one
the Explore tab decodes is patched along that decoding's output, through its model. Each job reads its own copy of the
model, so the window's decoding never shares it with a thread. A model whose family cannot be patched gets one line saying so
(``unavailable``); bad input (an empty sentence, different piece counts) is the InterventionError's one line
(``message``), and nothing else changes.
"""

from __future__ import annotations

from typing import Any

from psygnal import Signal

from explorer.controllers.background import submit_on_copy
from explorer.controllers.explore import ExploreController
from explorer.controllers.followed import (
    BEAM,
    FORCED,
    SAMPLED,
    WORDS,
    FollowedDecoding,
    followed_decoding,
    pair_read,
    trace_step,
    unfollowed,
)
from explorer.controllers.runner import Job, Runner
from model.decoding.trace import Trace
from model.family import INTERVENTION_TOOLS, Bundle, InterventionTool, capabilities_of
from model.interventions.given import given_decoder_lens, given_logit_attribution, given_logit_lens, given_patching
from model.interventions.hooked import InterventionError
from model.interventions.minimal_pairs import MinimalPair, minimal_pairs
from model.interventions.patching import DIRECTIONS, patch_grids
from model.interventions.served_pass import prediction_place, served_tools, unserved_reason

LENS, DECODER_LENS = InterventionTool.LOGIT_LENS, InterventionTool.DECODER_LENS  # the tools are the core's (model/family.py)
ATTRIBUTION, PATCHING = InterventionTool.LOGIT_ATTRIBUTION, InterventionTool.PATCHING
TOOLS = INTERVENTION_TOOLS
READINGS = (LENS, DECODER_LENS, ATTRIBUTION)  # what follows the sentence
CHANNEL, PATCH_CHANNEL = "interventions", "interventions-patching"
LENS_CANDIDATES = 5  # top-k of each logit-lens reading
PAIRS_SHOWN = 20  # minimal pairs offered per feature
PIECES = "it reads pieces: shown piece by piece"
GREEDY = "it decodes greedily from each encoder layer, by design"
CANNOT_FOLLOW = {  # tool -> the decoding modes it cannot follow, and what it does instead
    LENS: {WORDS: PIECES},
    DECODER_LENS: {FORCED: GREEDY, BEAM: GREEDY, SAMPLED: GREEDY, WORDS: PIECES},
    ATTRIBUTION: {WORDS: PIECES},
}


def checked_text(text: str, what: str) -> str:
    """``text`` stripped; an InterventionError when nothing is left."""
    if not text.strip():
        raise InterventionError(f"the {what} sentence is empty: type one")
    return text.strip()


class InterventionsController:
    """Events: ``ready(tool, result or None)`` (one of TOOLS; None: nothing to show), ``step_changed(step or None)``
    (the step of the Explore tab, from 0: the token it decoded last), ``message(text)`` (why nothing runs, bad
    input, an error), ``running_changed(bool)``, ``progress(text)`` (what is being computed)."""

    ready = Signal(str, object)
    step_changed = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)
    progress = Signal(str)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.results: dict[str, Any] = {}  # tool -> its last result for the explored model
        self.computed_for: tuple | None = None  # (model, source ids, chosen ids) of the readings shown or under way
        self.computed: FollowedDecoding | None = None  # the decoding those readings read
        self.active = False  # the Interventions view is shown
        self.patching_active = False  # ... and its Patching sub-tab
        self.patch_wanted: tuple[str, str, str, int | None] | None = None  # (clean, corrupted, direction, step) shown
        self.patched_for: tuple[Any, tuple[str, str, str, int | None]] | None = None  # (what it read, pair) patched or under way
        self.step: int | None = None
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)
        explore.trace_changed.connect(self._on_trace_changed)
        self.word_level = explore.view.word_level  # the Explore tab shows words: the readings say they show pieces
        explore.view_changed.connect(lambda view: self._on_level(view.word_level))

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL) or self.runner.is_running(PATCH_CHANNEL)

    def unavailable(self) -> str:
        """Why the explored model cannot be intervened on ('' when it can)."""
        bundle = self.explore.bundle
        if bundle is None:
            return "Open or train a model first: interventions read and patch the session's model."
        try:
            served_tools(bundle.model)  # its family's hooked pass, for its layout: the one line saying why not
        except InterventionError as error:
            return f"Interventions (logit lens, DecoderLens, logit attribution, patching): {error}."
        return ""

    def tools(self) -> tuple[str, ...]:
        """The tools the explored model serves (none when it cannot be intervened on)."""
        bundle = self.explore.bundle
        return () if bundle is None or self.unavailable() else tuple(served_tools(bundle.model))

    def place(self) -> str:
        """What patching's step counts for the explored model: "step", or an encoder-only model's "position" or
        "sentence" (model/interventions/served_pass.py ``prediction_place``)."""
        bundle = self.explore.bundle
        return "step" if bundle is None or PATCHING not in self.tools() else prediction_place(bundle.model)

    def reasons(self) -> dict[str, str]:
        """Each tool the explored model does not serve -> why (one line; the model's own when none is served)."""
        bundle, why = self.explore.bundle, self.unavailable()
        if bundle is None or why:
            return {str(tool): why for tool in INTERVENTION_TOOLS}
        served = served_tools(bundle.model)
        return {str(tool): unserved_reason(bundle.model, tool) for tool in INTERVENTION_TOOLS if tool not in served}

    # --- following the Explore tab ------------------------------------------------------------------
    def set_active(self, active: bool, patching: bool = False) -> None:
        """The view is shown (True) or hidden, ``patching``: with its Patching sub-tab; shown, stale readings are
        computed (and a stale patching when its sub-tab is shown)."""
        self.active, self.patching_active = active, active and patching
        if active and self._stale():
            self.compute()
        self._patch_if_stale()

    def _stale(self) -> bool:
        decoding = followed_decoding(self.explore)
        return decoding is not None and not decoding.covered_by(self.computed_for)

    def _on_trace_changed(self, trace: Trace | None) -> None:
        self.step = trace_step(self.explore)
        self.step_changed.emit(self.step)
        if trace is not None and self.active and self._stale():
            self.compute()
        self._patch_if_stale()  # a clean sentence that is the one decoded follows its decoding

    def _on_model_changed(self, _bundle: Bundle | None) -> None:
        """Another model (or snapshot): every job dropped and every result cleared."""
        self._drop(CHANNEL)
        self._drop(PATCH_CHANNEL)
        self.results, self.computed_for, self.computed, self.patched_for = {}, None, None, None
        for tool in TOOLS:
            self.ready.emit(tool, None)
        self._patch_if_stale()  # the pair shown, through the new model (the readings follow its trace)

    def _drop(self, channel: str) -> None:
        if self.runner.cancel(channel, drop=True) and not self.running:
            self.running_changed.emit(False)

    # --- the sentence's readings --------------------------------------------------------------------
    def compute(self) -> bool:
        """The logit lens, DecoderLens and logit attribution of the decoding the Explore tab shows, in a job
        (superseding one under way); False, with a message, when the model cannot or there is no decoding."""
        why = self.unavailable()
        if why:
            self.message.emit(why)
            return False
        bundle, decoding = self.explore.bundle, followed_decoding(self.explore)
        assert bundle is not None  # unavailable() said so otherwise
        reads_text = not capabilities_of(bundle.model).architecture.has_decoder  # its head on the text: no step to wait for
        if decoding is None or not (decoding.chosen_ids or reads_text):
            self.message.emit(
                "Type a sentence: its interventions are computed on it."
                if decoding is None
                else "Decode a step first: the interventions read the tokens decoded."
            )
            return False
        self.computed_for, self.computed = decoding.key, decoding
        for tool in READINGS:
            self.results.pop(tool, None)
        served = served_tools(bundle.model)
        self.message.emit(self.notes(decoding))
        return self._submit(CHANNEL, lambda job, work: self._read(job, work, decoding, served), bundle, decoding.model)

    def notes(self, decoding: FollowedDecoding | None) -> str:
        """One line: the readings the model does not serve, and each decoding mode a reading cannot follow."""
        bundle = self.explore.bundle
        if bundle is None or self.unavailable():
            return ""
        served = served_tools(bundle.model)
        reasons = [unserved_reason(bundle.model, tool) for tool in READINGS if tool not in served]
        notes = [reason[:1].upper() + reason[1:] + "." for reason in reasons]
        notes += [unfollowed(tool, decoding, CANNOT_FOLLOW[tool]) for tool in READINGS if tool in served]
        return " ".join(note for note in notes if note)

    def _on_level(self, word_level: bool) -> None:
        """Words shown or no longer: the readings shown say again what they cannot follow."""
        if word_level != self.word_level:
            self.word_level = word_level
            if self.computed is not None:
                self.message.emit(self.notes(followed_decoding(self.explore)))

    def _read(self, job: Job, bundle: Any, decoding: FollowedDecoding, served: tuple[str, ...]) -> None:
        """In the job's thread: each ``served`` reading of ``decoding`` (``bundle``: its model's copy), delivered as it
        is ready."""
        source, chosen = decoding.source_ids, decoding.chosen_ids
        readers = (
            (LENS, lambda: given_logit_lens(bundle, source, chosen, LENS_CANDIDATES)),
            (DECODER_LENS, lambda: given_decoder_lens(bundle, source)),
            (ATTRIBUTION, lambda: given_logit_attribution(bundle, source, chosen)),
        )
        for tool, read in readers:
            if tool not in served:
                continue
            job.check()
            job.progress(f"Computing the {tool}…")
            job.deliver(self._on_result, tool, read())

    def attribute_versus(self, step: int, token_id: int) -> bool:
        """The logit attribution again, the chosen token's logit at ``step`` (from 0) minus ``token_id``'s (-1: none),
        in a job that supersedes the readings' channel; False, with a message, when it cannot run."""
        why = self.unavailable()
        bundle, decoding = self.explore.bundle, self.computed
        if why or bundle is None or ATTRIBUTION not in served_tools(bundle.model):
            self.message.emit(why or "The logit attribution is not computed for this model.")
            return False
        attribution = self.results.get(ATTRIBUTION)
        steps = len(attribution.logits) if attribution is not None else 0
        if decoding is None or not 0 <= step < steps:
            return False
        compared = [-1] * steps
        compared[step] = token_id
        source, chosen = decoding.source_ids, decoding.chosen_ids

        def read(job: Job, work: Any) -> None:
            job.progress("Computing the logit attribution…")
            job.deliver(self._on_result, ATTRIBUTION, given_logit_attribution(work, source, chosen, compared))

        return self._submit(CHANNEL, read, bundle, decoding.model)

    # --- activation patching --------------------------------------------------------------------------
    def pairs(self, feature: str) -> list[MinimalPair]:
        """Up to PAIRS_SHOWN minimal pairs of ``feature`` for the explored model's tokenizer (none without a model)."""
        bundle = self.explore.bundle
        if bundle is None or self.unavailable():
            return []
        return minimal_pairs(feature, bundle.source_tokenizer, PAIRS_SHOWN)

    def translates(self) -> bool:
        """Whether the explored model translates a source (an encoder-decoder), rather than continuing a prompt."""
        bundle = self.explore.bundle
        return bundle is None or bundle.family.capabilities.architecture.has_encoder

    def want_patch(self, clean: str, corrupted: str, direction: str = "denoising", step: int | None = None) -> bool:
        """The pair, direction and step (from 0; None: the first difference) the Patching sub-tab shows: patched at
        once when the sub-tab is shown and it was not patched for this model yet (True: a job started)."""
        self.patch_wanted = (clean, corrupted, direction, step)
        return self._patch_if_stale()

    def _patch_if_stale(self) -> bool:
        wanted, bundle = self.patch_wanted, self.explore.bundle
        if not self.patching_active or wanted is None or bundle is None or not wanted[0].strip():
            return False
        if self.patched_for == (pair_read(self.explore, wanted[0]), wanted):
            return False
        if not wanted[1].strip() or PATCHING not in self.tools():
            return False  # a sentence still to type, or a model that cannot (the view says so already)
        return self.patch(*wanted)

    def patch(self, clean: str, corrupted: str, direction: str = "denoising", step: int | None = None) -> bool:
        """Attribution patching (the preview), then activation patching (exact) of ``clean`` and ``corrupted`` in
        ``direction``, at ``step`` (from 0; None: the first the runs differ at), in a job; False with a message when
        the model cannot or the input is bad."""
        why = self.unavailable()
        if not why and self.explore.bundle is not None and PATCHING not in served_tools(self.explore.bundle.model):
            why = f"Patching is not computed for this model ({self.explore.bundle.family.title})."
        if why:
            self.message.emit(why)
            return False
        try:
            if direction not in DIRECTIONS:
                raise InterventionError(f"the direction is one of {', '.join(DIRECTIONS)}, not {direction!r}")
            texts = checked_text(clean, "clean"), checked_text(corrupted, "corrupted")
        except InterventionError as error:
            self.message.emit(f"Patching: {error}")
            return False
        assert self.explore.bundle is not None
        self.patch_wanted = (clean, corrupted, direction, step)
        read = pair_read(self.explore, clean)
        self.patched_for = (read, self.patch_wanted)
        self.results.pop(PATCHING, None)
        self.ready.emit(PATCHING, None)  # the last pair's grids are not this one's
        self.message.emit("")  # the last pair's error is not this one's
        model, targets = read

        def work(job: Job, copied: Any) -> None:
            self._patch(job, copied, *texts, direction, step, targets)

        return self._submit(PATCH_CHANNEL, work, self.explore.bundle, model)

    def _patch(
        self, job: Job, bundle: Any, clean: str, corrupted: str, direction: str, step: int | None, targets: tuple[int, ...] | None
    ) -> None:
        """In the job's thread: the reference runs (along ``targets``, the decoding followed), the preview delivered,
        then the exact grids."""
        job.progress("Patching: the reference runs…")
        setup = given_patching(bundle, clean, corrupted, step, targets)
        job.check()
        job.progress("Patching: the preview (attribution patching) is shown; computing the exact grids…")
        job.deliver(self._on_result, PATCHING, patch_grids(setup, "attribution", direction))
        job.check()
        job.deliver(self._on_result, PATCHING, patch_grids(setup, "exact", direction))

    # --- jobs --------------------------------------------------------------------------------------
    def _submit(self, channel: str, work: Any, bundle: Bundle, model: Any = None) -> bool:
        """Run ``work(job, bundle with a copy of its model, or of ``model``)`` on ``channel``; False with a message when
        the model cannot be copied."""
        failed = "Patching could not be computed" if channel == PATCH_CHANNEL else "The interventions could not be computed"
        return submit_on_copy(self, channel, work, bundle, "Interventions", failed, model)

    def _on_result(self, tool: str, result: Any) -> None:
        self.results[tool] = result
        self.ready.emit(tool, result)
