"""The ``transformer-explorer`` command: with no arguments (or a model path, with ``--max-memory``, ``--dtype`` and
``--offload-folder`` for a Hugging Face folder larger than memory) it opens the desktop app; sub-commands (``export``
included, which draws figures with matplotlib) go to the core's command line.

Qt is never imported for a core sub-command, so ``transformer-explorer train ...`` works on a machine
without a display.
"""

from __future__ import annotations

import os
import signal
import sys

from model import take_over_ctrl_c
from model.runtime import apply_process_policies

NO_DISPLAY = (
    "transformer-explorer: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset). "
    "Run it in a desktop session, under `xvfb-run`, or with QT_QPA_PLATFORM=offscreen; "
    "`transformer-explorer --help` lists the commands that need no window."
)


def has_display() -> bool:
    """Whether Qt can show a window: a display server, or a platform chosen by the user (offscreen, ...)."""
    if not sys.platform.startswith("linux"):
        return True
    return any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def _window(argv: list[str]) -> int:
    if not has_display():
        print(NO_DISPLAY, file=sys.stderr)  # one line instead of Qt's abort
        return 1
    from explorer.app import run_app  # deferred: Qt loads only for the window, never for a command

    return run_app(argv)


def main(argv: list[str] | None = None) -> int:
    """The entry point: Ctrl-C at any moment (even while PyTorch or Qt is being imported) prints one line
    and exits with 130."""
    try:
        take_over_ctrl_c()  # from here a Ctrl-C is this function's (before, model/__init__.py's quiet exit)
        apply_process_policies()  # OpenMP's wait policy: the program's own, set before torch loads (model/runtime.py)
        code = _main(sys.argv[1:] if argv is None else argv)
        if argv is None:  # the program itself: done, so a Ctrl-C during shutdown has nothing left to stop
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return code
    except KeyboardInterrupt:
        print("transformer-explorer: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    if not argv:  # the desktop app; the core (and torch) load after the window shows
        return _window([])
    from model.runtime import COMMAND_IMPORTS, import_shielded  # deferred: after the window's check, Ctrl-C shielded

    if import_shielded(*COMMAND_IMPORTS):  # Ctrl-C while the libraries loaded: stop now, cleanly
        raise KeyboardInterrupt
    from model.cli.commands import COMMANDS  # deferred: the libraries, imported shielded above
    from model.cli.commands import main as core_main
    from model.cli.options import window_arguments  # deferred: as the command line's, after the window's check
    from model.errors import UserError  # deferred: as above
    from model.pretrained.offload import set_process_default  # deferred: as above

    if argv[0] not in COMMANDS:
        try:
            window = window_arguments(argv)  # a model and how to open it: --max-memory, --dtype, --offload-folder
        except UserError as error:
            print(f"transformer-explorer: error: {error}", file=sys.stderr)
            return 2
        if window is not None:
            set_process_default(window[1])
            return _window(window[0])

    if argv[0] in COMMANDS or argv[0] in ("-h", "--help") or len(argv) > 1 or argv[0].startswith("-"):
        return core_main(argv)  # a command, or argparse explains what it did not understand
    return _window(argv)


if __name__ == "__main__":
    sys.exit(main())
