"""Every benchmark script imports (the names it uses still exist) and has a main()."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(path: Path, monkeypatch):
    """The benchmark script at ``path`` imported as a module (its folder on the path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("bench_*.py")), ids=lambda p: p.stem)
def test_benchmark_imports(path, monkeypatch):
    assert callable(getattr(load(path, monkeypatch), "main", None))


def test_the_scheduling_bound_on_hand_computed_cases(monkeypatch):
    """``bench_llm_speed.scheduling_bound``: a lone chain takes its length; a wide wave is bound
    by the slots; and the least advanced episode's request goes first (hand-played below: the
    most advanced first would end at 4)."""
    bound = load(BENCHMARKS / "bench_llm_speed.py", monkeypatch).scheduling_bound
    assert bound([[1, 1, 1]], slots=4, delay=0.5) == 1.5
    assert bound([[2], [2], [2]], slots=2, delay=1.0) == 3.0
    assert bound([[], [1]], slots=1, delay=1.0) == 1.0  # an episode that asks nothing
    # slots 2; A asks 4 times in turn, B and C twice. t0: A, B (C waits). t1: C (at 0) before A
    # and B (at 1); A before B by order. t2: B and C. t3: A's third. t4: A's fourth, done at 5.
    assert bound([[1, 1, 1, 1], [1, 1], [1, 1]], slots=2, delay=1.0) == 5.0


def test_the_stopping_yardsticks_on_a_hand_made_case(monkeypatch):
    """``bench_stopping.yardsticks``: LLM a's two draws are within one from n 20 and from n 10
    but wrong again at 20 (settled at 20 and 30); LLM b is right from its first look in one draw
    and from its second in the other (settled at 10 and 20). Per LLM the smallest n right in
    95% of draws: a 30 (at 20 one draw of two is wrong), b 20. Means: 25 and 20."""
    import pandas as pd

    module = load(BENCHMARKS / "bench_stopping.py", monkeypatch)
    rows = [
        ("a", 0, 10, False),
        ("a", 0, 20, True),
        ("a", 0, 30, True),
        ("a", 1, 10, True),
        ("a", 1, 20, False),
        ("a", 1, 30, True),
        ("b", 0, 10, True),
        ("b", 0, 20, True),
        ("b", 1, 10, False),
        ("b", 1, 20, True),
    ]
    looks = pd.DataFrame(rows, columns=["llm", "draw", "n", "within_one"])
    assert module.yardsticks(looks) == (25.0, 20.0)


def test_the_maximum_likelihood_skill_on_hand_made_cases(monkeypatch):
    """``bench_stopping.thurstone_mu``: one win and one loss against equals at μ 5 place the
    player at 5; a win over μ 4 and a loss to μ 6, by symmetry, at 5 too; a game counted twice
    moves it toward that game's outcome; two wins out of three place it above one out of three."""
    module = load(BENCHMARKS / "bench_stopping.py", monkeypatch)
    field = {"a": (5.0, 0.5), "b": (4.0, 0.5), "c": (6.0, 0.5)}
    even = module.thurstone_pairs([{"p": 1.0, "a": 0.0}, {"p": 0.0, "a": 1.0}], "p", field, 1.0)
    apart = module.thurstone_pairs([{"p": 1.0, "b": 0.0}, {"p": 0.0, "c": 1.0}], "p", field, 1.0)
    both = np.ones((1, 2))
    assert module.thurstone_mu(even, both)[0] == pytest.approx(5.0, abs=1e-6)
    assert module.thurstone_mu(apart, both)[0] == pytest.approx(5.0, abs=1e-6)
    won_twice, lost_twice = module.thurstone_mu(even, np.array([[2.0, 1.0], [1.0, 2.0]]))
    assert lost_twice < 5.0 < won_twice and won_twice - 5.0 == pytest.approx(5.0 - lost_twice)
