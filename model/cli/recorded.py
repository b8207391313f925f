"""The record of what a command draws (model/provenance/): the command itself, rebuilt from its parsed arguments in
one canonical form (each option the user gave that differs from its default, in the parser's order, ``--out`` left
out), with the model's and tokenizers' digests and the view's options. The window writes the same form for the same
view, so the two records agree."""

from __future__ import annotations

import argparse
from typing import Any

from model.family import Bundle
from model.provenance.record import Record, record_of

LEFT_OUT = ("out", "help", "all")  # where the file goes is not what it shows


def command_of(parser: argparse.ArgumentParser, args: argparse.Namespace, name: str) -> list[str]:
    """``name`` and its arguments as ``args`` holds them: options that differ from their defaults, in order."""
    command = [name]
    for action in parser._actions:  # argparse's own list of what it parses
        if action.dest in LEFT_OUT or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if not action.option_strings:  # a positional argument
            command += [str(part) for part in (value if isinstance(value, list) else [value])]
            continue
        if value == action.default or value is None:
            continue
        flag = action.option_strings[-1]
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            command.append(flag)
        else:
            command += [flag, ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return command


def command_record(
    parser: argparse.ArgumentParser, args: argparse.Namespace, name: str, bundle: Bundle, view: dict[str, Any], text: str = ""
) -> Record:
    """The record of a file ``name`` draws with ``args`` from ``bundle``."""
    return record_of(command_of(parser, args, name), bundle, str(getattr(args, "model", "")), view, text)
