"""Settings for every test.

marketarena is imported before any test module imports numpy: importing it pins numpy's CPU path
(``marketarena.pin_cpu_path``), which numpy reads once, when it is loaded. Test modules are
collected in an order of pytest's choosing, and a simulation refuses a numpy loaded unpinned.

Hypothesis: no per-example deadline and no "too slow" health check. Both time the machine, not the
code (the suite runs on shared CI machines, two test processes per core pair); the properties
themselves are unchanged, with the same number of examples."""

import json
import os
import time

import pytest
from hypothesis import HealthCheck, settings

import marketarena  # noqa: F401 - first, before numpy (see above)

settings.register_profile(
    "marketarena", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("marketarena")

#: test files run first, in this order, the longest first (`make test` runs pytest with
#: ``--dist loadfile --no-loadscope-reorder``: a worker takes whole files in collection order, and
#: xdist's own reordering, by test count, would leave these few-test, minutes-long files for the
#: end). The shared e2e build starts at once on one worker, its twin on the other; the e2e files
#: that copy the build come after three minutes of other files, when it is made. The rest keep
#: pytest's order. Durations: the 25 slowest tests `make test` prints, docs/speed.md.
FIRST = (
    "e2e/test_outputs.py",
    "e2e/test_twin.py",
    "contract/test_markets.py",
    "agents/test_local_model_e2e.py",
    "core/test_ray.py",
    "test_embeddings.py",
    "test_stopping.py",
    "report/test_browser.py",
    "e2e/test_resume.py",
    "e2e/test_sweep.py",
    "e2e/test_dependencies.py",
    "e2e/test_site.py",
    "core/test_run_lifecycle.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}

    def key(item):
        path = item.nodeid.split("::", 1)[0].removeprefix("tests/")
        return rank.get(path, len(FIRST))

    items.sort(key=key)  # stable: within a file and among the rest, pytest's order


#: ``MARKETARENA_TEST_TIMELINE=<file>``: each test's worker, start and end appended to the file as
#: a JSON line (``benchmarks/suite_timeline.py`` reads it: what each worker ran when, and where it
#: waited). Off by default; it changes nothing else.
_TIMELINE = os.environ.get("MARKETARENA_TEST_TIMELINE")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    if _TIMELINE:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        line = {"worker": worker, "test": item.nodeid, "start": start, "end": time.time()}
        with open(_TIMELINE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")


#: a small completion-prior table with round numbers (kind, market, mean, low, high)
TINY_PRIORS = [
    ("bare_json", "crash", 20, 10, 30),
    ("chain_of_thought", "crash", 100, 50, 200),
    ("thinking", "crash", 400, 300, 500),
    ("bare_json", "any", 10, 5, 15),
    ("chain_of_thought", "any", 60, 20, 150),
    ("thinking", "any", 300, 200, 400),
]


@pytest.fixture
def tiny_priors(tmp_path, monkeypatch):
    """``completion_priors.TABLE`` replaced by :data:`TINY_PRIORS` (hand-computed cases)."""
    from marketarena import completion_priors

    path = tmp_path / "priors.csv"
    lines = [",".join(completion_priors.COLUMNS)] + [
        f"{k},{m},{mean},{lo},{hi},0.5,3,1000,test" for k, m, mean, lo, hi in TINY_PRIORS
    ]
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(completion_priors, "TABLE", path)
    return path
