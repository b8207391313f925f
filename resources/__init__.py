"""Data shipped with the app: trained models under models/ (found by name, e.g. "default")."""
