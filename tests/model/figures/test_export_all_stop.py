"""Export all's own PNG writers and its stop (model/figures/export.py): no writer thread outlives the call, whether
it ends, fails or is stopped; a stop between two figures keeps the files already written, each whole, and writes no
index."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PIL import Image

from model.figures.export import ExportRequest, ExportStopped, export_all
from model.files import OutputError
from tests.file_limits import partial_files
from tests.model.figures.test_figures import synthetic_trace


def png_writers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("png-writer")]


def test_no_png_writer_outlives_an_export_all_call(tmp_path):
    assert not png_writers()
    written = export_all(synthetic_trace(5), tmp_path / "all", ExportRequest(dpi=60))
    assert any(path.suffix == ".png" for path in written)  # the writers did run
    assert not png_writers()
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OutputError):
        export_all(synthetic_trace(5), tmp_path / "file", ExportRequest(dpi=60))
    assert not png_writers()


def test_a_stopped_export_all_keeps_the_first_figures_files_whole_and_writes_no_index(tmp_path):
    trace = synthetic_trace(5)
    asked = []

    def stop() -> bool:  # True from the second figure on: only the first head is exported
        asked.append(1)
        return len(asked) > 1

    folder = tmp_path / "all"
    with pytest.raises(ExportStopped) as stopped:
        export_all(trace, folder, ExportRequest(dpi=60), stop=stop)
    first = sorted(path.name for path in stopped.value.written)
    stem = f"{trace.kinds[0]}_L1_H1"
    assert first == [f"{stem}.csv", f"{stem}.npy", f"{stem}.png"]
    assert sorted(path.name for path in folder.iterdir()) == first  # nothing else: no index, no partial file
    assert not partial_files(folder) and len(asked) == 2
    np.testing.assert_array_equal(np.load(folder / f"{stem}.npy"), trace.matrix(trace.kinds[0])[0, 0])
    with Image.open(folder / f"{stem}.png") as image:
        image.load()  # a whole PNG
        assert image.size[0] > 0
    assert not png_writers()
