"""Explore-tab redraw time: stepping forward or back redraws every visible view (model grid, focus
heatmap, lines or head table, tokens, candidates). Target: a median within 50 ms for a 6-layer,
8-head model at 40 and at 200 tokens.

Each measurement is one step (decode + trace + every view updated + the window painted), timed
until ``window.grab()`` returns, so painting is included. Prints the median and the worst wall
time, and the median CPU time of the process (less swayed by other programs on a shared machine).

    QT_QPA_PLATFORM=offscreen python benchmarks/gui_redraw.py [--tokens 40 200] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import torch  # noqa: E402

from model.data.corpora import (
    CorpusSpec,  # noqa: E402
    load_corpus,  # noqa: E402
)
from model.data.corpora.symbolic import SYMBOLS  # noqa: E402
from model.io.checkpoint import ModelBundle  # noqa: E402
from model.nn.config import TransformerConfig  # noqa: E402
from model.nn.transformer import Transformer  # noqa: E402
from model.training.pipeline import TokenizerOptions, train_tokenizers  # noqa: E402


def make_bundle(layers: int, heads: int, d_model: int) -> ModelBundle:
    """A copy-task model of the asked size (untrained weights attend broadly: the worst case to draw)."""
    spec = CorpusSpec("copy", size=2000, seed=0)
    splits = load_corpus(spec)
    tokenizer, _ = train_tokenizers(splits, TokenizerOptions(vocab_size=200), spec)
    config = TransformerConfig(
        source_vocab_size=tokenizer.vocab_size,
        target_vocab_size=tokenizer.vocab_size,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        d_model=d_model,
        n_heads=heads,
        d_ff=4 * d_model,
        max_len=512,
    )
    torch.manual_seed(0)
    return ModelBundle(Transformer(config).eval(), tokenizer, tokenizer, spec)


def measure(window, app, tokens: int, steps: int, view: str) -> dict[str, list[float]]:
    tab = window.explore_tab
    tab.views.setCurrentIndex({"grid": 0, "lines": 1, "heads": 2}[view])
    text = " ".join(SYMBOLS[i % len(SYMBOLS)] for i in range(tokens))
    options = tab.controls.options()
    options.max_steps, options.stop_at_eos = tokens, False
    window.explore.translate(text, options, run=True)
    app.processEvents()
    window.grab()
    times = {"back": [], "forward": [], "cpu": []}
    for _ in range(steps):
        for direction, action in (("back", window.explore.step_back), ("forward", window.explore.step_forward)):
            started, cpu = time.perf_counter(), time.process_time()
            action()
            window.grab()  # paint everything visible now
            times[direction].append((time.perf_counter() - started) * 1000)
            times["cpu"].append((time.process_time() - cpu) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[40, 200])
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=256)
    args = parser.parse_args()

    from PySide6.QtCore import QSettings

    from explorer.app import make_application
    from explorer.main_window import MainWindow

    app = make_application()
    window = MainWindow(QSettings(os.devnull, QSettings.IniFormat))
    window.resize(1600, 1000)
    window.show()
    window.explore.set_model(make_bundle(args.layers, args.heads, args.d_model))
    app.processEvents()
    print(
        f"{args.layers} layers x {args.heads} heads, d_model {args.d_model}, window 1600x1000, "
        f"{torch.get_num_threads()} threads; ms per step, decode + trace + all visible views + paint"
    )
    print(
        f"{'tokens':>6} {'view':>6} {'median fwd':>11} {'worst fwd':>10} {'median back':>12} {'worst back':>11} {'median cpu':>11}"
    )
    for tokens in args.tokens:
        for view in ("grid", "lines", "heads"):
            times = measure(window, app, tokens, args.steps, view)
            print(
                f"{tokens:>6} {view:>6} {statistics.median(times['forward']):>11.1f} "
                f"{max(times['forward']):>10.1f} {statistics.median(times['back']):>12.1f} "
                f"{max(times['back']):>11.1f} {statistics.median(times['cpu']):>11.1f}"
            )
    print("target: median <= 50 ms at 40 and 200 tokens")
    window.close()


if __name__ == "__main__":
    main()
