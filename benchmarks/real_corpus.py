"""A real English→French corpus without the network: the translated messages of the software installed here.

Debian installs each program's French translation catalogue (``/usr/share/locale/fr/LC_MESSAGES/*.mo``): real
sentences and phrases, translated by people, about 29,000 distinct short pairs on a minimal system. This writes
them as a TSV the app trains on (``train --corpus FILE``), so that the file preset's time budget, model and
vocabulary sizes can be judged on real data (issue 28), then optionally trains on it and prints the validation
BLEU of each validation, to see whether it was still rising when the budget ended.

    python benchmarks/real_corpus.py --out messages-en-fr.tsv [--train MODEL.safetensors]
    python benchmarks/real_corpus.py --out messages-en-fr.tsv --beside-niced [--minutes M]

``--beside-niced`` trains the file preset from its defaults twice, on a quiet machine and beside two busy loops at
``nice -n 19`` (a background job, which yields to training: model/runtime.py), scores each model on the file's
held-out test split (``evaluate --corpus``) and prints both, with steps, the training's CPU use and the BLEU
difference (target: within 1 point). ``--minutes`` replaces the preset's time budget (for a shorter check). Run it
at normal priority on a machine that is otherwise quiet: it takes twice the budget plus the two evaluations.

Kept: msgids of 2 to 20 words, without format directives (``%s``), tabs or line breaks; the first translation of
a message that several catalogues translate.
"""

from __future__ import annotations

import argparse
import gettext
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.files import atomic_output  # noqa: E402  (after the project's folder is on the path)

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


def train_and_score(corpus: str, folder: Path, name: str, minutes: float | None, niced: int) -> dict:
    """Train the file preset on ``corpus`` (beside ``niced`` busy loops at nice 19) and score it on the held-out split:
    BLEU, exact match, steps, the training's CPU use (cores) and minutes."""
    model = folder / f"{name}.model"
    command = [sys.executable, "-m", "model", "train", "--corpus", corpus, "--out", str(model), "--quiet"]
    command += ["--max-minutes", str(minutes)] if minutes else []
    loops = [subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"]) for _ in range(niced)]
    try:
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        subprocess.run(command, check=True)
        after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - started  # before the loops end
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    evaluate = [sys.executable, "-m", "model", "evaluate", "--model", str(model), "--corpus", corpus, "--json", "--aer-pairs", "0"]
    scores = json.loads(subprocess.run(evaluate, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    from model.io import checkpoint  # deferred: torch loads only once the trainings are done

    steps = checkpoint.load(str(model)).history["steps"]
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / wall
    return dict(scores, steps=steps[-1][0] if steps else 0, cpu=cpu, minutes=wall / 60)


def compare_beside_niced(corpus: str, minutes: float | None, niced: int) -> None:
    """The file preset trained quietly and beside ``niced`` nice-19 busy loops: held-out scores side by side."""
    if os.getpriority(os.PRIO_PROCESS, 0) > 0:
        print("note: this runs niced itself, so the niced loops compete equally with the training", file=sys.stderr)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, loops in (("quiet", 0), (f"beside {niced} nice-19 loops", niced)):
            results[name] = result = train_and_score(corpus, Path(folder), name.split()[0], minutes, loops)
            print(
                f"{name}: held-out BLEU {result['bleu']:.2f}, exact match {result['exact_match']:.3f} ({result['n']:,} pairs), "
                f"{result['steps']:,} steps in {result['minutes']:.1f} min, CPU {result['cpu']:.0%}",
                flush=True,
            )
    quiet, beside = results.values()
    gap = quiet["bleu"] - beside["bleu"]
    print(f"BLEU quiet - beside niced loops: {gap:+.2f} (target <= 1.00) " + ("ok" if gap <= 1.0 else "MISSED"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the TSV to write")
    parser.add_argument("--language", default="fr", help="the catalogues' language (default fr)")
    parser.add_argument("--train", metavar="MODEL", help="then train on it with the file preset, writing MODEL")
    parser.add_argument("--beside-niced", action="store_true", help="then train quietly and beside nice-19 loops, and compare")
    parser.add_argument("--niced", type=int, default=2, help="busy loops at nice 19 beside the second training (default 2)")
    parser.add_argument("--minutes", type=float, help="each training's time budget (default: the file preset's)")
    args = parser.parse_args()
    pairs = message_pairs(args.language)
    if not pairs:
        raise SystemExit(f"no {args.language} catalogues found under {CATALOGUES.format(language=args.language)}")
    with atomic_output(args.out) as partial:
        partial.write_text("".join(f"{source}\t{target}\n" for source, target in pairs), encoding="utf-8")
    print(f"wrote {len(pairs):,} pairs to {args.out}", file=sys.stderr)
    if args.train:
        command = [sys.executable, "-m", "model", "train", "--corpus", args.out, "--out", args.train]
        command += ["--max-minutes", str(args.minutes)] if args.minutes else []
        subprocess.run(command, check=True)
        from model.io import checkpoint  # deferred: only when a model was trained

        history = checkpoint.load(args.train).history
        print(json.dumps([[v["step"], round(v["bleu"], 2)] for v in history.get("validations", [])]))
    if args.beside_niced:
        compare_beside_niced(args.out, args.minutes, args.niced)


if __name__ == "__main__":
    main()
