"""Which process owns a thing left on disk, and whether that process is certainly gone.

Two kinds of things outlive a killed process: a reservation in the spend ledger
(``llm/ledger.py``) and a temporary folder of ``core.files.folder_replaced``. Both record their
owner, and whoever comes next settles or removes what a gone owner left. An owner is a process
named by

- the host it ran on (a process on another host, on a shared filesystem, is assumed alive);
- the kernel's boot id (a process of an earlier boot of this host is gone);
- its pid, and its start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), which
  tells it from a later process given the same pid.

:func:`gone` is the one check; the ledger stores an owner as a list (:func:`owner`), a folder name
as a short tag (``core.files.owner_tag``). The boot id and start times come from ``/proc`` (Linux);
where they cannot be read they are empty and the pid alone is checked.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def boot_id() -> str:
    """This boot of the kernel ("" where ``/proc`` has no boot id)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot, "" if unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def host() -> str:
    return socket.gethostname()


_OWNER: tuple[int, list] = (0, [])


def owner() -> list:
    """This process as an owner: ``[host, boot id, pid, start time]`` (cached per pid)."""
    global _OWNER
    pid = os.getpid()
    if _OWNER[0] != pid:
        _OWNER = (pid, [host(), boot_id(), pid, start_time(pid)])
    return _OWNER[1]


def gone(pid: int, started: str = "", boot: str = "", same_host: bool = True) -> bool:
    """Whether process ``pid`` (started at ``started``, in boot ``boot``; either may be unknown,
    "") certainly no longer exists. ``boot`` may be a prefix of the boot id (a short tag)."""
    if not same_host:
        return False
    current = boot_id()
    if boot and current and not current.replace("-", "").startswith(boot.replace("-", "")):
        return True  # this host booted since
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, OverflowError):
        pass  # it exists (another user's process), or the id is not one
    return bool(started) and start_time(pid) not in ("", started)  # the id reused


def owner_gone(recorded: object) -> bool:
    """Whether the owner :func:`owner` recorded is gone; a bare pid (a ledger written before
    owners were recorded) is checked as this host's; anything else is taken as gone."""
    if isinstance(recorded, int):
        recorded = [host(), "", recorded, ""]
    if not isinstance(recorded, list) or len(recorded) != 4:
        return True
    where, boot, pid, started = recorded
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return True
    return gone(pid, str(started or ""), str(boot or ""), same_host=where == host())
