"""The files ``tests/conftest.py`` schedules first exist (a renamed file would silently drop out
of the order, and the suite would again end on its longest files), and the Makefile keeps
xdist from reordering them."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIRST

TESTS = Path(__file__).resolve().parent


def test_every_file_scheduled_first_exists_once():
    assert len(set(FIRST)) == len(FIRST)
    missing = [name for name in FIRST if not (TESTS / name).is_file()]
    assert not missing, missing


def test_make_test_keeps_the_order():
    makefile = (TESTS.parent / "Makefile").read_text()
    assert "--dist loadfile --no-loadscope-reorder" in makefile
