"""Settings for every test.

marketarena is imported before any test module imports numpy: importing it pins numpy's CPU path
(``marketarena.pin_cpu_path``), which numpy reads once, when it is loaded. Test modules are
collected in an order of pytest's choosing, and a simulation refuses a numpy loaded unpinned.

Hypothesis: no per-example deadline and no "too slow" health check. Both time the machine, not the
code (the suite runs on shared CI machines, two test processes per core pair); the properties
themselves are unchanged, with the same number of examples."""

from hypothesis import HealthCheck, settings

import marketarena  # noqa: F401 - first, before numpy (see above)

settings.register_profile(
    "marketarena", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("marketarena")
