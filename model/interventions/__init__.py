"""Causal interventions on the app's encoder-decoder Transformer: what happens when activations are read or replaced.

``hooked`` is the model's teacher-forced pass with named hook points that can be captured and patched, many patched
runs to a batch. On it: ``patching`` (activation patching between a clean and a corrupted source, and its first-order
preview, attribution patching), ``logit_lens`` (each decoder layer's reading of the next token), ``logit_attribution``
(a logit split into embeddings, heads and feed-forward blocks), ``decoder_lens`` (the decoder reading an earlier
encoder layer) and ``minimal_pairs`` (toy-fr source pairs that differ in one feature). Everything here is Qt-free and
asks a model's family whether it can be patched (``Capabilities.interventions``).
"""
