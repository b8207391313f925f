"""One batch of sentences read by the model for the corpus index: decoded greedily (batched, model/decoding/greedy.py),
then run once teacher-forced through the model's own hooked pass (model/interventions/hooked.py) over what was decoded,
whose hook points give every layer's residual stream, each attention sublayer's queries and keys as the model
projected them, and its probabilities as they weighted the values (the ``pattern`` point): nothing is computed again.

The decoder positions are those of the Explore tab's trace of the same sentence: <s> and each piece fed back, each
predicting the next (the last one </s> when decoding ended on it); a decoder-only model's are its prompt's pieces, then
its continuation's (the prompt is the start of what its one stack reads, and it has no source side); an encoder-only
model reads its text and decodes nothing (no decoder side). Every head's statistics per sentence are those the heads
table shows (model/inspection/heads.py), computed on the whole decoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch

from model.corpus.layout import CorpusIndexError, Layer, array_side, head_arrays, key_side, query_side
from model.data.corpora import Pair
from model.decoding.greedy import decoder_inputs, default_max_target, given_steps, greedy_decode, greedy_prompts
from model.family import Bundle, QueriesKeys, capabilities_of, family_of
from model.inspection.heads import STATISTIC_NAMES, head_roles, is_punctuation, statistics_columns
from model.interventions.hooked import InterventionError, hook_names, run_hooked
from model.kinds import AttentionKind
from model.network import DecodingNetwork, Network, PromptNetwork, stack_layers
from model.nn.masking import Head

STAT_COLUMNS = (*STATISTIC_NAMES, "role_score")  # numeric columns of head_stats (and role, text)
KIND_ORDER = {kind.value: order for order, kind in enumerate(AttentionKind)}


def check_model(bundle: Bundle) -> DecodingNetwork:
    """The bundle's network, whose hooked pass has every point the index reads; one line otherwise."""
    return check_network(bundle.model)


def check_network(model: Network) -> DecodingNetwork:
    """``model``, once its hooked pass is known to have every point the index reads; a CorpusIndexError otherwise."""
    try:  # the family's hooked pass (its registry entry's adapter) must have every point the index reads
        served = capabilities_of(model).hooked and set(hook_points(model)) <= set(hook_names(model))
    except InterventionError:
        served = False
    if not served:
        family = family_of(model)
        why = (
            "it has no residual stream of layers and no heads with queries and keys"
            if family.capabilities.queries_keys is QueriesKeys.NONE
            else f"its layout ({model.config.describe()}) has no hooked pass with them"
        )
        raise CorpusIndexError(
            f"a corpus index reads each layer's residual stream and each head's queries and keys through the model's "
            f"hooked pass; this model ({family.title}) cannot be read so: {why}"
        )
    return cast(DecodingNetwork, model)  # served: its hooked pass reads it


def stacks(model: Network) -> list[tuple[str, int]]:
    """(side, its layers) of each stack ``model`` has: "encoder", "decoder" or both."""
    architecture = capabilities_of(model).architecture
    sides = [side for side, has in (("encoder", architecture.has_encoder), ("decoder", architecture.has_decoder)) if has]
    return [(side, stack_layers(model.config, side)) for side in sides]


def kind_layers(model: Network) -> list[tuple[AttentionKind, int]]:
    """(kind, its layers) of each kind of attention ``model`` has."""
    layers = dict(stacks(model))
    return [(kind, layers[kind.stack]) for kind in capabilities_of(model).kinds]


@dataclass
class SentenceTokens:
    """One decoded sentence: the pieces of each side as the trace labels them."""

    source: str
    reference: str
    output: str
    source_tokens: list[str]  # S pieces, </s> last
    decoder_tokens: list[str]  # T pieces fed to the decoder: <s>, then the output but its last piece
    next_tokens: list[str]  # T pieces produced at each decoder position (</s> last when decoding ended on it)


@dataclass
class BatchReading:
    """What one batch gives the index: its sentences, arrays with a row per token of a side (sentences in order, each's
    tokens in order), and the head statistics with a row per sentence, kind, layer and head."""

    sentences: list[SentenceTokens]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [rows, width] float32
    stats: dict[str, Any] = field(default_factory=dict)  # column -> list or array


def _padded(rows: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    table = np.full((len(rows), max(len(row) for row in rows)), pad_id, dtype=np.int64)
    for index, row in enumerate(rows):
        table[index, : len(row)] = row
    return torch.from_numpy(table)


Decodings = dict[tuple[int, ...], list[int]]  # source ids -> the pieces produced: decoded once, read again


def _decoded(model: DecodingNetwork, source_rows: list[list[int]], known: Decodings | None = None) -> list[list[int]]:
    """Per sentence the pieces produced at its decoder positions (the trace's: EOS last when decoding ended on it; a
    decoder-only model's prompt given steps first; none for an encoder-only model); a sentence ``known`` holds is not
    decoded again, and the others are added to it (greedy decoding gives a sentence the same output whatever it is
    batched with). An encoder-decoder's are decoded in one batch, a decoder-only model's prompts too, left-padded."""
    config, architecture = model.config, capabilities_of(model).architecture
    if not architecture.has_decoder:
        return [[] for _ in source_rows]
    known = {} if known is None else known
    new_rows = [row for row in source_rows if tuple(row) not in known]
    if new_rows and architecture.has_encoder:
        for ids, output in zip(new_rows, greedy_decode(model, _padded(new_rows, config.pad_id))):
            limit = default_max_target(len(ids), config.max_len) - 1
            known[tuple(ids)] = output + [config.eos_id] if len(output) < limit else output
    if new_rows and not architecture.has_encoder:  # the prompts decoded together, left-padded (each as alone)
        for row, steps in zip(new_rows, greedy_prompts(cast(PromptNetwork, model), new_rows)):
            known[tuple(row)] = steps  # the prompt's given steps, then its continuation
    return [list(known[tuple(row)]) for row in source_rows]


def _attention_name(kind: AttentionKind, layer: int) -> str:
    """The hook-name prefix of the attention of ``kind`` in ``layer`` (from 0)."""
    if kind is AttentionKind.ENCODER:
        return f"encoder.{layer}.self"
    return f"decoder.{layer}.{'self' if kind is AttentionKind.DECODER else 'cross'}"


def hook_points(model: Network) -> list[str]:
    """The hooked pass's points the index reads: every layer's input and output, and every attention's queries and
    keys (as the model projected them) and probabilities."""
    points = [
        f"{side}.{layer}.{point}"
        for side, n_layers in stacks(model)
        for layer in range(n_layers)
        for point in ("resid_pre", "resid_post")
    ]
    for kind, n_layers in kind_layers(model):
        points += [f"{_attention_name(kind, layer)}.{point}" for layer in range(n_layers) for point in ("q", "k", "pattern")]
    return points


def residual(activations: dict[str, torch.Tensor], layer: Layer) -> torch.Tensor:
    """[B, L, d_model]: a side's residual stream after ``layer.layer`` layers (0: the embeddings with positions)."""
    if layer.layer == 0:
        return activations[f"{layer.side}.0.resid_pre"]
    return activations[f"{layer.side}.{layer.layer - 1}.resid_post"]


def queries_keys(activations: dict[str, torch.Tensor], kind: AttentionKind, layer: int):
    """(queries [B, H, Q, d_k], keys [B, H, K, d_k]) of one attention sublayer (``layer`` from 0), read from its hook
    points in the model's own pass."""
    name = _attention_name(kind, layer)
    return activations[f"{name}.q"], activations[f"{name}.k"]


def _key_signature(keys: list[str]) -> tuple:
    """What the heads' statistics read of a matrix's key tokens: which are punctuation, whether the first is <s> and
    the last </s> (they name a sink). Sentences with the same shape and signature are measured in one call."""
    return (tuple(is_punctuation(token) for token in keys), keys[0] == "<s>", keys[-1] == "</s>")


def _stats_rows(weights: dict[AttentionKind, np.ndarray], sentences: list[SentenceTokens], lengths) -> dict[str, Any]:
    """Every head's statistics per sentence (the heads table's, model/inspection/heads.py): columns sentence (in the
    batch), kind, layer, head (from 1), the statistics and the role; sentences alike measured together. Rows are in
    sentence order, then the model's order of kinds, layers and heads."""
    parts: list[dict[str, Any]] = []
    for kind, stacked in weights.items():  # [B, layers, heads, Q, K]
        n_layers, n_heads = stacked.shape[1:3]
        groups: dict[tuple, list[int]] = {}
        for row, sentence in enumerate(sentences):
            n_source, n_target = lengths[row]
            shape = (
                n_source if kind is AttentionKind.ENCODER else n_target,
                n_target if kind is AttentionKind.DECODER else n_source,
            )
            keys = sentence.decoder_tokens if kind is AttentionKind.DECODER else sentence.source_tokens
            groups.setdefault((shape, _key_signature(keys)), []).append(row)
        for (shape, _), rows in groups.items():
            keys = sentences[rows[0]].decoder_tokens if kind is AttentionKind.DECODER else sentences[rows[0]].source_tokens
            matrices = stacked[rows][:, :, :, : shape[0], : shape[1]]  # [n, layers, heads, Q, K]
            columns: dict[str, Any] = statistics_columns(matrices, keys, kind)
            columns["role"], columns["role_score"] = head_roles(columns, kind, keys)
            per_sentence = n_layers * n_heads
            columns["sentence"] = np.repeat(rows, per_sentence)
            columns["kind"] = np.full(len(rows) * per_sentence, KIND_ORDER[kind.value])
            columns["layer"] = np.tile(np.repeat(np.arange(1, n_layers + 1), n_heads), len(rows))
            columns["head"] = np.tile(np.arange(1, n_heads + 1), len(rows) * n_layers)
            parts.append(columns)
    joined = {name: np.concatenate([np.asarray(part[name]) for part in parts]) for name in parts[0]}
    order = np.lexsort((joined["head"], joined["layer"], joined["kind"], joined["sentence"]))
    table = {name: values[order] for name, values in joined.items()}
    table["kind"] = np.array([kind.value for kind in AttentionKind], dtype=object)[table["kind"]]
    table["role"] = table["role"].astype(object)
    return table


def _sentences(bundle: Bundle, pairs: Sequence[Pair], source_rows, decoder_rows, produced) -> list[SentenceTokens]:
    """Each sentence's pieces as the trace labels them: the source's where the model has an encoder (a decoder-only
    model's prompt is the start of its decoder positions), and the output without a decoder-only model's given steps."""
    model = bundle.model
    eos_id, source_pieces, target_pieces = bundle.config.eos_id, bundle.source_tokenizer, bundle.target_tokenizer
    has_encoder = capabilities_of(model).architecture.has_encoder
    return [
        SentenceTokens(
            pair.source,
            pair.target,
            target_pieces.decode([i for i in ids[given_steps(model, ids_in) :] if i != eos_id]),
            source_pieces.pieces(ids_in) if has_encoder else [],
            target_pieces.pieces(ids_out),
            target_pieces.pieces(ids),
        )
        for pair, ids_in, ids_out, ids in zip(pairs, source_rows, decoder_rows, produced)
    ]


def _attention(
    model: Network, activations: dict[str, torch.Tensor], masks: dict[str, torch.Tensor], heads, reading
) -> dict[AttentionKind, np.ndarray]:
    """Every kind's probabilities [B, layers, heads, Q, K]; the queries and keys of ``heads`` go to ``reading``. Each
    attention's activations leave ``activations`` once read (a big model's batch holds gigabytes of them)."""
    config, kinds = model.config, kind_layers(model)
    wanted = set(heads)
    weights: dict[AttentionKind, np.ndarray] = {}
    for kind, n_layers in kinds:
        per_layer = []
        for layer in range(n_layers):
            q, k = queries_keys(activations, kind, layer)  # [B, H, Q, d_k], [B, H, K, d_k]
            per_layer.append(activations.pop(f"{_attention_name(kind, layer)}.pattern").float().numpy())  # [B, H, Q, K]
            for head in range(config.n_heads):
                if Head(kind, layer, head) in wanted:
                    q_name, k_name = head_arrays(Head(kind, layer, head))
                    reading.arrays[q_name] = q[:, head][masks[query_side(kind)]].float().numpy()  # [rows, d_k]
                    reading.arrays[k_name] = k[:, head][masks[key_side(kind)]].float().numpy()  # [rows, d_k]
            del q, k
            for point in ("q", "k"):
                activations.pop(f"{_attention_name(kind, layer)}.{point}")
        weights[kind] = np.stack(per_layer, axis=1)  # [B, layers, heads, Q, K]
    return weights


@torch.inference_mode()
def read_batch(
    bundle: Bundle, pairs: Sequence[Pair], layers: Sequence[Layer], heads: Sequence[Head], known: Decodings | None = None
) -> BatchReading:
    """Decode ``pairs``' sources (but those ``known`` holds) and read what the index keeps of them (see the module's
    docstring)."""
    model = check_model(bundle)
    model.eval()
    config = model.config
    source_rows = [bundle.source_ids(pair.source)[0] for pair in pairs]
    produced = _decoded(model, source_rows, known)
    decoder_rows = [decoder_inputs(model, ids_in, ids) if ids else [] for ids_in, ids in zip(source_rows, produced)]
    source, target_input = _padded(source_rows, config.pad_id), _padded(decoder_rows, config.pad_id)  # [B, S], [B, T]
    activations = run_hooked(model, source, target_input, capture=hook_points(model), output=False).activations
    reading = BatchReading(_sentences(bundle, pairs, source_rows, decoder_rows, produced))
    lengths = [(len(ids_in), len(ids_out)) for ids_in, ids_out in zip(source_rows, decoder_rows)]
    masks = {  # [B, L]: the real positions of each side (a decoder-only model's right padding is never attended to)
        "encoder": torch.arange(source.shape[1])[None, :] < torch.tensor([n for n, _ in lengths])[:, None],
        "decoder": torch.arange(target_input.shape[1])[None, :] < torch.tensor([t for _, t in lengths])[:, None],
    }
    for layer in layers:
        reading.arrays[layer.array] = residual(activations, layer)[masks[layer.side]].float().numpy()  # [rows, d_model]
    for name in [name for name in activations if name.endswith(("resid_pre", "resid_post"))]:
        del activations[name]  # read: a big model's batch holds gigabytes of activations
    weights = _attention(model, activations, masks, heads, reading)
    reading.stats = _stats_rows(weights, reading.sentences, lengths)
    return reading


def _rows_in_order(lengths: list[int], order: list[int]) -> np.ndarray:
    """The rows, in corpus order, of token arrays laid out sentence after sentence in ``order``."""
    starts = np.concatenate([[0], np.cumsum([lengths[index] for index in order])])  # where each read sentence begins
    place = np.empty(len(order), dtype=np.int64)
    place[order] = np.arange(len(order))  # sentence -> its place in the reading order
    return np.concatenate([np.arange(starts[place[i]], starts[place[i]] + lengths[i]) for i in range(len(order))])


def read_sentences_batched(
    bundle: Bundle,
    pairs: Sequence[Pair],
    layers: Sequence[Layer],
    heads: Sequence[Head],
    batch_size: int,
    stop: Callable[[], bool] = lambda: False,
    between: Callable[[], None] = lambda: None,
    known: Decodings | None = None,
) -> BatchReading | None:
    """``read_batch`` over many sentences, in batches of similar length (decoding runs as long as a batch's longest
    sentence), gathered back in corpus order; None when ``stop()`` says so between two batches (``between`` runs
    before each). ``known``: the sentences decoded before (model/corpus/extract.py's ``Decodings``), added to."""
    order = sorted(range(len(pairs)), key=lambda index: (len(pairs[index].source), index))
    readings = []
    for start in range(0, len(order), batch_size):
        if stop():
            return None
        between()
        readings.append(read_batch(bundle, [pairs[index] for index in order[start : start + batch_size]], layers, heads, known))
    read_sentences = [sentence for reading in readings for sentence in reading.sentences]
    sentences = [read_sentences[place] for place in np.argsort(order, kind="stable")]
    joined = BatchReading(sentences)
    lengths = {
        "encoder": [len(sentence.source_tokens) for sentence in sentences],
        "decoder": [len(sentence.decoder_tokens) for sentence in sentences],
    }
    gather = {side: _rows_in_order(lengths[side], order) for side in lengths}  # [rows] of each side, in corpus order
    for name in readings[0].arrays:
        joined.arrays[name] = np.concatenate([reading.arrays[name] for reading in readings])[gather[array_side(name)]]
    offset, sentence_of_read = 0, []
    for reading in readings:
        sentence_of_read.append(np.asarray(order)[offset + reading.stats["sentence"]])
        offset += len(reading.sentences)
    stats = {name: np.concatenate([reading.stats[name] for reading in readings]) for name in readings[0].stats}
    stats["sentence"] = np.concatenate(sentence_of_read)
    rows = np.argsort(stats["sentence"], kind="stable")  # each sentence's heads stay in the model's order
    joined.stats = {name: values[rows] for name, values in stats.items()}
    return joined
