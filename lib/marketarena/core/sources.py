"""Games published by others: the part of a market that imports them, and the untrusted reading
every importer shares.

A market that imports published games registers a :class:`MarketSource` per format
(``core.registry.MarketKind``'s ``sources``; the third part of a market after its rules and its
analysis): BAZAAR's JSONL games for double_auction (``markets/double_auction/sources/``), Agent
Bazaar's run folders for crash and lemon (``markets/<kind>/sources/``). An instance with
``source: {format: <name>, path: <folder>}`` is imported by the simulate stage
(``importing.import_instance``), and every later stage works on the result as on played episodes;
the command-line importers (``marketarena import-bazaar``, ``import-agent-bazaar``) are thin
wrappers over the same path (``importing.import_folder``). A source may bring its own analysis of
an imported instance (:attr:`MarketSource.analysis`: the authors' own scores, a replay of their
engine) in place of the market's.

An importer turns a folder of someone else's logs into episodes of our log schema. Those files come from outside: a user's download, a
repository snapshot with files missing, or a file made to break the importer. The rules every
importer follows, with the helpers here:

- **One line naming the file and line.** Anything wrong with the input raises :class:`SourceError`,
  whose text is ``<file>[:<line>]: <what is wrong>``; the command line and the stages print it as
  one ``error:`` line (``faults.one_line_errors``), ``--debug`` adds the traceback.
- **Regular files only, inside the source folder.** Every foreign file is read by
  :func:`read_bytes` (and :func:`read_json`, :func:`read_jsonl` over it): anything that is not a
  regular file (a folder, a FIFO, a device such as ``/dev/zero`` or ``/dev/urandom``, a socket, a
  broken link) is refused before it is opened, so nothing blocks on a FIFO or reads a device
  without end; the file is opened ``O_NOFOLLOW | O_NONBLOCK`` at its resolved path and checked
  again on the open descriptor (the same regular file as was checked). A link is followed only
  when it resolves inside the source folder (``root``, which every importer passes): a link out
  of it (``/etc/passwd``, another user's files) is refused naming the file. What is read is
  bounded by the bytes actually read (at most ``max_bytes + 1``), not by what ``stat`` says.
- **Strict JSON.** :func:`read_json` and :func:`read_jsonl` refuse what JSON does not allow but
  Python's parser accepts (``NaN``, ``Infinity``), a file that is not UTF-8 (a binary file), a
  record that is not an object, and files or lines over a size bound, before anything else is read.
- **Names that are text.** A file or folder name that is not UTF-8 (Python holds its bad bytes as
  surrogates, which no table or JSON file can store) is refused where the importer would record
  it (:func:`utf8_name`), and every message shows such bytes escaped (``\\xff``: :func:`shown`).
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
import stat
from pathlib import Path
from typing import Any, ClassVar, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

#: a file larger than this is refused before it is read (BAZAAR's largest game: 0.3 MiB; Agent
#: Bazaar's largest state file: 1.2 MiB; its prompt logs reach 60 MiB)
MAX_FILE_BYTES = 256 * 2**20
#: a JSONL line longer than this is refused (the longest line of either source: 0.2 MiB)
MAX_LINE_BYTES = 32 * 2**20
#: an id taken from a foreign file: a plain name, never a path or markup
PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+\-]{0,127}$")

M = TypeVar("M", bound=BaseModel)


#: the import report beside an imported instance's episodes (``importing.import_instance``)
REPORT = "import.json"


def read_report(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The import report of the episodes folder ``out_dir`` (None: none, or not JSON)."""
    try:
        return json.loads((Path(out_dir) / REPORT).read_text())
    except (OSError, ValueError):
        return None


class MarketSource:
    """One format of published games a market imports; subclasses set ``format`` and override
    :meth:`import_games`."""

    #: the format's name (``source.format`` of an imported instance)
    format: ClassVar[str]
    #: the analysis of an instance imported in this format (a ``core.analysis.MarketAnalysis``
    #: subclass), where it differs from the market's own; None: the market's
    analysis: ClassVar[type | None] = None

    def import_games(self, mp: Any, source: Path, out: Path) -> dict:
        """*Required*: read the published games under ``source`` and write them into ``out`` (an
        empty folder) as units of our log schema (``core.logs.write_shard`` /
        ``write_episode``). Every problem with the input raises :class:`SourceError` naming the
        file (and line); the caller swaps ``out`` in whole only when this returns. Returns the
        import report (JSON): what was imported, and what was missing or left out and why
        (``simulate/importing.py`` writes it beside the episodes)."""
        raise NotImplementedError

    def joint(self, mp: Any) -> bool:
        """Whether the instance also plays games of its own beside the published ones (a joint
        instance, issue 53: its roster's LLM entries in the source's setting). Those are the
        market's plan for ``mp``, played into the same folder after the import."""
        return False

    def check_joint(self, mp: Any, root: Path) -> None:
        """Before the import and any game of a joint instance: what its games read at run time
        from the user's copy of the publisher's repository (their prompts) is there. Raises
        :class:`SourceError` naming the folder and the params key to set."""


def joint_key(mp: Any, entry: Any, param: str, default: str) -> str:
    """The params key that sets where a joint instance's entry reads the publisher's prompts:
    ``source.prompts`` when the entry's ``params.<param>`` is the default folder (``default``),
    else the entry's own key, by name (the format's baselines may come before it)."""
    if entry.params.get(param) == default:
        return f"markets.{mp.instance}.source.prompts"
    return f"markets.{mp.instance}.roster ({entry.name}).params.{param}"


def check_joint_entries(
    mp: Any,
    root: Path,
    harness: str,
    param: str,
    default: str,
    check: Any,
    catch: tuple[type[Exception], ...],
    hint: str,
) -> None:
    """The check every source's ``check_joint`` makes: each LLM entry of the joint instance on
    the publisher's ``harness`` has its folder (``params.<param>``, relative to ``root``) pass
    ``check``; a failure (one of ``catch``, with ``path`` and ``what``) is one
    :class:`SourceError` naming the file and the params key to set (:func:`joint_key`:
    ``default`` is where the entry's folder comes from ``source.prompts``) with ``hint``."""
    for entry in mp.roster:
        if entry.kind != "llm" or entry.harness != harness:
            continue
        try:
            check(Path(root) / Path(entry.params[param]).expanduser())
        except catch as exc:
            key = joint_key(mp, entry, param, default)
            line = getattr(exc, "line", None)
            raise SourceError(exc.path, f"{exc.what} (set {key} to {hint})", line) from None


def publisher_root(source: dict) -> str:
    """``source.prompts``, or the folder above the logs folder ``source.path`` (a repository
    whose logs folder is at its root: Agent Bazaar's ``logs-data``)."""
    if source.get("prompts"):
        return str(source["prompts"])
    return os.path.dirname(str(source.get("path", "")).rstrip("/")) or "."


class SourceError(ValueError):
    """A foreign file this project cannot use. ``str()`` is ``<file>[:<line>]: <what>``."""

    def __init__(self, path: str | os.PathLike[str], what: str, line: int | None = None):
        self.path, self.line, self.what = shown(path), line, what
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {what}")

    def __reduce__(self):
        """Rebuilt from its parts when pickled: an importer's worker process raises it, and the
        process pool hands it to the parent, where it must still be one line naming the file."""
        return type(self), (self.path, self.what, self.line)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as printable text: the bytes of a name that is not UTF-8 (which Python holds as
    surrogates, and which no stream or file can encode) shown escaped, ``\\xff``."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        return text.decode("utf-8", "backslashreplace")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")


def utf8_name(path: str | os.PathLike[str]) -> None:
    """Refuse a file or folder whose name is not UTF-8 text (:class:`SourceError` naming it): an
    importer that records the name (a run's folder in its tables) cannot store it."""
    try:
        Path(path).name.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(path, "its name is not UTF-8 text; rename it") from None


def _kind(mode: int) -> str:
    for test, what in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a file"


def check_inside(path: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> str:
    """``path`` resolved (every link followed); :class:`SourceError` when that is outside the
    source folder ``root`` (resolved too; None: no folder to stay in)."""
    real = os.path.realpath(path)
    if root is not None:
        top = os.path.realpath(root)
        if real != top and os.path.commonpath([real, top]) != top:
            raise SourceError(
                path,
                f"leads to {shown(real)}, outside the source folder "
                f"{shown(top)} (a link: links are followed only within it)",
            )
    return real


def _open_regular(path: Path, root: str | os.PathLike[str] | None) -> tuple[int, int]:
    """An open descriptor of the regular file ``path`` and its size, or :class:`SourceError`
    (module docstring: nothing but a regular file inside ``root`` is ever opened)."""
    try:
        before = os.stat(path)  # follows a link: what it leads to
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and os.path.islink(path):
            raise SourceError(
                path, f"cannot be read: a link to {shown(os.readlink(path))}, which does not exist"
            ) from None
        raise SourceError(path, f"cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(before.st_mode):
        raise SourceError(path, "cannot be read: it is a folder, not a file")
    if not stat.S_ISREG(before.st_mode):
        via = f"a link to {shown(os.path.realpath(path))}, " if os.path.islink(path) else ""
        raise SourceError(
            path,
            f"is not a regular file ({via}{_kind(before.st_mode)}); only regular files are read",
        )
    real = check_inside(path, root)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise SourceError(path, f"cannot be read ({exc.strerror or exc})") from None
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise SourceError(path, "was replaced while it was opened; run again")
    return fd, now.st_size


def _too_big(path: Path, size: int | None, max_bytes: int) -> SourceError:
    """``size``: what the file says it holds; None: it held more than it said (a file that
    grew, a ``/proc`` file of size 0)."""
    if size is None:
        return SourceError(
            path,
            f"holds more than the {max_bytes / 2**20:.0f} MiB "
            f"({max_bytes:,} bytes) this importer reads",
        )
    return SourceError(
        path, f"is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB this importer reads"
    )


def read_bytes(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_FILE_BYTES,
    root: str | os.PathLike[str] | None = None,
) -> bytes:
    """A regular file's bytes, at most ``max_bytes`` of them, counted as they are read; a link
    is followed only within ``root`` (the source folder; None: anywhere). Anything else (a
    folder, a FIFO, a device, a link out of ``root``, no permission) is a :class:`SourceError`
    naming the file (module docstring)."""
    path = Path(path)
    fd, size = _open_regular(path, root)
    with open(fd, "rb") as handle:  # closes the descriptor
        if size > max_bytes:  # what the file says it holds: refused before reading it
            raise _too_big(path, size, max_bytes)
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise SourceError(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:  # more than its size said
        raise _too_big(path, None, max_bytes)
    return data


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


def read_json(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_FILE_BYTES,
    root: str | os.PathLike[str] | None = None,
) -> Any:
    """A whole JSON file, strictly (see :func:`parse_json`), at most ``max_bytes`` long, read as
    :func:`read_bytes` reads it (``root``: the source folder a link must stay in)."""
    path = Path(path)
    return parse_json(read_bytes(path, max_bytes, root), path)


def read_jsonl(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_FILE_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    root: str | os.PathLike[str] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for every non-blank line of a JSONL file (read as
    :func:`read_bytes` reads it); each record must be a JSON object. Raises
    :class:`SourceError` naming the file and line of the first bad one."""
    path = Path(path)
    text = _text(read_bytes(path, max_bytes, root), path)  # whole: its size is bounded above
    numbered = []
    for line_no, raw in enumerate(text.split("\n"), 1):
        # a character is 1-4 bytes in UTF-8: encode only a line that may be over the limit
        if len(raw) > max_line_bytes // 4 and len(raw.encode()) > max_line_bytes:
            raise SourceError(
                path,
                f"a line of {len(raw.encode()) / 2**20:.1f} MiB, over the "
                f"{max_line_bytes / 2**20:.0f} MiB this importer reads",
                line_no,
            )
        if raw.strip():
            numbered.append((line_no, raw))
    try:  # each line on its own (one JSON value a line), through the one shared decoder
        records = [_DECODER.decode(raw) for _, raw in numbered]
    except (ValueError, RecursionError):
        records = [parse_json(raw, path, line_no) for line_no, raw in numbered]  # names the line
    for (line_no, _), record in zip(numbered, records):
        if not isinstance(record, dict):
            raise SourceError(
                path, f"a record must be a JSON object, not {type(record).__name__}", line_no
            )
        yield line_no, record


def number(
    value: Any, what: str, lo: float | None = None, hi: float | None = None, integer: bool = False
) -> float | int:
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
        raise ValueError(
            f"{what} {value!r} is outside [{lo:g}, {hi:g}]"
            if lo is not None and hi is not None
            else f"{what} {value!r} is out of range"
        )
    return int(value) if integer else float(value)


def plain_name(value: Any, what: str) -> str:
    """``value`` if it is a plain name (:data:`PLAIN_NAME`: letters, digits, ``_ . + -``, at most
    128 characters, not starting with a dot): an id from a foreign file never becomes a path."""
    if not isinstance(value, str) or not PLAIN_NAME.match(value):
        raise ValueError(
            f"{what} {str(value)[:80]!r} is not a plain name (letters, digits and "
            "_ . + -, at most 128 characters)"
        )
    return value


def validated(
    model: type[M],
    data: Any,
    path: str | os.PathLike[str],
    line: int | None = None,
    prefix: str = "",
) -> M:
    """``model`` validated from ``data``; its first error as :class:`SourceError` naming the key
    path (``data.agents.B1.valuation: Input should be a finite number``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join([prefix] * bool(prefix) + [str(p) for p in err["loc"]])
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list)) else f" (got {str(value)[:60]!r})"
        raise SourceError(
            path, f"{loc}: {err['msg']}{shown}" if loc else err["msg"], line
        ) from None


class Seen:
    """Keys already read and the file that held each: ``add`` refuses a second file holding the
    same game (a copy of a log imported twice would count its seats twice)."""

    def __init__(self, what: str = "game"):
        self.what = what
        self.where: dict[str, str] = {}

    def add(self, key: str, path: str | os.PathLike[str]) -> None:
        first = self.where.setdefault(key, str(path))
        if first != str(path):
            raise SourceError(
                path,
                f"holds {self.what} {key!r}, which {first} holds too (a "
                "duplicate: remove one of the two)",
            )
