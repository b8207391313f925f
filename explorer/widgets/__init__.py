"""Views and small dialogs that show what they are given: they never import the session or the workers."""
