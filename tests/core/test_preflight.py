"""Issue 56: the cost where the decision is made. A simulate run with priced LLM seats says its
estimate before the first call; over ``llm.max_cost_usd`` it stops there (no request, no episode,
the key named); a resumed run estimates what is left; what spends nothing never stops.

english_auction's tiny instance with one LLM seat on the fake endpoint (``llm.fake``: every
request it receives is counted), at 50 USD per million tokens in and out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from marketarena import estimate as est
from marketarena.config import load_params, parse_params
from marketarena.core.types import RunAborted
from marketarena.faults import KEPT, describe
from marketarena.llm.fake import FAKE_BASE_URL, FakeEndpoint, schema_answer
from marketarena.llm.ledger import read_ledger
from marketarena.simulate import load_inputs, simulate, spend_ledger_path
from marketarena.simulate.preflight import ESTIMATE, OverBudget

ROOT = Path(__file__).resolve().parents[2]
PRICE = 50.0
KIND = "english_auction"


def params_of(tmp_path: Path, price: float = PRICE, **llm):
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / KIND / "tiny_params.yaml").read_text()
    )
    block["roster"] = block["roster"][:2] + [{"name": "m", "kind": "llm", "model": "fake"}]
    return parse_params(
        {
            "models": {
                "fake": {
                    "model": "fake-model",
                    "base_url": FAKE_BASE_URL,
                    "api_key_env": None,
                    "max_tokens": 200,
                    "price_in_per_mtok": price,
                    "price_out_per_mtok": price,
                }
            },
            "llm": {"cache_dir": str(tmp_path / "cache"), **llm},
            "markets": {KIND: block},
            "execution": {"workers": 1},
        }
    )


def run(tmp_path: Path, params, out: str = "eps", progress: bool = False):
    fake = FakeEndpoint(responder=schema_answer)
    try:
        return fake, simulate(
            KIND,
            params,
            tmp_path / "data",
            tmp_path / out,
            progress=progress,
            openai_factory=fake.factory,
        )
    except RunAborted as exc:
        return fake, exc


def units(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def recorded(tmp_path: Path, out: str = "eps") -> dict:
    return json.loads((tmp_path / f"{out}.runs" / ESTIMATE).read_text())


def point(tmp_path: Path, params, episodes: set[str] | None = None) -> float:
    """The estimate's point for ``episodes`` (every one: None), computed apart from the run."""
    _, resources = load_inputs(KIND, params, tmp_path / "data")
    found = est.estimate(
        KIND,
        params,
        resources,
        history=est.earlier_usage(tmp_path / "data" / "run_logs"),
        episodes=episodes,
    )
    return found.cost_usd


def test_a_run_over_its_cap_stops_before_the_first_call(tmp_path):
    fake, got = run(tmp_path, params_of(tmp_path, max_cost_usd=0.0001))
    assert isinstance(got, OverBudget)
    assert fake.n_calls == 0  # no request reached the endpoint
    assert units(tmp_path / "eps") == []  # no episode written
    assert read_ledger(spend_ledger_path(tmp_path / "data", KIND)).get("spent_usd", 0.0) == 0.0
    line, code = describe(got, KEPT)
    assert code == 1 and "\n" not in line
    assert "llm.max_cost_usd $0.00010" in line and "raise llm.max_cost_usd" in line
    held = recorded(tmp_path)
    assert held["stopped"] and held["episodes"] == 4 and held["max_cost_usd"] == 0.0001
    assert held["cost_usd"] > 0.0001 and held["calls"] > 0


def test_the_point_estimate_decides(tmp_path):
    p = point(tmp_path, params_of(tmp_path))
    assert p > 0
    fake, got = run(tmp_path, params_of(tmp_path, max_cost_usd=0.99 * p), out="below")
    assert isinstance(got, OverBudget) and fake.n_calls == 0
    assert recorded(tmp_path, "below")["cost_usd"] == pytest.approx(p)
    # just above the point: the run starts (the budget's guard may still stop it midway)
    fake, got = run(tmp_path, params_of(tmp_path, max_cost_usd=1.01 * p), out="above")
    assert not isinstance(got, OverBudget) and fake.n_calls > 0


def test_a_run_under_its_cap_says_its_estimate_and_plays(tmp_path, capsys):
    fake, got = run(tmp_path, params_of(tmp_path, max_cost_usd=100.0), progress=True)
    assert isinstance(got, dict) and got["played"] == 4 and fake.n_calls > 0
    said = capsys.readouterr().err.splitlines()
    [line] = [s for s in said if "estimate before the first call" in s]
    assert line.startswith(f"{KIND}: ") and "4 episodes with LLM seats left" in line
    assert "llm.max_cost_usd $100.00" in line
    assert said.index(line) == 0  # before anything the run says while playing
    assert got["estimate"] == recorded(tmp_path) and not got["estimate"]["stopped"]


def test_a_resumed_run_estimates_what_is_left_and_counts_what_was_spent(tmp_path):
    _, first = run(tmp_path, params_of(tmp_path, max_cost_usd=100.0))
    assert first["played"] == 4
    spent = read_ledger(spend_ledger_path(tmp_path / "data", KIND))["spent_usd"]
    assert spent > 0
    shutil.rmtree(tmp_path / "eps" / "ep-0002")  # as if the run had stopped before this one
    left = point(tmp_path, params_of(tmp_path), {"ep-0002"})
    every = point(tmp_path, params_of(tmp_path))
    assert 0 < left < every
    # what the cap leaves after the first run's spend is less than the one episode left
    fake, got = run(tmp_path, params_of(tmp_path, max_cost_usd=spent + 0.5 * left))
    assert isinstance(got, OverBudget) and fake.n_calls == 0
    assert units(tmp_path / "eps") == ["ep-0000", "ep-0001", "ep-0003"]  # nothing lost
    assert "spent by earlier runs" in str(got)
    held = recorded(tmp_path)
    assert held["episodes"] == 1 and held["cost_usd"] == pytest.approx(left)
    assert held["spent_usd"] == pytest.approx(spent)
    # with room for it, the episode left is played (its answers replayed from the response
    # cache the first run filled: the estimate cannot tell, module docstring of preflight.py)
    _, got = run(tmp_path, params_of(tmp_path, max_cost_usd=100.0))
    assert got["played"] == 1 and got["estimate"]["episodes"] == 1


def test_what_spends_nothing_never_stops(tmp_path):
    # free: the same model at zero prices, a cap of zero
    fake, got = run(tmp_path, params_of(tmp_path, price=0.0, max_cost_usd=0.0), out="free")
    assert got["played"] == 4 and fake.n_calls > 0 and "estimate" not in got
    assert not (tmp_path / "free.runs" / ESTIMATE).exists()
    # a replay from the response cache (cache_only): the priced model, a cap of zero
    _, live = run(tmp_path, params_of(tmp_path), out="live")
    assert live["played"] == 4
    replay = params_of(tmp_path, max_cost_usd=0.0, cache_only=True)
    fake, got = run(tmp_path, replay, out="replay")
    assert got["played"] == 4 and fake.n_calls == 0 and "estimate" not in got


def test_stop_on_estimate_false_plays_what_the_cap_buys(tmp_path):
    cap = round(0.5 * point(tmp_path, params_of(tmp_path)), 4)  # room for some calls, not all
    fake, got = run(tmp_path, params_of(tmp_path, max_cost_usd=cap, stop_on_estimate=False))
    assert isinstance(got, RunAborted) and not isinstance(got, OverBudget)
    assert f"budget max_cost_usd={cap:.4f}" in str(got) and fake.n_calls > 0
    assert recorded(tmp_path)["stopped"] is False
    assert 0 < read_ledger(spend_ledger_path(tmp_path / "data", KIND))["spent_usd"] <= cap


def test_the_shipped_params_carry_a_finite_cap():
    cap = load_params(ROOT / "params.yaml").llm.max_cost_usd
    assert cap is not None and 0 < cap < float("inf")
