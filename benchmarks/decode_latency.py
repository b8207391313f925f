"""Per-step decoding latency: this project's Stepper (key/value cache, every attention row captured)
against the seeds' greedy loops (which re-run the decoder over the whole prefix at every step),
at the same model size and target lengths 16, 64 and 128. Target at 64 tokens: >= 5x faster.

Two figures per length L: the latency of one step at length L (the step that produces token L, as a
user stepping there waits for it: the seed loops' body over an L-token prefix, against one Stepper
step with L - 1 tokens cached), and the mean per step over a whole L-token decode.

    python benchmarks/decode_latency.py [--d-model 256] [--layers 3] [--repeats 5]
"""

from __future__ import annotations

import argparse

import torch
from common import best_seconds, print_table, reference_module

from model.data.corpora import CorpusSpec
from model.decoding.stepper import DecodingOptions, Stepper
from model.training.pipeline import TokenizerOptions, prepare

LENGTHS = (16, 64, 128)
SENTENCE = "The young teacher that the children love does not go to the old market."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--reference", help="folder holding seed_postnorm.py and seed_annotated.py")
    args = parser.parse_args()
    torch.manual_seed(0)
    bundle, _ = prepare(
        CorpusSpec("toy-fr", size=3000, seed=0),
        TokenizerOptions(vocab_size=2000),
        dict(
            n_encoder_layers=args.layers,
            n_decoder_layers=args.layers,
            d_model=args.d_model,
            n_heads=args.heads,
            d_ff=args.d_ff,
            max_len=max(LENGTHS) + 8,
        ),
    )
    bundle.model.eval()
    vocab = bundle.config.target_vocab_size
    postnorm = reference_module("seed_postnorm", args.reference)
    annotated = reference_module("seed_annotated", args.reference)
    seed_post = postnorm.Transformer(
        vocab, vocab, args.d_model, args.heads, args.layers, args.layers, args.d_ff, max_seq_len=512, dropout=0.1
    ).eval()
    seed_pre = annotated.make_model(vocab, vocab, args.layers, args.d_model, args.d_ff, args.heads, 0.1).eval()
    source_ids = bundle.source_tokenizer.encode(SENTENCE) + [bundle.config.eos_id]
    source = torch.tensor([source_ids])

    def ours(length):
        stepper = Stepper(bundle, SENTENCE, DecodingOptions(max_steps=length, stop_at_eos=False))
        stepper.run()
        assert len(stepper.steps) == length
        return stepper.trace()

    def seed_post_loop(length):
        return postnorm.greedy_decode(seed_post, source, bos=2, eos=-1, max_len=length)

    def seed_pre_loop(length):
        with torch.no_grad():
            return annotated.greedy_decode(seed_pre, source, (source != 0).unsqueeze(-2), length + 1, 2)

    with torch.no_grad():
        post_memory = seed_post.encode(source, seed_post.create_padding_mask(source))
        pre_mask = (source != 0).unsqueeze(-2)
        pre_memory = seed_pre.encode(source, pre_mask)

    def seed_post_step(prefix):  # the body of the seed post-norm loop with an L-token prefix
        with torch.no_grad():
            causal = seed_post.create_causal_mask(prefix.shape[1])
            hidden = seed_post.decode(prefix, post_memory, seed_post.create_padding_mask(source), causal)
            return seed_post.output_projection(hidden)[:, -1].argmax(-1)

    def seed_pre_step(prefix):  # the body of the annotated loop with an L-token prefix
        with torch.no_grad():
            out = seed_pre.decode(pre_memory, pre_mask, prefix, annotated.subsequent_mask(prefix.shape[1]))
            return seed_pre.generator(out[:, -1]).argmax(-1)

    def our_step_at(length):
        stepper = Stepper(bundle, SENTENCE, DecodingOptions(max_steps=length, stop_at_eos=False))
        stepper.jump(length - 1)

        def one_step():
            stepper.step()
            stepper.back()

        return one_step

    step_rows, mean_rows = [], []
    for length in LENGTHS:
        prefix = torch.randint(4, vocab, (1, length))
        prefix[0, 0] = 2
        at = {
            "ours": best_seconds(our_step_at(length), 5 * args.repeats),
            "post": best_seconds(lambda prefix=prefix: seed_post_step(prefix), 5 * args.repeats),
            "pre": best_seconds(lambda prefix=prefix: seed_pre_step(prefix), 5 * args.repeats),
        }
        mean = {
            name: best_seconds(lambda run=run, length=length: run(length), args.repeats) / length
            for name, run in (("ours", ours), ("post", seed_post_loop), ("pre", seed_pre_loop))
        }
        for rows, seconds in ((step_rows, at), (mean_rows, mean)):
            rows.append(
                [
                    length,
                    f"{seconds['ours'] * 1e3:.2f}",
                    f"{seconds['post'] * 1e3:.2f}",
                    f"{seconds['pre'] * 1e3:.2f}",
                    f"{seconds['post'] / seconds['ours']:.1f}x",
                    f"{seconds['pre'] / seconds['ours']:.1f}x",
                ]
            )
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU; d_model {args.d_model}, "
        f"{args.heads} heads, d_ff {args.d_ff}, {args.layers}+{args.layers} layers, vocab {vocab}, "
        f"source {len(source_ids)} pieces; best of repeated runs; ms"
    )
    headers = [
        "target length",
        "Stepper (all attention captured)",
        "seed post-norm loop",
        "seed annotated loop",
        "speed-up vs post-norm",
        "speed-up vs annotated",
    ]
    print("\nOne step at length L (the step that produces token L):")
    print_table(headers, step_rows)
    print("\nMean per step over a whole decode of L tokens (encoding and trace assembly included for the Stepper):")
    print_table(headers, mean_rows)
    at_64, mean_64 = (next(r for r in rows if r[0] == 64) for rows in (step_rows, mean_rows))
    print(
        f"\nat 64 tokens, one step: {at_64[4]} faster than the seed post-norm loop, {at_64[5]} than the annotated "
        f"one (target >= 5x); mean over the decode: {mean_64[4]} and {mean_64[5]}"
    )


if __name__ == "__main__":
    main()
