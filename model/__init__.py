"""The Qt-free core of Transformer Explorer: model, corpora, tokenizers, training, checkpoints, CLI.

Nothing under this package imports PySide6, pyqtgraph or the ``explorer`` GUI package.

Both commands start here (``transformer-explorer`` imports ``explorer``, which imports this first; ``python -m model``
imports this package before its ``__main__``), before their own Ctrl-C handling is in place: a Ctrl-C while this package
loads, and until the entry point's own handling begins, ends the program with one line and exit code 130
(``_starting``), never a traceback from inside an import.
"""

# The C module: ``signal`` itself takes most of a millisecond to build its enums, a moment a Ctrl-C could land in.
import _signal  # type: ignore[import-not-found]
import sys as _sys


def _interrupted_while_starting(signum, frame):
    print("transformer-explorer: interrupted", file=_sys.stderr)
    raise SystemExit(130)


def _is_starting_guard(handler) -> bool:
    """Whether ``handler`` is this quiet exit (or explorer/__init__.py's, the same before this package loads)."""
    return getattr(handler, "__name__", "") == "_interrupted_while_starting" and getattr(handler, "__module__", "") in (
        "explorer",
        "model",
    )


def _starting():
    """Ctrl-C ends the program quietly while the package loads, if Ctrl-C is Python's default here (the main thread of
    a program that has not set its own; explorer/__init__.py may have set the same already). Returns the handler to
    put back once it has loaded, or None."""
    current = _signal.getsignal(_signal.SIGINT)
    if current is not _signal.default_int_handler and not _is_starting_guard(current):
        return None
    try:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # not the main thread: signals are not ours to handle
        return None
    return _signal.default_int_handler


def _entry_program() -> bool:
    """Whether this process is one of the app's commands starting (``transformer-explorer``, or ``python -m`` while it
    finds its module): then the quiet Ctrl-C stays until the entry point puts its own handling in place
    (``take_over_ctrl_c``); imported by another program (a test runner), the handler before is back at once."""
    first = _sys.argv[0] if _sys.argv else ""
    return first == "-m" or first.replace("\\", "/").rsplit("/", 1)[-1].startswith("transformer-explorer")


def take_over_ctrl_c() -> None:
    """Called by the entry points inside their own ``except KeyboardInterrupt``: Ctrl-C raises KeyboardInterrupt again."""
    if _is_starting_guard(_signal.getsignal(_signal.SIGINT)):
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)


# Importing this package changes no environment variable: the process policies (OpenMP's wait, which must be set
# before torch loads; model/runtime.py) are set by the entry points themselves (model/__main__.py, explorer/launcher.py).
_before = _starting()
if _before is not None and not _entry_program():
    _signal.signal(_signal.SIGINT, _before)

__all__ = ["Transformer", "TransformerConfig", "take_over_ctrl_c"]


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
