"""The Qt-free core of Transformer Explorer: model, corpora, tokenizers, training, checkpoints, CLI.

Nothing under this package imports PySide6, pyqtgraph or the ``explorer`` GUI package.
"""

from .config import TransformerConfig
from .transformer import Transformer

__all__ = ["Transformer", "TransformerConfig"]
