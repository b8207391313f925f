"""The command line of the core: the parser of every sub-command and the one place that runs them and turns their
errors into one line. No Qt is imported here; each sub-command lives in its own module (train.py, decode.py, ...).

``transformer-explorer`` (the GUI launcher in explorer/) hands these sub-commands to ``main``;
``python -m model`` reaches them directly. Every error prints one line to stderr and exits non-zero.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from model.cli.options import CommandError, memory_arguments
from model.errors import UserError, out_of_memory
from model.pretrained.offload import MemoryOptions, opening
from model.runtime import follow_cores_in_this_thread


@dataclass(frozen=True)
class Command:
    """One sub-command: its help line, and the module that adds its arguments (``add_{stem}_arguments``) and runs it
    (``run_{stem}``). The module is imported only when its command is the one given: a command starts without loading
    what the others need (``train`` no figures, ``translate`` no measures)."""

    help: str
    module: str  # "model.cli.train"
    stem: str  # "train": add_train_arguments, run_train

    def functions(self) -> tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]:
        """(its add-arguments function, its run function), its module imported now (by name: see the class)."""
        module = importlib.import_module(self.module)
        return getattr(module, f"add_{self.stem}_arguments"), getattr(module, f"run_{self.stem}")


COMMAND_TABLE: dict[str, Command] = {  # in the order ``--help`` lists them
    "train": Command("train a model and save it to one file", "model.cli.train", "train"),
    "classify": Command("a classifier's tags or class of sentences", "model.cli.labels", "classify"),
    "compare": Command("two models' cross-attention on one sentence, as one figure", "model.cli.compare", "compare"),
    "heads": Command("each head's importance, and the pruning curve", "model.cli.heads", "heads"),
    "attribute": Command("a contribution measure of a decoded sentence", "model.cli.attribute", "attribute"),
    "timeline": Command(
        "a model's training snapshots: an animation, a strip, a difference, per-head curves", "model.cli.timeline", "timeline"
    ),
    "patch": Command("activation patching between a clean and a corrupted sentence", "model.cli.interventions", "patch"),
    "circuit": Command(
        "the edges that carry a prediction across cross-attention: scores, circuit, faithfulness curve",
        "model.cli.circuit",
        "circuit",
    ),
    "lens": Command("the logit lens, direct logit attribution or DecoderLens of a sentence", "model.cli.interventions", "lens"),
    "neuron": Command("one head's query row inside: query and key vectors, scores, positional terms", "model.cli.neuron", "neuron"),
    "index": Command("run a model over a corpus and keep its vectors and head statistics", "model.cli.corpus", "index"),
    "search": Command("a corpus index's nearest tokens, or sentences where a head behaves so", "model.cli.corpus", "search"),
    "qk": Command("a head's queries and keys over a corpus index, mapped together", "model.cli.corpus", "qk"),
    "report-card": Command(
        "grade every attribution reading: faithfulness, plausibility, sanity (CSV or figure)",
        "model.cli.report_card",
        "report_card",
    ),
    "lengths": Command(
        "train one model per positional scheme and read longer sentences than trained on (CSV or figure)",
        "model.cli.lengths",
        "lengths",
    ),
    "describe": Command("what drew a figure or table: the record it carries", "model.cli.describe", "describe"),
    "reproduce": Command("draw a figure again from its record and compare it with the file", "model.cli.reproduce", "reproduce"),
    "translate": Command("translate a sentence", "model.cli.decode", "translate"),
    "capabilities": Command(
        "which tool serves which model family, or the one line saying why not", "model.cli.capabilities", "capabilities"
    ),
    "evaluate": Command("exact match, BLEU and token accuracy on a test set", "model.cli.decode", "evaluate"),
    "trace": Command("decode a sentence and write its full attention trace (.npz)", "model.cli.decode", "trace"),
    "export": Command(
        "a view of a decoded sentence as a figure (PNG, SVG, PDF) or data (CSV, NPY), without a window",
        "model.cli.export",
        "export",
    ),
}
COMMANDS = tuple(COMMAND_TABLE)  # what the launcher hands to the command line instead of opening the window
OPEN_NO_MODEL = ("train", "lengths", "describe")  # every other command opens a model: --max-memory, --dtype


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command; the arguments of the command ``argv`` names (its first item) only, or of every
    command when ``argv`` is None (what the tests read)."""
    parser = argparse.ArgumentParser(
        prog="transformer-explorer",
        description="Transformer Explorer: train, translate with and evaluate small encoder-decoder Transformers.",
        epilog="With no arguments, or a model file, `transformer-explorer` opens the desktop app. "
        "`transformer-explorer export ...` writes a figure (PNG, SVG, PDF) or data (CSV, NPY) without a window.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMAND_TABLE.items():
        command_parser = sub.add_parser(name, help=command.help)
        if argv is None or argv[:1] == [name]:
            command.functions()[0](command_parser)
            if name not in OPEN_NO_MODEL:
                memory_arguments(command_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(given)
    try:
        args = parser.parse_args(given)
    except SystemExit as exit_request:  # --help, or a usage error already printed by argparse
        return int(exit_request.code or 0)
    follow_cores_in_this_thread()  # long loops run on the cores other programs leave free (model/runtime.py)
    try:
        memory = MemoryOptions.parse(getattr(args, "max_memory", None), getattr(args, "dtype", None),
                                     getattr(args, "offload_folder", None), lambda line: print(line, file=sys.stderr))  # fmt: skip
        with opening(memory):
            code = COMMAND_TABLE[args.command].functions()[1](args)
        for line in memory.step_costs():  # an offloaded model: what its steps cost
            print(line, file=sys.stderr)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print("transformer-explorer: interrupted; nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError:  # what reads the output has gone (`classify --file F | head`): stop quietly, as tools do
        _drop_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a pipeline's writer it stopped
    except (UserError, OSError) as error:  # OSError: the machine refused a file (disk full, permissions)
        print(f"transformer-explorer {args.command}: error: {_describe(error)}", file=sys.stderr)
        return 1
    except (MemoryError, RuntimeError) as error:
        if not out_of_memory(error):
            raise
        print(
            f"transformer-explorer {args.command}: error: not enough memory for this {args.command} "
            "(try a shorter sentence, a smaller model or fewer pairs); nothing was written",
            file=sys.stderr,
        )
        return 1


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture): nothing goes to a pipe
        pass


def _describe(error: BaseException) -> str:
    """One line for a user error; an OSError about a hidden temporary file (.NAME.XXXX.partial, written
    before the rename over NAME) names the file the user asked for instead."""
    if isinstance(error, OSError) and not isinstance(error, CommandError) and error.filename:
        path = Path(str(error.filename))
        name = path.name
        if name.startswith(".") and name.endswith(".partial") and name.count(".") >= 3:
            path = path.with_name(name[1:].rsplit(".", 2)[0])
        return f"{path}: {error.strerror or error}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__
