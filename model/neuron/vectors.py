"""Every head's queries, keys, scores and weights of one sentence, and the terms its scores split into by position:
read by the reader its family declares (``Capabilities.queries_keys``): the app's own Transformers'
(model/neuron/own_vectors.py), a Hugging Face encoder-decoder's, through its hooked pass
(model/neuron/library_vectors.py), or a Hugging Face decoder-only or encoder-only model's (model/neuron/decoder_vectors.py,
model/neuron/encoder_vectors.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from model.family import Positions, QueriesKeys, capabilities_of, family_of
from model.network import Network
from model.neuron.decoder_vectors import decoder_vectors
from model.neuron.encoder_vectors import encoder_vectors
from model.neuron.library_vectors import library_vectors
from model.neuron.own_vectors import own_vectors
from model.neuron.records import KindVectors, NeuronError, SentenceVectors

__all__ = ["KindVectors", "NeuronError", "SentenceVectors", "check_model", "sentence_vectors", "splits_positions", "unavailable"]

# Each kind of queries and keys' reader, given a network of the family that declares that kind
READERS: dict[QueriesKeys, Callable[..., SentenceVectors]] = {
    QueriesKeys.OWN: own_vectors,
    QueriesKeys.HOOKED: library_vectors,
    QueriesKeys.DECODER: decoder_vectors,
    QueriesKeys.ENCODER: encoder_vectors,
}
HUGGING_FACE = (QueriesKeys.HOOKED, QueriesKeys.DECODER, QueriesKeys.ENCODER)  # the readers of the library's layouts


def unavailable(model: Network) -> str:
    """Why the neuron view cannot read ``model``'s queries and keys ('' when it can): its capabilities' answer."""
    return capabilities_of(model).queries_keys.unavailable(family_of(model).title)


def check_model(model: Network) -> None:
    """A NeuronError (one line) when ``model``'s family has no queries and keys read here."""
    why = unavailable(model)
    if why:
        raise NeuronError(why)


def splits_positions(model: Network) -> bool:
    """Whether ``model``'s scores split into terms by position: an absolute table (four terms) or a relative bias."""
    capabilities = capabilities_of(model)
    return capabilities.positions is Positions.TABLE or capabilities.queries_keys in HUGGING_FACE


def sentence_vectors(
    model: Network, source_ids: Sequence[int], target_ids: Sequence[int] = (), first_input: int | None = None, private: bool = False
) -> SentenceVectors:
    """Every kind's queries, keys, scores and weights of one sentence: ``source_ids`` (the source pieces, </s> last) and,
    for an encoder-decoder, the ``target_ids`` produced (the decoder reads ``first_input`` (BOS), then all but the last).
    A NeuronError when the model's family has no queries and keys read here. ``private``: the model is the caller's own
    copy, which the reader may convert in place (to float64)."""
    check_model(model)
    if not source_ids:
        raise NeuronError("the sentence has no pieces")
    longest = max(len(source_ids), len(target_ids))
    if longest > model.config.max_len:
        raise NeuronError(f"a sequence of {longest} pieces exceeds this network's {model.config.max_len} positions")
    reader = READERS[capabilities_of(model).queries_keys]
    return reader(model, source_ids, target_ids, first_input, private)
