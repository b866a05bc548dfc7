"""Chaos over real HTTP: 24 LLM traders quote at once against a loopback endpoint that answers 429s
with Retry-After, 5xx, connection resets, answers slower than the timeout, truncated bodies and
empty ``choices`` on a seeded schedule. The episode logs equal a fault-free run's byte for byte
(how each answer was obtained, ``llm_costs``, is in the run log), and every injected fault is a
counted retry."""

from __future__ import annotations

import re

import pandas as pd

from marketarena.config import parse_params
from marketarena.core.run_logs import read_run_table
from marketarena.llm.fake import ChaosEndpoint, LoopbackEndpoint, Reply
from marketarena.simulate import simulate

SEATS = 12


def quote(body) -> Reply:
    """A deterministic answer from the prompt: shade the private value by 5."""
    text = body["messages"][-1]["content"]
    value = int(re.search(r"Your private (?:value|cost): (\d+)", text).group(1))
    return Reply({"quote": max(0, value - 5) if "(buyer)" in text else min(100, value + 5)})


def params_for(tmp_path, base_url, name):
    roster = [{"name": f"llm{i:02d}", "kind": "llm", "model": "loop"} for i in range(2 * SEATS)]
    return parse_params(
        {
            "models": {
                "loop": {
                    "model": "loopback",
                    "base_url": base_url,
                    "api_key_env": None,
                    "max_concurrency": 32,
                    "max_retries": 8,
                    "timeout_s": 1.0,
                }
            },
            "llm": {
                "cache_dir": str(tmp_path / f"cache-{name}"),
                "backoff_base_s": 0.01,
                "backoff_max_s": 0.05,
            },
            "markets": {
                "double_auction": {
                    "runs": 2,
                    "rounds": 3,
                    "n_buyers": SEATS,
                    "n_sellers": SEATS,
                    "roster": roster,
                    "pool": [e["name"] for e in roster],
                    "shard_episodes": None,
                }
            },
        }
    )  # a folder per game


def stable_tables(folder) -> dict[str, bytes]:
    """Every table of an episode: none may depend on how answers were obtained (that is in the
    run log; meta.json differs by the endpoint's address, part of the fingerprint)."""
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.parquet"))}


def test_faults_leave_no_trace_in_the_outcome_and_every_one_is_a_counted_retry(tmp_path):
    with LoopbackEndpoint(quote) as calm:
        simulate(
            "double_auction",
            params_for(tmp_path, calm.base_url, "calm"),
            tmp_path / "data",
            tmp_path / "calm",
            progress=False,
        )
    with ChaosEndpoint(quote, fault_rate=0.5, seed=1, slow_s=1.5) as chaos:
        simulate(
            "double_auction",
            params_for(tmp_path, chaos.base_url, "chaos"),
            tmp_path / "data",
            tmp_path / "chaos",
            progress=False,
        )
    injected = sum(chaos.injected.values())
    assert all(n > 0 for n in chaos.injected.values()), chaos.injected  # every kind happened
    for ep in ("ep-0000", "ep-0001"):
        assert stable_tables(tmp_path / "calm" / ep) == stable_tables(tmp_path / "chaos" / ep)
    costs = read_run_table(tmp_path / "chaos.runs", "llm_costs")  # the run log
    assert sorted(set(costs["episode_id"])) == ["ep-0000", "ep-0001"]
    calls = pd.concat(
        pd.read_parquet(tmp_path / "chaos" / ep / "llm_calls.parquet")
        for ep in ("ep-0000", "ep-0001")
    )
    assert len(calls) == 2 * 3 * 2 * SEATS and calls["valid"].all()
    assert int(costs["retries"].sum()) == injected > 20
