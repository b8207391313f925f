"""The interventions' figures: each grid panel holds the result's numbers with the positions as people read them, the
heads' attribution grid holds each head's part, and the patching colour scale is centred at 0."""

from __future__ import annotations

import numpy as np

from model.figures.interventions import head_attribution_grid, patching_figure, patching_panel
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.patching import activation_patching


def test_patching_panels_and_their_scale(default_bundle):
    result = activation_patching(default_bundle, "the cat sees the dog", "the cats see the dog")
    panel = patching_panel(result, "encoder residual")
    assert panel.columns == ["the", "cat/cats", "sees/see", "the", "dog", "</s>"]
    np.testing.assert_array_equal(panel.values, result.grids["encoder residual"].values)
    figure = patching_figure(result, ("cross heads", "encoder residual"))
    low, high = next(axes.get_images()[0] for axes in figure.axes if axes.get_images()).get_clim()
    largest = max(1.0, *(float(np.abs(result.grids[name].values).max()) for name in ("cross heads", "encoder residual")))
    assert low == -high and high == np.float32(largest)
    assert [axes.get_title(loc="left") for axes in figure.axes[:2]] == [
        "cross attention: each head's output",
        "encoder: the residual stream at each position",
    ]


def test_the_heads_attribution_grid_holds_each_heads_part(default_bundle):
    result = bundle_logit_attribution(default_bundle, "the black cat sees the small dog")
    grid = head_attribution_grid(result, 2, "cross")  # [layers, heads]
    assert grid.shape == (3, 4)
    assert grid[2, 3] == result.values[2, result.parts.index("L3 cross H4")]
    assert np.isclose(grid.sum(), sum(result.values[2, i] for i, name in enumerate(result.parts) if " cross H" in name))
