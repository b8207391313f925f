"""The decoding the user is looking at, as the analyses read it: one place for every tool that follows the Explore tab.

The Explore tab's trace is the decoding shown: its source ids, its output tokens (a what-if's forced tokens, the beam
hypothesis chosen, a sampled output) and the model that produced it (the Stepper's own: the explored model with the
heads knocked out that the trace records). ``followed_decoding`` gathers them; the measures, Interventions and the
single-sentence report card read it instead of decoding the sentence again, as the neuron view does.

Step numbers are the trace's, mapped to a tool's position here only (``tool_step``): the trace after n steps has
decoded n tokens, and a tool that reads one row per decoded token shows row n - 1 (the token decoded last); before
the first step there is none. A tool that cannot follow a decoding mode says so in one line (``unfollowed``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from explorer.controllers.explore import ExploreController
from model.decoding.trace import Trace
from model.family import Bundle

FORCED, BEAM, SAMPLED, KNOCKED_OUT, WORDS = "forced tokens", "beam hypothesis", "sampled output", "knocked-out heads", "words"


@dataclass(frozen=True)
class FollowedDecoding:
    """What a tool reads of the decoding shown (every field the trace's or its Stepper's)."""

    bundle: Bundle  # the explored bundle (its tokenizers); its model is not the decoding's when heads are knocked out
    model: Any  # the decoding's own model: the explored one, less the heads knocked out
    text: str  # the sentence decoded
    source_ids: tuple[int, ...]  # [S] the pieces the model read, EOS last
    chosen_ids: tuple[int, ...]  # [T] the tokens decoded up to the trace's step
    target_tokens: tuple[str, ...]  # [T] their pieces, as the Explore tab shows them
    translation: str  # their text
    modes: tuple[str, ...]  # the decoding modes at work (FORCED, BEAM, SAMPLED, KNOCKED_OUT, WORDS)

    @property
    def key(self) -> tuple[Any, tuple[int, ...], tuple[int, ...]]:
        """(model, source ids, chosen ids): what a result computed for this decoding depends on."""
        return self.model, self.source_ids, self.chosen_ids

    def covered_by(self, key: tuple[Any, tuple[int, ...], tuple[int, ...]] | None) -> bool:
        """Whether a result computed for ``key`` holds this decoding's: same model and source, a decoding this one
        begins (the tools read each token teacher-forced, so a step back reads the first rows of a longer decoding)."""
        return (
            key is not None
            and key[0] is self.model
            and key[1] == self.source_ids
            and key[2][: len(self.chosen_ids)] == self.chosen_ids
        )

    def model_bundle(self, model: Any = None) -> Bundle:
        """The explored bundle with the decoding's model (or ``model``, a copy of it) in place of its own."""
        return dataclasses.replace(self.bundle, model=self.model if model is None else model)  # type: ignore[type-var]


def followed_decoding(explore: ExploreController) -> FollowedDecoding | None:
    """The decoding the Explore tab shows; None without a model, a sentence or a trace."""
    stepper, trace, bundle = explore.stepper, explore.trace, explore.bundle
    if stepper is None or trace is None or bundle is None:
        return None
    return FollowedDecoding(
        bundle=bundle,
        model=stepper.model,
        text=stepper.text,
        source_ids=tuple(int(i) for i in stepper.source_ids),
        chosen_ids=tuple(int(i) for i in trace.chosen_ids),
        target_tokens=tuple(trace.target_tokens),
        translation=trace.target_text,
        modes=_modes(trace, stepper.options.strategy, explore.view.word_level),
    )


def _modes(trace: Trace, strategy: str, word_level: bool) -> tuple[str, ...]:
    found = (
        (FORCED, bool(trace.forced[trace.n_given :].any()) if len(trace.forced) else False),
        (BEAM, trace.hypothesis_rank is not None),
        (SAMPLED, strategy == "sample"),
        (KNOCKED_OUT, bool(trace.masked_heads)),
        (WORDS, word_level),
    )
    return tuple(mode for mode, at_work in found if at_work)


def tool_step(n_steps: int) -> int | None:
    """The trace's step (``n_steps`` tokens decoded) as a tool's row: the token decoded last (from 0); None before the
    first step. Every tool that follows the Explore tab's step maps it here."""
    return n_steps - 1 if n_steps > 0 else None


def trace_step(explore: ExploreController) -> int | None:
    """``tool_step`` of the Explore tab's trace (None without one)."""
    trace = explore.trace
    return tool_step(trace.n_steps) if trace is not None else None


def unfollowed(tool: str, decoding: FollowedDecoding | None, cannot: dict[str, str]) -> str:
    """One line saying which of the decoding's modes ``tool`` cannot follow (``cannot``: mode -> what it does
    instead); '' when it follows them all."""
    if decoding is None:
        return ""
    missed = [f"{mode} ({cannot[mode]})" for mode in decoding.modes if mode in cannot]
    return f"The {tool} does not follow the {'; the '.join(missed)}." if missed else ""


def pair_read(explore: ExploreController, clean: str) -> tuple[Any, tuple[int, ...] | None]:
    """(the model that patching or a circuit of ``clean`` reads, the output it follows): the Explore tab's decoding's
    when ``clean`` is the sentence it decodes (None: the clean sentence's greedy translation), else the explored
    model's."""
    decoding, bundle = followed_decoding(explore), explore.bundle
    if decoding is None:
        return (bundle.model if bundle is not None else None), None
    same = bundle is not None and tuple(bundle.source_ids(clean.strip())[0]) == decoding.source_ids
    return decoding.model, (decoding.chosen_ids if same and decoding.chosen_ids else None)
