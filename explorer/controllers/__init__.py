"""The window's controllers: the state and logic of each tool, without Qt (the views observe their events and call
their methods), and the one runner all background work goes through (runner.py).

Events are psygnal Signals declared once on each controller's class (``message = Signal(str)``) and documented in its
docstring; views connect to them (a view's method is held weakly, so a closed view is freed). Controllers emit on the
window's thread only: the runner brings every worker's report there first. Feature controllers never import each
other (an import-linter contract): they share explore.py (the trace), runner.py, background.py and followed.py, and
window.py composes them."""
