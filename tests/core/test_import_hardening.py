"""Foreign files at the file-system level (``core/sources.py``) and the stray temporary folders a
killed import leaves (``core/files.py``): the reliability audit's D2 and its kill -9 note
(``shared/audits/reliability_3.md``).

Every read that a regression could turn into a hang (a FIFO) or an endless read (a device) runs
in a forked child under a time limit and a memory cap (``hardening.in_child``)."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from marketarena.core import files, sources
from marketarena.core.files import folder_replaced
from marketarena.core.sources import SourceError, read_bytes, read_json, read_jsonl
from tests.core.hardening import in_child


def _read(fn, path, **kw):
    try:
        out = fn(path, **kw)
        return list(out) if fn is read_jsonl else out
    except SourceError as exc:
        return f"SourceError: {exc}"


def refusal(fn, path, **kw) -> str:
    """The error text of reading ``path`` with ``fn`` in a child (a hang or an endless read fails
    the test instead of the machine)."""
    how, out = in_child(partial(_read, fn, path, **kw), timeout_s=30)
    assert how == "ok", (how, out)
    assert isinstance(out, str) and out.startswith("SourceError: "), out
    return out


@pytest.fixture
def folder(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "good.json").write_text('{"a": 1}')
    return logs


def test_a_fifo_is_refused_without_being_opened(folder):
    os.mkfifo(folder / "state.json")
    for fn in (read_bytes, read_json, read_jsonl):
        for kw in ({}, {"root": folder}):
            out = refusal(fn, folder / "state.json", **kw)
            assert out == (
                f"SourceError: {folder / 'state.json'}: is not a regular file (a FIFO); "
                "only regular files are read"
            )


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_link_to_a_device_is_refused_before_anything_is_read(folder, device):
    (folder / "state.json").symlink_to(device)
    for kw in ({}, {"root": folder}):  # a device is refused wherever links may lead
        out = refusal(read_json, folder / "state.json", **kw)
        assert f"is not a regular file (a link to {device}, a character device)" in out


def test_links_are_followed_within_the_source_folder_only(folder, tmp_path):
    (folder / "sub").mkdir()
    (folder / "sub" / "real.json").write_text('{"b": 2}')
    (folder / "inside.json").symlink_to(folder / "sub" / "real.json")
    assert read_json(folder / "inside.json", root=folder) == {"b": 2}
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": 1}')
    (folder / "out.json").symlink_to(outside)
    out = refusal(read_json, folder / "out.json", root=folder)
    assert f"out.json: leads to {outside}, outside the source folder {folder}" in out
    (folder / "etc.json").symlink_to("/etc/passwd")
    assert "outside the source folder" in refusal(read_bytes, folder / "etc.json", root=folder)
    # a folder of the path that is itself a link out of the source folder
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "s.json").write_text("{}")
    (folder / "run").symlink_to(tmp_path / "elsewhere")
    assert "outside the source folder" in refusal(read_json, folder / "run" / "s.json", root=folder)
    # a source folder reached through a link is the folder it leads to
    (tmp_path / "alias").symlink_to(folder)
    assert read_json(tmp_path / "alias" / "inside.json", root=tmp_path / "alias") == {"b": 2}
    assert read_json(folder / "out.json") == {"secret": 1}  # no root given: no folder to stay in


def test_folders_and_broken_links_say_what_they_are(folder):
    (folder / "dir.json").mkdir()
    assert refusal(read_bytes, folder / "dir.json", root=folder).endswith(
        "dir.json: cannot be read: it is a folder, not a file"
    )
    (folder / "gone.json").symlink_to(folder / "nothing.json")
    assert refusal(read_bytes, folder / "gone.json", root=folder).endswith(
        f"gone.json: cannot be read: a link to {folder / 'nothing.json'}, which does not exist"
    )


def test_what_is_read_is_bounded_by_the_bytes_read_not_by_stat():
    # /proc files are regular files whose stat size is 0 while they hold text: a size check
    # alone would let them through whole
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0 and len(status.read_bytes()) > 200
    out = refusal(read_bytes, status, max_bytes=100)
    assert out.endswith(
        "/proc/self/status: holds more than the 0 MiB (100 bytes) this importer reads"
    )
    assert len(read_bytes(status, max_bytes=100_000)) > 200


def test_a_name_that_is_not_utf8_is_shown_escaped_in_the_one_line():
    path = os.fsdecode(b"/logs/\xffrun/state_t0.json")
    err = SourceError(path, "not valid JSON")
    assert str(err) == "/logs/\\xffrun/state_t0.json: not valid JSON"
    str(err).encode("utf-8")  # printable on any stream
    assert sources.shown(path) == "/logs/\\xffrun/state_t0.json"
    assert sources.shown("/plain/é") == "/plain/é"


# ------------------------------------------------------------------ stray temporary folders
def _stray(dest: Path, tag: str) -> Path:
    path = dest.parent / f".{dest.name}.{tag}.0123abcd.tmp"
    (path / "data").mkdir(parents=True)
    (path / "data" / "half.parquet").write_bytes(b"PAR1")
    return path


@pytest.fixture
def sleeper():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield child
    child.kill()
    child.wait()


def test_a_killed_imports_folder_is_swept_by_the_next_and_a_live_ones_is_not(tmp_path, sleeper):
    dest = tmp_path / "crash"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_tag = files.owner_tag(dead.pid)  # taken while it lived: its start time is in the tag
    dead.wait()
    stale = _stray(dest, dead_tag)
    live = _stray(dest, files.owner_tag(sleeper.pid))
    mine = _stray(dest, files.owner_tag())  # this very process: alive
    pid, started, boot, host = files.owner_tag().split("-")
    reused = _stray(dest, f"{pid}-{int(started) + 1}-{boot}-{host}")  # the id, a later process
    rebooted = _stray(dest, f"{sleeper.pid}--00000000-{host}")  # its boot is not this one
    other_host = _stray(dest, f"{dead.pid}--{boot}-ffffffff")
    old_style = dest.parent / f".{dest.name}.1a2b3c4d.tmp"
    old_style.mkdir()
    other_dest = _stray(tmp_path / "crash2", dead_tag)
    with folder_replaced(dest) as tmp:
        (tmp / "import.json").write_text("{}")
        assert tmp.name.startswith(f".crash.{files.owner_tag()}.") and tmp.name.endswith(".tmp")
    assert not stale.exists() and not reused.exists() and not rebooted.exists()
    assert live.exists() and mine.exists() and other_host.exists() and old_style.exists()
    assert other_dest.exists() and (dest / "import.json").is_file()
    assert files.sweep_stale(dest) == []  # nothing more to remove


def test_an_owner_tag_names_this_process_and_host():
    pid, started, boot, host = files.owner_tag().split("-")
    assert int(pid) == os.getpid() and started.isdigit() and len(host) == 8
    assert not files.owner_gone(files.owner_tag())
    for unknown in ("not-a-tag", "0--abc-12345678", "12.5-1-2-3"):  # kept: not proven gone
        assert not files.owner_gone(unknown)
