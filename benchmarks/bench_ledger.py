"""The spend ledger's transaction (``llm.budget``, ``llm.ledger``): how long one decision point's
reservations take to reach the file, the way an LLM run makes them.

What: a ``CostGuard`` on a ``SpendLedger`` in a temporary folder reserves ``--requests`` (20)
requests in one transaction (``reserve_all``, one decision point of supply_chain's 20 LLM
retailers), then settles them (queued for the next transaction, as answers are), ``--rounds``
times; prints the median and 90th percentile of the transaction, for each folder given (default:
the system's temporary folder). Prints figures; asserts nothing. Run:
``.venv/bin/python benchmarks/bench_ledger.py [--requests 20] [--rounds 300] [folders...]``;
compare with another checkout by running that checkout's copy of this script (it puts its own
``lib`` first on the path).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from marketarena.llm.budget import CostGuard  # noqa: E402
from marketarena.llm.ledger import SpendLedger  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", default=[tempfile.gettempdir()])
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    for folder in args.folders:
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            guard = CostGuard(100.0, SpendLedger(Path(tmp) / "spend.jsonl"))
            times = []
            for _ in range(args.rounds):
                t = time.perf_counter()
                held = guard.reserve_all([(1e-4, "m")] * args.requests)
                times.append(time.perf_counter() - t)
                for reservation in held:
                    guard.settle(reservation, 5e-5)
            times.sort()
            print(
                f"{folder}: a transaction of {args.requests} reservations (and the settles "
                f"queued before it): median {statistics.median(times) * 1e6:.0f} us, 90th "
                f"percentile {times[len(times) * 9 // 10] * 1e6:.0f} us ({args.rounds} rounds)"
            )


if __name__ == "__main__":
    main()
