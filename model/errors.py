"""The one base class of errors a user caused: a bad option, file, sentence or model.

Every such error carries a message that says what was wrong and what to do. The command line and
the window catch ``UserError`` (and print or show its message); anything else is a bug and is not
swallowed. Each part of the core raises its own subclass (``CorpusError``, ``DecodingError``, ...).
``out_of_memory`` tells the machine's refusal of memory (which the user can do something about) from a bug.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user gave that cannot be used; ``str(error)`` is the message to show."""


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is the machine refusing memory: a MemoryError, or PyTorch's allocator failing ("[enforce fail
    at alloc_cpu.cpp:...] ... can't allocate memory", CUDA out of memory)."""
    if isinstance(error, MemoryError):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and (
        "alloc_cpu" in text or "can't allocate memory" in text or "out of memory" in text.lower()
    )
