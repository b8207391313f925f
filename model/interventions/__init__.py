"""Causal interventions on encoder-decoder models: what happens when activations are read or replaced.

``hooked`` runs a network's own teacher-forced pass with named hook points that can be captured and patched, many
patched runs to a batch, through the hooked-pass adapter its family's registry entry declares (``own``: the app's
Transformer, on the hook points its modules carry; ``library``: Hugging Face T5, Marian and BART, on the library's
modules). On it: ``patching`` (activation patching between a clean and a corrupted source, and its first-order
preview, attribution patching), ``logit_lens`` (each decoder layer's reading of the next token), ``logit_attribution``
(a logit split into embeddings, heads and feed-forward blocks), ``decoder_lens`` (the decoder reading an earlier
encoder layer) and ``minimal_pairs`` (toy-fr source pairs that differ in one feature). Everything here is Qt-free and
asks a model's adapter which tools it serves (``passes.served_tools``).
"""
