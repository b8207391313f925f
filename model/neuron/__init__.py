"""Inside a head (the neuron view): its queries and keys, their products and scores, and the scores split into
token and position terms. Below the figures and the command line; above the interventions' hooked pass it reads."""
