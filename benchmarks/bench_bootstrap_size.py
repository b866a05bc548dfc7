"""The size of cournot's specialisation test (issue 14): how often it rejects a true null.

Series of 50 rounds with mean exactly at the null (``nash_cv`` = the process mean) and AR(1)
autocorrelation phi, tested one-sidedly with the circular block bootstrap of
``markets/cournot/analysis/specialisation.py`` (block 7, 999 resamples); the share of p-values below
the nominal 5% is the test's real size. Printed per phi with its binomial standard error.

    .venv/bin/python benchmarks/bench_bootstrap_size.py [replicates]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from marketarena.markets.cournot.analysis.specialisation import block_bootstrap_test


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.standard_normal(n + 100)
    x = np.empty_like(e)
    x[0] = e[0]
    for t in range(1, len(e)):
        x[t] = phi * x[t - 1] + e[t]
    return x[100:]


def main(replicates: int = 2000) -> None:
    t0 = time.perf_counter()
    rng = np.random.default_rng(2026)
    for phi in (0.0, 0.3, 0.5, 0.8):
        rejected = sum(
            block_bootstrap_test(ar1(rng, 50, phi), 0.0, block=7, n_resamples=999, seed=rng)[
                "p_value"
            ]
            < 0.05
            for _ in range(replicates)
        )
        size = rejected / replicates
        print(
            f"phi {phi:.1f}: size at nominal 5% = {size:.1%} (+/- {np.sqrt(size * (1 - size) / replicates):.1%}, "
            f"{replicates} series of 50 rounds, block 7)"
        )
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
