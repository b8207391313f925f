"""``python -m model``: the core's command line (train, translate, evaluate, trace, export) without the GUI.

Ctrl-C at any moment, even while PyTorch is still being imported, ends with one line and exit code 130.
"""

import signal
import sys

from model import take_over_ctrl_c


def _run() -> int:
    try:
        take_over_ctrl_c()  # from here a Ctrl-C is this function's (before, model/__init__.py's quiet exit)
        # deferred: imported inside the try so that Ctrl-C during the imports ends in one line
        from model.runtime import COMMAND_IMPORTS, apply_process_policies, import_shielded

        apply_process_policies()  # OpenMP's wait policy: the program's own, set before torch loads (runtime.py)
        if import_shielded(*COMMAND_IMPORTS):  # Ctrl-C while the libraries loaded: stop now, cleanly
            raise KeyboardInterrupt
        # deferred: after import_shielded has loaded the libraries (Ctrl-C in between is one line)
        from model.cli.commands import main

        code = main()
    except KeyboardInterrupt:
        print("transformer-explorer: interrupted", file=sys.stderr)
        return 130
    # The command has finished and said so: a Ctrl-C while the interpreter shuts down has nothing left to stop
    # (and would print a traceback from an exit handler).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


sys.exit(_run())
