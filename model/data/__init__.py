"""Data: corpora (built-in generators and the user's files), SentencePiece tokenizers, and batches of id tensors."""
