"""The Train tab's validation dots are drawn, whole (issue 39): a single validation's exact match was not drawn at all
(a one-point curve of lines only draws nothing) and dots at the last step or at a score of 1 sat half outside their
plots (the ranges ended exactly there)."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtCore import QPointF

from explorer.widgets.training_curves import TrainingCurves
from tests.explorer.test_training_curves import _progress

VALIDATION_CURVES = ("valid_loss", "valid_accuracy", "bleu", "exact_match")


def _perfect(step: int) -> SimpleNamespace:
    """A validation that scores everything right: token accuracy 1, exact match 1 (100 on its plot)."""
    scores = SimpleNamespace(is_labelling=False, loss=0.5, token_accuracy=1.0, bleu=100.0, exact_match=1.0, macro_f1=0.0)
    return SimpleNamespace(step=step, scores=scores)


def _curves(qtbot, width: int = 700, height: int = 420) -> TrainingCurves:
    curves = TrainingCurves()
    qtbot.addWidget(curves)
    curves.resize(width, height)
    curves.show()
    qtbot.waitExposed(curves)
    return curves


def _outside(curves: TrainingCurves) -> list[tuple[str, float, float]]:
    """(curve, step, value) of each validation dot not wholly inside its plot's view."""
    outside = []
    for name in VALIDATION_CURVES:
        curve = curves.curves[name]
        view = curve.getViewBox()
        box = view.sceneBoundingRect()
        radius = curve.opts["symbolSize"] / 2
        for x, y in zip(*curves.series(name)):
            centre = view.mapViewToScene(QPointF(float(x), float(y)))
            inside = box.adjusted(radius, radius, -radius, -radius).contains(centre)
            if not inside:
                outside.append((name, float(x), float(y)))
    return outside


def test_a_single_validations_exact_match_is_a_dot(qtbot):
    curves = _curves(qtbot)
    for step in range(1, 201):
        curves.add_progress(_progress(step))
    curves.add_validation(_perfect(200))
    curves.flush()
    for name in VALIDATION_CURVES:
        curve = curves.curves[name]
        assert curve.opts["symbol"] is not None, name  # one point: only a symbol draws it
        assert len(curve.scatter.data) == 1 and curve.scatter.isVisible(), name


def test_dots_at_the_last_step_and_at_a_perfect_score_are_inside_their_plots(qtbot):
    curves = _curves(qtbot)
    for step in range(1, 501):
        curves.add_progress(_progress(step))
        if step in (100, 500):  # 500: a stepped axis end (1, 2, 5 × 10^k), where the axis ended
            curves.add_validation(_perfect(step))
    curves.flush()
    qtbot.waitUntil(lambda: curves.loss_plot.vb.sceneBoundingRect().width() > 0, timeout=5000)
    assert _outside(curves) == []
