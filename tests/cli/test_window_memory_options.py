"""``transformer-explorer FOLDER --max-memory SIZE --dtype TYPE``: the window opens a Hugging Face folder larger than
memory with the same options as the commands (model/pretrained/offload.py); a bad size is one line, before any window."""

from __future__ import annotations

import torch


def test_the_window_takes_a_folder_with_memory_options_and_refuses_a_bad_size_in_one_line(capsys):
    from explorer.launcher import main as launch
    from model.cli.options import window_arguments

    model, options = window_arguments(["nllb-3.3b", "--max-memory", "6GB", "--dtype", "float16"])
    assert model == ["nllb-3.3b"] and options.max_memory == 6 * 10**9 and options.dtype == torch.float16
    assert window_arguments(["nllb-3.3b"]) is None  # a plain path: the window opens it as before
    assert launch(["nllb-3.3b", "--max-memory", "lots"]) == 2  # refused before any window or model
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-memory 'lots'" in err
