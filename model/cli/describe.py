"""``transformer-explorer describe FIGURE``: the record a figure or table carries of what drew it (model/provenance/),
as people read it: the app's version, the model and its digest, the sentence, the view and its options, the
libraries' versions, and the command that draws it again.

    transformer-explorer describe attention.png        (or .svg, .pdf, .html; .csv, .npy, .npz: their sidecar)
"""

from __future__ import annotations

import argparse

from model.provenance.embed import read_record


def add_describe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("figure", help="a figure or table the app wrote (PNG, SVG, PDF, HTML; CSV, NPY, NPZ)")


def run_describe(args) -> int:
    for line in read_record(args.figure).describe():
        print(line)
    return 0
