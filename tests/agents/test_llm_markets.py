"""LLM seats in double_auction, cournot and bertrand, over the real openai client with a scripted
fake endpoint: what the model answers is what the market applies, round after round, and what the
market shows the model (cournot's PLANS / INSIGHTS notes, the trader's private value) comes back in
the next prompt."""

from __future__ import annotations

import json
import re

from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.markets import bertrand, cournot, double_auction
from marketarena.markets.cournot.economics import reference_summary
from marketarena.testing import play_over_fake

MODELS = {
    "fake": {
        "model": "fake-model",
        "base_url": "http://fake.invalid/v1",
        "api_key_env": None,
        "max_tokens": 200,
    }
}


def baseline(name: str, strategy: str | None = None) -> dict:
    return {"name": name, "kind": "baseline", "strategy": strategy or name}


LLM = {"name": "gpt", "kind": "llm", "model": "fake"}


def play(module, params, fake: FakeEndpoint, resources=None):
    return play_over_fake(
        module.__name__.rpartition(".")[2], params, fake, resources=resources, seed=0
    )


def user_text(request) -> str:
    return request.body["messages"][-1]["content"]


def test_llm_trader_in_the_call_market(tmp_path):
    def responder(body):  # shade the private value by 7 ticks
        text = body["messages"][-1]["content"]
        value = int(re.search(r"Your private (?:value|cost): (\d+)", text).group(1))
        buyer = "(buyer)" in text
        return Reply({"quote": max(0, value - 7) if buyer else min(100, value + 7)})

    roster = [LLM] + [
        baseline(n) for n in ("truthful", "zip", "gd", "sniper", "zic", "aa", "shade")
    ]
    params = parse_params(
        {
            "models": MODELS,
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {
                "double_auction": {
                    "rounds": 5,
                    "roster": roster,
                    "pool": [e["name"] for e in roster],
                }
            },
        }
    )
    fake = FakeEndpoint(responder=responder)
    result, table = play(double_auction, params, fake)
    me = table.loc[table["name"] == "gpt", "agent_id"].item()
    states = result.tables["states"].query("agent_id == @me")
    assert len(states) == 5 and fake.n_calls == 5 and result.llm_calls["valid"].all()
    value = int(states["value"].iloc[0])
    shaded = max(0, value - 7) if me.startswith("B") else min(100, value + 7)
    assert (states["quote"] == shaded).all()  # the answer is the quote the market cleared
    # the public history reaches the model: round 2's prompt shows round 1's quotes
    assert "Round 1: bids" in user_text(fake.requests[1]) and f"{me}={shaded}" in user_text(
        fake.requests[1]
    )


def test_llm_firm_in_cournot_keeps_its_notes(tmp_path):
    def responder(body):
        text = body["messages"][-1]["content"]
        seen = len(re.findall(r"^Round \d+:", text, flags=re.MULTILINE))
        return Reply(
            {
                "observations_and_thoughts": f"{seen} rounds seen",
                "new_content": {
                    "PLANS.txt": f"plan written after {seen} rounds",
                    "INSIGHTS.txt": "A sells dearer",
                },
                "chosen_quantities": {"Product_A": 20, "Product_B": 10},
            }
        )

    params = parse_params(
        {
            "models": MODELS,
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {"cournot": {"runs": 1, "rounds": 4, "roster": [LLM, baseline("nash")]}},
        }
    )
    mp = params.markets["cournot"]
    fake = FakeEndpoint(responder=responder)
    result, table = play(cournot, params, fake, reference_summary(mp.config()))
    assert fake.n_calls == 4 and result.llm_calls["valid"].all()
    first = user_text(fake.requests[0])
    assert (
        "(no rounds played yet)" in first and "PLANS.txt\n+++++++++++++++++++++\n(empty)" in first
    )
    for t in range(1, 4):  # each round's prompt carries the notes the firm wrote the round before
        text = user_text(fake.requests[t])
        assert f"plan written after {t - 1} rounds" in text and "A sells dearer" in text
        assert len(re.findall(r"^Round \d+:", text, flags=re.MULTILINE)) == t
    states = result.tables["states"].query("agent_id == 'F1'")
    planned = states.pivot(index="step", columns="product", values="planned")
    assert (planned["A"] == 20).all() and (planned["B"] == 10).all()
    # the decision log keeps the whole answer, notes included
    logged = json.loads(result.decisions.query("agent_id == 'F1'")["action"].iloc[-1])
    assert logged["new_content"]["PLANS.txt"] == "plan written after 3 rounds"


def test_llm_firm_in_bertrand_sets_its_price(tmp_path):
    answer = {
        "observations_and_thoughts": "",
        "new_content": {"PLANS.txt": "", "INSIGHTS.txt": ""},
        "chosen_prices": {"Product_A": "1.75"},
    }  # the seed's template quotes the number
    params = parse_params(
        {
            "models": MODELS,
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {"bertrand": {"runs": 1, "rounds": 3, "roster": [LLM, baseline("nash")]}},
        }
    )
    fake = FakeEndpoint(responder=lambda body: Reply(answer))
    result, table = play(bertrand, params, fake)
    assert fake.n_calls == 3 and result.llm_calls["valid"].all()
    states = result.tables["states"].query("agent_id == 'F1'")
    assert states["price"].tolist() == [1.75, 1.75, 1.75]
