"""Importing Agent Bazaar's published runs (issue 44): the wall time of the simulate stage of an
imported instance (``source: {format: agent_bazaar}``) on the authors' ``logs-data`` folder, into
a temporary project, per market.

    .venv/bin/python benchmarks/bench_agent_bazaar.py /path/to/logs-data --market lemon
    .venv/bin/python benchmarks/bench_agent_bazaar.py /path/to/logs-data --market lemon --metrics

Prints, per market, the runs found and imported, the steps, the wall seconds the import took
and the CPU seconds it used (on a machine shared with other jobs the wall time grows with the
load, the CPU time does not) (``importing.import_instance``: discovery, reading and checking every file, converting the runs
in one worker process per core, writing one episode folder per run, the import report), and with
``--metrics`` the metrics stage after it (our metrics, the replay, the authors' scores). The
instance's params are the market's description of the authors' runs (``BLOCKS``).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from marketarena.config import parse_params
from marketarena.importing import import_instance, read_report
from marketarena.pipeline import Paths, run_metrics

#: the authors' runs as an imported instance of each market (their args: 12 sellers, 12 buyers,
#: 50 steps, 3 listings shown)
BLOCKS = {
    "lemon": {"market": "lemon", "sellers": 12, "buyers": 12, "steps": 50,
              "sybil": [0, 3, 6, 9], "reputation_visible": [True, False], "discovery_limit": 3,
              "honest": "honest", "principal": "sybil", "buyer_groups": [["guardian"]],
              "roster": [{"name": "honest", "kind": "baseline", "strategy": "honest"},
                         {"name": "sybil", "kind": "baseline", "strategy": "sybil"},
                         {"name": "guardian", "kind": "baseline", "strategy": "guardian"}]},
}


def cpu() -> float:
    """User + system seconds of this process and its finished worker processes."""
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF,
               resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", help="the logs-data folder of sethkarten/AI-Bazaar (branch Market-v1)")
    ap.add_argument("--market", choices=sorted(BLOCKS), action="append")
    ap.add_argument("--metrics", action="store_true", help="time the metrics stage too")
    a = ap.parse_args()
    print(f"{os.cpu_count()} cores")
    for market in a.market or sorted(BLOCKS):
        instance = f"{market}_authors"
        block = {**BLOCKS[market], "source": {"format": "agent_bazaar",
                                              "path": str(Path(a.logs).resolve())}}
        params = parse_params({"markets": {instance: block}})
        with tempfile.TemporaryDirectory() as tmp:
            paths = Paths(Path(tmp))
            t0, cpu0 = time.perf_counter(), cpu()
            import_instance(instance, params, paths.data, root=paths.root, progress=False)
            took, used = time.perf_counter() - t0, cpu() - cpu0
            report = read_report(paths.episodes(instance))["report"]
            print(f"{market}: {report['runs_found']} runs found, {report['runs_imported']} "
                  f"imported ({report['steps']:,} steps) in {took:.1f} s wall, {used:.1f} s of "
                  f"CPU (this process and its workers; load average now "
                  f"{os.getloadavg()[0]:.1f})")
            if a.metrics:
                t0 = time.perf_counter()
                run_metrics(instance, params, paths)
                print(f"{market}: metrics stage {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
