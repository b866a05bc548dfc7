"""Every benchmark script imports (the names it uses still exist) and has a main()."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("bench_*.py")), ids=lambda p: p.stem)
def test_benchmark_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None))


def test_the_scheduling_bound_on_hand_computed_cases(monkeypatch):
    """``bench_llm_speed.scheduling_bound``: a lone chain takes its length; a wide wave is bound
    by the slots; and the least advanced episode's request goes first (hand-played below: the
    most advanced first would end at 4)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    path = BENCHMARKS / "bench_llm_speed.py"
    spec = importlib.util.spec_from_file_location("_bench_speed_bound", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    bound = module.scheduling_bound
    assert bound([[1, 1, 1]], slots=4, delay=0.5) == 1.5
    assert bound([[2], [2], [2]], slots=2, delay=1.0) == 3.0
    assert bound([[], [1]], slots=1, delay=1.0) == 1.0  # an episode that asks nothing
    # slots 2; A asks 4 times in turn, B and C twice. t0: A, B (C waits). t1: C (at 0) before A
    # and B (at 1); A before B by order. t2: B and C. t3: A's third. t4: A's fourth, done at 5.
    assert bound([[1, 1, 1, 1], [1, 1], [1, 1]], slots=2, delay=1.0) == 5.0
