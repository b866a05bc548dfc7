"""Importing published games (issues 44 and 46): the wall time of each import as the pipeline's
simulate stage does it (read every file, check it, write our episodes, built aside and swapped
in), then of the metrics stage on them (for the authors' runs, the replay of their engine among
them), and the size written.

Sources (not part of this project):
- Agent Bazaar's runs: ``git clone https://github.com/sethkarten/AI-Bazaar`` then
  ``git -C AI-Bazaar checkout Market-v1``: ``AI-Bazaar/logs-data`` (5.5 GB; files of 4 MiB or more,
  mostly prompt logs, may be missing from a snapshot; the import says which);
- BAZAAR's games: ``git clone --depth 1 https://github.com/lechmazur/bazaar``: ``bazaar/logs``;
  ``git clone --depth 1 https://github.com/lechmazur/emergent_collusion``: its ``logs``;
  ``git clone --depth 1 https://github.com/lechmazur/pact``: its ``logs`` (9,089 games, 500 MB).

    .venv/bin/python benchmarks/bench_published_imports.py --agent-bazaar AI-Bazaar/logs-data \\
        [--bazaar bazaar/logs] [--collusion emergent_collusion/logs] [--pact pact/logs] \\
        [--markets crash lemon]

The issues' targets: the whole ``logs-data`` (crash and lemon) imported in at most 5 minutes on 2
cores (issue 44); PACT's 9,089 games in at most 3 minutes (issue 54; the whole
``marketarena import-bazaar`` command, board included, is the figure in
docs/published-games.md). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_metrics, run_reference, run_simulate


def _size(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def _instance(name: str, kind: str, fmt: str, source: str, **extra) -> dict:
    """An imported instance (its format's defaults, ``MarketKind.source_defaults``, fill the rest)."""
    return {
        name: {
            "market": kind,
            "source": {"format": fmt, "path": str(Path(source).resolve())},
            **extra,
        }
    }


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the import's workers)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def time_import(block: dict, name: str) -> None:
    """The reference, the import (the simulate stage) and the metrics of one imported instance:
    wall seconds and CPU seconds (on a machine shared with other jobs the wall time grows with
    the load, the CPU time does not)."""
    params = parse_params({"markets": block})
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(Path(tmp))
        t0, c0 = time.perf_counter(), _cpu()
        run_reference(name, params, paths)
        t1, c1 = time.perf_counter(), _cpu()
        summary = run_simulate(name, params, paths, progress=False)
        t2, c2 = time.perf_counter(), _cpu()
        run_metrics(name, params, paths)
        t3, c3 = time.perf_counter(), _cpu()
        load = os.getloadavg()[0]
        print(
            f"{name}: {summary['imported']} episodes imported in {t2 - t1:.1f} s wall, "
            f"{c2 - c1:.1f} s CPU ({_size(paths.episodes(name)):.0f} MiB written; load "
            f"{load:.1f}); reference {t1 - t0:.1f} s ({c1 - c0:.1f} s CPU), metrics "
            f"{t3 - t2:.1f} s ({c3 - c2:.1f} s CPU)",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent-bazaar", default=os.environ.get("AGENT_BAZAAR_LOGS"))
    ap.add_argument("--bazaar", default=os.environ.get("BAZAAR_LOGS"))
    ap.add_argument("--collusion", default=os.environ.get("COLLUSION_LOGS"))
    ap.add_argument("--pact", default=os.environ.get("PACT_LOGS"))
    ap.add_argument("--markets", nargs="+", default=["crash", "lemon"])
    args = ap.parse_args()
    if not (args.agent_bazaar or args.bazaar or args.collusion or args.pact):
        sys.exit(__doc__)
    print(f"cores: {len(os.sched_getaffinity(0))}")
    if args.agent_bazaar:
        for kind in args.markets:
            t0 = time.perf_counter()
            time_import(
                _instance(f"{kind}_authors", kind, "agent_bazaar", args.agent_bazaar),
                f"{kind}_authors",
            )
            print(f"  {kind} in all: {time.perf_counter() - t0:.1f} s")
    if args.bazaar:
        time_import(
            _instance("bazaar_games", "double_auction", "bazaar", args.bazaar, rating_boot=0),
            "bazaar_games",
        )
    if args.collusion:
        time_import(
            _instance(
                "emergent_collusion",
                "double_auction",
                "bazaar",
                args.collusion,
                rounds=8,
                n_buyers=3,
                n_sellers=3,
                distributions=["correlated"],
            ),
            "emergent_collusion",
        )
    if args.pact:
        time_import(
            _instance(
                "pact",
                "double_auction",
                "bazaar",
                args.pact,
                rounds=20,
                n_buyers=1,
                n_sellers=1,
                distributions=["correlated", "heavy_tailed", "semi_bimodal", "uniform"],
            ),
            "pact",
        )


if __name__ == "__main__":
    main()
