"""A sentence read for the neuron view (decoded greedily, or with a target given), and its numbers as CSV rows.

``read_sentence`` gives the trace (its tokens label every axis, its attention is what the softmax rows equal) and the
``SentenceVectors`` of one sentence; ``row_rows`` one query row's numbers, a row per key; ``share_rows`` every head's four
term shares and its class. Both are written with ``write_rows`` (atomically, model/files.py).
"""

from __future__ import annotations

from typing import Any

from model.decoding.stepper import Stepper, full_pass_trace
from model.decoding.trace import Trace
from model.family import Bundle
from model.interventions.tables import write_rows
from model.neuron.terms import NeuronRow, classify, head_terms
from model.neuron.vectors import NeuronError, SentenceVectors, check_model, sentence_vectors

__all__ = ["read_sentence", "row_rows", "share_rows", "write_rows"]


def read_sentence(bundle: Bundle, text: str, target: str | None = None) -> tuple[Trace, SentenceVectors]:
    """(the trace, every head's vectors) of ``text``: decoded greedily as the Explore tab decodes it, or, with
    ``target``, that target's pieces given to the decoder (teacher-forced; none for an encoder-only model)."""
    check_model(bundle.model)
    if not text.strip():
        raise NeuronError("the sentence is empty: type one")
    if target is None:
        stepper = Stepper(bundle, text)
        stepper.run()
        trace = stepper.trace()
        return trace, sentence_vectors(stepper.model, stepper.source_ids, [int(i) for i in trace.chosen_ids])
    if not bundle.family.capabilities.architecture.has_decoder:
        raise NeuronError("an encoder-only model has no target: leave the target out")
    source_ids, _, _ = bundle.source_ids(text)
    target_ids = list(bundle.target_tokenizer.encode(target))
    if not target_ids:
        raise NeuronError("the target has no pieces the tokenizer can read")
    trace = full_pass_trace(bundle, source_ids, target_ids)
    trace.source_text, trace.target_text = text, target
    return trace, sentence_vectors(bundle.model, source_ids, target_ids)


def row_rows(row: NeuronRow) -> list[dict[str, Any]]:
    """One query row's numbers, a row per key: the score, the weight, the four terms (empty when not split), the key
    vector and its elementwise product with the query vector (columns key_1…, product_1…), and the query vector."""
    rows = []
    for key, token in enumerate(row.key_tokens):
        values: dict[str, Any] = {
            "kind": str(row.kind),
            "layer": row.layer + 1,
            "head": row.head + 1,
            "query": row.query + 1,
            "query_token": row.query_token,
            "key": key + 1,
            "key_token": token,
            "score": float(row.scores[key]),
            "weight": float(row.weights[key]),
        }
        for index, name in enumerate(row.term_split.names):
            values[name] = float(row.terms[index, key]) if row.terms is not None else ""
        values |= {f"key_{d + 1}": float(row.key_vectors[key, d]) for d in range(row.d_k)}
        values |= {f"product_{d + 1}": float(row.products[d, key]) for d in range(row.d_k)}
        values |= {f"query_{d + 1}": float(row.query_vector[d]) for d in range(row.d_k)}
        rows.append(values)
    return rows


def share_rows(vectors: SentenceVectors) -> list[dict[str, Any]]:
    """Every head of every kind: its term shares over the sentence and its class (positional, content, mixed)."""
    rows = []
    for kind, kind_vectors in vectors.kinds.items():
        if not kind_vectors.split:
            continue
        terms = head_terms(kind_vectors)
        layers, heads, _, _ = kind_vectors.shape
        for layer in range(layers):
            for head in range(heads):
                shares = terms.shares[layer, head]
                values: dict[str, Any] = {"kind": str(kind), "layer": layer + 1, "head": head + 1}
                values |= {name: float(share) for name, share in zip(terms.split.names, shares)}
                values["key position share"] = terms.positional_share(layer, head)
                values["class"] = classify(shares, terms.split)
                rows.append(values)
    return rows
