"""The ``transformer-explorer`` command: sub-commands go to the core's command line.

Qt is never imported for a sub-command, so ``transformer-explorer train ...`` works on a machine
without a display.
"""

from __future__ import annotations

import sys

from model.cli import COMMANDS
from model.cli import main as core_main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help")):
        return core_main(argv)
    # The desktop window is not part of this version yet: show what the command line offers.
    return core_main(["--help"]) if not argv else core_main(argv)


if __name__ == "__main__":
    sys.exit(main())
