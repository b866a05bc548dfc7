"""Settings for every test.

Hypothesis: no per-example deadline and no "too slow" health check. Both time the machine, not the
code (the suite runs on shared CI machines, two test processes per core pair); the properties
themselves are unchanged, with the same number of examples."""

from hypothesis import HealthCheck, settings

settings.register_profile("marketarena", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("marketarena")
