"""Figures for papers and slides, drawn with matplotlib from a Trace: attention views, positional encodings, exports."""
