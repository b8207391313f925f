"""Models larger than memory (model/pretrained/offload.py): a Hugging Face folder opened with layers streamed from disk
by accelerate gives the in-memory path's results exactly (the trace's attention, the logit lens, logit attribution,
head patching, the digest), says so in its description and on the command line, shares itself with jobs instead of
being copied, and refuses what it cannot do in one line: a size or type it cannot read, an offload folder that
cannot be written or has no room, a model whose embeddings alone exceed the memory given."""

from __future__ import annotations

import copy
import shutil

import numpy as np
import pytest
import torch

from model.cli import main
from model.decoding.stepper import Stepper
from model.errors import UserError
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import activation_patching
from model.io.digest import bundle_digest
from model.nn.hooks import copy_without_thread_hooks
from model.pretrained import loading, offload
from model.pretrained.loading import load_pretrained
from model.pretrained.offload import MemoryOptions, OffloadError, parse_memory
from tests.conftest import budget_with_disk

pytest.importorskip("accelerate", reason="offloading needs the large extra: pip install '.[large]'")

TEXT = "the black cat sees the dog"
CORRUPTED = "the black dog sees the cat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_folders) -> dict[str, str]:
    """NLLB's layout (built here), a post-norm BART, a pre-norm T5 and a decoder-only GPT-2 (the suite's own)."""
    from model.pretrained.tiny import build

    root = tmp_path_factory.mktemp("offload")
    return {"nllb": str(build("nllb", root / "nllb")), **{name: tiny_folders[name] for name in ("bart", "t5", "gpt2")}}


@pytest.fixture(scope="module")
def bin_folder(folders, tmp_path_factory) -> str:
    """The tiny NLLB with pickled weights (``pytorch_model.bin``, plain tensors): offloaded layers go through a folder."""
    from safetensors.torch import load_file

    folder = tmp_path_factory.mktemp("bin") / "nllb"
    shutil.copytree(folders["nllb"], folder)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    return str(folder)


def offloaded(folder: str, tmp_path) -> loading.PretrainedBundle:
    return load_pretrained(folder, memory=MemoryOptions(max_memory=budget_with_disk(folder), offload_folder=str(tmp_path)))


@pytest.mark.parametrize("name", ["nllb", "bart", "t5", "gpt2"])
def test_an_offloaded_model_computes_what_the_model_in_memory_computes(folders, name, tmp_path):
    in_memory, streamed = load_pretrained(folders[name]), offloaded(folders[name], tmp_path)
    plan = streamed.config.offload
    assert plan.offloaded and "streamed from disk" in streamed.describe()
    assert any(param.device.type == "meta" for param in streamed.model.parameters())  # weights truly away
    traces = []
    for bundle in (in_memory, streamed):
        stepper = Stepper(bundle, TEXT)
        for _ in range(6):
            stepper.step()
        traces.append(stepper.trace())
    for kind in ("encoder_self", "decoder_self", "cross"):
        mine, theirs = getattr(traces[0], kind), getattr(traces[1], kind)
        assert (mine is None and theirs is None) or np.array_equal(mine, theirs), kind
    assert list(traces[0].chosen_ids) == list(traces[1].chosen_ids)
    lenses = [bundle_logit_lens(bundle, TEXT) for bundle in (in_memory, streamed)]
    assert all(np.array_equal(a, b) for a, b in zip(lenses[0].readings, lenses[1].readings) if isinstance(a, np.ndarray))
    parts = [bundle_logit_attribution(bundle, TEXT) for bundle in (in_memory, streamed)]
    assert np.allclose(parts[0].remainder, parts[1].remainder, atol=1e-5)
    assert bundle_digest(in_memory) == bundle_digest(streamed)  # the same model, wherever its weights are
    assert "decoding step takes" in streamed.describe()  # what a step costs, once steps ran


def test_head_patching_on_an_offloaded_encoder_decoder_equals_the_model_in_memory(folders, tmp_path):
    results = [activation_patching(bundle, TEXT, CORRUPTED) for bundle in (load_pretrained(folders["nllb"]),
               offloaded(folders["nllb"], tmp_path))]  # fmt: skip
    for component, grid in results[0].grids.items():
        assert np.allclose(grid.metrics, results[1].grids[component].metrics, atol=1e-5, rtol=0), component


def test_a_job_shares_an_offloaded_model_and_copies_one_in_memory(folders, tmp_path):
    streamed = offloaded(folders["nllb"], tmp_path)
    assert copy_without_thread_hooks(streamed.model) is streamed.model  # no second copy of its weights
    assert copy.deepcopy(streamed.model) is streamed.model
    in_memory = load_pretrained(folders["nllb"]).model
    assert copy_without_thread_hooks(in_memory) is not in_memory


def test_a_model_that_would_not_fit_is_offloaded_on_its_own(folders, monkeypatch):
    total = sum(p.numel() for p in load_pretrained(folders["nllb"]).model.parameters()) * 4
    monkeypatch.setattr(loading, "available_memory", lambda: budget_with_disk(folders["nllb"]) * loading.MEMORY_MARGIN)
    bundle = load_pretrained(folders["nllb"])
    assert bundle.config.offload is not None and bundle.config.offload.offloaded
    assert total > bundle.config.offload.resident_bytes


def test_sizes_and_types_are_read_or_refused_in_one_line():
    assert parse_memory("6GB") == 6 * 10**9 and parse_memory("6 GiB") == 6 * 2**30 and parse_memory("512mb") == 512 * 10**6
    for text in ("six", "6XB", "-1GB", "0"):
        with pytest.raises(OffloadError, match="--max-memory"):
            parse_memory(text)
    with pytest.raises(OffloadError, match="--dtype float8: choose one of float32, float16, bfloat16"):
        MemoryOptions.parse(dtype="float8")


def test_the_command_line_says_the_model_is_offloaded_and_refuses_bad_sizes(folders, tmp_path, capsys):
    out = tmp_path / "t.npz"
    budget = budget_with_disk(folders["nllb"])
    assert main(["trace", "--model", folders["nllb"], "--text", TEXT, "--out", str(out), "--max-memory", f"{budget}B",
                 "--offload-folder", str(tmp_path / "offload")]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "offloaded:" in err and "streamed from disk" in err and out.exists()
    assert "offloaded model: a decoding step took" in err  # what a step cost, once the command is done
    assert main(["trace", "--model", folders["nllb"], "--text", TEXT, "--out", str(out), "--max-memory", "lots"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-memory 'lots': give a size such as 6GB" in err


def test_a_16_bit_analysis_says_its_precision(folders, capsys):
    bundle = load_pretrained(folders["nllb"], memory=MemoryOptions.parse(dtype="bfloat16"))
    assert next(bundle.model.parameters()).dtype == torch.bfloat16
    assert any("bfloat16: about 2 significant digits" in note for note in bundle.notes)
    assert "computed in bfloat16" in bundle.describe()


def test_pickled_weights_are_offloaded_through_a_folder_that_must_be_writable_and_have_room(bin_folder, tmp_path, monkeypatch):
    budget = budget_with_disk(bin_folder)
    streamed = load_pretrained(bin_folder, memory=MemoryOptions(max_memory=budget, offload_folder=str(tmp_path / "ok")))
    assert streamed.config.offload.folder is not None and any(streamed.config.offload.folder.iterdir())  # written there
    assert bundle_digest(streamed) == bundle_digest(load_pretrained(bin_folder))
    locked = tmp_path / "locked"
    locked.write_text("a file where the folder should be")  # refused alike by root, who writes into read-only folders
    with pytest.raises(UserError, match="the offload folder cannot be written") as refused:
        load_pretrained(bin_folder, memory=MemoryOptions(max_memory=budget, offload_folder=str(locked)))
    assert "\n" not in str(refused.value)
    monkeypatch.setattr(offload.shutil, "disk_usage", lambda _path: shutil._ntuple_diskusage(10**9, 10**9 - 10, 10))
    with pytest.raises(UserError, match="free some room or choose another disk with --offload-folder"):
        load_pretrained(bin_folder, memory=MemoryOptions(max_memory=budget, offload_folder=str(tmp_path / "full")))
    assert not any((tmp_path / "full").iterdir())  # the folder made for it is removed again
    assert load_pretrained(bin_folder).config.offload is None  # the model's own folder untouched: it opens as before


def test_safetensors_weights_are_read_in_place_with_no_offload_folder(folders, tmp_path):
    streamed = offloaded(folders["nllb"], tmp_path)
    assert streamed.config.offload.offloaded and streamed.config.offload.folder is None and not any(tmp_path.iterdir())


def test_a_16_bit_figure_records_its_type_and_is_checked_in_it(folders, tmp_path, capsys):
    figure = tmp_path / "cross.svg"
    arguments = ["--text", TEXT, "--kind", "cross", "--layer", "1", "--head", "mean", "--out", str(figure)]
    assert main(["export", "--model", folders["nllb"], *arguments, "--dtype", "bfloat16"]) == 0
    capsys.readouterr()
    assert main(["describe", str(figure)]) == 0 and "bfloat16" in capsys.readouterr().out
    assert main(["reproduce", str(figure), "--check"]) == 0  # opened again in bfloat16: the same digest
    assert "the model is the one that drew it" in capsys.readouterr().out


def test_on_a_gpu_the_layers_fill_the_gpu_then_cpu_memory_then_disk(folders):
    """The plan alone (no GPU needed): what is not a layer on the GPU, the first layers there, then CPU memory, then
    disk, in the layers' order."""
    import accelerate
    import transformers

    from model.pretrained.offload import plan_offload

    config = transformers.AutoConfig.from_pretrained(folders["nllb"])
    with accelerate.init_empty_weights():
        meta = transformers.AutoModelForSeq2SeqLM.from_config(config)
    meta.tie_weights()
    layer = 60_000  # bytes of CPU room: one decoder layer (51 kB in float32); the GPU: the embeddings (85 kB) and two
    plan = plan_offload(meta, torch.float32, budget=int(layer / 0.85), first_device="cuda:0", gpu_budget=160_000)
    places = [plan.device_map[f"model.{side}.layers.{index}"] for side in ("encoder", "decoder") for index in range(2)]
    assert plan.device_map["model.shared"] == plan.device_map["lm_head"] == "cuda:0"
    assert places == ["cuda:0", "cuda:0", "cpu", "disk"]  # encoder layers on the GPU, a decoder layer in memory, one on disk
    assert "in GPU memory" in plan.describe() and "in CPU memory" in plan.describe()
    from model.pretrained.networks import Seq2SeqNetwork

    layers = Seq2SeqNetwork.layout_layers(meta, config.model_type)  # as loading asks the family's layout
    by_layout = plan_offload(meta, torch.float32, int(layer / 0.85), "cuda:0", 160_000, layers)
    assert by_layout.device_map == plan.device_map  # the layout's layers are the ones the library never splits


TOOLS = [
    ["neuron", "--out", "{out}.csv"],
    ["attribute", "--measure", "alti", "--quiet", "--out", "{out}.npz"],
    ["attribute", "--measure", "value-zeroing", "--quiet", "--out", "{out}.npz"],
]


@pytest.mark.parametrize("tool", TOOLS)
def test_the_neuron_view_and_the_measures_read_an_offloaded_model_as_one_in_memory(folders, tool, tmp_path):
    budget = budget_with_disk(folders["nllb"])
    written = []
    for memory in ([], ["--max-memory", f"{budget}B", "--offload-folder", str(tmp_path / "offload")]):
        out = str(tmp_path / f"out{len(written)}")
        arguments = [argument.format(out=out) for argument in tool]
        assert main([arguments[0], "--model", folders["nllb"], "--text", TEXT, *arguments[1:], *memory]) == 0
        written.append(arguments[-1])
    if written[0].endswith(".csv"):
        assert open(written[0]).read() == open(written[1]).read()
        return
    mine, theirs = np.load(written[0]), np.load(written[1])
    assert all(np.array_equal(mine[name], theirs[name]) for name in mine.files)
