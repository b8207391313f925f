"""Batched greedy decoding and beam search with cached keys/values."""

import torch

from model.data.batching import collate
from model.decoding.beam import beam_search
from model.decoding.greedy import greedy_decode, length_penalty


def sources(bundle, texts):
    ids = [bundle.source_tokenizer.encode(t) + [3] for t in texts]
    return ids, collate([(s, [0]) for s in ids], 0, "cpu")[0]


def sequence_log_probability(model, source, generated):
    target = torch.tensor([[2] + generated])
    with torch.no_grad():
        logits, _ = model.inspect(source, target[:, :-1])
    log_probs = torch.log_softmax(logits, -1)[0]
    return float(log_probs.gather(1, target[0, 1:, None]).sum())


def test_batched_greedy_equals_one_at_a_time(copy_bundle):
    bundle, _ = copy_bundle
    texts = ["a b c", "d e f g h i", "j"]
    ids, batch = sources(bundle, texts)
    together = greedy_decode(bundle.model, batch, max_target=12)
    alone = [greedy_decode(bundle.model, torch.tensor([s]), max_target=12)[0] for s in ids]
    assert together == alone


def test_each_sentence_keeps_its_own_length_limit_in_a_batch(copy_bundle):
    """Without an explicit limit, a sentence's limit comes from its own length, not from the batch's longest
    (a model that never ends shows it: each output is cut at exactly its own limit)."""
    bundle, _ = copy_bundle
    model = bundle.model
    eos = model.config.eos_id
    texts = ["a", "a b c d e f g h i j k l m n"]
    ids, batch = sources(bundle, texts)
    original = model.logits

    def never_ending(hidden):
        logits = original(hidden)
        logits[..., eos] = float("-inf")
        return logits

    model.logits = never_ending
    try:
        together = greedy_decode(model, batch)
        alone = [greedy_decode(model, torch.tensor([s]))[0] for s in ids]
    finally:
        del model.logits
    assert together == alone
    assert [len(row) for row in together] == [2 * len(s) + 10 - 1 for s in ids]


def test_greedy_matches_a_full_recomputation_each_step(copy_bundle):
    bundle, _ = copy_bundle
    ids, batch = sources(bundle, ["c a b d"])
    generated = greedy_decode(bundle.model, batch, max_target=10)[0]
    prefix = [2]
    for expected in generated:
        with torch.no_grad():
            logits, _ = bundle.model.inspect(batch, torch.tensor([prefix]))
        assert int(logits[0, -1].argmax()) == expected
        prefix.append(expected)


def test_beam_search_scores_are_true_log_probabilities_and_beat_greedy(copy_bundle):
    bundle, _ = copy_bundle
    _, source = sources(bundle, ["b a d c e"])
    tree = beam_search(bundle.model, source, beam_width=4, alpha=0.0, max_target=10)
    best = tree.nodes[tree.hypotheses[0]]
    assert best.score == max(tree.nodes[i].score for i in tree.hypotheses)
    assert abs(best.log_probability - sequence_log_probability(bundle.model, source, tree.best)) < 1e-4
    greedy = greedy_decode(bundle.model, source, max_target=10)[0] + [3]
    assert best.log_probability >= sequence_log_probability(bundle.model, source, greedy) - 1e-5


def test_length_penalty():
    assert length_penalty(1, 0.0) == 1.0
    assert length_penalty(7, 1.0) == 2.0
