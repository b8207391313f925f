"""A real English→French corpus without the network: the translated messages of the software installed here.

Debian installs each program's French translation catalogue (``/usr/share/locale/fr/LC_MESSAGES/*.mo``): real
sentences and phrases, translated by people, about 29,000 distinct short pairs on a minimal system. This writes
them as a TSV the app trains on (``train --corpus FILE``), so that the file preset's time budget, model and
vocabulary sizes can be judged on real data (issue 28), then optionally trains on it and prints the validation
BLEU of each validation, to see whether it was still rising when the budget ended.

    python benchmarks/real_corpus.py --out messages-en-fr.tsv [--train MODEL.safetensors]

Kept: msgids of 2 to 20 words, without format directives (``%s``), tabs or line breaks; the first translation of
a message that several catalogues translate.
"""

from __future__ import annotations

import argparse
import gettext
import json
import subprocess
import sys
from pathlib import Path

CATALOGUES = "/usr/share/locale/{language}/LC_MESSAGES/*.mo"


def message_pairs(language: str = "fr") -> list[tuple[str, str]]:
    """(English, translation) pairs of every catalogue of ``language``, sorted, each English message once."""
    pairs: dict[str, str] = {}
    for path in sorted(Path("/").glob(CATALOGUES.format(language=language).lstrip("/"))):
        try:
            with open(path, "rb") as handle:
                catalogue = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, gettext.error):  # a catalogue that does not parse is skipped
            continue
        for source, target in catalogue.items():
            if not isinstance(source, str) or not isinstance(target, str) or not source or not target:
                continue  # the header, plural forms
            if any(mark in source + target for mark in ("%", "\t", "\n", "\x04", "{", "}")):
                continue
            if 2 <= len(source.split()) <= 20:
                pairs.setdefault(source.strip(), target.strip())
    return sorted(pairs.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the TSV to write")
    parser.add_argument("--language", default="fr", help="the catalogues' language (default fr)")
    parser.add_argument("--train", metavar="MODEL", help="then train on it with the file preset, writing MODEL")
    args = parser.parse_args()
    pairs = message_pairs(args.language)
    if not pairs:
        raise SystemExit(f"no {args.language} catalogues found under {CATALOGUES.format(language=args.language)}")
    Path(args.out).write_text("".join(f"{source}\t{target}\n" for source, target in pairs), encoding="utf-8")
    print(f"wrote {len(pairs):,} pairs to {args.out}", file=sys.stderr)
    if args.train:
        command = [sys.executable, "-m", "model", "train", "--corpus", args.out, "--out", args.train]
        subprocess.run(command, check=True)
        from model.io import checkpoint  # deferred: only when a model was trained

        history = checkpoint.load(args.train).history
        print(json.dumps([[v["step"], round(v["bleu"], 2)] for v in history.get("validations", [])]))


if __name__ == "__main__":
    main()
