"""Files: self-contained model checkpoints, the shipped models, and writing every file atomically."""
