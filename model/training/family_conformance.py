"""A static proof that every family's classes are what model/family.py's protocols say: ``mypy`` checks the
assignments below (nothing here runs; the module is never imported). A network, config, tokenizer or bundle that
drifts from its protocol (a ``forward`` with another signature, a missing ``to_dict``) fails the type check, not a
user's run. The protocols are structural, so the families' classes never name them.

The app's own encoder-decoders (Transformer, RNN) are trained through ``TeacherForcedNetwork``'s ``forward``, the
classifier through ``LabellingNetwork``'s; a pretrained network is a ``DecodingNetwork`` (or an encoder-only
``Network``), never trainable. A test family (tests/toy_family.py) is checked at run time instead
(tests/model/test_family_protocol.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only mypy reads this: nothing is imported at run time
    from model.data.tokenizer import Tokenizer
    from model.family import Bundle
    from model.io.bundle import ModelBundle
    from model.network import (
        DecodingNetwork,
        LabellingNetwork,
        Network,
        NetworkConfig,
        Rows,
        TeacherForcedNetwork,
        TextTokenizer,
        TrainableConfig,
    )
    from model.nn.classifier import EncoderClassifier
    from model.nn.classifier_config import ClassifierConfig
    from model.nn.config import TransformerConfig
    from model.nn.packing import PackedRows
    from model.nn.rnn import RNNAttention
    from model.nn.rnn_config import RNNConfig
    from model.nn.transformer import Transformer
    from model.pretrained.config import PretrainedConfig
    from model.pretrained.loading import PretrainedBundle
    from model.pretrained.networks import DecoderNetwork, EncoderNetwork, Seq2SeqNetwork
    from model.pretrained.tokenizer import PretrainedTokenizer

    def _own_families(
        transformer: Transformer,
        rnn: RNNAttention,
        classifier: EncoderClassifier,
        configs: tuple[TransformerConfig, RNNConfig, ClassifierConfig],
        rows: PackedRows,
        tokenizer: Tokenizer,
        bundle: ModelBundle,
    ) -> None:
        _transformer: TeacherForcedNetwork[PackedRows] = transformer
        _rnn: TeacherForcedNetwork[PackedRows] = rnn
        _classifier: LabellingNetwork = classifier
        _configs: tuple[TrainableConfig, TrainableConfig, TrainableConfig] = configs
        _rows: Rows = rows
        _tokenizer: TextTokenizer = tokenizer
        _bundle: Bundle = bundle

    def _pretrained_families(
        seq2seq: Seq2SeqNetwork,
        decoder: DecoderNetwork,
        encoder: EncoderNetwork,
        config: PretrainedConfig,
        tokenizer: PretrainedTokenizer,
        bundle: PretrainedBundle,
    ) -> None:
        _seq2seq: DecodingNetwork = seq2seq
        _decoder: DecodingNetwork = decoder
        _encoder: Network = encoder
        _config: NetworkConfig = config
        _tokenizer: TextTokenizer = tokenizer
        _bundle: Bundle = bundle
