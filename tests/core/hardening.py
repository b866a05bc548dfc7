"""What the importers' hostile-input tests share (``test_import_hardening*.py``): running a case
in a child process under a time limit and a memory cap (a FIFO that blocks, or a device read
without end, then fails the case instead of hanging or exhausting the machine), the command line
in process, and the assertion that a refusal is exactly one ``error:`` line naming the file.

Linux only (``forkserver``, ``RLIMIT_AS``, ``/proc``), as the project's other process tests."""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing
import os
import pickle
import resource
import signal
from pathlib import Path
from typing import Any, Callable

from typer.testing import CliRunner

#: memory a case may add to what the test process already maps
MEMORY_BYTES = 2 * 2**30


def _mapped() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(conn, fn: Callable[..., Any], args: tuple, timeout_s: int, memory: int) -> None:
    """The child of :func:`in_child`: limits set, ``fn(*args)`` run, its outcome sent back."""
    limit = _mapped() + memory
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the default action ends the process,
    signal.alarm(timeout_s)  # even one busy in C reading a device
    try:
        out = ("ok", fn(*args))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out = ("raised", f"{type(exc).__name__}: {exc}")
    conn.send_bytes(pickle.dumps(out))
    conn.close()


def in_child(
    fn: Callable[..., Any], *args: Any, timeout_s: int = 120, memory: int = MEMORY_BYTES
) -> tuple[str, Any]:
    """``fn(*args)`` (picklable: a module-level function) in a child that SIGALRM kills after
    ``timeout_s`` and that may map ``memory`` more bytes: ("ok", its result), ("raised",
    "<type>: <message>"), or ("killed", the signal) when the time limit (or anything else)
    killed it. The child comes from a fork server (a fresh interpreter forked for each case),
    not from a fork of the test process: a process that has used OpenMP (the embedding model's
    torch, in another test of the same worker) kills a child it forks."""
    parent, child = _FORKSERVER.Pipe(duplex=False)
    proc = _FORKSERVER.Process(target=_child, args=(child, fn, args, timeout_s, memory))
    proc.start()
    child.close()
    try:
        data = parent.recv_bytes()
    except EOFError:
        data = b""
    finally:
        parent.close()
        proc.join()
    if proc.exitcode is not None and proc.exitcode < 0:
        return "killed", signal.Signals(-proc.exitcode).name
    if not data:
        return "killed", f"exit status {proc.exitcode}"
    return pickle.loads(data)


_FORKSERVER = multiprocessing.get_context("forkserver")
#: imported once by the fork server, so that each case's child starts with the command line and
#: its readers already imported (1.5 s of imports a case otherwise, about 160 cases). Every
#: forkserver child of a test worker starts from it; marketarena.cli comes first, so that
#: marketarena pins numpy's CPU path before anything imports numpy (tests/conftest.py)
_FORKSERVER.set_forkserver_preload(
    [
        "marketarena.cli",
        "marketarena.cli.imports",
        "marketarena.markets.crash.sources.agent_bazaar",
        "marketarena.markets.lemon.sources.agent_bazaar",
        "marketarena.markets.double_auction.sources.bazaar",
        "pandas",
        "pyarrow.parquet",
        "tests.core.hardening",
    ]
)


def _invoke(app_ref: str, argv: list[str]) -> tuple[int, str]:
    module, _, name = app_ref.partition(":")
    app = getattr(importlib.import_module(module), name)
    res = CliRunner().invoke(app, argv)
    return res.exit_code, res.output


def run_cli(app_ref: str, argv: list[str], timeout_s: int = 120) -> tuple[int, str]:
    """The typer app ``app_ref`` (``"module:name"``: ``"marketarena.cli:app"``, a stage's) with
    ``argv``, in a child (:func:`in_child`): (exit code, output: stdout and stderr). A child
    killed by its time limit gives exit code -1 and says so."""
    how, out = in_child(_invoke, app_ref, argv, timeout_s=timeout_s)
    if how == "ok":
        return out
    return -1, f"the command did not end normally: {how} ({out})"


def assert_refused(code: int, output: str, names: str | os.PathLike[str], what: str = "") -> str:
    """A refusal as every importer must make it: exit code 2, exactly one ``error:`` line, naming
    ``names`` (a path, or a fragment of one), holding ``what``, no traceback and no "This is
    likely a bug". Returns the line."""
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert code == 2, output
    assert len(errors) == 1, output
    assert str(names) in errors[0], (str(names), errors[0])
    assert what in errors[0], (what, errors[0])
    assert "Traceback" not in output and "likely a bug" not in output, output
    return errors[0]


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) and its sha256, but in the hidden
    folders beside the import (``.<name>.*.tmp``: a stray, checked on its own)."""
    folder = Path(folder)
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink() and not p.relative_to(folder).parts[0].startswith(".")
    }


# ------------------------------------------------------------------ alterations of a source's files
def alter(path: Path, how: str, target: str | bytes = "") -> Path:
    """``path`` replaced by a FIFO (``fifo``), a link to ``target`` (``link``), a folder
    (``folder``), the bytes or text ``target`` (``bytes``), or made a sparse 300 MiB file
    (``sparse``). Returns ``path``."""
    if how != "sparse":
        path.unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(path)
    elif how == "link":
        path.symlink_to(target)
    elif how == "folder":
        path.mkdir()
    elif how == "sparse":
        with open(path, "ab") as fh:
            fh.truncate(300 * 2**20)
    elif how == "bytes":
        path.write_bytes(target if isinstance(target, bytes) else target.encode())
    else:
        raise ValueError(how)
    return path


def rename_bytes(path: Path, new: bytes) -> Path:
    """``path`` renamed to ``new`` (bytes, so not necessarily UTF-8; ``*`` stands for the old
    name); the new path."""
    target = os.fsencode(path.parent) + b"/" + new.replace(b"*", os.fsencode(path.name))
    os.rename(os.fsencode(path), target)
    return Path(os.fsdecode(target))


def set_number(text: str, key: str, value: str) -> str:
    """``text`` (JSON) with the number after the first ``"<key>": `` replaced by ``value``."""
    i = text.index(f'"{key}": ') + len(f'"{key}": ')
    j = i
    while text[j] not in ",}]\n":
        j += 1
    return text[:i] + value + text[j:]


def deepen(text: str) -> str:
    """``text`` (a JSON object) with a 100,000-deep array added."""
    return text.rstrip()[:-1] + ', "zz": ' + "[" * 100_000 + "]" * 100_000 + "}"


def edit(path: Path, fn: Callable[[str], str]) -> Path:
    path.write_text(fn(path.read_text()))
    return path


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as an error line shows it: a byte that is not UTF-8 as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")
