"""Worker processes for episodes (issue 13): wall time of the same simulate run with 1 worker and
with ``auto`` (one per core), in the same run, and their ratio. The runs are the default sweeps of
crash (18 x 365 days) and english_auction (30 auctions); logs are byte-identical either way
(tests/core/test_workers.py).

    .venv/bin/python benchmarks/bench_workers.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from _common import default_block

from marketarena.config import parse_params
from marketarena.simulate import simulate


def timed(kind: str, workers) -> tuple[float, int]:
    params = parse_params({"markets": default_block(kind), "execution": {"workers": workers}})
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = simulate(kind, params, Path(tmp), progress=False)
        return time.perf_counter() - t0, summary["played"]


def main() -> None:
    print(f"{os.cpu_count()} cores")
    for kind in ("crash", "english_auction"):
        one, n = timed(kind, 1)
        auto, _ = timed(kind, "auto")
        print(f"{kind}: {n} episodes, 1 worker {one:.1f} s, auto {auto:.1f} s: x{one / auto:.2f}")


if __name__ == "__main__":
    main()
