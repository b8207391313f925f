"""The window's controllers: the state and logic of each tool, without Qt (the views observe their events and call
their methods), and the one runner all background work goes through (runner.py)."""
