"""One sentence decoded with every snapshot of a timeline, as the app's one contract: a ``Trace`` per snapshot.

So that the views of two snapshots compare like with like (and a difference of their matrices exists), every
snapshot is by default *teacher-forced* along one target, so that all traces have the same target pieces and the
same matrix shapes:

- ``"final"`` (the default): the final model's own translation (the last snapshot's decoding with ``options``);
- ``"reference"``: a reference translation the caller gives (an encoder-decoder's only);
- ``"own"``: no forcing: each snapshot decodes as it would (the shapes then differ between snapshots).

An encoder-only model makes no steps: its traces hold the encoder's self-attention alone, whatever the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from model.decoding.options import DecodingOptions
from model.decoding.stepper import Stepper
from model.decoding.trace import Trace
from model.family import Architecture, Bundle
from model.timeline.source import SnapshotSource, TimelineError, choose_snapshots, snapshot_name

TARGETS = ("final", "reference", "own")


@dataclass
class SnapshotTrace:
    """One snapshot's trace of the sentence, with what names the snapshot in titles and captions."""

    index: int  # the snapshot's place in the timeline, from 0
    step: int  # its training step
    name: str  # "step 1,200 of 9,000"
    trace: Trace
    forced: bool  # teacher-forced along the shared target (False: its own decoding)


def forced_options(options: DecodingOptions, n_steps: int) -> DecodingOptions:
    """The options of a teacher-forced decoding of ``n_steps`` tokens: the caller's candidates, engine and masked
    heads, stepped greedily (every token is given)."""
    return replace(options, strategy="greedy", max_steps=max(n_steps, 1))


def forced_stepper(bundle: Bundle, text: str, target_ids: Sequence[int], options: DecodingOptions | None = None) -> Stepper:
    """``text`` decoded with the decoder made to produce ``target_ids`` (a decoder-only model's prompt and a forced
    first token are given as usual: the ids after them are forced), at the end of them."""
    stepper = Stepper(bundle, text, forced_options(options or DecodingOptions(), len(target_ids)))
    for token in list(target_ids)[len(stepper.steps) :]:
        if stepper.finished:
            break
        stepper.step(force=int(token))
    return stepper


def decode_forced(bundle: Bundle, text: str, target_ids: Sequence[int], options: DecodingOptions | None = None) -> Trace:
    """The trace of ``forced_stepper``."""
    return forced_stepper(bundle, text, target_ids, options).trace()


def decode_own(bundle: Bundle, text: str, options: DecodingOptions | None = None) -> tuple[Trace, list[int]]:
    """The trace of the model's own decoding of ``text`` (greedy, sampling or beam as ``options`` say) and its ids."""
    stepper = Stepper(bundle, text, replace(options or DecodingOptions()))
    stepper.run()
    return stepper.trace(), stepper.target_ids()


def reference_ids(bundle: Bundle, text: str, reference: str) -> list[int]:
    """The ids a reference translation forces: the given first token when the model has one, its pieces, then EOS."""
    if bundle.family.capabilities.architecture is not Architecture.ENCODER_DECODER:
        raise TimelineError("a reference translation is forced on an encoder-decoder model; this one has no source to translate")
    if not reference.strip():
        raise TimelineError("the reference translation is empty")
    config = bundle.config
    given = Stepper(bundle, text, DecodingOptions(max_steps=1)).given
    pieces = bundle.target_tokenizer.encode(reference)[: config.max_len - 2]
    return [*given, *pieces, config.eos_id]


def shared_target(
    source: SnapshotSource, text: str, target: str = "final", reference: str | None = None, options: DecodingOptions | None = None
) -> list[int] | None:
    """The target ids every snapshot is forced along (None for ``"own"``, or a model that makes no steps)."""
    if target not in TARGETS:
        raise TimelineError(f"the target must be one of {', '.join(TARGETS)}, not {target!r}")
    if target == "reference" and reference is None:
        raise TimelineError("forcing the reference translation needs the reference (--reference)")
    last = source.bundle_at(len(source.snapshots) - 1)
    if target == "own" or not last.family.capabilities.architecture.has_decoder:
        return None
    if target == "reference":
        assert reference is not None  # checked above
        return reference_ids(last, text, reference)
    return decode_own(last, text, options)[1]


def snapshot_traces(
    source: SnapshotSource,
    text: str,
    indices: Sequence[int] | None = None,
    target: str = "final",
    reference: str | None = None,
    options: DecodingOptions | None = None,
) -> list[SnapshotTrace]:
    """``text`` decoded with each chosen snapshot (all by default), forced along the shared ``target``."""
    chosen = choose_snapshots(source, indices)
    options = options or DecodingOptions()
    target_ids = shared_target(source, text, target, reference, options)
    result = []
    for index in chosen:
        bundle = source.bundle_at(index)
        if target_ids is None:
            trace = decode_own(bundle, text, options)[0]
        else:
            trace = decode_forced(bundle, text, target_ids, options)
        record = source.snapshots[index]
        result.append(SnapshotTrace(index, record.step, snapshot_name(source, index), trace, target_ids is not None))
    return result
