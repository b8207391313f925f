"""The README's screenshots retaken deterministically, and two sets of them compared (issue 40: "behaviour unchanged").

The real main window, offscreen, at a fixed size with its own settings file in a temporary folder; shipped models by
name, fixed sentences; each picture taken with ``window.grab()`` once every background job has ended and what Qt had
left to draw is drawn (tests/explorer/window_actions.py's ``settle``). The exported figures come from the CLI
(``python -m model export``, the README's commands). Live pictures (training mid-run, its curves) are not taken; those
whose pictures hold run-dependent text are marked "live" in the comparison.

    python benchmarks/readme_screenshots.py --out /tmp/shots [--only explore,figures,...] [--size 1400x900]
    python benchmarks/readme_screenshots.py --compare /tmp/shots-before /tmp/shots-after

Works with the code from before the Explore sub-views moved to explorer/tabs/explore/ too (it only drives the
window's attributes), so the same script can be run from an older checkout to make the "before" set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCE = "the black cat sees the small dog"
FIGURE_SENTENCE = "The old woman does not see the small red car."  # README: "Exported figures"
TAGGER_SENTENCE = "The old farmers that her dog follows do not cook the fish."
NEURON_SENTENCE = "t p n b e h j b"
ONSET_STEP = 232  # the default model's snapshot where layer 3's cross heads are alignment-like (explorer/screenshots.py)
# Pictures whose content may vary between runs of the same code (measured times, a progress text): compared, but their
# verdict reads "live" rather than "differs".
LIVE = {"training-presets"}  # "Expected duration: ... about 212 steps at 2825 ms a step": a step timed on this machine
JOB_TIMEOUT_S = 1800.0  # a bound on waiting for one job (the AER table of every measure on a busy machine)
FIGURES = {
    "figure-focus": ["--kind", "cross", "--layer", "3", "--head", "mean"],
    "figure-grid": ["--view", "grid"],
    "figure-lines": ["--view", "lines", "--layer", "3", "--head", "1"],
}


# --- taking the pictures --------------------------------------------------------------------------------------------
class Shooter:
    """One window per group of pictures; ``shot`` waits for the window to settle, then saves what it shows."""

    def __init__(self, out: Path, size: tuple[int, int]) -> None:
        self.out, self.size = out, size
        self.folder = tempfile.mkdtemp(prefix="readme-shots-")

    def window(self, model: str, text: str = SENTENCE):
        from PySide6.QtWidgets import QApplication

        from tests.explorer.window_actions import open_window

        window = open_window(tempfile.mkdtemp(dir=self.folder), self.size)  # settings of its own: no tab remembered
        QApplication.setCursorFlashTime(0)  # a text cursor that does not blink: the same pixels whenever grabbed
        window.open_model(model)
        self.settle(window)
        tab = window.explore_tab
        window.tabs.setCurrentWidget(tab)
        tab.controls.source.setText(text)
        tab.controls.translate_button.click()
        self.settle(window)
        tab.kind.setCurrentIndex(tab.kind.findData("cross"))
        self.settle(window)
        return window

    @staticmethod
    def settle(window) -> None:
        from PySide6.QtTest import QTest

        from tests.explorer.window_actions import settle

        settle(window, JOB_TIMEOUT_S)
        QTest.qWait(300)  # timers that start work a moment later (a debounced redraw), then their work
        settle(window, JOB_TIMEOUT_S)

    def shot(self, window, name: str) -> None:
        self.settle(window)
        window.statusBar().clearMessage()  # "Opened default" stays for some seconds: whether it still shows is timing
        self.settle(window)
        path = self.out / f"{name}.png"
        window.grab().save(str(path))
        print(f"wrote {path}", flush=True)

    def close(self, window) -> None:
        from tests.explorer.gui_helpers import shut

        shut(window)


def explore_group(s: Shooter) -> None:
    """README lines 70-76: the model grid, the lines view, the positional tab, the Train tab's toy-fr preset."""
    window = s.window("default")
    tab = window.explore_tab
    tab.views.setCurrentWidget(tab.grid)
    tab.layer_box.setValue(window.explore.bundle.config.n_decoder_layers)
    s.shot(window, "explore-grid")
    tab.views.setCurrentWidget(tab.lines)
    s.shot(window, "explore-lines")
    window.tabs.setCurrentWidget(window.positional_tab)
    s.shot(window, "positional-encoding")
    window.tabs.setCurrentWidget(window.training_tab)
    window.training_tab.form.corpus.setCurrentText("toy-fr")
    s.shot(window, "training-presets")
    s.close(window)


def families_group(s: Shooter) -> None:
    """README lines 431 and 450: the RNN with Bahdanau attention beside the Transformer, and the tagger."""
    window = s.window("default")
    tab = window.explore_tab
    tab.views.setCurrentWidget(tab.compare_view)
    tab.compare.open("rnn-bahdanau")
    s.settle(window)
    tab.compare_view.partner.setCurrentText("rnn-bahdanau")
    s.settle(window)
    window.explore.run_to_end()
    s.shot(window, "side-by-side")
    window.open_model("tagger")
    s.settle(window)
    tab.controls.source.setText(TAGGER_SENTENCE)
    tab.controls.translate_button.click()
    tab.views.setCurrentWidget(tab.grid)
    s.shot(window, "tagger")
    s.close(window)


def measures_group(s: Shooter) -> None:
    """README's measures: each contribution measure in the focus view at the fourth step."""
    from model.attribution.measures import CONTRIBUTIONS, MEASURES

    window = s.window("default")
    tab = window.explore_tab
    tab.views.setCurrentWidget(tab.grid)
    window.explore.go_to_step(4)
    for name in CONTRIBUTIONS:
        tab.kind.setCurrentIndex(tab.kind.findData(MEASURES[name].kinds[-1]))
        tab.measure_box.set_measure(name)
        s.settle(window)
        tab.layer_box.setValue(tab.layer_box.maximum())
        s.shot(window, f"measure-{name}")
    s.close(window)


def alignment_group(s: Shooter) -> None:
    """README's AER table of every measure, on 10 pairs (not the README's 200: the same table's code, in minutes)."""
    window = s.window("default")
    tab = window.explore_tab
    tab.views.setCurrentWidget(tab.readings.alignment_view)
    tab.readings.alignment.compute(10)
    s.shot(window, "alignment-table")
    s.close(window)


def tools_group(s: Shooter) -> None:
    """README lines 805-807 and 863: the Interventions view (logit lens, the number pair patched), the neuron view
    of the reverse model's decoder layer 1, head 3 at query 5."""
    window = s.window("default")
    tab = window.explore_tab
    view = tab.interventions.view
    tab.views.setCurrentWidget(view)
    s.settle(window)
    window.explore.go_to_step(3)
    view.show_tool("logit lens")
    s.shot(window, "interventions-lens")
    view.show_tool("patching")
    view.patching.feature.setCurrentText("number")
    view.patching.patch_button.click()
    s.settle(window)
    view.patching.grid_box.setCurrentText("cross heads")
    s.shot(window, "interventions-patching")
    s.close(window)
    window = s.window("reverse", NEURON_SENTENCE)
    tab = window.explore_tab
    tab.kind.setCurrentIndex(tab.kind.findData("decoder"))
    tab.grid.cell_clicked.emit(0, 2)
    tab.views.setCurrentWidget(tab.neuron.view)
    tab.main_splitter.setSizes([640, 240])
    s.settle(window)
    window.controllers.neuron.set_query(4)
    s.shot(window, "neuron-view")
    s.close(window)


def report_card_group(s: Shooter) -> None:
    """README line 600: the report card of the default model (5 sentences, 1 sanity pair: the same card's code, in
    seconds rather than the README's hour)."""
    window = s.window("default")
    tab = window.explore_tab
    view = tab.report_card.view
    tab.views.setCurrentWidget(view)
    view.sentences.setValue(5)
    view.sanity_pairs.setValue(1)
    view.grade_button.click()
    s.shot(window, "report-card")
    s.close(window)


def timeline_group(s: Shooter) -> None:
    """README lines 497-499: the Over training bar at the snapshot where layer 3's cross heads became alignment-like,
    and that snapshot minus the one before (the curves over training are left out: minutes of computing)."""
    window = s.window("default")
    tab, timeline = window.explore_tab, window.controllers.timeline
    tab.views.setCurrentWidget(tab.grid)
    tab.layer_box.setValue(tab.layer_box.maximum())
    tab.grid.cell_clicked.emit(tab.layer_box.maximum() - 1, 0)
    onset = next(i for i in range(timeline.count) if timeline.source.snapshots[i].step >= ONSET_STEP)
    tab.over_training.bar.slider.setValue(onset)
    s.shot(window, "timeline-grid")
    timeline.compare_with(onset - 1)
    s.shot(window, "timeline-difference")
    s.close(window)


def figures_group(s: Shooter) -> None:
    """README lines 82-91: the exported figures, through the CLI the README gives."""
    for name, options in FIGURES.items():
        command = [sys.executable, "-m", "model", "export", "--model", "default", "--text", FIGURE_SENTENCE]
        command += [*options, "--dpi", "110", "--out", str(s.out / f"{name}.png")]
        subprocess.run(command, cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})  # prints "wrote"


GROUPS = {
    "explore": explore_group,
    "families": families_group,
    "tools": tools_group,
    "measures": measures_group,
    "alignment": alignment_group,
    "report-card": report_card_group,
    "timeline": timeline_group,
    "figures": figures_group,
}


def take(out: Path, size: tuple[int, int], only: list[str]) -> None:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    import model

    print(f"code: {model.__file__}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    shooter = Shooter(out, size)
    try:
        for name in only:
            GROUPS[name](shooter)
    finally:
        shutil.rmtree(shooter.folder, ignore_errors=True)


# --- comparing two sets ---------------------------------------------------------------------------------------------
def compare_pair(a: Path, b: Path) -> tuple[str, int, str, str]:
    """(sizes, differing pixels, their share, SSIM) of two pictures; -1 and '-' where the sizes differ."""
    import numpy as np
    from PIL import Image
    from skimage.metrics import structural_similarity

    first = np.asarray(Image.open(a).convert("RGB"))  # (height, width, 3)
    second = np.asarray(Image.open(b).convert("RGB"))  # (height, width, 3)
    if first.shape != second.shape:
        return f"{first.shape[1]}x{first.shape[0]} vs {second.shape[1]}x{second.shape[0]}", -1, "-", "-"
    differing = (first != second).any(axis=2)  # (height, width)
    ssim = structural_similarity(first, second, channel_axis=2)
    return "equal", int(differing.sum()), f"{differing.mean():.4%}", f"{ssim:.5f}"


def compare(before: Path, after: Path) -> int:
    from benchmarks.common import print_table

    names = sorted({p.stem for p in before.glob("*.png")} | {p.stem for p in after.glob("*.png")})
    rows = []
    for name in names:
        a, b = before / f"{name}.png", after / f"{name}.png"
        if not (a.exists() and b.exists()):
            rows.append([name, "missing in " + (str(before) if not a.exists() else str(after)), "-", "-", "-", "differs"])
            continue
        sizes, count, share, ssim = compare_pair(a, b)
        verdict = "identical" if count == 0 else ("live" if name in LIVE else "differs")
        rows.append([name, sizes, count if count >= 0 else "-", share, ssim, verdict])
    print_table(["picture", "size", "pixels differing", "share", "SSIM", "verdict"], rows)
    return int(any(row[-1] == "differs" for row in rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder the pictures are written to (never resources/screenshots)")
    parser.add_argument("--only", default=",".join(GROUPS), help=f"groups to take, of {', '.join(GROUPS)}")
    parser.add_argument("--size", default="1400x900")
    parser.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"))
    args = parser.parse_args()
    if args.compare:
        return compare(Path(args.compare[0]), Path(args.compare[1]))
    if not args.out:
        parser.error("--out DIR or --compare DIR_A DIR_B")
    unknown = [g for g in args.only.split(",") if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group {unknown[0]!r}; choose from {', '.join(GROUPS)}")
    width, height = (int(v) for v in args.size.split("x"))
    take(Path(args.out), (width, height), args.only.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
