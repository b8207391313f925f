"""``python -m model``: the core's command line (train, translate, evaluate, trace, export) without the GUI.

Ctrl-C at any moment, even while PyTorch is still being imported, ends with one line and exit code 130.
"""

import sys


def _run() -> int:
    try:
        from model.cli.commands import main

        return main()
    except KeyboardInterrupt:
        print("transformer-explorer: interrupted", file=sys.stderr)
        return 130


sys.exit(_run())
