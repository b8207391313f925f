"""The network: the encoder-decoder Transformer of "Attention Is All You Need", its configuration, its layers."""
