"""Games published by others, read as untrusted data: what every importer shares.

An importer (``markets/double_auction/bazaar.py`` for BAZAAR's JSONL games,
``markets/crash`` and ``markets/lemon`` for Agent Bazaar's run folders) turns a folder of someone
else's logs into episodes of our log schema. Those files come from outside: a user's download, a
repository snapshot with files missing, or a file made to break the importer. The rules every
importer follows, with the helpers here:

- **One line naming the file and line.** Anything wrong with the input raises :class:`SourceError`,
  whose text is ``<file>[:<line>]: <what is wrong>``; the command line and the stages print it as
  one ``error:`` line (``faults.one_line_errors``), ``--debug`` adds the traceback.
- **Strict JSON.** :func:`read_json` and :func:`read_jsonl` refuse what JSON does not allow but
  Python's parser accepts (``NaN``, ``Infinity``), a file that is not UTF-8 (a binary file), a
  record that is not an object, and files or lines over a size bound, before anything else is read.
- **Values checked.** :func:`number` (finite, within bounds, an integer where one is meant),
  :func:`plain_name` (an id is a plain name: letters, digits and ``_ . + -``, never a path),
  :func:`validated` (a pydantic model at the edge, its first error named by its key path).
- **Sizes bounded before anything is allocated**: counts a file declares (rounds, days, seats) are
  checked against bounds by the importer's models before tables of that size are built.
- **No duplicate game**: :class:`Seen` names both files that hold the same game.
- **Whole or nothing**: the new import is built aside and swapped in whole
  (``core.files.folder_replaced``), so a failure leaves the earlier import exactly as it was.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

#: a file larger than this is refused before it is read (BAZAAR's largest game: 0.3 MiB; Agent
#: Bazaar's largest state file: 1.2 MiB; its prompt logs reach 60 MiB)
MAX_FILE_BYTES = 256 * 2**20
#: a JSONL line longer than this is refused (the longest line of either source: 0.2 MiB)
MAX_LINE_BYTES = 32 * 2**20
#: an id taken from a foreign file: a plain name, never a path or markup
PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+\-]{0,127}$")

M = TypeVar("M", bound=BaseModel)


class SourceError(ValueError):
    """A foreign file this project cannot use. ``str()`` is ``<file>[:<line>]: <what>``."""

    def __init__(self, path: str | os.PathLike[str], what: str, line: int | None = None):
        self.path, self.line, self.what = str(path), line, what
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {what}")

    def __reduce__(self):
        """Rebuilt from its parts when pickled: an importer's worker process raises it, and the
        process pool hands it to the parent, where it must still be one line naming the file."""
        return type(self), (self.path, self.what, self.line)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _size_checked(path: Path, max_bytes: int) -> int:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(path, f"cannot be read ({exc.strerror or exc})") from None
    if size > max_bytes:
        raise SourceError(path, f"is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB "
                          "this importer reads")
    return size


def read_bytes(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes, at most ``max_bytes`` of them; anything else (a folder of that name, no
    permission) is a :class:`SourceError` naming it."""
    _size_checked(path, max_bytes)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SourceError(path, f"cannot be read ({exc.strerror or exc})") from None


#: one strict decoder for every record (``json.loads`` with a hook builds a new one per call)
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def _text(data: bytes, path: str | os.PathLike[str]) -> str:
    """``data`` as UTF-8 text, or :class:`SourceError` naming the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError(path, "is not UTF-8 text (a binary file?)", line) from None


def parse_json(text: str | bytes, path: str | os.PathLike[str], line: int | None = None) -> Any:
    """``text`` as strict JSON (no ``NaN`` or ``Infinity``), or :class:`SourceError`."""
    if isinstance(text, bytes):
        text = _text(text, path)
    try:
        return _DECODER.decode(text)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise SourceError(path, f"not valid JSON: {what}", line) from None


def read_json(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> Any:
    """A whole JSON file, strictly (see :func:`parse_json`), at most ``max_bytes`` long."""
    path = Path(path)
    return parse_json(read_bytes(path, max_bytes), path)


def read_jsonl(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES,
               max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for every non-blank line of a JSONL file; each record must be a
    JSON object. Raises :class:`SourceError` naming the file and line of the first bad one."""
    path = Path(path)
    text = _text(read_bytes(path, max_bytes), path)  # whole: the file's size is bounded above
    numbered = []
    for line_no, raw in enumerate(text.split("\n"), 1):
        # a character is 1-4 bytes in UTF-8: encode only a line that may be over the limit
        if len(raw) > max_line_bytes // 4 and len(raw.encode()) > max_line_bytes:
            raise SourceError(path, f"a line of {len(raw.encode()) / 2**20:.1f} MiB, over the "
                              f"{max_line_bytes / 2**20:.0f} MiB this importer reads", line_no)
        if raw.strip():
            numbered.append((line_no, raw))
    try:  # each line on its own (one JSON value a line), through the one shared decoder
        records = [_DECODER.decode(raw) for _, raw in numbered]
    except (ValueError, RecursionError):
        records = [parse_json(raw, path, line_no) for line_no, raw in numbered]  # names the line
    for (line_no, _), record in zip(numbered, records):
        if not isinstance(record, dict):
            raise SourceError(path, f"a record must be a JSON object, not "
                              f"{type(record).__name__}", line_no)
        yield line_no, record


def number(value: Any, what: str, lo: float | None = None, hi: float | None = None,
           integer: bool = False) -> float | int:
    """``value`` as a finite number within ``[lo, hi]`` (an ``int`` when ``integer``: a float
    with a fractional part is refused). Raises ``ValueError`` naming ``what``; an importer adds
    the file and line (:class:`SourceError`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} {value!r} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} {value!r} is not a finite number")
    if integer and value != int(value):
        raise ValueError(f"{what} {value!r} is not an integer")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{what} {value!r} is outside [{lo:g}, {hi:g}]" if lo is not None
                         and hi is not None else f"{what} {value!r} is out of range")
    return int(value) if integer else float(value)


def plain_name(value: Any, what: str) -> str:
    """``value`` if it is a plain name (:data:`PLAIN_NAME`: letters, digits, ``_ . + -``, at most
    128 characters, not starting with a dot): an id from a foreign file never becomes a path."""
    if not isinstance(value, str) or not PLAIN_NAME.match(value):
        raise ValueError(f"{what} {str(value)[:80]!r} is not a plain name (letters, digits and "
                         "_ . + -, at most 128 characters)")
    return value


def validated(model: type[M], data: Any, path: str | os.PathLike[str],
              line: int | None = None, prefix: str = "") -> M:
    """``model`` validated from ``data``; its first error as :class:`SourceError` naming the key
    path (``data.agents.B1.valuation: Input should be a finite number``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join([prefix] * bool(prefix) + [str(p) for p in err["loc"]])
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list)) else f" (got {str(value)[:60]!r})"
        raise SourceError(path, f"{loc}: {err['msg']}{shown}" if loc else err["msg"], line) \
            from None


class Seen:
    """Keys already read and the file that held each: ``add`` refuses a second file holding the
    same game (a copy of a log imported twice would count its seats twice)."""

    def __init__(self, what: str = "game"):
        self.what = what
        self.where: dict[str, str] = {}

    def add(self, key: str, path: str | os.PathLike[str]) -> None:
        first = self.where.setdefault(key, str(path))
        if first != str(path):
            raise SourceError(path, f"holds {self.what} {key!r}, which {first} holds too (a "
                              "duplicate: remove one of the two)")
