"""What the controller tests share besides fixtures: a recorder of a controller's events, the bound on waiting for a
job, and a tiny training request."""

from __future__ import annotations

from model.data.corpora import CorpusSpec
from model.training.pipeline import TokenizerOptions
from model.training.run import TrainingRequest
from model.training.trainer import TrainingOptions

WAIT_S = 120  # a bound on waiting for a state, not a timing claim


class Recorder:
    """Every emission of the events named, in order: (event name, *args)."""

    def __init__(self, controller, *names: str) -> None:
        self.seen: list[tuple] = []
        for name in names:
            getattr(controller, name).connect(lambda *args, name=name: self.seen.append((name, *args)))

    def of(self, name: str) -> list[tuple]:
        return [args[1:] for args in self.seen if args[0] == name]


def tiny_request(steps: int | None, corpus: CorpusSpec | None = None, **options) -> TrainingRequest:
    """A one-layer Transformer on 200 copy pairs (or ``corpus``), for ``steps`` steps (None: no limit); ``options``
    replace the training options' (epochs, valid_every, …) or, for ``n_heads``, the model's."""
    model = dict(n_encoder_layers=1, n_decoder_layers=1, d_model=32, n_heads=options.pop("n_heads", 2), d_ff=64, dropout=0.0)
    training = TrainingOptions(
        **{"epochs": 1000, "max_steps": steps, "batch_size": 16, "warmup_steps": 10, "valid_every": None, **options}
    )
    corpus = corpus or CorpusSpec("copy", size=200, seed=0)
    return TrainingRequest(corpus, TokenizerOptions(vocab_size=60), model, training, "cpu")
