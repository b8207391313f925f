"""How quickly the Train tab answers: from Start to the first training step (toy-fr's preset, as a user
starts it), and from Pause, Resume, "Stop & keep" and Cancel to the moment training obeys.

Targets (2 quiet cores): the first step within 5 s of Start; Pause, Stop & keep and Cancel within 1 s
(and within one step). Each control is pressed twice: once during training steps, once during a
validation (the moment a user is most likely to wait for).

    QT_QPA_PLATFORM=offscreen python benchmarks/train_responsiveness.py [--corpus toy-fr]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="toy-fr")
    args = parser.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMessageBox

    import model  # noqa: F401  (the app's OpenMP policy before torch)
    from explorer.app import make_application, open_first_model
    from explorer.main_window import MainWindow

    app = make_application()
    window = MainWindow(QSettings(os.devnull, QSettings.IniFormat))
    window.ask_to_stop_training = lambda: QMessageBox.Yes
    window.ask_to_keep_trained_model = lambda *_: QMessageBox.Discard
    window.show()
    open_first_model(window, None)
    tab = window.training_tab
    window.tabs.setCurrentWidget(tab)
    tab.form.corpus.setCurrentText(args.corpus)

    def wait(until, seconds=120.0) -> float:
        started = time.perf_counter()
        while not until() and time.perf_counter() - started < seconds:
            app.processEvents()
            time.sleep(0.002)
        return time.perf_counter() - started

    wait(lambda: window.explore.bundle is not None)
    wait(lambda: False, 1.0)
    step = lambda: tab.last_progress.step if tab.last_progress else 0  # noqa: E731
    rows = []

    def start() -> float:
        tab.start_button.click()
        return wait(lambda: step() >= 1)

    rows.append(("Start -> first step", start(), 5.0))
    wait(lambda: step() >= 30)

    def obeyed_pause() -> float:
        """Seconds from Pause until no step follows (checked 0.5 s after the last one)."""
        pressed = time.perf_counter()
        tab.pause_button.click()
        last, last_change = step(), time.perf_counter()
        while time.perf_counter() - last_change < 0.5:
            app.processEvents()
            time.sleep(0.002)
            if step() != last:
                last, last_change = step(), time.perf_counter()
        return last_change - pressed if last_change > pressed else 0.0

    rows.append(("Pause (during steps)", obeyed_pause(), 1.0))
    before = step()
    tab.resume_button.click()
    rows.append(("Resume -> next step", wait(lambda: step() > before), 1.0))
    validations = len(tab.validations)
    valid_every = tab.form.valid_every.value() or 0
    if valid_every:  # wait for a validation to begin, then stop in the middle of it
        wait(lambda: step() % valid_every == 0 and step() > 0, 600)
        wait(lambda: False, 0.1)
    pressed = time.perf_counter()
    tab.keep_button.click()
    wait(lambda: not tab.is_training(), 60)
    during = "during a validation" if valid_every and len(tab.validations) == validations else "during steps"
    rows.append((f"Stop & keep ({during}) -> finished", time.perf_counter() - pressed, 1.0))

    wait(lambda: tab.start_button.isEnabled(), 10)  # the tab takes the end of the run in, then Start is back
    tab.form.max_minutes.setValue(0)
    start()
    wait(lambda: step() >= 20)
    running = tab.is_training()
    pressed = time.perf_counter()
    tab.cancel_button.click()
    wait(lambda: not tab.is_training(), 60)
    rows.append((f"Cancel (during steps, at step {step()}) -> finished", time.perf_counter() - pressed, 1.0))
    if not running:
        print(f"  (the second run was not training when Cancel was pressed: {tab.progress_label.text()})")
    window.close()
    print(f"{args.corpus}, its preset, on {os.cpu_count()} cores")
    for name, seconds, target in rows:
        print(f"  {name}: {seconds:.2f} s (target <= {target:g} s) {'ok' if seconds <= target else 'MISSED'}")


if __name__ == "__main__":
    main()
