"""Training throughput: this project's Transformer against the seeds' two implementations and
torch.nn.Transformer, with the same configuration, the same batches, loss and optimizer.

Prints tokens/s (source + target pieces per second) for each and the ratios. Targets on CPU:
>= 1.5x the seed post-norm implementation and >= 1.0x torch.nn.Transformer.

    python benchmarks/train_throughput.py [--steps 40] [--d-model 128] [--device cpu]
"""

from __future__ import annotations

import argparse
import math
import random
import time

from common import print_table, reference_module  # first: it puts the project on sys.path

# isort: split
import model as _app_policies  # noqa: F401  (before torch: the OpenMP policy of model/runtime.py)

# isort: split
import torch
import torch.nn as nn
import torch.nn.functional as F

from model.data.batching import collate, encode_pairs, length_batches
from model.data.corpora import CorpusSpec, load_corpus
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer, sinusoidal_table
from model.training.pipeline import TokenizerOptions, train_tokenizers
from model.training.trainer import make_optimizer, training_step


class TorchTransformer(nn.Module):
    """torch.nn.Transformer with the embeddings, sinusoidal positions and output layer it lacks."""

    def __init__(self, vocab: int, d_model: int, heads: int, layers: int, d_ff: int, dropout: float, pre_norm=False):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab, d_model)
        self.register_buffer("positions", sinusoidal_table(512, d_model))
        self.core = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout, batch_first=True, norm_first=pre_norm)
        self.output = nn.Linear(d_model, vocab)
        self.dropout = nn.Dropout(dropout)

    def embed(self, ids):
        return self.dropout(self.embedding(ids) * math.sqrt(self.d_model) + self.positions[: ids.shape[1]])

    def forward(self, source, target_input):
        causal = nn.Transformer.generate_square_subsequent_mask(target_input.shape[1], device=source.device)
        source_pad = source == 0
        hidden = self.core(
            self.embed(source),
            self.embed(target_input),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=source_pad,
            memory_key_padding_mask=source_pad,
            tgt_key_padding_mask=target_input == 0,
        )
        return self.output(hidden)


def full_logits_step(forward, optimizer, model, source, target, smoothing, clip):
    """The usual training step: logits for every position, padding ignored by the loss."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    logits = forward(source, target[:, :-1])  # [B, T, V]
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target[:, 1:].reshape(-1), ignore_index=0, label_smoothing=smoothing
    )
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="timed steps per implementation")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--d-model", type=int, default=128, help="default: the project's default config")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=512)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each keeps its fastest (noise control)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--reference", help="folder holding seed_postnorm.py and seed_annotated.py")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)

    splits = load_corpus(CorpusSpec("toy-fr", size=8000, seed=0))
    tokenizer, _ = train_tokenizers(splits, TokenizerOptions(vocab_size=2000))
    vocab = tokenizer.vocab_size
    config = TransformerConfig(
        source_vocab_size=vocab,
        target_vocab_size=vocab,
        n_encoder_layers=args.layers,
        n_decoder_layers=args.layers,
        d_model=args.d_model,
        n_heads=args.heads,
        d_ff=args.d_ff,
        dropout=0.1,
        max_len=128,
    )
    examples = encode_pairs(splits.train, tokenizer, tokenizer, config)
    order = length_batches(examples, args.batch_size, random.Random(0))
    n_batches = args.warmup + args.steps
    batches = [collate([examples[i] for i in order[k % len(order)]], 0, device) for k in range(n_batches)]
    tokens = sum(int((s != 0).sum() + (t != 0).sum()) for s, t in batches[args.warmup :])

    postnorm = reference_module("seed_postnorm", args.reference)
    annotated = reference_module("seed_annotated", args.reference)

    ours = Transformer(config).to(device)
    seed_post = postnorm.Transformer(
        vocab, vocab, args.d_model, args.heads, args.layers, args.layers, args.d_ff, max_seq_len=512, dropout=0.1
    ).to(device)
    seed_pre = annotated.make_model(vocab, vocab, args.layers, args.d_model, args.d_ff, args.heads, 0.1).to(device)
    torch_model = TorchTransformer(vocab, args.d_model, args.heads, args.layers, args.d_ff, 0.1).to(device)

    def seed_post_forward(source, target_input):
        source_mask = seed_post.create_padding_mask(source)
        target_mask = seed_post.create_causal_mask(target_input.shape[1]).to(device) & seed_post.create_padding_mask(target_input)
        return seed_post(source, target_input, source_mask, target_mask)

    def seed_pre_forward(source, target_input):
        source_mask = (source != 0).unsqueeze(-2)
        target_mask = (target_input != 0).unsqueeze(-2) & annotated.subsequent_mask(target_input.shape[1]).to(device)
        return seed_pre.generator(seed_pre(source, target_input, source_mask, target_mask))

    steppers = {
        "this project (post-norm)": (ours, lambda opt, s, t: training_step(ours, opt, s, t, 0.1, 1.0)),
        "seed post-norm (seed 002)": (
            seed_post,
            lambda opt, s, t: full_logits_step(seed_post_forward, opt, seed_post, s, t, 0.1, 1.0),
        ),
        "seed annotated (pre-norm)": (
            seed_pre,
            lambda opt, s, t: full_logits_step(seed_pre_forward, opt, seed_pre, s, t, 0.1, 1.0),
        ),
        "torch.nn.Transformer": (torch_model, lambda opt, s, t: full_logits_step(torch_model, opt, torch_model, s, t, 0.1, 1.0)),
    }
    optimizers = {
        name: make_optimizer(model)
        if name.startswith("this")
        else torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        for name, (model, _) in steppers.items()
    }
    for optimizer in optimizers.values():
        if hasattr(optimizer, "param_groups"):
            for group in optimizer.param_groups:
                group["lr"] = 1e-4
        else:
            optimizer.lr = 1e-4  # this project's FlatAdam
    # Interleave: every timed batch runs one step of each implementation in turn, so a burst of load
    # on this shared machine slows them all alike; each implementation keeps its fastest round.
    for name, (_model, step) in steppers.items():
        for source, target in batches[: args.warmup]:
            step(optimizers[name], source, target)
    seconds = {name: [] for name in steppers}
    for _ in range(args.rounds):
        spent = dict.fromkeys(steppers, 0.0)
        for source, target in batches[args.warmup :]:
            for name, (_model, step) in steppers.items():
                if device.type == "cuda":
                    torch.cuda.synchronize()
                started = time.perf_counter()
                step(optimizers[name], source, target)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                spent[name] += time.perf_counter() - started
        for name, value in spent.items():
            seconds[name].append(value)

    print(
        f"device {device}, torch {torch.__version__}, threads {torch.get_num_threads()}; d_model {args.d_model}, "
        f"{args.heads} heads, d_ff {args.d_ff}, {args.layers}+{args.layers} layers, vocab {vocab}, "
        f"batch {args.batch_size} pairs, {args.steps} timed steps x {args.rounds} rounds "
        "(interleaved per step, best round kept)"
    )
    rate = {name: tokens / min(times) for name, times in seconds.items()}
    ours_rate = rate["this project (post-norm)"]
    print_table(
        ["implementation", "tokens/s", "this project is"],
        [[name, f"{r:,.0f}", "-" if r == ours_rate else f"{ours_rate / r:.2f}x"] for name, r in rate.items()],
    )
    print(f"ratio vs seed post-norm: {ours_rate / rate['seed post-norm (seed 002)']:.2f}x (target >= 1.5)")
    print(f"ratio vs torch.nn.Transformer: {ours_rate / rate['torch.nn.Transformer']:.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()
