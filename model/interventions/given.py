"""The interventions of a given decoding: the source ids and output tokens the user is looking at, not a greedy
translation made again.

A decoding shown in the window may have forced tokens (a what-if), follow a beam hypothesis, be sampled, or come from
the model with heads knocked out; these entry points take its source ids and chosen ids as they are, and the model
that decoded them, and label the results with the bundle's pieces. (``bundle_logit_lens`` and the others decode the
sentence greedily: what the ``lens`` and ``patch`` commands read.)
"""

from __future__ import annotations

from collections.abc import Sequence

from model.family import Bundle, capabilities_of
from model.interventions.decoder_lens import DecoderLensResult, decoder_lens
from model.interventions.hooked import InterventionError
from model.interventions.logit_attribution import LogitAttribution, encoder_logit_attribution, logit_attribution
from model.interventions.logit_lens import LogitLensResult, encoder_logit_lens, logit_lens
from model.interventions.patching_setup import PatchingSetup, prepare_patching


def _checked(chosen_ids: Sequence[int]) -> list[int]:
    if not chosen_ids:
        raise InterventionError("decode a step first: the readings follow the tokens decoded")
    return [int(token) for token in chosen_ids]


def given_logit_lens(bundle: Bundle, source_ids: Sequence[int], chosen_ids: Sequence[int], k: int = 5) -> LogitLensResult:
    """The logit lens of ``bundle``'s model along ``chosen_ids`` (the tokens decoded) of ``source_ids`` (EOS last); an
    encoder-only model's reads its head on ``source_ids`` (it decodes nothing: ``chosen_ids`` is empty)."""
    if not capabilities_of(bundle.model).architecture.has_decoder:
        return encoder_logit_lens(bundle.model, list(source_ids), k, bundle.source_tokenizer.pieces)
    return logit_lens(bundle.model, list(source_ids), _checked(chosen_ids), k, bundle.target_tokenizer.pieces)


def given_logit_attribution(
    bundle: Bundle, source_ids: Sequence[int], chosen_ids: Sequence[int], compared_ids: Sequence[int] | None = None
) -> LogitAttribution:
    """The logit attribution of ``bundle``'s model along ``chosen_ids`` (minus ``compared_ids``' logits, -1: none); an
    encoder-only model's of its predictions on ``source_ids`` (it decodes nothing: ``chosen_ids`` is empty)."""
    compared = list(compared_ids) if compared_ids is not None else None
    if not capabilities_of(bundle.model).architecture.has_decoder:
        return encoder_logit_attribution(bundle.model, list(source_ids), compared, bundle.source_tokenizer.pieces)
    return logit_attribution(bundle.model, list(source_ids), _checked(chosen_ids), compared, bundle.target_tokenizer.pieces)


def given_decoder_lens(bundle: Bundle, source_ids: Sequence[int]) -> DecoderLensResult:
    """DecoderLens of ``bundle``'s model on ``source_ids``: each encoder layer's greedy translation (it decodes by
    design, so it reads the source, not the output)."""
    return decoder_lens(bundle.model, list(source_ids), bundle.target_tokenizer)


def given_patching(
    bundle: Bundle, clean_text: str, corrupted_text: str, step: int | None = None, target_ids: Sequence[int] | None = None
) -> PatchingSetup:
    """The reference runs of two sentences read by ``bundle``'s tokenizer along ``target_ids`` (the clean output the
    runs follow; None: the clean sentence's greedy translation), labelled with its pieces."""
    clean_ids, corrupted_ids = bundle.source_ids(clean_text)[0], bundle.source_ids(corrupted_text)[0]
    source, target = bundle.source_tokenizer.pieces, bundle.target_tokenizer.pieces
    targets = list(target_ids) if target_ids is not None else None
    return prepare_patching(bundle.model, clean_ids, corrupted_ids, step, targets, None, source, target)
