"""What the per-market benchmarks share: a market's default params block, the best-of-n time of
one episode, and the wall time of the default sweep (reference + simulate, then metrics) in a
temporary folder."""

from __future__ import annotations

import tempfile
import time
from importlib import resources
from pathlib import Path

import yaml

from marketarena.config import parse_params
from marketarena.core.runner import play_episode
from marketarena.pipeline import Paths, run_metrics, run_reference, run_simulate
from marketarena.simulate import build


def default_block(kind: str) -> dict:
    """``markets/<kind>/default_params.yaml``: the block params.yaml carries for the market."""
    text = resources.files(f"marketarena.markets.{kind}").joinpath("default_params.yaml").read_text()
    return yaml.safe_load(text)


def best_episode(kind: str, block: dict, repeat: int = 3):
    """(best wall seconds, the last result) of playing episode 0 of ``block`` ``repeat`` times."""
    params = parse_params({"markets": block})
    best, result = float("inf"), None
    for _ in range(repeat):
        market, agents, table, spec = build(kind, params, 0)
        t0 = time.perf_counter()
        result = play_episode(market, agents, spec.seed)
        best = min(best, time.perf_counter() - t0)
    return best, result


def default_sweep(kind: str) -> dict[str, float]:
    """Seconds of the default sweep's stages and the number of episodes played."""
    params = parse_params({"markets": default_block(kind)})
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(Path(tmp))
        t0 = time.perf_counter()
        run_reference(kind, params, paths)
        t1 = time.perf_counter()
        summary = run_simulate(kind, params, paths, progress=False)
        t2 = time.perf_counter()
        run_metrics(kind, params, paths)
        t3 = time.perf_counter()
    return {"reference": t1 - t0, "simulate": t2 - t1, "metrics": t3 - t2,
            "episodes": summary["played"], "params": params}
