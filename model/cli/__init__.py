"""The command line of the core (train, translate, evaluate, trace, export): the only user of argparse."""

from model.cli.commands import main

__all__ = ["main"]
