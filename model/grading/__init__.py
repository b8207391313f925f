"""The explanation report card: every attribution reading of the app graded for faithfulness (deletion, insertion,
comprehensiveness, sufficiency, agreement with leave-one-out), plausibility (AER and the correct source position on
tasks whose true alignment is known) and sanity (parameter and data randomisation), beside perturbation baselines.

cases.py (the graded pairs; text_cases.py: an encoder-only model's texts and its head's decisions), scoring.py
(perturbed passes), methods.py and baselines.py (the registered attribution methods), faithfulness.py,
ground_truth.py and sanity.py (the evidence), metrics.py (the registered metrics), card.py (the card itself) and
grader.py (every pair through every method, then the sanity checks). The figure is model/figures/report_card.py; the
command, model/cli/report_card.py; the window's view, explorer/widgets/.
"""
