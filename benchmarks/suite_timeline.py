"""Where the suite's wall time goes, worker by worker (issue 57).

Reads the file ``MARKETARENA_TEST_TIMELINE`` made (`MARKETARENA_TEST_TIMELINE=/tmp/t.jsonl make
test`: one JSON line per test, its xdist worker, start and end) and prints, per worker, when it
started and ended, how long it ran tests and how long it waited between them, then every test
file in the order it ran with its worker and span. Prints figures; asserts nothing.

Run: `.venv/bin/python benchmarks/suite_timeline.py /tmp/t.jsonl`
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def main() -> None:
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    t0 = min(r["start"] for r in rows)
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: r["start"]):
        by_worker[r["worker"]].append(r)
    print(
        f"{'worker':8s} {'first':>7s} {'last':>7s} {'tests':>7s} {'waits':>7s}  (s from the first test)"
    )
    for worker, tests in sorted(by_worker.items()):
        busy = sum(t["end"] - t["start"] for t in tests)
        span = tests[-1]["end"] - tests[0]["start"]
        print(
            f"{worker:8s} {tests[0]['start'] - t0:7.0f} {tests[-1]['end'] - t0:7.0f} "
            f"{busy:7.0f} {span - busy:7.0f}"
        )
    files: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        key = (r["worker"], r["test"].split("::", 1)[0])
        span = files.setdefault(key, [r["start"], r["end"]])
        span[0], span[1] = min(span[0], r["start"]), max(span[1], r["end"])
    print(f"\n{'start':>7s} {'end':>7s} {'s':>6s}  worker  file")
    for (worker, name), (start, end) in sorted(files.items(), key=lambda kv: kv[1][0]):
        if end - start >= 5:
            print(f"{start - t0:7.0f} {end - t0:7.0f} {end - start:6.0f}  {worker:6s}  {name}")


if __name__ == "__main__":
    main()
