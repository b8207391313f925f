"""Pretrained Hugging Face models opened from disk (the optional ``hf`` extra: ``pip install ".[hf]"``).

A folder in the ``save_pretrained`` layout, or the id of a model already in the local Hugging Face
cache, opens as a bundle whose network fills the same model-family interface as the app's own
Transformer (model/family.py): the stepper, the Trace, the views, the analyses and the exports use it
unchanged. Nothing here downloads: the hub is put offline before ``transformers`` is imported.

- ``hub``: finding models on disk (folders, the cache), and what to say when one is not there;
- ``tokenizer``: a Hugging Face tokenizer behind the app's tokenizer interface, pieces readable;
- ``families``: encoder-decoder (T5, Marian, BART), encoder-only (BERT) and decoder-only (GPT-2)
  networks stepped through their own key/value caches, attention from the eager path;
- ``loading``: the safe load (safetensors, or ``.bin`` through ``torch.load(weights_only=True)``;
  never ``trust_remote_code``), memory checks, the bundle;
- ``validation`` and ``weights``: every file of a folder checked before the library reads it (JSON files,
  the config's sizes and token ids, tokenizer files, safetensors headers), so a damaged or edited folder
  gets one message naming its file, never a traceback or a hang;
- ``positional``: what each family has for positions (sinusoidal, learned, T5's relative bias).
- ``languages``: a multilingual model's language codes, its source and target language (NLLB, M2M100, mBART-50);
- ``layouts``: each encoder-decoder layout's modules and hooked pass, by model type.
"""
