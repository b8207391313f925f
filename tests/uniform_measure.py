"""A measure defined by a test, whole in this one file: every key the same share of its row (the encoder's and
cross-attention's rows over every source piece, the decoder's over the inputs up to the step). The app's own measures
are the same kind of class with ``@register_measure`` on it; the tests register this one only while they run
(``registered_uniform``), to show that one class is all a new measure takes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from model.attribution.measures import Measure, MeasureInputs, MeasureResult, register_measure, unregister_measure
from model.kinds import AttentionKind
from model.network import Network


class Uniform(Measure):
    name, label, what = "uniform", "Uniform shares", "every key the same share of its row (a test's measure)"

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        n_source, n_steps = len(inputs.source_ids), len(inputs.chosen_ids)
        prefix = np.tril(np.ones((n_steps, n_steps), np.float32))  # [T, T] the inputs up to each step
        values = {
            AttentionKind.ENCODER: np.full((1, 1, n_source, n_source), 1 / n_source, np.float32),
            AttentionKind.DECODER: (prefix / prefix.sum(-1, keepdims=True))[None, None],
            AttentionKind.CROSS: np.full((1, 1, n_steps, n_source), 1 / n_source, np.float32),
        }
        return MeasureResult(self.name, values, dict(values))


@contextmanager
def registered_uniform() -> Iterator[type[Measure]]:
    """``Uniform`` registered while the block runs, unregistered after."""
    register_measure(Uniform)
    try:
        yield Uniform
    finally:
        unregister_measure(Uniform.name)
