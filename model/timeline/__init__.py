"""Watching a model learn: the analysis and export of a timeline of training snapshots (issue 29, parts 3-5).

A timeline is anything that satisfies ``source.SnapshotSource`` (the recorder's file, a folder of checkpoints, the
snapshots a test keeps): records of each snapshot and a bundle for each. From it:

- ``traces``: one sentence decoded with every snapshot, all teacher-forced along one target so that the matrices of
  different snapshots have the same shape and compare like with like;
- ``curves``: per-head entropy, role, AER and importance over training, with the validation scores of the records;
- ``changes``: when each head became alignment-like, and the largest changes between consecutive snapshots;
- ``difference``: any attention matrix as the signed difference of two snapshots;
- ``views``, ``figures``, ``animation``, ``curve_files``: the strip figure, the GIF and the curves as CSV and figure.

Qt-free: the window and the ``timeline`` command (model/cli/timeline.py) both draw through here.
"""
