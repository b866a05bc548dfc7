"""What the per-market benchmarks share: a market's default params block, the best-of-n time of
one episode, the wall time of the default sweep (reference + simulate, then metrics) in a
temporary folder, and a loopback LLM endpoint in a process of its own."""

from __future__ import annotations

import multiprocessing as mp
import os
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
    text = (
        resources.files(f"marketarena.markets.{kind}").joinpath("default_params.yaml").read_text()
    )
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
    return {
        "reference": t1 - t0,
        "simulate": t2 - t1,
        "metrics": t3 - t2,
        "episodes": summary["played"],
        "params": params,
    }


def _serve(responder, delay: float, conn, counter, parent: int) -> None:
    from marketarena.llm.fake import LoopbackEndpoint

    try:  # a killed benchmark leaves no endpoint behind
        from marketarena.core.lifetime import die_with_parent
    except ImportError:  # a checkout before issue 49: close() or the benchmark's exit ends it
        pass
    else:
        die_with_parent(parent)

    def counting(body: dict):
        with counter.get_lock():
            counter.value += 1
        return responder(body)

    endpoint = LoopbackEndpoint(counting, delay)
    conn.send(endpoint.base_url)
    conn.recv()  # until the parent says stop
    conn.send(getattr(endpoint, "max_in_flight", -1))
    endpoint.close()


class EndpointProcess:
    """``llm.fake.LoopbackEndpoint(responder, delay)`` in a process of its own (forked), so that
    its threads do not compete with the simulation for the GIL: what a benchmark measures is our
    side of the HTTP connection. ``base_url``; ``calls`` so far; ``close()`` returns the most
    requests it had in flight at once (-1 on checkouts that do not count them). The process
    dies with the benchmark's, however that ends (``core.lifetime.die_with_parent``)."""

    def __init__(self, responder, delay: float):
        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._counter = ctx.Value("i", 0)
        self._process = ctx.Process(
            target=_serve, daemon=True, args=(responder, delay, child, self._counter, os.getpid())
        )
        self._process.start()
        self.base_url = self._conn.recv()

    @property
    def calls(self) -> int:
        return self._counter.value

    def close(self) -> int:
        self._conn.send("stop")
        peak = self._conn.recv()
        self._process.join(timeout=10)
        return peak
