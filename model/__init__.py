"""The Qt-free core of Transformer Explorer: model, corpora, tokenizers, training, checkpoints, CLI.

Nothing under this package imports PySide6, pyqtgraph or the ``explorer`` GUI package.
"""

from model.runtime import apply_process_policies

apply_process_policies()  # OpenMP's wait policy, before anything imports torch (see runtime.py)

__all__ = ["Transformer", "TransformerConfig"]


def __getattr__(name: str):
    """Lazy: ``import model.io.shipped`` (or the app's window) does not pay for importing PyTorch."""
    if name == "Transformer":
        # deferred: `import model` must not pay for PyTorch (the window starts before it)
        from model.nn.transformer import Transformer

        return Transformer
    if name == "TransformerConfig":
        # deferred: `import model` stays light (see above)
        from model.nn.config import TransformerConfig

        return TransformerConfig
    raise AttributeError(f"module 'model' has no attribute {name!r}")
