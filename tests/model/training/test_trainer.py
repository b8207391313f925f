"""The trainer: the paper's schedule, progress reports, pause/resume/cancel within a step, time budget."""

import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
import sacrebleu
import torch

import model.training.trainer
from model.data.batching import collate, encode_source
from model.data.corpora import CorpusSpec
from model.decoding.greedy import greedy_decode
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer
from model.runtime import CoreFollower
from model.training.evaluation import score
from model.training.pipeline import TokenizerOptions, prepare
from model.training.trainer import Trainer, TrainingControl, TrainingOptions, learning_rate, make_optimizer, training_step
from tests.conftest import ROOT, TINY_MODEL


def make_trainer(steps=60, epochs=50, **callbacks):
    bundle, splits = prepare(CorpusSpec("copy", size=500, seed=1), TokenizerOptions(vocab_size=100), TINY_MODEL)
    options = TrainingOptions(epochs=epochs, max_steps=steps, batch_size=32, warmup_steps=30, valid_decode_limit=10)
    return Trainer(
        bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, splits, options, torch.device("cpu"), **callbacks
    )


def test_learning_rate_warms_up_then_decays():
    rates = [learning_rate(step, 512, 4000) for step in (1, 2000, 4000, 8000, 16000)]
    assert rates[0] < rates[1] < rates[2] > rates[3] > rates[4]
    assert rates[2] == pytest.approx(512**-0.5 * 4000**-0.5)
    assert rates[4] == pytest.approx(rates[2] / 2)


def decoded_here(model, source_tokenizer, target_tokenizer, pairs) -> list[str]:
    """Greedy translations of ``pairs`` as one padded batch in their order (the evaluation sorts them by length
    first; one batch, as here, as long as they are at most 64)."""
    assert len(pairs) <= 64
    ids = [encode_source(source_tokenizer, pair.source, model.config)[0] for pair in pairs]
    source, _ = collate([(row, [0]) for row in ids], model.config.pad_id, torch.device("cpu"))
    with torch.no_grad():
        return [target_tokenizer.decode(row) for row in greedy_decode(model, source)]


def test_training_reports_progress_and_learns(monkeypatch):
    progress, validations, recomputed = [], [], []

    def checked_score(model, source_tokenizer, target_tokenizer, pairs, device, **options):
        """The validation's own scores, and its exact match and BLEU recomputed from the same weights."""
        decoded = pairs[: options["decode_limit"]]
        hypotheses = decoded_here(model, source_tokenizer, target_tokenizer, decoded)
        references = [pair.target for pair in decoded]
        exact = sum(h.split() == r.split() for h, r in zip(hypotheses, references)) / len(decoded)
        recomputed.append((exact, sacrebleu.corpus_bleu(hypotheses, [references]).score, len(pairs)))
        return score(model, source_tokenizer, target_tokenizer, pairs, device, **options)

    monkeypatch.setattr(model.training.trainer, "score", checked_score)
    trainer = make_trainer(steps=80, epochs=3, on_progress=progress.append, on_validation=validations.append)
    result = trainer.run()
    assert [p.step for p in progress] == list(range(1, result.steps + 1))
    first, last = progress[0], progress[-1]
    assert last.train_loss < first.train_loss
    assert 0 < last.learning_rate and last.tokens_per_second > 0 and 0 < last.fraction <= 1
    assert last.eta_seconds >= 0
    assert validations and len(validations) == len(recomputed)
    for validation, (exact, bleu, n) in zip(validations, recomputed):
        scores = validation.scores
        assert scores.n == n == len(trainer.splits.valid) > 0
        assert scores.exact_match == pytest.approx(exact, abs=1e-9) and scores.bleu == pytest.approx(bleu, abs=1e-6)
        assert 0 < scores.token_accuracy <= 1
    assert len(scores.samples) == 3 and all(len(s) == 3 for s in scores.samples)
    assert result.history["steps"] and result.history["validations"]


class WatchedControl(TrainingControl):
    """A TrainingControl that says when the trainer is blocked in a pause: the tests wait on that, not on time."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait_while_paused(self) -> float:
        if self.paused:
            self.waiting.set()
        return super().wait_while_paused()


def test_pause_resume_and_cancel_take_effect_within_one_step():
    control = WatchedControl()
    seen = []

    def on_progress(progress):
        seen.append(progress.step)
        if progress.step == 5:
            control.pause()
        if progress.step == 10:
            control.cancel()

    trainer = make_trainer(steps=10_000, on_progress=on_progress, control=control)
    thread = threading.Thread(target=lambda: seen.append(trainer.run()))
    thread.start()
    assert control.waiting.wait(30)  # the trainer is blocked before step 6
    assert seen == [1, 2, 3, 4, 5]  # no step ran once paused
    control.resume()
    thread.join(30)
    result = seen[-1]
    assert result.stopped == "cancelled"
    assert seen[:-1] == list(range(1, 11)) and result.steps == 10  # cancelled before the next step


def test_cancel_while_paused_stops():
    control = WatchedControl()
    control.pause()
    trainer = make_trainer(control=control)
    thread = threading.Thread(target=trainer.run)
    thread.start()
    assert control.waiting.wait(30)
    control.cancel()
    thread.join(30)
    assert not thread.is_alive()


def test_time_budget_stops_at_a_step_boundary(monkeypatch):
    """A clock that moves 10 s per reading: the budget of 1 minute runs out after a fixed number of steps."""
    clock = iter(range(0, 10**6, 10))
    monkeypatch.setattr(model.training.trainer, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    trainer = make_trainer(steps=None, epochs=1000)
    trainer.options.max_minutes = 1.0
    result = trainer.run()
    assert result.stopped == "time budget"
    # Each step reads the clock twice (before and after it): 60 s are reached at the start of step 4.
    assert result.steps == 3


def test_same_seed_same_model(monkeypatch):
    """Bit for bit at a fixed thread count. (On a busy machine training follows the free cores, and a different
    thread count sums in a different order: the same seed then gives the same model to rounding only.)"""
    from functools import partial

    import model.training.trainer

    monkeypatch.setattr(model.training.trainer, "CoreFollower", partial(CoreFollower, sample=lambda: None))
    first, second = make_trainer(steps=10), make_trainer(steps=10)
    first.run()
    second.run()
    for a, b in zip(first.model.parameters(), second.model.parameters()):
        assert torch.equal(a, b)


def test_a_training_step_under_bfloat16_autocast_learns():
    """The CUDA recipe (bf16 autocast, float32 loss and Adam), run here on the CPU: a fixed batch is learned."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(source_vocab_size=30, target_vocab_size=30, **TINY_MODEL))
    optimizer = make_optimizer(model)
    optimizer.lr = 3e-3
    source = torch.randint(4, 30, (8, 7))
    target = torch.cat([torch.full((8, 1), 2), source, torch.full((8, 1), 3)], dim=1)  # bos ... eos
    results = [training_step(model, optimizer, source, target, 0.1, 1.0, torch.bfloat16) for _ in range(60)]
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert results[-1][0] < results[0][0] / 2
    assert results[-1][1] >= 0.9 * results[-1][2]  # correct pieces of the 64 real ones


def test_cpu_threads_are_set_for_the_calling_thread_only():
    """The window's thread runs torch on one core while a training thread keeps every core (see
    model.runtime.set_cpu_threads); run in a fresh interpreter so this process keeps its own setting."""
    code = (
        "import threading, torch; from model.runtime import set_cpu_threads;"
        "default = torch.get_num_threads(); assert set_cpu_threads(1) == 1;"
        "seen = [];"
        "worker = threading.Thread(target=lambda: seen.append((set_cpu_threads(), torch.get_num_threads())));"
        "worker.start(); worker.join();"
        "print(default, seen[0][0], seen[0][1], torch.get_num_threads())"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    default, set_in_thread, in_thread, in_main = map(int, result.stdout.split())
    assert set_in_thread == in_thread == default  # the training thread: torch's default, every core
    assert in_main == 1  # the calling (window's) thread kept its single core
