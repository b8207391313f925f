"""A model with everything needed to use it: its network (any family, model/nn/registry.py), tokenizers,
the corpus it was trained on and how training went. Saved and loaded by model/io/checkpoint.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from model.data.batching import encode_source, encode_target
from model.data.corpora import CorpusSpec
from model.data.labelling import encode_words, split_words
from model.data.tokenizer import Tokenizer
from model.errors import UserError
from model.family import Bundle, Family, family_of
from model.network import TrainableNetwork
from model.pretrained.languages import check_code

if TYPE_CHECKING:
    from model.io.snapshots import Recording


@dataclass
class ModelBundle:
    """A model with everything needed to use it: tokenizers, what it was trained on, how it went."""

    model: TrainableNetwork  # a network of one of the app's families (model/family.py, model/nn/registry.py)
    source_tokenizer: Tokenizer
    target_tokenizer: Tokenizer
    corpus: CorpusSpec | None = None
    history: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)  # the TrainingOptions used, as a dict
    path: str | None = None  # where it was loaded from or last saved to
    # snapshots recorded while it trained, written beside it when saved (model/io/timeline.py)
    recording: Recording | None = field(default=None, repr=False, compare=False)

    @property
    def config(self) -> Any:
        return self.model.config

    @property
    def family(self) -> Family:
        return family_of(self.model)

    @property
    def examples(self) -> list[str]:
        """Sentences that show the model at its best: none of its own (the window takes one of its corpus)."""
        return []

    @property
    def is_tagger(self) -> bool:
        return self.family.capabilities.labels and self.config.task == "tagging"

    def source_ids(self, text: str) -> tuple[list[int], int, int]:
        """(the ids the encoder reads: pieces cut to fit, then EOS; the pieces the text has; the pieces kept).
        A tagger reads the text's words one by one, its punctuation split off (model/data/labelling.py)."""
        if self.is_tagger:
            words = split_words(text)
            ids, _ = encode_words(self.source_tokenizer, words, self.config.max_len, self.config.eos_id)
            return ids, sum(len(self.source_tokenizer.encode(word)) for word in words), len(ids) - 1
        ids, n_pieces = encode_source(self.source_tokenizer, text, self.config)
        return ids, n_pieces, len(ids) - 1

    def target_ids(self, text: str) -> list[int]:
        return encode_target(self.target_tokenizer, text, self.config)

    @property
    def languages(self) -> list[str]:
        return []  # the app's own models read and write the one pair they were trained on

    source_language = target_language = property(lambda self: None)

    def choose_languages(self, source: str | None = None, target: str | None = None) -> None:
        if source is not None or target is not None:
            check_code([], source or target or "", "source" if source is not None else "target")

    def info(self) -> list[tuple[str, str]]:
        """(label, value) rows for the info panel."""
        config, family = self.config, self.family
        rows = [
            ("Model", Path(self.path).name if self.path else "unsaved"),
            ("Family", f"{family.title} ({family.name}, trained by this app)"),
            ("Layers", config.layer_summary()),
            ("Sizes", config.describe()),
            ("Parameters", f"{self.model.parameter_count():,}"),
            ("Attention", "the app's own (weights returned by every layer)"),
            ("Positions", family.capabilities.positions.describe(config)),
            (
                "Tokenizer",
                f"SentencePiece, {self.source_tokenizer.vocab_size:,} source / {self.target_tokenizer.vocab_size:,} target pieces",
            ),
            ("Corpus", self.corpus.describe() if self.corpus else "unknown"),
        ]
        if family.capabilities.labels:
            rows.append(("Classes", ", ".join(config.class_names)))
        return rows

    def describe(self) -> str:
        corpus = self.corpus.describe() if self.corpus else "unknown corpus"
        return f"{corpus}: {self.config.describe()}, {self.model.parameter_count():,} parameters"


def own_bundle(bundle: Bundle) -> ModelBundle | None:
    """``bundle`` as the app's own (a model file's: its SentencePiece tokenizers, its recording and digest) when its
    family's registry entry says so (``Capabilities.trainable``: trained here and saved in the app's model files);
    None for any other (a pretrained folder's)."""
    return cast(ModelBundle, bundle) if bundle.family.capabilities.trainable else None


def require_own(bundle: Bundle, why: str) -> ModelBundle:
    """``own_bundle(bundle)``, or a UserError saying ``why`` an app's own model is needed."""
    own = own_bundle(bundle)
    if own is None:
        raise UserError(why)
    return own
