"""Decoding: greedy and beam search, the step-by-step Stepper with its NumPy engine, and the Trace it fills."""
