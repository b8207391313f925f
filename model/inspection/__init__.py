"""Inspection of a Trace: picking one matrix, head statistics and roles, alignments and their error rate, positional encodings."""
