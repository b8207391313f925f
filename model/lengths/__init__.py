"""The length experiment (issue 42): the same Transformer trained with each positional scheme on the same data (same
seed, same budget) at lengths up to L, and read at lengths up to several times L: does it read sentences longer than
it was trained on? experiment.py runs it (training, then greedy decoding at every length) and writes its table; the
figure is model/figures/lengths.py, the command model/cli/lengths.py, the window's panel explorer/.
"""
