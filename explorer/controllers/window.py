"""Every controller of one window, built together over one runner: what the main window makes and hands to its
tabs (each tab takes the controllers it shows)."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.controllers.alignment import AlignmentController
from explorer.controllers.circuits import CircuitsController
from explorer.controllers.compare import CompareController
from explorer.controllers.corpus import CorpusController
from explorer.controllers.explore import ExploreController
from explorer.controllers.importance import ImportanceController
from explorer.controllers.interventions import InterventionsController
from explorer.controllers.lengths import LengthsController
from explorer.controllers.measures import MeasureController
from explorer.controllers.neuron import NeuronController
from explorer.controllers.report_card import ReportCardController
from explorer.controllers.runner import Runner
from explorer.controllers.timeline import TimelineController
from explorer.controllers.timeline_curves import CurvesController
from explorer.controllers.timeline_exports import TimelineExports
from explorer.controllers.training import TrainingController


@dataclass
class WindowControllers:
    runner: Runner
    explore: ExploreController
    measures: MeasureController
    alignment: AlignmentController
    importance: ImportanceController
    compare: CompareController
    training: TrainingController
    timeline: TimelineController  # the opened model's timeline of training snapshots
    curves: CurvesController  # its curves over training
    timeline_exports: TimelineExports
    interventions: InterventionsController  # logit lens, DecoderLens, logit attribution, patching
    circuits: CircuitsController  # the circuit of the Patching sub-tab's pair (model/circuits/)
    neuron: NeuronController  # one head's query row inside, and every head's positional terms
    corpus: CorpusController  # a corpus index: built, searched, its heads' query-key maps
    report_card: ReportCardController  # every attribution reading graded (model/grading/)
    lengths: LengthsController  # the length experiment: each positional scheme read past its training lengths

    @classmethod
    def build(cls, runner: Runner, explore: ExploreController | None = None) -> WindowControllers:
        """The controllers of a window whose background work goes through ``runner``."""
        explore = explore or ExploreController()
        measures, alignment = MeasureController(explore, runner), AlignmentController(explore, runner)
        importance, compare = ImportanceController(explore, runner), CompareController(explore, runner)
        training, timeline = TrainingController(runner), TimelineController(explore, runner, compare)
        curves = CurvesController(explore, runner, timeline)
        exports = TimelineExports(explore, runner, timeline, curves)
        interventions, neuron = InterventionsController(explore, runner), NeuronController(explore, runner)
        corpus, circuits = CorpusController(explore, runner), CircuitsController(explore, runner)
        report_card, lengths = ReportCardController(explore, runner), LengthsController(explore, runner)
        return cls(
            runner,
            explore,
            measures,
            alignment,
            importance,
            compare,
            training,
            timeline,
            curves,
            exports,
            interventions,
            circuits,
            neuron,
            corpus,
            report_card,
            lengths,
        )

    def close(self, timeout_s: float = 60.0) -> bool:
        """The window is closing: training stopped (nothing kept), every job cancelled and joined; True when all ended."""
        self.training.stop(keep=False)
        closed = self.runner.close(timeout_s)
        self.corpus.close_index()
        return closed
