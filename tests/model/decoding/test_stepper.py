"""Step-by-step decoding: the incremental trace equals one full pass; back/jump/what-if; beam tree;
sampling; bad inputs."""

import itertools

import numpy as np
import pytest
import torch

from model.decoding.beam import beam_search
from model.decoding.stepper import DecodingError, DecodingOptions, Stepper, full_pass_trace
from model.decoding.trace import Trace, word_groups
from tests.conftest import tiny_bundle

SENTENCE = "The black cat does not eat the apple."


@pytest.fixture(
    scope="module",
    params=[("post", "sinusoidal"), ("pre", "learned"), ("post", "learned"), ("pre", "sinusoidal")],
    ids=lambda p: "-".join(p),
)
def variant_bundle(request):
    norm, positions = request.param
    bundle, _ = tiny_bundle("toy-fr", size=500, steps=30, norm_placement=norm, positional_encoding=positions)
    return bundle


def assert_traces_equal(incremental: Trace, full: Trace):
    for kind in ("encoder_self", "decoder_self", "cross"):
        a, b = getattr(incremental, kind), getattr(full, kind)
        assert a.shape == b.shape, kind
        np.testing.assert_allclose(a, b, atol=1e-5, err_msg=kind)
    assert incremental.target_tokens == full.target_tokens
    assert incremental.decoder_input_tokens == full.decoder_input_tokens


@pytest.mark.parametrize("engine", ["numpy", "torch"])
def test_incremental_trace_equals_one_full_pass(variant_bundle, engine):
    stepper = Stepper(variant_bundle, SENTENCE, DecodingOptions(max_steps=25, engine=engine))
    stepper.run()
    trace = stepper.trace()
    assert trace.n_steps >= 1
    assert trace.encoder_self.shape[2] == len(stepper.source_ids)
    assert_traces_equal(trace, full_pass_trace(variant_bundle, stepper.source_ids, stepper.target_ids()))
    # Future keys are exactly zero; rows sum to one.
    assert np.all(np.triu(trace.decoder_self, 1) == 0)
    np.testing.assert_allclose(trace.cross.sum(-1), 1.0, atol=1e-5)


def test_each_step_exposes_distribution_candidates_and_new_rows(copy_bundle):
    bundle, _ = copy_bundle
    stepper = Stepper(bundle, "a b c d", DecodingOptions(n_candidates=5))
    first = stepper.step()
    assert first.probabilities.shape == (bundle.config.target_vocab_size,)
    assert first.probabilities.sum() == pytest.approx(1.0, abs=1e-5)
    assert list(first.candidate_ids) == list(np.argsort(-first.probabilities)[:5])
    assert np.all(np.diff(first.candidate_probabilities) <= 0)
    assert first.token_id == first.candidate_ids[0]  # greedy
    assert first.decoder_self.shape == (2, 4, 1) and first.cross.shape == (2, 4, 5)
    second = stepper.step()
    assert second.decoder_self.shape == (2, 4, 2)


@pytest.mark.parametrize("engine", ["numpy", "torch"])
def test_back_jump_and_reset_reproduce_the_same_steps(copy_bundle, engine):
    bundle, _ = copy_bundle
    stepper = Stepper(bundle, "e f g h i", DecodingOptions(strategy="sample", temperature=1.5, seed=3, engine=engine))
    stepper.run()
    full = stepper.trace()
    stepper.jump(2)
    assert len(stepper.steps) == 2
    assert stepper.back() and len(stepper.steps) == 1
    stepper.run()  # sampling draws the same tokens again after stepping back
    assert stepper.trace().target_tokens == full.target_tokens
    assert_traces_equal(stepper.trace(), full)
    stepper.reset()
    assert not stepper.steps and not stepper.back()
    assert stepper.trace().decoder_self.shape[2] == 0


@pytest.mark.parametrize("engine", ["numpy", "torch"])
def test_what_if_forcing_continues_from_the_forced_token(toy_fr_bundle, engine):
    bundle, _ = toy_fr_bundle
    stepper = Stepper(bundle, SENTENCE, DecodingOptions(max_steps=12, engine=engine))
    stepper.run()
    original = stepper.target_ids()
    alternative = next(i for i in stepper.steps[1].candidate_ids if i != original[1])
    step = stepper.force(1, int(alternative))
    assert step.forced and stepper.target_ids() == original[:1] + [int(alternative)]
    stepper.run()
    trace = stepper.trace()
    assert trace.forced.tolist()[:2] == [False, True] and not trace.forced[2:].any()
    assert_traces_equal(trace, full_pass_trace(bundle, stepper.source_ids, stepper.target_ids()))
    with pytest.raises(DecodingError):
        stepper.force(500, 5)
    with pytest.raises(DecodingError):
        stepper.step(force=10**6)


def test_sampling_filters_and_seed(copy_bundle):
    bundle, _ = copy_bundle
    runs = []
    for seed in (1, 1, 2):
        stepper = Stepper(
            bundle, "a b c", DecodingOptions(strategy="sample", temperature=5.0, seed=seed, max_steps=8, stop_at_eos=False)
        )
        stepper.run()
        runs.append(stepper.target_ids())
    assert runs[0] == runs[1] and runs[0] != runs[2]
    stepper = Stepper(bundle, "a b c", DecodingOptions(strategy="sample", temperature=5.0, top_k=1, max_steps=8))
    stepper.run()
    assert all(s.token_id == s.candidate_ids[0] for s in stepper.steps)  # top-1 sampling is greedy
    stepper = Stepper(bundle, "a b c", DecodingOptions(strategy="sample", temperature=3.0, top_p=0.3, seed=9, max_steps=8))
    for step in iter(stepper.step, None):
        tempered = step.probabilities.astype(np.float64) ** (1 / 3.0)  # top-p applies after temperature
        tempered /= tempered.sum()
        order = np.argsort(-tempered)
        cumulative = np.cumsum(tempered[order])
        nucleus = set(order[: int(np.searchsorted(cumulative, 0.3)) + 1].tolist())
        assert step.token_id in nucleus


def test_beam_search_equals_exhaustive_search_on_a_tiny_model():
    torch.manual_seed(0)
    bundle, _ = tiny_bundle("copy", size=300, steps=0, d_model=16, n_heads=2, d_ff=16, max_len=8)
    model, config = bundle.model, bundle.config
    vocab = [i for i in range(config.target_vocab_size) if i not in (config.pad_id, config.bos_id)]
    source = torch.tensor([[5, 6, 3]])
    max_tokens = 3

    def log_probability(tokens):
        with torch.no_grad():
            logits, _ = model.inspect(source, torch.tensor([[config.bos_id] + tokens[:-1]]))
        log_probs = torch.log_softmax(logits[0], -1)
        log_probs[:, config.pad_id] = log_probs[:, config.bos_id] = float("-inf")
        # beam search never proposes pad or bos: renormalisation is not applied, so compare raw scores
        return float(sum(log_probs[i, t] for i, t in enumerate(tokens)))

    candidates = [
        list(prefix) + [config.eos_id]
        for length in range(0, max_tokens)
        for prefix in itertools.product([v for v in vocab if v != config.eos_id], repeat=length)
    ]
    best = max(candidates, key=log_probability)
    tree = beam_search(model, source, beam_width=len(vocab) ** max_tokens, alpha=0.0, max_target=max_tokens + 1)
    assert tree.best == best
    assert tree.nodes[tree.hypotheses[0]].log_probability == pytest.approx(log_probability(best), abs=1e-4)


def test_beam_tree_records_every_hypothesis_and_traces_any_of_them(toy_fr_bundle):
    bundle, _ = toy_fr_bundle
    stepper = Stepper(bundle, SENTENCE, DecodingOptions(strategy="beam", beam_width=3, max_steps=10))
    tree = stepper.beam
    assert tree.hypotheses and len(tree.steps()[0]) >= 1
    for node in tree.nodes:
        assert node.parent < 0 or tree.nodes[node.parent].step == node.step - 1
    stepper.run()
    assert stepper.target_ids() == tree.best
    # The briefly trained model ends no hypothesis within 10 steps, so the beam keeps its 3 alive ones, best first.
    assert len(tree.hypotheses) == 3
    scores = [tree.nodes[h].score for h in tree.hypotheses]
    assert scores == sorted(scores, reverse=True)
    for rank in (1, 2):
        stepper.follow_hypothesis(rank)
        stepper.run()
        assert stepper.target_ids() == tree.token_ids(tree.hypotheses[rank]) != tree.best
        assert_traces_equal(stepper.trace(), full_pass_trace(bundle, stepper.source_ids, stepper.target_ids()))


def test_bad_inputs_are_clear(toy_fr_bundle):
    bundle, _ = toy_fr_bundle
    for empty in ("", "   ", "\n\t"):
        with pytest.raises(DecodingError, match="empty"):
            Stepper(bundle, empty)
    long_text = " ".join(["cat"] * 200)
    stepper = Stepper(bundle, long_text)
    assert stepper.messages and "cut" in stepper.messages[0]
    assert len(stepper.source_ids) == bundle.config.max_len
    for text in ["日本語 😀", "\x00\x07 control", "Ünïcödé ça va?", "a" * 10]:
        stepper = Stepper(bundle, text, DecodingOptions(max_steps=3))
        stepper.run()
        assert stepper.trace().n_steps >= 1
    with pytest.raises(DecodingError):
        Stepper(bundle, "cat", DecodingOptions(strategy="magic"))
    with pytest.raises(DecodingError):
        Stepper(bundle, "cat", DecodingOptions(temperature=0))
    with pytest.raises(DecodingError):
        Stepper(bundle, "cat", DecodingOptions(engine="gpu-magic"))


def test_both_engines_give_the_same_steps_with_padding_free_and_untied_models():
    bundle, _ = tiny_bundle("reverse", size=300, steps=20, tie_embeddings=False, norm_placement="pre")
    steppers = [
        Stepper(bundle, "a b c d e f", DecodingOptions(max_steps=9, stop_at_eos=False, engine=engine))
        for engine in ("numpy", "torch")
    ]
    for stepper in steppers:
        stepper.run()
    numpy_trace, torch_trace = (s.trace() for s in steppers)
    assert_traces_equal(numpy_trace, torch_trace)
    for a, b in zip(*(s.steps for s in steppers)):
        np.testing.assert_allclose(a.probabilities, b.probabilities, atol=1e-5)


def test_word_groups_and_word_level_view():
    groups, words = word_groups(["▁The", "▁bl", "ack", "▁cat", ".", "</s>"])
    assert groups.tolist() == [0, 1, 1, 2, 2, 3] and words == ["The", "black", "cat.", "</s>"]
    pieces = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]])
    trace = Trace(
        np.zeros((1, 1, 4, 4)),
        np.zeros((1, 1, 3, 3)),
        pieces[None, None],
        ["▁a", "▁b", "c", "</s>"],
        ["▁x", "y", "▁z"],
        ["<s>", "▁x", "y"],
    )
    words = trace.word_level()
    assert words.source_tokens == ["a", "bc", "</s>"] and words.target_tokens == ["xy", "z"]
    expected = np.array([[(0.1 + 0.25) / 2, (0.5 + 0.5) / 2, (0.4 + 0.25) / 2], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(words.cross[0, 0], expected)


def test_trace_npz_round_trip_without_pickle(toy_fr_bundle, tmp_path):
    bundle, _ = toy_fr_bundle
    stepper = Stepper(bundle, SENTENCE, DecodingOptions(max_steps=6))
    stepper.run()
    trace = stepper.trace()
    trace.save_npz(tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as data:
        assert {"encoder_self", "decoder_self", "cross", "source_tokens", "target_tokens"} <= set(data.files)
    again = Trace.load_npz(tmp_path / "t.npz")
    assert_traces_equal(again, trace)
    assert again.candidate_tokens == trace.candidate_tokens and again.source_text == SENTENCE


@pytest.mark.parametrize(
    "strategy,engine", [("greedy", "numpy"), ("sample", "numpy"), ("sample", "torch"), ("beam", "numpy"), ("beam", "torch")]
)
def test_step_zero_trace_holds_the_distribution_of_step_1_without_disturbing_decoding(toy_fr_bundle, strategy, engine):
    bundle, _ = toy_fr_bundle

    def options():
        return DecodingOptions(strategy=strategy, temperature=3.0, seed=5, beam_width=3, max_steps=8, n_candidates=6, engine=engine)

    untouched = Stepper(bundle, SENTENCE, options())
    previewed = Stepper(bundle, SENTENCE, options())
    if strategy == "beam":  # not the best one: the preview must not fall back to it
        assert len(previewed.beam.hypotheses) == 3
        untouched.follow_hypothesis(1)
        previewed.follow_hypothesis(1)
    start = previewed.trace()  # one step and one step back, inside
    assert start.n_steps == 0 and not previewed.steps
    assert start.next_candidate_ids.shape == (6,) and start.next_candidate_probabilities.shape == (6,)
    assert start.next_candidate_tokens == bundle.target_tokenizer.pieces(start.next_candidate_ids)
    untouched.run()
    previewed.run()
    assert previewed.target_ids() == untouched.target_ids()  # same samples, same hypothesis
    if strategy == "beam":
        assert previewed.target_ids() == previewed.hypothesis
    full = previewed.trace()
    assert_traces_equal(full, full_pass_trace(bundle, previewed.source_ids, previewed.target_ids()))  # cache restored
    np.testing.assert_array_equal(start.next_candidate_ids, full.candidate_ids[0])
    np.testing.assert_allclose(start.next_candidate_probabilities, full.candidate_probabilities[0], atol=1e-6)
    assert len(full.next_candidate_ids) == 0 and full.next_candidate_tokens == []  # known only at step 0
    at_zero = full.at_step(0)
    np.testing.assert_array_equal(at_zero.next_candidate_ids, start.next_candidate_ids)
    assert at_zero.next_candidate_tokens == start.next_candidate_tokens
    assert len(full.at_step(2).next_candidate_ids) == 0
    assert at_zero.word_level().next_candidate_tokens == start.next_candidate_tokens
    previewed.reset()
    np.testing.assert_array_equal(previewed.trace().next_candidate_ids, start.next_candidate_ids)


def test_step_zero_candidates_in_npz_files_and_files_without_them(toy_fr_bundle, tmp_path):
    bundle, _ = toy_fr_bundle
    start = Stepper(bundle, SENTENCE, DecodingOptions(max_steps=6)).trace()
    start.save_npz(tmp_path / "start.npz")
    again = Trace.load_npz(tmp_path / "start.npz")
    np.testing.assert_array_equal(again.next_candidate_ids, start.next_candidate_ids)
    np.testing.assert_allclose(again.next_candidate_probabilities, start.next_candidate_probabilities)
    assert again.next_candidate_tokens == start.next_candidate_tokens and len(start.next_candidate_tokens) == 10
    older = {name: value for name, value in start.to_arrays().items() if not name.startswith("next_candidate")}
    np.savez_compressed(tmp_path / "older.npz", **older)  # written before the fields existed
    loaded = Trace.load_npz(tmp_path / "older.npz")
    assert loaded.next_candidate_tokens == [] and loaded.next_candidate_ids.shape == (0,)
    assert loaded.source_tokens == start.source_tokens


def test_pieces_the_model_does_not_know_are_flagged_in_the_trace_and_named_in_a_note(toy_fr_bundle, tmp_path):
    bundle, _ = toy_fr_bundle
    text = "the cat € sees the dog €"
    stepper = Stepper(bundle, text)
    stepper.run()
    trace = stepper.trace()
    unk = bundle.source_tokenizer.unk_id
    expected = [piece_id == unk for piece_id in stepper.source_ids]
    assert trace.source_unknown.tolist() == expected and sum(expected) == 2
    assert [token for token, flag in zip(trace.source_tokens, expected) if flag] == ["<unk>", "<unk>"]
    pieces = len(stepper.source_ids) - 1  # the end token is not one of the sentence's pieces
    assert stepper.messages == [
        f"2 of the sentence's {pieces} pieces ({2 / pieces:.0%}) are unknown to this model (<unk>): it never saw them in "
        "training and reads each as the same unknown piece, so what they say is lost"
    ]
    words = trace.word_level()
    assert [word for word, flag in zip(words.source_tokens, words.source_unknown) if flag] == ["<unk>", "<unk>"]
    trace.save_npz(tmp_path / "t.npz")
    assert Trace.load_npz(tmp_path / "t.npz").source_unknown.tolist() == expected
    known = Stepper(bundle, "the cat sees the dog")
    assert known.messages == [] and not known.trace().source_unknown.any()
