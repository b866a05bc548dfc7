"""supply_chain prompts against expected text: Appendix B's system prompts word for word by
default, the hints only under ``prompts: extended``, 1-based steps ("Step: 6 of 6" last)."""

from __future__ import annotations

from marketarena.markets.supply_chain.observations import (
    Offer,
    ProcurementObservation,
    RetailObservation,
    render_messages,
)

APPENDIX_B_PROCUREMENT = """You are a retail agent participating in a multi-round sealed-bid auction for supplier inventory. Output ONLY valid, parseable JSON. No prose.

Output schema (strict):
{"bids": {"<item_id>": {"qty": <int>, "price": <int>}}}

Rules:
1. Only bid on items in the supplier offers.
2. qty and price must be non-negative integers.
3. Do NOT overspend: total spend must not exceed Funds.
4. Do NOT bid below base_price.
5. JSON must be strict (no trailing commas)."""

APPENDIX_B_RETAIL = """You are setting retail prices and a marketing slogan for your current catalog. Output ONLY valid, parseable JSON.

Output schema (strict):
{"prices": {"<item_id>": <int>, ...}, "slogan": "<string>"}

Rules:
1. You do NOT know buyer personas; infer from market_history.
2. price must be a non-negative integer.
3. Slogan should resonate with inferred personas.
4. Keep slogan short (≤ 25 words)."""

OFFERS = [
    Offer(item="item1", category="commodity", qty=200, base_price=50),
    Offer(item="item3", category="luxury", qty=133, base_price=150),
]


def procurement(step=0, prompts="appendix_b"):
    return ProcurementObservation(
        agent_id="R01",
        step=step,
        steps=6,
        round=1,
        rounds=2,
        n_retailers=4,
        funds=22500,
        overspent=False,
        offers=OFFERS,
        inventory={"item1": 0, "item3": 0},
        prompts=prompts,
    )


def retail(step=0, prompts="appendix_b"):
    return RetailObservation(
        agent_id="R01",
        step=step,
        steps=6,
        n_retailers=4,
        funds=10000,
        offers=OFFERS,
        inventory={"item1": 19, "item3": 3},
        avg_cost={"item1": 51.0, "item3": 151.0},
        max_slogan_words=25,
        prompts=prompts,
    )


def test_appendix_b_is_the_default_word_for_word():
    system, user = (m["content"] for m in render_messages(procurement()))
    assert system.strip() == APPENDIX_B_PROCUREMENT
    assert (
        user.strip()
        == """You are retailer R01 (your own row in the market history below).
Step: 1 of 6
Round: 1 of 2
Funds: 22500.00
Overspent on most recent bid: False
Supplier offers:
item_id,qty,base_price
item1,200,50
item3,133,150
Current inventory: item1,0; item3,0;\x20
Historical sales: (empty at step 1)"""
    )
    system, user = (m["content"] for m in render_messages(retail()))
    assert system.strip() == APPENDIX_B_RETAIL
    assert "Current inventory:\nitem1: 19, item3: 3\n" in user
    assert "cost" not in user and "Base prices" not in user


def test_the_last_step_reads_6_of_6():
    for obs in (procurement(step=5), retail(step=5)):
        assert "Step: 6 of 6" in render_messages(obs)[1]["content"]


def test_the_hints_come_only_with_the_extended_style():
    hints = [
        "pay-as-bid",
        "or all your bids this round are void",
        "buyers mostly see retailers",
        "price only items you hold",
        "Competing retailers: 4",
        "item_id,category,qty,base_price",
        "cost 51.00",
        "Base prices:",
    ]
    default = "".join(m["content"] for o in (procurement(), retail()) for m in render_messages(o))
    extended = "".join(
        m["content"]
        for o in (procurement(prompts="extended"), retail(prompts="extended"))
        for m in render_messages(o)
    )
    assert [h for h in hints if h in default] == []
    assert [h for h in hints if h not in extended] == []


def test_the_paper_parity_profile_merges_into_params_and_sets_what_it_says():
    from importlib import resources
    from pathlib import Path

    import yaml

    from marketarena.config import parse_params

    root = Path(__file__).resolve().parents[3]
    params = yaml.safe_load((root / "params.yaml").read_text())
    profile = yaml.safe_load(
        resources.files("marketarena.markets.supply_chain")
        .joinpath("paper_parity.yaml")
        .read_text()
    )
    params["personas"]["tribes"] = profile["personas"]["tribes"]
    params["models"] = profile["models"]
    params["markets"]["supply_chain"].update(profile["markets"]["supply_chain"])
    parsed = parse_params(params)
    assert all(t.wtp_multiplier is None for t in parsed.personas.tribes.values())
    spec = parsed.models["gpt-4o"]
    assert spec.structured_output == "none" and spec.max_reasks == 0
    assert parsed.markets["supply_chain"].prompts == "appendix_b"


def test_a_past_steps_history_block_is_rendered_once_and_reads_as_rendered_afresh():
    """Every retailer's prompt at every later decision point shows the same block for a past
    step: it is rendered once and kept with the step (``observations.step_text``), and a prompt
    built from it reads exactly as one rendered from a fresh copy of the step."""
    from marketarena.markets.supply_chain.observations import (
        ItemSummary,
        SellerSummary,
        StepSummary,
    )

    def past_step():
        return StepSummary(
            step=0,
            items=[
                ItemSummary(
                    item="item1",
                    supply=200,
                    units_won=20,
                    clearing_price=55,
                    units_sold=12,
                    avg_sale_price=80.0,
                )
            ],
            sellers=[
                SellerSummary(
                    agent_id="R02", prices={"item1": 80}, slogan='"Fair prices"', units_sold=12
                )
            ],
        )

    shared = past_step()
    obs = [
        procurement(step=1).model_copy(update={"history": [shared]}),
        retail(step=1).model_copy(update={"history": [shared]}),
    ]
    first = [render_messages(o) for o in obs]
    assert (
        "Step 1 retailers (id | prices | units sold | slogan):\nR02 | item1=80 | 12 | "
        '"Fair prices"' in first[0][1]["content"]
    )
    assert [render_messages(o.model_copy(update={"history": [past_step()]})) for o in obs] == first
    shared._text = "KEPT\n"  # what later prompts reuse, not render again
    assert all(
        "Historical sales (market_history):\nKEPT\n" in render_messages(o)[1]["content"]
        for o in obs
    )
