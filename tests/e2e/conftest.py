"""The end-to-end tests' builds (``tests/e2e/project.py``), shared by every module and worker of a
run: ``project`` (the tiny params built once by `dvc repro`) and ``twin`` (a second fresh copy
with other thread counts and one worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.project import build_main, build_twin, built

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this run sees (the parent of the workers' own
    temporary folders; without xdist, this process's)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base
    folder = root / "e2e-shared"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def project(shared) -> Path:
    return built(shared, "project", build_main)


@pytest.fixture(scope="session")
def twin(shared) -> Path:
    return built(shared, "twin", build_twin)
