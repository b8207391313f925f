"""The ``transformer-explorer`` command: with no arguments (or a model path) it opens the desktop
app; sub-commands (``export`` included, which draws figures with matplotlib) go to the core's command line.

Qt is never imported for a core sub-command, so ``transformer-explorer train ...`` works on a machine
without a display.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # the desktop app; the core (and torch) load after the window shows
        from .app import run_app

        return run_app([])
    from model.cli import COMMANDS
    from model.cli import main as core_main

    if argv[0] in COMMANDS or argv[0] in ("-h", "--help"):
        return core_main(argv)
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        return core_main(argv)  # argparse explains what it did not understand
    from .app import run_app

    return run_app(argv)


if __name__ == "__main__":
    sys.exit(main())
