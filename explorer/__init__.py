"""The desktop GUI of Transformer Explorer: a thin PySide6/pyqtgraph layer over the Qt-free ``model`` core."""
