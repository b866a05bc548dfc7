"""What the tests of process lifetimes share (Linux: they read ``/proc``): waiting for a
condition, whether a process lives, a process's descendants, the processes whose command line
holds given words, whether a TCP port refuses connections, and a Python child in its own session
(a signal sent to it reaches only it) with this checkout's ``lib`` first on its path."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def wait_for(condition, timeout_s: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children(pid: int) -> set[int]:
    """Every live descendant of ``pid``."""
    out, frontier = set(), {pid}
    while frontier:
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) in frontier and fields[0] != "Z":
                    found.add(int(entry.name))
        out |= found
        frontier = found
    return out


def running(*words: str) -> list[int]:
    """The live processes whose command line has every one of ``words`` as an argument (a
    zombie's command line is empty)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if all(word.encode() in args for word in words):
                found.append(int(entry.name))
    return found


def refused(port: int, host: str = "127.0.0.1") -> bool:
    """Nothing listens on ``host:port``: a TCP connect is refused."""
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def python(*args: str, **kwargs: Any) -> subprocess.Popen:
    """``python *args`` (this interpreter) in its own session, this checkout's ``lib`` first, as a
    terminal starts it: SIGINT at its default action (Ctrl-C), even when the tests themselves
    were started with SIGINT ignored (a shell script's background job: ``make test &``)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "lib"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    return subprocess.Popen(
        [sys.executable, *args], start_new_session=True, env=env, preexec_fn=_hear_sigint, **kwargs
    )


def _hear_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
