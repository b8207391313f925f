"""The positional-encoding analysis: the rotation property of the sinusoidal table, measured."""

import numpy as np

from model.inspection.position_reports import positional_report
from model.inspection.positional import frequencies, rotate
from model.nn.transformer import sinusoidal_table
from tests.conftest import tiny_bundle


def test_rotating_each_sin_cos_pair_moves_every_position_by_k():
    table = sinusoidal_table(100, 64).double().numpy()
    for k in (1, 5, 37):
        np.testing.assert_allclose(rotate(table[:-k], k), table[k:], atol=1e-6)  # the table is float32
    assert frequencies(64)[0] == 1.0 and np.isclose(frequencies(64)[-1], 10000 ** (-62 / 64))


def test_report_of_a_sinusoidal_and_a_learned_model():
    sinusoidal, _ = tiny_bundle("copy", size=100)
    report = positional_report(sinusoidal, n_positions=40, max_offset=10)
    assert report.kind == "sinusoidal" and report.table.shape == (40, 32)
    np.testing.assert_allclose(report.similarity, report.table @ report.table.T, rtol=1e-5, atol=1e-4)
    assert list(report.offsets) == list(range(1, 11))
    assert report.rotation_error.max() < 1e-5 < 0.5 < report.unrotated_error.min()
    learned, _ = tiny_bundle("copy", size=100, positional_encoding="learned")
    report = positional_report(learned, n_positions=40)
    assert report.kind == "learned" and np.isnan(report.rotation_error).all()
    np.testing.assert_allclose(report.table, learned.model.positional_table[:40].detach().numpy())
