"""The Train tab's curves: one step axis for the four plots (a single validation point sits at its step), a legend
naming each series, and a corpus change clears the last run's curves."""

from __future__ import annotations

from types import SimpleNamespace

from explorer.widgets.training_curves import TrainingCurves, stepped_ceiling
from model.training.trainer import Progress


def _progress(step: int) -> Progress:
    return Progress(
        step=step,
        epoch=1,
        train_loss=5.0 - step / 200,
        token_accuracy=step / 1000,
        learning_rate=1e-4,
        tokens_per_second=0.0,
        eta_seconds=0.0,
        fraction=step / 1000,
        elapsed_seconds=0.0,
    )


def _validation(step: int) -> SimpleNamespace:
    scores = SimpleNamespace(is_labelling=False, loss=2.5, token_accuracy=0.5, bleu=31.0, exact_match=0.2, macro_f1=0.0)
    return SimpleNamespace(step=step, scores=scores)


def _unpadded(span) -> tuple[float, float]:
    """A range from 0 as set, without the padding at both ends (the same share of it at each)."""
    low, high = span
    assert low < 0  # padded
    return 0.0, round(low + high, 6)


def _filled(qtbot) -> TrainingCurves:
    curves = TrainingCurves()
    qtbot.addWidget(curves)
    curves.resize(800, 500)
    curves.show()
    for step in range(1, 501):
        curves.add_progress(_progress(step))
    curves.add_validation(_validation(500))
    curves.flush()
    return curves


def test_a_single_validation_point_sits_on_the_training_step_axis(qtbot):
    curves = _filled(qtbot)
    plots = (curves.accuracy_plot, curves.rate_plot, curves.bleu_plot)

    def on_the_step_axis(plot) -> bool:
        low, high = plot.viewRange()[0]
        return low < 10 and high > 490  # steps 1..500, not 499.6..500.4 around the one validation point

    qtbot.waitUntil(lambda: all(on_the_step_axis(plot) for plot in plots), timeout=5000)
    low, high = curves.bleu_plot.viewRange()[1]
    assert low <= 0 and high >= 100  # BLEU and exact match ×100 on their whole scale
    assert list(curves.series("bleu")[1]) == [31.0] and list(curves.series("exact_match")[1]) == [20.0]


def test_each_series_is_named_in_a_legend(qtbot):
    curves = _filled(qtbot)
    names = {plot: [label.text for _sample, label in plot.legend.items] for plot in (curves.loss_plot, curves.bleu_plot)}
    assert names[curves.loss_plot] == ["train", "validation"]
    assert names[curves.bleu_plot] == ["BLEU", "exact match ×100"]


def test_choosing_another_corpus_clears_the_last_runs_curves(qtbot, window):
    tab = window.training_tab
    for step in range(1, 11):
        tab.curves.add_progress(_progress(step))
    tab.curves.add_validation(_validation(10))
    tab.curves.flush()
    assert len(tab.curves.series("train_loss")[0]) == 10
    corpus = tab.form.corpus
    corpus.setCurrentIndex(corpus.findText("copy"))
    assert all(tab.curves.series(name)[0] is None for name in ("train_loss", "bleu"))  # nothing drawn


def test_the_ranges_grow_in_steps_so_the_axes_stay_still_between_redraws(qtbot):
    """The step axis ends at the next 1, 2, 5 × 10^k above the last step, loss starts at 0: a redraw that adds
    points inside the range moves no axis (an axis that moves is laid out again, holding the training's lock)."""
    assert [stepped_ceiling(value) for value in (0.3, 1, 1.5, 2, 3, 499, 500, 501, 7000)] == [
        0.5,
        1,
        2,
        2,
        5,
        500,
        500,
        1000,
        10000,
    ]
    curves = _filled(qtbot)
    assert _unpadded(curves.loss_plot.viewRange()[0]) == (0.0, 500.0)  # steps 1..500: the axis ends at 500
    assert _unpadded(curves.loss_plot.viewRange()[1]) == (0.0, 5.0)  # loss 0..5 (padded by a dot's radius)
    rate_range = curves.rate_plot.viewRange()[1]
    for step in range(501, 1001):
        curves.add_progress(_progress(step))
        if step in (600, 800, 1000):
            curves.flush()
            assert _unpadded(curves.loss_plot.viewRange()[0]) == (0.0, 1000.0)  # past 500 it grew once, to 1000
    assert curves.rate_plot.viewRange()[1] == rate_range  # no new largest learning rate: that axis never moved


def test_the_four_plots_line_their_step_axes_up_whatever_their_values(qtbot):
    """Step axes linked with setXLink align by screen column: with value axes of different widths the learning
    rate's plot began at step 33 instead of 0. Each plot is given the same step range instead."""
    curves = _filled(qtbot)
    plots = (curves.loss_plot, curves.accuracy_plot, curves.rate_plot, curves.bleu_plot)
    qtbot.wait(50)
    assert [plot.viewRange()[0] for plot in plots] == [plots[0].viewRange()[0]] * 4
    assert _unpadded(plots[0].viewRange()[0]) == (0.0, 500.0)
