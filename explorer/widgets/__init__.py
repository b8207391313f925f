"""Views and small dialogs that show what they are given: they never import the session or the workers.

Importing any of them makes every plot's axis titles fit their axes (explorer/widgets/axis_titles.py)."""

from explorer.widgets import axis_titles

axis_titles.install()
