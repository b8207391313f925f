"""The main window's tabs (Explore, Positional encoding, Train) and the controls that belong to one tab."""
