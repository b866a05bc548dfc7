"""Shared by the LLM-agent tests: a supply_chain world with personas and embeddings, reading a run's
log tables, and the replay comparison (identical logs but for how each answer was obtained)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest

from marketarena.config import Params, parse_params
from marketarena.core.run_logs import read_run_table
from marketarena.pipeline import Paths, run_embed, run_personas


def supply_chain_params(
    tmp_path: Path,
    models: dict[str, Any],
    roster: list[dict],
    *,
    llm: dict | None = None,
    **market: Any,
) -> Params:
    return parse_params(
        {
            "personas": {"per_tribe": 4},
            "embedding": {"cache_dir": str(tmp_path / "emb")},
            "models": models,
            "llm": {"cache_dir": str(tmp_path / "llm"), **(llm or {})},
            "markets": {"supply_chain": {"beta": 5, **market, "roster": roster}},
        }
    )


@pytest.fixture
def world(tmp_path) -> Callable[[Params], Paths]:
    """``world(params)``: personas and embeddings under ``tmp_path/data``; returns the Paths."""

    def build(params: Params) -> Paths:
        paths = Paths(tmp_path)
        paths.data.mkdir(exist_ok=True)
        run_personas(params, paths)
        run_embed(params, paths)
        return paths

    return build


def tables(root: Path, name: str) -> pd.DataFrame:
    return pd.concat(
        [
            pd.read_parquet(p / f"{name}.parquet").assign(ep=p.name)
            for p in sorted(root.glob("ep-*"))
        ],
        ignore_index=True,
    )


def run_log(root: Path) -> Path:
    """The run log of a ``simulate`` into ``root`` (its default: beside it)."""
    return root.with_name(root.name + ".runs")


def calls_with_costs(root: Path) -> pd.DataFrame:
    """``llm_calls`` (what was asked and answered) beside ``llm_costs`` (how it was obtained: the
    run log's)."""
    calls, costs = tables(root, "llm_calls"), read_run_table(run_log(root), "llm_costs")
    assert costs["episode_id"].tolist() == calls["ep"].tolist()
    return pd.concat([calls, costs[["cost_usd", "latency_s", "cached", "retries"]]], axis=1)


def assert_replayed(live: Path, replay: Path) -> None:
    """Every file of ``replay``'s episodes is byte-identical to ``live``'s (meta.json included);
    its run log says every answer came from the cache at no cost."""
    episodes = sorted(p.name for p in live.glob("ep-*"))
    assert episodes and episodes == sorted(p.name for p in replay.glob("ep-*"))
    for ep in episodes:
        files = sorted(f.name for f in (live / ep).iterdir())
        assert files == sorted(f.name for f in (replay / ep).iterdir())
        assert "llm_costs.parquet" not in files
        for name in files:
            assert (live / ep / name).read_bytes() == (replay / ep / name).read_bytes(), name
    costs = read_run_table(run_log(replay), "llm_costs")
    assert len(costs) and costs["cached"].all() and (costs["cost_usd"] == 0).all()
