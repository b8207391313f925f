"""``transformer-explorer reproduce FIGURE``: draw a figure again from the record it carries (model/provenance/) and
compare it with the file: the same SVG structure and text, a PNG's largest pixel difference and SSIM, a PDF's pages
and text, the same data.

    transformer-explorer reproduce figure.svg                  (the model its record names)
    transformer-explorer reproduce figure.png --model copy-of-default.safetensors
    transformer-explorer reproduce figure.pdf --check          (only: is this the model, are these the versions)

The model is checked first: one whose tensors are not the record's (its SHA-256 differs), or that cannot be opened, is
refused in one line naming both digests or the reason. Libraries of other versions than the record's are named; when
the figure then differs, the line says that a version may draw differently. Nothing is written beside the figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

from model.cli.commands import main as run_command
from model.cli.options import CommandError
from model.errors import UserError
from model.io.digest import bundle_digest
from model.io.models import open_model
from model.pretrained.offload import MemoryOptions, opening
from model.provenance.compare import compare_files
from model.provenance.embed import read_record
from model.provenance.record import BEYOND, Record, library_versions


def add_reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("figure", help="a figure or table the app wrote, carrying its record")
    parser.add_argument("--model", help="the model to draw it with (default: the one its record names)")
    parser.add_argument("--check", action="store_true", help="only check the model's digest and the libraries' versions")


def with_model(command: list[str], model: str | None) -> list[str]:
    """``command`` with its ``--model`` value replaced by ``model`` (as it is without one)."""
    if model is None or "--model" not in command:
        return list(command)
    changed = list(command)
    changed[changed.index("--model") + 1] = model
    return changed


def changed_versions(record: Record) -> list[str]:
    """'matplotlib 3.10.0 → 3.11.2' for each library whose version differs from the record's."""
    now = library_versions()
    return [f"{name} {was} → {now.get(name, 'absent')}" for name, was in sorted(record.versions.items()) if now.get(name) != was]


def check_model(record: Record, command: list[str], figure: str) -> str:
    """The model the command names, checked against the record's digest; the one line of refusal otherwise."""
    if "--model" not in command:
        return ""
    model = command[command.index("--model") + 1]
    wanted = record.model.get("sha256")
    if not isinstance(wanted, str) or not wanted:
        raise CommandError(f"{figure}: its record is damaged (it names the model {model} but not its tensors' SHA-256)")
    try:
        with opening(MemoryOptions.parse(dtype=record.model.get("dtype"))):  # the type it was analysed in
            digest = bundle_digest(open_model(model))
    except (OSError, ValueError, UserError) as error:
        raise CommandError(f"the model {model!r} that drew {figure} cannot be opened: {error}") from None
    if digest != wanted:
        raise CommandError(
            f"{model} is not the model that drew {figure}: its tensors' SHA-256 is {digest[:16]}…, the record's {wanted[:16]}…"
        )
    return model


def run_reproduce(args) -> int:
    record = read_record(args.figure)
    beyond = record.view.get(BEYOND)
    if beyond:
        name = Path(args.figure).name
        raise CommandError(f"{name} shows what the command line cannot draw yet ({beyond}): drawn in the window or a notebook")
    command = with_model(record.command, args.model)
    if record.model.get("dtype") and "--dtype" not in command:
        command += ["--dtype", str(record.model["dtype"])]  # a 16-bit analysis is drawn again in its type
    model = check_model(record, command, args.figure)
    versions = changed_versions(record)
    print(f"the model is the one that drew it ({model}, SHA-256 {str(record.model.get('sha256'))[:16]}…)" if model else "no model")
    print("versions: as recorded" if not versions else "versions differ from the record's: " + "; ".join(versions))
    if args.check:
        return 0
    figure = Path(args.figure)
    with tempfile.TemporaryDirectory() as folder:
        again = Path(folder) / f"again{figure.suffix.lower()}"
        said, errors = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(errors):
            code = run_command(command + ["--out", str(again)])
        if code != 0 or not again.is_file():
            why = errors.getvalue().strip().splitlines()[-1:] or ["it wrote nothing"]
            raise CommandError(f"drawing {figure.name} again failed: {why[0]}")
        comparison = compare_files(figure, again)
    print(comparison.says)
    if comparison.same:
        print(f"reproduced: {figure.name} is drawn again the same")
        return 0
    cause = f" (a library's version differs: {'; '.join(versions)})" if versions else ""
    print(f"not reproduced: {figure.name} is drawn differently{cause}")
    return 1
