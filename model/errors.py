"""The one base class of errors a user caused: a bad option, file, sentence or model.

Every such error carries a message that says what was wrong and what to do. The command line and
the window catch ``UserError`` (and print or show its message); anything else is a bug and is not
swallowed. Each part of the core raises its own subclass (``CorpusError``, ``DecodingError``, ...).
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user gave that cannot be used; ``str(error)`` is the message to show."""
