"""The Corpus tool's state (no Qt): the corpus index open, building one in the background, searching it, mapping a
head's queries and keys, and opening a result in the Explore tab.

Building runs in the runner's "corpus-index" job (progress, cancel; the same folder built again resumes after its
finished chunks) on a private copy of the Explore tab's model, as the interventions' jobs do; the index it finishes
(or the part it finished before a cancel or a full disk) is opened for searching. Searches run in "corpus-search" and
maps in "corpus-map"; a newer request supersedes an older one. A token of the Explore tab is searched for through the
model the index was built with (refused, in one line, for any other); a head is searched for by its statistics
(model/corpus/predicates.py). Clicking a result asks the Explore controller to decode that sentence and point at the
token (``ExploreController.show_token``); ``show_requested`` and ``explore_requested`` ask the window to show the
Corpus or the Explore tab.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psygnal import Signal

from explorer.controllers.background import job_bundle
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner, user_message
from model.corpus.build import IndexBuilder, IndexOptions, IndexProgress, IndexResult
from model.corpus.checks import check_outside
from model.corpus.index import CorpusIndex
from model.corpus.layout import MANIFEST, CorpusIndexError, Layer
from model.corpus.qk import head_map, layer_maps, write_map_csv
from model.corpus.search import TokenMatch, head_query, index_token, nearest_tokens, typed_token
from model.corpus.sources import IndexCorpus
from model.errors import UserError
from model.figures.qk_map import MapPanel, save_qk_maps
from model.kinds import AttentionKind
from model.nn.masking import Head

BUILD_CHANNEL, SEARCH_CHANNEL, MAP_CHANNEL = "corpus-index", "corpus-search", "corpus-map"
ROLE_PREDICATES = (  # a head's role -> the query its context menu suggests
    ("positional: previous", "previous >= 0.5"),
    ("positional: next", "next >= 0.5"),
    ("positional: self", "self >= 0.5"),
    ("sink: </s>", "eos >= 0.5"),
    ("last token", "last >= 0.5"),
    ("sink: <s>", "first >= 0.5"),
    ("first token", "first >= 0.5"),
    ("sink: punctuation", "punctuation >= 0.5"),
    ("broad", "entropy >= 0.75"),
)


def suggested_predicate(role: str) -> str:
    """The head query that finds sentences where a head does what its role says (sharp attention otherwise)."""
    return next((predicate for name, predicate in ROLE_PREDICATES if role == name), "entropy < 0.3")


@dataclass
class TokenResults:
    """What a token search found: the query in words and its matches, nearest first."""

    description: str
    layer: Layer
    metric: str
    matches: list[TokenMatch]


@dataclass
class MapRequest:
    kind: AttentionKind
    layer: int  # from 0
    head: int | None  # from 0; None: every head of the layer the index holds
    method: str = "pca"
    sentences: int = 200
    seed: int = 0


class CorpusController:
    """Events: ``index_changed(index or None)``, ``building_changed(bool)``, ``progress(text, done, total)``,
    ``message(text)``, ``tokens_found(TokenResults)``, ``sentences_found(HeadQueryResult)``, ``map_ready(panels,
    MapRequest)``, ``head_chosen(head, predicate)`` (a head sent from the Explore tab, its suggested query),
    ``show_requested()`` and ``explore_requested()`` (the window shows the Corpus or the Explore tab)."""

    index_changed = Signal(object)
    building_changed = Signal(bool)
    progress = Signal(str, int, int)
    message = Signal(str)
    tokens_found = Signal(object)
    sentences_found = Signal(object)
    map_ready = Signal(list, object)
    head_chosen = Signal(object, str)
    show_requested = Signal()
    explore_requested = Signal()

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.index: CorpusIndex | None = None
        self.panels: list[MapPanel] = []
        self.map_request: MapRequest | None = None

    @property
    def building(self) -> bool:
        return self.runner.is_running(BUILD_CHANNEL)

    # --- the index ---------------------------------------------------------------------------------
    def open_index(self, folder: str | Path) -> bool:
        """Open the index in ``folder`` for searching (the one open before is closed); False and a message when not."""
        self.close_index()
        try:
            self.index = CorpusIndex(folder)
        except UserError as error:
            self.message.emit(str(error))
            self.index_changed.emit(None)
            return False
        self.index_changed.emit(self.index)
        return True

    def close_index(self) -> None:
        if self.index is not None:
            self.runner.cancel(SEARCH_CHANNEL, drop=True)
            self.runner.cancel(MAP_CHANNEL, drop=True)
            self.index.close()
            self.index = None

    def build(self, corpus: IndexCorpus, folder: str, options: IndexOptions | None = None) -> bool:
        """Index ``corpus`` with the Explore tab's model into ``folder`` in the background (resuming an unfinished
        index there); False and a message when it cannot start."""
        bundle = self.explore.bundle
        if bundle is None:
            self.message.emit("Open or train a model first: the index is built with the Explore tab's model.")
            return False
        if not str(folder).strip():
            self.message.emit("Choose the folder the index goes in.")
            return False
        if self.index is not None and Path(self.index.folder).resolve() == Path(folder).resolve():
            self.close_index()  # written now: it is opened again when the job ends
            self.index_changed.emit(None)
        copier = job_bundle(bundle, "Building the index", self.message)
        if copier is None:
            return False
        name = bundle.path or "the model trained in this session (unsaved)"

        def work(job: Job) -> IndexResult:
            def report(progress: IndexProgress) -> None:
                job.progress(progress.describe(), progress.done, progress.total)

            return IndexBuilder(copier(), name, corpus, folder, options, report, job.token.is_cancelled).run()

        self.runner.submit(
            BUILD_CHANNEL,
            work,
            on_done=lambda result: self._built(folder, result.describe()),
            on_cancelled=lambda: self._built(folder, "Indexing cancelled; Build again resumes after the chunks finished."),
            on_error=lambda text: self._built(folder, text),
            on_progress=self.progress.emit,
            on_end=lambda: self.building_changed.emit(False),
        )
        self.building_changed.emit(True)
        return True

    def _built(self, folder: str, text: str) -> None:
        """The end of a build: its message, and whatever it indexed opened."""
        self.message.emit(text)
        if (Path(folder) / MANIFEST).exists():
            self.open_index(folder)

    def cancel_build(self) -> None:
        self.runner.cancel(BUILD_CHANNEL)

    def _ready(self) -> CorpusIndex | None:
        if self.index is None:
            self.message.emit("Open or build a corpus index first.")
        return self.index

    def _submit(self, channel: str, work: Any, on_done: Any) -> None:
        self.runner.submit(channel, work, on_done=on_done, on_error=self.message.emit)

    # --- searching ---------------------------------------------------------------------------------
    def default_layer(self, side: str) -> Layer | None:
        """The last layer of ``side`` the open index holds (None without one)."""
        held = [layer for layer in self.index.manifest.layer_list if layer.side == side] if self.index else []
        return held[-1] if held else None

    def find_similar(self, side: str, position: int, layer: Layer | None = None, k: int = 10, metric: str = "cosine") -> bool:
        """The tokens of the index nearest the Explore tab's token at ``position`` of ``side`` (the source's pieces, or
        the decoder's positions: <s>, then each piece fed back), read by the index's model."""
        index, bundle, text = self._ready(), self.explore.bundle, self.explore.text
        self.show_requested.emit()
        if index is None or bundle is None or not text.strip():
            if index is not None:
                self.message.emit("Decode a sentence in the Explore tab first.")
            return False
        layer = layer or self.default_layer(side)
        if layer is None:
            self.message.emit(f"{index.folder.name} holds no {side} vectors.")
            return False
        trace = self.explore.trace
        shown = [] if trace is None else trace.source_tokens if side == "encoder" else trace.decoder_input_tokens
        expected = shown[position] if trace is not None and position < len(shown) else None
        copier = job_bundle(bundle, "The token search", self.message)
        if copier is None:
            return False

        def work(_job: Job) -> TokenResults:
            query = typed_token(index, copier(), text, layer, position=position)
            if expected is not None and query.piece != expected:
                raise CorpusIndexError(
                    f"the index reads greedy decoding, which has “{query.piece}” at position {position}, not “{expected}”: "
                    "decode greedily (no forced token or knocked-out head) to search for this token"
                )
            return TokenResults(query.description, layer, metric, nearest_tokens(index, query, k, metric))

        self._submit(SEARCH_CHANNEL, work, self.tokens_found.emit)
        return True

    def search_index_token(
        self,
        layer: Layer,
        token: str | None,
        sentence_id: int | None = None,
        position: int | None = None,
        k: int = 10,
        metric: str = "cosine",
    ) -> bool:
        """The tokens nearest a token of the index (a piece's first occurrence, or a sentence's position)."""
        index = self._ready()
        if index is None:
            return False

        def work(_job: Job) -> TokenResults:
            query = index_token(index, layer, token, sentence_id, position)
            return TokenResults(query.description, layer, metric, nearest_tokens(index, query, k, metric))

        self._submit(SEARCH_CHANNEL, work, self.tokens_found.emit)
        return True

    def query_head(self, head: Head, predicate: str, limit: int = 500) -> bool:
        """The sentences where ``head`` satisfies ``predicate``."""
        index = self._ready()
        if index is None:
            return False
        self._submit(SEARCH_CHANNEL, lambda _job: head_query(index, head, predicate, limit=limit), self.sentences_found.emit)
        return True

    def choose_head(self, head: Head, role: str = "") -> None:
        """A head sent from the Explore tab: the Corpus tab shows it with the query its role suggests, and runs it."""
        predicate = suggested_predicate(role)
        self.show_requested.emit()
        self.head_chosen.emit(head, predicate)
        if self.index is not None:
            self.query_head(head, predicate)

    # --- the joint query-key map -------------------------------------------------------------------
    def draw_map(self, request: MapRequest) -> bool:
        index = self._ready()
        if index is None:
            return False

        def work(_job: Job) -> list[MapPanel]:
            if request.head is None:
                return layer_maps(index, request.kind, request.layer, request.method, request.sentences, request.seed)
            head = index.check_head(Head(request.kind, request.layer, request.head))
            return [head_map(index, head, request.method, request.sentences, request.seed)]

        def done(panels: list[MapPanel]) -> None:
            self.panels, self.map_request = panels, request
            self.map_ready.emit(panels, request)

        self._submit(MAP_CHANNEL, work, done)
        return True

    def export_map(self, path: str | Path, colour_by: str = "position") -> Path | None:
        """The map drawn last as a figure (PNG, SVG, PDF) or its points as CSV, by the suffix; None and a message when
        it cannot be written."""
        if not self.panels or self.map_request is None:
            self.message.emit("Draw a map first.")
            return None
        try:
            if self.index is not None:
                check_outside(path, self.index.folder)  # never over one of the index's own files
            if Path(path).suffix.lower() == ".csv":
                return write_map_csv(self.panels, path, self.map_request.method)
            return Path(save_qk_maps(self.panels, path, colour_by, caption=self.map_caption()))
        except UserError as error:
            self.message.emit(str(error))
            return None

    def map_caption(self) -> str:
        request, index = self.map_request, self.index
        if request is None or index is None:
            return ""
        return (
            f"Queries (●) and keys (▲) of {request.kind.label}, layer {request.layer + 1}, over {request.sentences} sentences "
            f"of {index.describe()}; {request.method.upper()}"
        )

    # --- opening a result ---------------------------------------------------------------------------
    def open_result(self, sentence_id: int, side: str = "encoder", position: int | None = None) -> bool:
        """Decode sentence ``sentence_id`` of the index in the Explore tab, pointing at the token at ``position``."""
        index = self._ready()
        if index is None:
            return False
        try:
            found = index.sentences([sentence_id])
        except UserError as error:
            self.message.emit(user_message(error))
            return False
        if sentence_id not in found:
            self.message.emit(f"sentence {sentence_id} is not in the index")
            return False
        self.explore_requested.emit()
        return self.explore.show_token(found[sentence_id][0], side, position, f"sentence {sentence_id} of {index.folder.name}")
