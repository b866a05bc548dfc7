"""core.files: a file replaced whole or not at all."""

from __future__ import annotations

import os

import pytest

from marketarena.core.files import replaced, write_atomic


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
    with pytest.raises(KeyboardInterrupt):  # a kill's interrupt, not only an Exception
        with replaced(target) as tmp:
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
    with replaced(target) as tmp:
        with open(tmp, "wb") as out:
            out.write(b"B" * 5)
            out.flush()
            seen.append(target.read_bytes())
            out.write(b"B" * 5)
    assert seen == [b"A" * 10, b"A" * 10]
    assert target.read_bytes() == b"B" * 10
