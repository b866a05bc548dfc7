"""Shared by the LLM-agent tests: a supply_chain world with personas and embeddings, reading a run's
log tables, and the replay comparison (identical logs but for how each answer was obtained)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest

from marketarena.config import Params, parse_params
from marketarena.pipeline import Paths, run_embed, run_personas

# llm_calls columns that must replay exactly; cached / cost_usd / latency_s / retries tell how the
# answer was obtained (network or cache), not what it was
REPLAYED_CALL_COLUMNS = ["step", "round", "phase", "agent_id", "model", "request_hash",
                         "prompt_tokens", "completion_tokens", "attempts", "valid"]


def supply_chain_params(tmp_path: Path, models: dict[str, Any], roster: list[dict], *,
                        llm: dict | None = None, **market: Any) -> Params:
    return parse_params({
        "personas": {"per_tribe": 4},
        "embedding": {"cache_dir": str(tmp_path / "emb")},
        "models": models,
        "llm": {"cache_dir": str(tmp_path / "llm"), **(llm or {})},
        "markets": {"supply_chain": {"beta": 5, **market, "roster": roster}},
    })


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
    return pd.concat([pd.read_parquet(p / f"{name}.parquet").assign(ep=p.name)
                      for p in sorted(root.glob("ep-*"))], ignore_index=True)


def assert_replayed(live: Path, replay: Path) -> None:
    """Every episode log of ``replay`` equals ``live``'s; llm_calls says every answer came from the
    cache at no cost."""
    episodes = sorted(p.name for p in live.glob("ep-*"))
    assert episodes and episodes == sorted(p.name for p in replay.glob("ep-*"))
    for ep in episodes:
        files = sorted(f.name for f in (live / ep).glob("*.parquet"))
        assert files == sorted(f.name for f in (replay / ep).glob("*.parquet"))
        for name in files:
            a, b = pd.read_parquet(live / ep / name), pd.read_parquet(replay / ep / name)
            if name == "llm_calls.parquet":
                assert b["cached"].all() and (b["cost_usd"] == 0).all()
                a, b = a[REPLAYED_CALL_COLUMNS], b[REPLAYED_CALL_COLUMNS]
            pd.testing.assert_frame_equal(a, b, check_exact=True)
