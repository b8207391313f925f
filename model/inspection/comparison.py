"""Two models side by side on one sentence: which head of each to show, and how well it aligns.

Teachers put seed 002's RNN attention next to the Transformer's cross-attention. For each model the
comparison picks the head that aligns best with toy-fr's gold word alignments (``best_alignment_head``:
the app's one best head, ``measured_aer`` in model/inspection/alignment.py: corpus-level AER on 200 held-out toy-fr
test pairs drawn with seed 0 by default, the step that predicts a word, as ``evaluate`` and ``heads`` read it), or,
for a model not trained on toy-fr, the mean of its last layer's heads. A sentence whose gold alignment is
known (a toy-fr pair) gets each shown head's own AER, read teacher-forced on its reference translation.

The views and figures read the chosen head's matrix through ``ExploreView``, like every other view, so the
two panels are exactly what the Explore tab would show for that head.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.data.corpora import Pair
from model.decoding.stepper import Stepper
from model.decoding.trace import Trace
from model.family import Bundle
from model.inspection.alignment import AER_PAIRS, AER_SEED, aer_where, cross_attention_aer, measured_aer
from model.inspection.selection import AttentionMatrix, head_title
from model.inspection.view import ExploreView
from model.kinds import AttentionKind

FRESH_SEED = 424243  # toy-fr sentences drawn to compare on: a seed no shipped model was trained with (they use 0)


@dataclass(frozen=True)
class HeadChoice:
    """The cross-attention head a comparison shows for one model, and why."""

    layer: int  # 0-based
    head: int | str  # 0-based head, or "mean"
    corpus_aer: float | None  # its AER on the alignment pairs; None when not measured
    n_pairs: int  # pairs the AER was measured on
    corpus: str = ""  # the corpus whose test pairs they are
    seed: int | None = None  # the seed that drew them

    def describe(self, n_layers: int, n_heads: int, whose: str = "") -> str:
        """'layer 3, head 2' ('the attention' for a one-head model), with its AER when measured; ``whose``: the model
        it was chosen for when that is another one ("the final model": a snapshot shows the final model's head, and its
        AER is the final model's)."""
        if n_layers == 1 and n_heads == 1:
            where, why = "its one attention", ""
        else:
            best = f"{whose}'s best-aligning head" if whose else "the best-aligning head"
            where, why = f"layer {self.layer + 1}, {head_title(self.head)}", f", {best}"
        if self.corpus_aer is None:
            return where
        there = " there" if whose else ""
        return f"{where}{why}: AER{there} {self.corpus_aer:.3f} on {aer_where(self.corpus, self.n_pairs, self.seed)}"


def aligns_toy_fr(bundle: Bundle) -> bool:
    """Whether gold alignments can score the model: it has cross-attention and was trained on toy-fr."""
    corpus = bundle.corpus
    return (
        AttentionKind.CROSS in bundle.family.capabilities.kinds
        and corpus is not None
        and corpus.is_builtin
        and corpus.name == "toy-fr"
    )


def best_alignment_head(bundle: Bundle, count: int = AER_PAIRS, seed: int = AER_SEED) -> HeadChoice:
    """The app's best head (``measured_aer``: the lowest AER on ``count`` held-out toy-fr pairs drawn with ``seed``);
    the last layer's mean for a model that gold alignments cannot score."""
    n_layers = bundle.config.n_decoder_layers
    report = measured_aer(bundle, count, seed) if aligns_toy_fr(bundle) else None
    if report is None:
        return HeadChoice(max(n_layers - 1, 0), "mean", None, 0)
    aer, layer, head, _ = report.best
    return HeadChoice(layer, head, aer, report.n_pairs, report.corpus, seed)


def sentence_aer(bundle: Bundle, pair: Pair, choice: HeadChoice) -> float | None:
    """The AER of the chosen head on one gold pair (teacher-forced on its reference); None when the pair's
    words cannot be matched to the model's tokens."""
    if not pair.alignment or AttentionKind.CROSS not in bundle.family.capabilities.kinds:
        return None
    report = cross_attention_aer(bundle, [pair])
    if not report.n_pairs:
        return None
    if isinstance(choice.head, int):
        return float(report.head_aer[0, choice.layer, choice.head])
    return float(report.layer_aer[0, choice.layer])


def compared_matrix(trace: Trace, choice: HeadChoice, word_level: bool = True) -> tuple[AttentionMatrix, Trace]:
    """The chosen head's cross-attention as the Explore tab shows it: (matrix [steps, source], the trace shown)."""
    state, _ = ExploreView(AttentionKind.CROSS, choice.layer, choice.head, word_level=word_level).fitted(trace)
    shown = state.shown_trace(trace)
    return state.matrix(shown), shown


def gold_pair(text: str, known: dict[str, Pair]) -> Pair | None:
    """The gold pair of a sentence when it is a known toy-fr source (spaces normalised)."""
    return known.get(" ".join(text.split()))


@dataclass
class Panel:
    """One side of a comparison: a model's name, its trace at the shared step and the head shown."""

    name: str  # the model's name as the user knows it (file stem, shipped name)
    description: str  # its family and sizes
    trace: Trace
    choice: HeadChoice
    n_layers: int
    n_heads: int
    sentence_aer: float | None = None
    chosen_for: str = ""  # the model the head was chosen for, when another one ("the final model", for a snapshot)
    own_aer: float | None = None  # then this model's own AER of that head on the same pairs (None: not measured)
    measuring: bool = False  # that AER is being measured
    forced: str = ""  # whose output it was made to write ("the final model's"), "" when it wrote its own

    def details(self, forced: bool = True) -> str:
        """The head shown and how well it aligns: 'layer 3, head 1, the best-aligning head: AER ... on ...; on this
        sentence ...'; a head chosen for another model says so, with this model's own AER; with ``forced``, an output
        not its own is said too."""
        line = self.choice.describe(self.n_layers, self.n_heads, self.chosen_for)
        if self.own_aer is not None:
            line += f"; at this snapshot AER {self.own_aer:.3f}"
        elif self.measuring:
            line += "; at this snapshot: its AER is being measured"
        if self.sentence_aer is not None:
            line += f"; on this sentence {self.sentence_aer:.3f}"
        if forced and self.forced:
            line += f"; made to write {self.forced}"
        return line

    def translation(self) -> str:
        """What the model has written up to the shared step, as text ("—" before its first word)."""
        return self.trace.target_text or "—"

    def translation_heading(self) -> str:
        """'Translation', or 'Translation (forced to the final model's output)' when it is not the model's own."""
        return f"Translation (forced to {self.forced})" if self.forced else "Translation"

    def heading(self) -> str:
        return f"{self.name}: {self.details()}"


def make_panel(name: str, bundle: Bundle, trace: Trace, choice: HeadChoice, gold: Pair | None) -> Panel:
    """A panel for ``bundle``'s trace, with the sentence's AER when its gold alignment is known."""
    return Panel(
        name,
        bundle.config.describe(),
        trace,
        choice,
        bundle.config.n_decoder_layers,
        bundle.config.n_heads,
        sentence_aer(bundle, gold, choice) if gold is not None else None,
    )


def decoded_panel(
    name: str,
    bundle: Bundle,
    text: str,
    options=None,
    step: int | None = None,
    gold: Pair | None = None,
    aer_pairs: int = AER_PAIRS,
    aer_seed: int = AER_SEED,
) -> Panel:
    """``text`` decoded by ``bundle`` (to ``step`` steps, or to its end) as a panel showing its best alignment head
    (measured on ``aer_pairs`` held-out pairs drawn with ``aer_seed``)."""
    stepper = Stepper(bundle, text, options)
    if step is None:
        stepper.run()
    else:
        stepper.jump(step)
    return make_panel(name, bundle, stepper.trace(), best_alignment_head(bundle, aer_pairs, aer_seed), gold)
