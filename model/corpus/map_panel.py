"""One head's points of the joint query-key map (model/corpus/qk.py makes them from an index): plain arrays, no
drawing. The figure (model/figures/qk_map.py) and the window's view read them; the analysis owns the type, so no
analysis imports a figure module."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class MapPanel:
    """One head's points: coordinates [n, 2], query (True) or key, the token's position and piece, its sentence."""

    title: str
    xy: np.ndarray  # [n, 2]
    is_query: np.ndarray  # [n] bool
    positions: np.ndarray  # [n] int, from 0
    tokens: list[str]  # [n] raw pieces
    sentence_ids: np.ndarray  # [n]
    row_ids: np.ndarray  # [n] the token's row in its side's arrays
    axis_names: tuple[str, str] = ("1", "2")
    notes: list[str] = field(default_factory=list)  # one line each under the panel (how well position is read off)
    sides: tuple[str, str] = ("encoder", "encoder")  # whose tokens the queries and the keys are (a view opens them)
    sentence_texts: dict[int, str] = field(default_factory=dict)  # sentence id -> its text (a view's hover shows it)
