"""A job's private copy of the model (explorer/controllers/background.py): made in the job's thread from the template
kept when the model was opened, so the window's thread copies nothing; the copy's weights its own, equal to the
model's; a model written in place since gets a new template; a copy that cannot be made is one message; a model let go
frees its template; the family's own networks (the RNN, a library model) copy the same way."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
import torch

import explorer.controllers.background as background
from explorer.controllers.background import job_copier, keep_job_template, with_job_template
from model.errors import UserError
from model.nn.hooks import for_this_thread
from model.pretrained.loading import load_pretrained
from tests.conftest import tiny_bundle


class Messages:
    def __init__(self) -> None:
        self.said: list[str] = []

    def emit(self, text: str) -> None:
        self.said.append(text)


def copied_in_a_thread(copier) -> tuple[object, str]:
    """(the copy, the name of the thread that made it)."""
    made: list = []

    def job() -> None:
        made.append((copier(), threading.current_thread().name))

    thread = threading.Thread(target=job, name="job")
    thread.start()
    thread.join(30)
    return made[0]


def assert_private_and_equal(copy, model) -> None:
    pairs = list(zip(copy.module_tree().parameters(), model.module_tree().parameters(), strict=True))
    assert pairs and all(torch.equal(mine, theirs) and mine.data_ptr() != theirs.data_ptr() for mine, theirs in pairs)


def test_the_copy_is_made_in_the_jobs_thread_from_the_template(monkeypatch):
    bundle = with_job_template(tiny_bundle("copy", size=80)[0])  # as the job that opens a model does
    model = bundle.model
    monkeypatch.setattr(background, "copy_without_thread_hooks", lambda *_args, **_kw: pytest.fail("copied here"))
    said = Messages()
    copier = job_copier(model, "A tool", said)  # the window's thread: nothing copied
    assert copier is not None and said.said == []
    copy, thread = copied_in_a_thread(copier)
    assert thread == "job" and not copy.training and copy is not model
    assert_private_and_equal(copy, model)
    with torch.no_grad():
        next(copy.parameters()).add_(1.0)  # a job's writes stay in its copy
    assert_private_and_equal(copied_in_a_thread(copier)[0], model)


def test_a_hook_on_the_model_never_reaches_a_jobs_copy():
    model = with_job_template(tiny_bundle("copy", size=80)[0]).model
    fired: list[str] = []
    handle = model.hook_memory.register_forward_hook(for_this_thread(lambda *_args: fired.append("hook")))
    copy, _thread = copied_in_a_thread(job_copier(model, "A tool", Messages()))
    assert model.hook_memory.hooked and not copy.hook_memory._forward_hooks and fired == []
    handle.remove()


def test_a_model_written_in_place_gets_a_new_template():
    model = with_job_template(tiny_bundle("copy", size=80)[0]).model
    with torch.no_grad():
        next(model.parameters()).mul_(2.0)  # written since its template was kept
    copy, _thread = copied_in_a_thread(job_copier(model, "A tool", Messages()))
    assert_private_and_equal(copy, model)


def test_a_model_without_a_template_gets_one_on_its_first_job():
    model = tiny_bundle("copy", size=80)[0].model  # trained in the session: no opening job kept one
    assert model not in background._TEMPLATES
    copy, _thread = copied_in_a_thread(job_copier(model, "A tool", Messages()))
    assert model in background._TEMPLATES
    assert_private_and_equal(copy, model)


def test_a_copy_that_cannot_be_made_is_one_message(monkeypatch):
    model = tiny_bundle("copy", size=80)[0].model

    def out_of_memory(*_args, **_kw):
        raise MemoryError()

    copier = job_copier(model, "The report card", Messages())
    monkeypatch.setattr(background.copy, "deepcopy", out_of_memory)  # the machine's memory full when the job copies
    with pytest.raises(UserError, match="^not enough memory for the job's own copy of the model"):
        copier()
    monkeypatch.setattr(background, "copy_without_thread_hooks", out_of_memory)  # or already for the template
    said = Messages()
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # another template needed
    assert job_copier(model, "The report card", said) is None
    assert said.said == ["The report card could not start: internal error: MemoryError"]


def test_a_model_let_go_frees_its_template():
    model = tiny_bundle("copy", size=80)[0].model
    template = weakref.ref(keep_job_template(model))
    del model
    gc.collect()
    assert template() is None  # the template holds the model's weights, never the model


def test_the_rnn_and_a_library_model_copy_the_same_way(tiny_folders):
    for model in (tiny_bundle("copy", size=80, family="rnn")[0].model, load_pretrained(tiny_folders["marian"]).model):
        keep_job_template(model)
        copy, thread = copied_in_a_thread(job_copier(model, "A tool", Messages()))
        assert thread == "job" and copy is not model
        assert_private_and_equal(copy, model)
