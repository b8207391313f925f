"""The desktop GUI of Transformer Explorer: a thin PySide6/pyqtgraph layer over the Qt-free ``model`` core."""

import model  # noqa: F401  (first: its process policies, model/runtime.py, must be set before torch loads)
