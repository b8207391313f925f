"""A hook is its thread's (model/nn/hooks.py, ``for_this_thread``): while a job's hook patches a model's memory, the
same model's pass in another thread (the window decoding with it) reads its own activations. Registered plainly, the
hook changed both: benchmarks/window_states.py's long run found the window's beam search reading a batch of four
memories that a measure's job had patched in."""

from __future__ import annotations

import copy
import threading
import types

import torch

from model.attribution.own_pass import hooked
from model.interventions.hooked import Patch, run_hooked
from model.nn import hooks
from model.nn.hooks import copy_without_thread_hooks
from tests.model.interventions.models import SOURCES, TARGETS, tiny


def test_a_hook_reads_and_patches_only_the_passes_of_its_own_thread():
    model = tiny("pre")
    source = torch.tensor([SOURCES[0]])
    with torch.inference_mode():
        plain = model.encode(source)[0]  # [1, S, d_model]
    points = model.hook_points()
    registered, finished = threading.Event(), threading.Event()
    called_in: list[str] = []
    job_memory: list[torch.Tensor] = []

    def zeros(memory: torch.Tensor) -> torch.Tensor:
        called_in.append(threading.current_thread().name)
        return torch.zeros(4, *memory.shape[1:])  # another batch, as integrated gradients' interpolations were

    def job() -> None:
        with torch.inference_mode(), hooked(points, {"encoder.memory": zeros}):
            registered.set()
            assert finished.wait(10)
            job_memory.append(model.encode(source)[0])

    thread = threading.Thread(target=job, name="job")
    thread.start()
    assert registered.wait(10)
    with torch.inference_mode():
        beside = model.encode(source)[0]  # this thread's pass, while the job's hook is registered
    finished.set()
    thread.join(10)
    assert torch.equal(beside, plain) and called_in == ["job"]
    assert job_memory[0].shape[0] == 4 and float(job_memory[0].abs().max()) == 0.0


def test_run_hooked_patches_in_its_thread_and_nowhere_else():
    model = tiny("post")
    source, target = torch.tensor([SOURCES[0]]), torch.tensor([TARGETS[0]])
    with torch.inference_mode():
        clean = model.logits(model(source, target))
        results: list[torch.Tensor] = []
        worker = threading.Thread(
            target=lambda: results.append(
                run_hooked(model, source, target, patches=[Patch("encoder.memory", torch.zeros(1))]).logits(model)
            )
        )
        worker.start()
        worker.join(10)
        after = model.logits(model(source, target))
    assert not torch.allclose(results[0], clean) and torch.equal(after, clean)


def test_a_copy_made_while_a_job_s_hook_is_on_never_runs_it_even_in_a_thread_that_reuses_the_job_s_identifier(monkeypatch):
    """The long run found value zeroing's scaling firing in a later job's logit lens: the window copied the model for
    that job while the measure's hook was on it, the measure's thread ended, and the later job's thread got its
    identifier. Here every thread is given the same identifier, as a recycled one is: a thread is told by its Thread
    object, and the copy carries no thread's hook."""
    recycled = types.SimpleNamespace(get_ident=lambda: 1, current_thread=threading.current_thread)  # one identifier for all
    monkeypatch.setattr(hooks, "threading", recycled)  # as model/nn/hooks.py sees the threads
    model = tiny("pre")
    source = torch.tensor([SOURCES[0]])
    with torch.inference_mode():
        plain = model.encode(source)[0]  # [1, S, d_model]
    points = model.hook_points()
    registered, copied = threading.Event(), threading.Event()
    called: list[str] = []
    copies: list = []

    def zeros(memory: torch.Tensor) -> torch.Tensor:
        called.append(threading.current_thread().name)
        return torch.zeros(4, *memory.shape[1:])

    def job() -> None:
        with torch.inference_mode(), hooked(points, {"encoder.memory": zeros}):
            registered.set()
            assert copied.wait(10)

    first = threading.Thread(target=job, name="measure")
    first.start()
    assert registered.wait(10)
    copies.append(copy_without_thread_hooks(model))  # the window's copy for another job, the hook on meanwhile
    copies.append(copy.deepcopy(model))  # a plain copy carries the hook: it must still never run it
    copied.set()
    first.join(10)
    found: list[torch.Tensor] = []

    def later() -> None:
        with torch.inference_mode():
            found.extend(copied_model.encode(source)[0] for copied_model in copies)

    second = threading.Thread(target=later, name="lens")
    second.start()
    second.join(10)
    assert called == [] and all(torch.equal(memory, plain) for memory in found) and len(found) == 2
    assert not copies[0].hook_points()["encoder.memory"].hooked  # the copy is clean
