"""The networks of the app's own families (the Transformer of "Attention Is All You Need", an RNN with attention,
an encoder-only classifier), their configurations and layers.

Importing any of them registers the three families (model/nn/registry.py), so ``model.family.family_of`` knows a
network however it was built."""

from model.nn import registry as registry  # noqa: F401  (registers the families)
