"""The desktop GUI of Transformer Explorer: a thin PySide6/pyqtgraph layer over the Qt-free ``model`` core.

``transformer-explorer`` starts here (its script imports ``explorer.launcher``): a Ctrl-C from this first line on ends
the program with one line and exit code 130 until the launcher's own handling begins (model/__init__.py says how).
"""

# The C module: ``signal`` itself takes most of a millisecond to build its enums, a moment a Ctrl-C could land in.
import _signal  # type: ignore[import-not-found]
import sys as _sys


def _interrupted_while_starting(signum, frame):
    print("transformer-explorer: interrupted", file=_sys.stderr)
    raise SystemExit(130)


if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    try:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # not the main thread: signals are not ours to handle
        pass

import model  # noqa: E402, F401  (first: its quiet Ctrl-C while the app starts, model/__init__.py)
