"""The reference runs of activation patching (model/interventions/patching.py): a clean and a corrupted source (a
decoder-only model's prompts) read along the clean output, the step compared and the token it is compared with, the two
runs' activations at every hook the grids read, and their metrics (``prepare_patching``, ``PatchingSetup``).

An encoder-only model decodes nothing: its two texts are read by its own head (its whole pass, head included), and the
metric is the logit difference of its prediction at one place, a piece's tag or masked-LM word, or the sentence's
class: the clean text's prediction there minus the corrupted text's (``_prepare_text_patching``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import torch

from model.data.token_labels import display_candidate
from model.data.tokenizer import unknown_pieces
from model.decoding.greedy import decoder_inputs, given_steps
from model.family import Bundle, InterventionTool, capabilities_of, suppressed_ids
from model.interventions.hooked import InterventionError, greedy_output, hook_names, ids_as_text
from model.interventions.served_pass import head_reading, run_hooked, supported
from model.network import DecodingNetwork, Network

GRADIENT_ROOTS = ("encoder.0.resid_pre", "decoder.0.resid_pre")  # every other activation depends on these


@dataclass
class PairLabels:
    """The pieces a patching run shows."""

    clean: list[str]  # the clean source's pieces
    corrupted: list[str]  # the corrupted source's
    target: list[str]  # the decoder's inputs up to the step: <s>, then the clean output
    clean_token: str  # the clean run's next token at the step
    compared_token: str  # the token it is compared with
    corrupted_target: list[str] = field(default_factory=list)  # the corrupted run's decoder inputs where they differ
    # (a decoder-only model's: its prompt is where they begin); empty: the same as ``target``
    place: str = "step"  # what ``step`` counts: a decoder's steps, an encoder-only model's "position" or "sentence"
    names: bool = False  # the two compared are a head's class names (tags), not pieces

    def compared(self) -> tuple[str, str]:
        """The clean and compared tokens as people read them: a piece on its own ("▁le" -> "le"), a name as it is."""
        if self.names:
            return self.clean_token, self.compared_token
        return display_candidate(self.clean_token), display_candidate(self.compared_token)

    def where(self, step: int) -> str:
        """Where the compared prediction is: "step 3", "position 3", "the sentence"."""
        return "the sentence" if self.place == "sentence" else f"{self.place} {step + 1}"

    def at(self, step: int) -> str:
        """ "at step 3", "at position 3", "for the sentence"."""
        return f"{'for' if self.place == 'sentence' else 'at'} {self.where(step)}"


@dataclass
class PatchingSetup:
    """What every patching run of one pair reads: the inputs, the two reference runs' activations and metrics."""

    model: Network  # the app's Transformer or a pretrained encoder-decoder network (model/interventions/served_pass.py)
    clean_source: torch.Tensor  # [1, S]
    corrupted_source: torch.Tensor  # [1, S]
    target_inputs: torch.Tensor  # [1, step + 1] the clean run's decoder inputs
    corrupted_inputs: torch.Tensor  # [1, step + 1] the corrupted run's (the same but in a decoder-only model's prompt)
    step: int
    clean_id: int
    compared_id: int
    clean_activations: dict[str, torch.Tensor]  # hook -> [1, ...]
    corrupted_activations: dict[str, torch.Tensor]
    clean_metric: float
    corrupted_metric: float
    labels: PairLabels


def logit_difference(logits: torch.Tensor, clean_id: int, compared_id: int) -> torch.Tensor:
    """logits [B, V] -> logit(clean) − logit(compared) [B]."""
    return logits[:, clean_id] - logits[:, compared_id]


def _choices(model: Network, logits: torch.Tensor) -> torch.Tensor:
    """logits [..., V] -> the tokens the model's greedy decoding would choose [...] (never one it bans: Marian's pad)."""
    banned = suppressed_ids(model.config)
    if banned:
        logits = logits.index_fill(-1, torch.tensor(banned, device=logits.device), float("-inf"))
    return logits.argmax(-1)


def _inputs(model: Network, sources: torch.Tensor, target_ids: list[int]) -> torch.Tensor:
    """Each source row's decoder inputs along ``target_ids`` [rows, len(target_ids)] (``decoder_inputs``)."""
    rows = [decoder_inputs(model, source, target_ids) for source in sources.tolist()]
    return torch.tensor(rows, device=sources.device)


@torch.inference_mode()
def _first_difference(model: Network, sources: torch.Tensor, target_ids: list[int]) -> int | None:
    """The first decoded step (a decoder-only model's prompt is given, not decoded) at which the corrupted run (row 1)
    chooses another token than the clean output; None if none."""
    chosen = _choices(model, run_hooked(model, sources, _inputs(model, sources, target_ids)).logits(model)[1]).tolist()  # [T]
    first = given_steps(model, sources[0].tolist())
    return next((step for step, (mine, clean) in enumerate(zip(chosen, target_ids)) if step >= first and mine != clean), None)


def prepare_patching(
    model: Network,
    clean_ids: list[int],
    corrupted_ids: list[int],
    step: int | None = None,
    target_ids: list[int] | None = None,
    compared_id: int | None = None,
    source_pieces: Callable[[list[int]], list[str]] = ids_as_text,
    target_pieces: Callable[[list[int]], list[str]] = ids_as_text,
) -> PatchingSetup:
    """The reference runs of a pair of source id lists (EOS last). ``target_ids``: the clean output the runs follow
    (default: its greedy translation); ``step``: the step compared (default: the first at which the corrupted run
    chooses otherwise); ``compared_id``: the token compared with (default: the corrupted run's choice there);
    ``source_pieces``, ``target_pieces``: ids -> piece strings for the labels (default: the ids as text)."""
    model = supported(model, InterventionTool.PATCHING)
    if len(clean_ids) != len(corrupted_ids):
        raise InterventionError(
            f"the clean source has {len(clean_ids)} pieces and the corrupted one {len(corrupted_ids)}: patching needs equal counts"
        )
    device = next(model.parameters()).device
    sources = torch.tensor([clean_ids, corrupted_ids], device=device)  # [2, S]
    if not capabilities_of(model).architecture.has_decoder:
        return _prepare_text_patching(model, sources, step, compared_id, source_pieces)
    decoding = cast(DecodingNetwork, model)  # served by patching: an encoder-decoder
    targets = list(target_ids) if target_ids is not None else greedy_output(decoding, sources[:1])
    if step is None:
        step = _first_difference(model, sources, targets)
        if step is None and compared_id is None:
            raise InterventionError(
                "the two sentences are translated alike at every step, so there is nothing to restore: choose sentences "
                "whose translations differ (a minimal pair)"
            )
        step = step or 0
    if not 0 <= step < len(targets):
        raise InterventionError(f"step {step + 1} is not one of the clean translation's {len(targets)} steps")
    inputs = _inputs(model, sources, targets[: step + 1])  # [2, step + 1]
    with torch.inference_mode():
        run = run_hooked(model, sources, inputs, capture=_every_hook(model))
        logits = run.logits(model, step)  # [2, V]
    chosen = int(_choices(model, logits[1])) if compared_id is None else compared_id
    clean_id = targets[step]
    if chosen == clean_id:
        raise InterventionError(f"both sentences give the same token at step {step + 1}: choose a step at which they differ")
    clean_metric, corrupted_metric = logit_difference(logits, clean_id, chosen).tolist()  # [2]
    if clean_metric == corrupted_metric:
        raise InterventionError(f"the two runs' logit differences are equal at step {step + 1}: nothing to restore")
    decoded, corrupted_decoded = target_pieces(inputs[0].tolist()), target_pieces(inputs[1].tolist())
    pieces = (source_pieces(clean_ids), source_pieces(corrupted_ids), decoded)
    labels = PairLabels(*pieces, target_pieces([clean_id])[0], target_pieces([chosen])[0])
    if corrupted_decoded != decoded:  # apart in a decoder-only model's prompts only
        labels.corrupted_target = corrupted_decoded
    clean = {hook: activation[:1] for hook, activation in run.activations.items()}  # [1, ...] each
    corrupted = {hook: activation[1:] for hook, activation in run.activations.items()}
    return PatchingSetup(
        model, sources[:1], sources[1:], inputs[:1], inputs[1:], step, clean_id, chosen, clean, corrupted,
        clean_metric=clean_metric, corrupted_metric=corrupted_metric, labels=labels,
    )  # fmt: skip


@torch.inference_mode()
def _prepare_text_patching(
    model: Network,
    sources: torch.Tensor,
    place: int | None,
    compared_id: int | None,
    source_pieces: Callable[[list[int]], list[str]],
) -> PatchingSetup:
    """An encoder-only model's reference runs of two texts ``sources`` [2, S]: the metric is read from its head at a
    place it predicts (a piece's tag or word, or the sentence's class), by default the first place the two texts'
    predictions differ at, compared with the corrupted text's prediction there."""
    no_decoder = sources[:, :0]  # [2, 0]
    run = run_hooked(model, sources, no_decoder, capture=_every_hook(model))
    scores = run.logits(model)  # [2, P, C] the head's own scores
    chosen = scores.argmax(-1)  # [2, P]
    head = head_reading(model, scores.shape[-1], source_pieces)
    per_piece, place_name, what = head.place == "position", head.place, head.predicted
    if place is None:
        differ = (chosen[0] != chosen[1]).nonzero()
        if not len(differ) and compared_id is None:
            where = " at every piece" if per_piece else ""
            raise InterventionError(
                f"the model predicts the same {what} for both texts{where}, so there is nothing to restore: choose texts "
                "whose predictions differ (a minimal pair)"
            )
        place = int(differ[0, 0]) if len(differ) else 0
    if not 0 <= place < scores.shape[1]:
        count = f"{scores.shape[1]} pieces" if per_piece else "one prediction (the sentence's class: position 1)"
        raise InterventionError(f"{place_name} {place + 1} is not one of the text's {count}")
    clean_id = int(chosen[0, place])
    compared = int(chosen[1, place]) if compared_id is None else compared_id
    pieces = (source_pieces(sources[0].tolist()), source_pieces(sources[1].tolist()))
    labels = PairLabels(*pieces, [], "", "", place=place_name, names=head.names)
    if compared == clean_id:
        raise InterventionError(f"both texts get the same {what} {labels.at(place)}: choose a place at which they differ")
    clean_metric, corrupted_metric = logit_difference(scores[:, place], clean_id, compared).tolist()  # [2]
    labels.clean_token, labels.compared_token = head.label([clean_id, compared])
    clean = {hook: activation[:1] for hook, activation in run.activations.items()}  # [1, ...] each
    corrupted = {hook: activation[1:] for hook, activation in run.activations.items()}
    return PatchingSetup(
        model, sources[:1], sources[1:], no_decoder[:1], no_decoder[1:], place, clean_id, compared, clean, corrupted,
        clean_metric=clean_metric, corrupted_metric=corrupted_metric, labels=labels,
    )  # fmt: skip


def _every_hook(model: Network) -> list[str]:
    """The hooks the grids read."""
    return [name for name in hook_names(model) if name.endswith((".head_out", ".mlp_out", ".resid_post")) or name in GRADIENT_ROOTS]


def prepare_bundle_patching(
    bundle: Bundle, clean_text: str, corrupted_text: str, step: int | None = None, compared_id: int | None = None
) -> PatchingSetup:
    """``prepare_patching`` of two sentences read by ``bundle``'s tokenizer, labelled with its pieces. A refusal says
    when the model does not know the sentences' words (their pieces read as <unk>: the copy model reading English)."""
    clean_ids, corrupted_ids = bundle.source_ids(clean_text)[0], bundle.source_ids(corrupted_text)[0]
    source, target = bundle.source_tokenizer.pieces, bundle.target_tokenizer.pieces
    try:
        return prepare_patching(bundle.model, clean_ids, corrupted_ids, step, None, compared_id, source, target)
    except InterventionError as error:
        unknown = int(unknown_pieces(bundle.source_tokenizer, clean_ids + corrupted_ids).sum())
        if not unknown:
            raise
        pieces = len(clean_ids) + len(corrupted_ids)
        raise InterventionError(f"{error} ({unknown} of the two sentences' {pieces} pieces are unknown to this model: "
                                "it never saw those words)") from None  # fmt: skip
