"""Speed of the supply_chain simulation with scripted agents (issue 2).

Measures, on the default params.yaml (20 retailers, 6 steps, 2 rounds, 200 buyers/step):
  - the embedding model's load time and the persona embedding time (200 texts, one at a time);
  - the simulation of the default 10 episodes once the model is loaded (slogans cached after the
    first episode, as in a real run), split into agent decisions, market rules and log writing;
  - episodes per second.
Prints figures; asserts nothing. Run: `.venv/bin/python benchmarks/bench_supply_chain.py`.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from marketarena.config import load_params
from marketarena.core import logs
from marketarena.core.runner import play_episode
from marketarena.embeddings import Embedder
from marketarena.pipeline import Paths, run_embed, run_personas
from marketarena.simulate import build, load_inputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--runs", type=int, default=None, help="episodes (default: params runs)")
    ap.add_argument("--profile", action="store_true", help="print the top functions by time")
    args = ap.parse_args()
    params = load_params(args.params)
    mp = params.markets["supply_chain"]
    runs = args.runs or mp.runs
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(tmp)
        paths.data.mkdir(parents=True)
        params.embedding.cache_dir = str(Path(tmp) / "cache")  # cold cache: honest numbers
        run_personas(params, paths)
        t0 = time.perf_counter()
        emb = Embedder(params.embedding.model, Path(tmp) / "cache")
        _ = emb.model
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_embed(params, paths)
        embed = time.perf_counter() - t0
        _, resources = load_inputs("supply_chain", params, paths.data)
        _ = resources.embedder.model  # load before timing the simulation
        prof = cProfile.Profile() if args.profile else None
        sim = write = 0.0
        for run in range(runs):
            market, agents, table, spec = build("supply_chain", params, run, resources=resources)
            t0 = time.perf_counter()
            if prof:
                prof.enable()
            result = play_episode(market, agents, spec.seed)
            if prof:
                prof.disable()
            t1 = time.perf_counter()
            plan = logs.PlannedEpisode(f"ep-{run:04d}", run, 0, "bench")
            logs.write_episode(
                paths.episodes("supply_chain"),
                plan,
                {"agents": table, **result.log_tables()},
                {},
                {},
            )
            sim += t1 - t0
            write += time.perf_counter() - t1
        print(f"embedding model load         {load:7.2f} s")
        print(f"persona embeddings ({len(resources.buyers.persona_ids)} texts) {embed:7.2f} s")
        print(f"simulate {runs} episodes          {sim:7.2f} s  ({runs / sim:.1f} episodes/s)")
        print(f"write {runs} episode logs         {write:7.2f} s")
        print(
            f"slogan embeddings: {resources.embedder.misses} computed, {resources.embedder.hits} cached"
        )
        if prof:
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
