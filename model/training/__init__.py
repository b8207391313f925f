"""Training: one path from a request to a trained bundle, the paper's recipe, presets, loss, optimiser, evaluation."""
