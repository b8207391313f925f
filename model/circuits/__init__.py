"""Circuits of an encoder-decoder: which edges of its computational graph, across cross-attention, carry a prediction
from a clean source rather than a corrupted one (graph.py: the graph; edge_pass.py: edges patched in the network's own
hooked pass; scores.py: EAP, EAP-IG and exact edge patching; search.py: circuits and their faithfulness; result.py:
the whole run and what it says; layout.py and export.py: the diagram's places and the files)."""
