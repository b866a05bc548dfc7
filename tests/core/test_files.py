"""core.files: a file, or a folder, replaced whole or not at all."""

from __future__ import annotations

import errno
import os

import pytest

from marketarena.core.files import folder_replaced, replaced, write_atomic


def test_write_atomic_replaces_the_file_and_leaves_nothing_beside_it(tmp_path):
    target = tmp_path / "ledger.jsonl"
    target.write_bytes(b"old\n")
    write_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    write_atomic(target, "caf\u00e9")  # text goes as UTF-8
    assert target.read_bytes() == "caf\u00e9".encode("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.jsonl"]


def test_a_failure_before_the_rename_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    target = tmp_path / "entry.json"
    target.write_text("the good entry")
    # a kill's interrupt, not only an Exception
    with pytest.raises(KeyboardInterrupt), replaced(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".entry.json.")
        tmp.write_text("half of the new ent")
        raise KeyboardInterrupt
    assert target.read_text() == "the good entry"
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]


def test_a_failed_rename_removes_the_temporary_file(tmp_path):
    target = tmp_path / "in_the_way"
    target.mkdir()  # a folder where the file should go: os.replace refuses
    (target / "kept").write_text("x")
    with pytest.raises(OSError):
        write_atomic(target, b"data")
    assert target.is_dir() and (target / "kept").read_text() == "x"
    assert [p.name for p in tmp_path.iterdir()] == ["in_the_way"]


def test_a_reader_never_sees_a_partial_file(tmp_path, monkeypatch):
    """While the block runs, the target still holds the old bytes; the new ones appear at once."""
    target = tmp_path / "model.gguf"
    target.write_bytes(b"A" * 10)
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append(target.read_bytes())  # just before the rename: still the old file
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with replaced(target) as tmp, open(tmp, "wb") as out:
        out.write(b"B" * 5)
        out.flush()
        seen.append(target.read_bytes())
        out.write(b"B" * 5)
    assert seen == [b"A" * 10, b"A" * 10]
    assert target.read_bytes() == b"B" * 10


def _tree(folder):
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_folder_built_aside_replaces_the_old_one_whole(tmp_path):
    dest = tmp_path / "site"
    with folder_replaced(dest) as tmp:  # no earlier folder: it is created
        assert tmp.parent == tmp_path and tmp.name.startswith(".site.") and not any(tmp.iterdir())
        (tmp / "index.html").write_text("one")
    assert _tree(dest) == {"index.html": b"one"}
    with folder_replaced(dest) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "page.html").write_text("two")
        assert _tree(dest) == {"index.html": b"one"}  # the old folder, whole, until the block ends
    assert _tree(dest) == {"sub/page.html": b"two"}  # the old one's files are gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # nothing left beside it


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
def test_a_failed_build_leaves_the_old_folder_as_it_was_and_names_the_destination(tmp_path, error):
    dest = tmp_path / "site"
    (dest / "a").mkdir(parents=True)
    (dest / "a" / "fig.png").write_bytes(b"\x89PNG old")
    (dest / "index.html").write_text("old")
    before = _tree(dest)
    with pytest.raises(type(error)) as info, folder_replaced(dest) as tmp:
        (tmp / "index.html").write_text("new")
        if isinstance(error, OSError):  # a write of a file inside: named under dest
            error.filename = str(tmp / "a" / "fig.png")
        raise error
    assert _tree(dest) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
    if isinstance(error, OSError):
        assert info.value.filename == str(dest / "a" / "fig.png")


def test_a_failed_swap_puts_the_old_folder_back(tmp_path, monkeypatch):
    dest = tmp_path / "site"
    dest.mkdir()
    (dest / "index.html").write_text("old")
    real_rename, calls = os.rename, []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the new folder into place
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(src), str(dst))
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OSError), folder_replaced(dest) as tmp:
        (tmp / "index.html").write_text("new")
    assert _tree(dest) == {"index.html": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
