"""The lines of a user's UTF-8 text file, read as they are used: a corpus file, or the texts ``classify --file``
reads. The file is opened by ``open_input`` (model/files.py), so a FIFO, a device or a folder is refused
before anything is read; it is then read in chunks, so the first lines are ready long before a large file's
end is reached and memory does not grow with the file.

Lines may end in LF, CR LF or a lone CR (old Mac files); a UTF-8 byte-order mark at the start is dropped.
A line that is not UTF-8 raises the caller's error naming the file, the line and the byte.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from model.errors import UserError
from model.files import InputError, open_input

CHUNK_BYTES = 1 << 16


def _without_ending(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith((b"\n", b"\r")) else raw


class TextLines:
    """Iterate once over a file's lines (str, without their endings). The checks of ``open_input`` run when the
    object is made; ``consumed`` is the bytes of the lines handed out so far, ``size`` the file's."""

    def __init__(self, path: str | os.PathLike, what: str = "text file", error: type[UserError] = InputError) -> None:
        self.path, self.error = path, error
        self.handle = open_input(path, what, error)
        self.size = os.fstat(self.handle.fileno()).st_size
        self.consumed = 0
        self.saw_text = False  # any byte that is not whitespace

    def _chunks(self) -> Iterator[bytes]:
        with self.handle:
            while True:
                try:
                    chunk = self.handle.read(CHUNK_BYTES)
                except OSError as problem:
                    raise self.error(f"{self.path}: cannot be read ({problem.strerror or problem})") from None
                if not chunk:
                    return
                yield chunk

    def _raw_lines(self) -> Iterator[bytes]:
        """Each line with its ending. The last piece of a chunk waits for the next one: it may be a line's start,
        or a CR whose LF is still to come. Chunks without a line end are joined once, when one comes (a long line
        is copied once, not once a chunk)."""
        pending: list[bytes] = []
        for chunk in self._chunks():
            if b"\n" not in chunk and b"\r" not in chunk:
                pending.append(chunk)
                continue
            pieces = b"".join([*pending, chunk]).splitlines(keepends=True)
            pending = [pieces.pop()]
            yield from pieces
        yield from b"".join(pending).splitlines(keepends=True)

    def __iter__(self) -> Iterator[str]:
        for number, raw in enumerate(self._raw_lines(), start=1):
            self.consumed += len(raw)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark, as some editors write
            line = _without_ending(raw)
            self.saw_text = self.saw_text or bool(line.strip())
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as problem:
                raise self.error(
                    f"{self.path}:{number}: not UTF-8 text (byte 0x{line[problem.start]:02x} at column "
                    f"{problem.start + 1}); save the file as UTF-8"
                ) from None
            yield text

    def close(self) -> None:
        self.handle.close()
