"""Provenance: the record each exported figure and table carries of what drew it (record.py), kept in each file by its
format's own means and read back (embed.py)."""
