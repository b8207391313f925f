"""What moved a prediction, and what each head is worth: measures beyond raw attention weights.

- ``masking``: knocking heads out (their outputs zeroed), for decoding, importance and pruning;
- ``importance``: head importance (Michel et al., NeurIPS 2019) and the pruning curve.
"""
