"""The fast paths of the core types: ``trusted`` builds what validation builds, ``Rows`` builds
what a DataFrame of its rows is, and an episode result reads the same either way."""

from __future__ import annotations

import pandas as pd

from marketarena.core.runner import EpisodeResult
from marketarena.core.types import Rows, as_frame, trusted
from marketarena.markets.double_auction.observations import QuoteObservation, RoundRecord, Trade


def test_trusted_equals_the_validated_model():
    trade = {"buyer": "B1", "seller": "S2", "price": 51}
    record = {
        "round": 3,
        "bids": {"B1": 60, "B2": None},
        "asks": {"S1": None, "S2": 42},
        "trades": [trusted(Trade, dict(trade))],
    }
    obs = {
        "agent_id": "B1",
        "role": "buyer",
        "value": 70,
        "round": 4,
        "rounds": 30,
        "n_buyers": 2,
        "n_sellers": 2,
        "max_quote": 100,
        "surplus": 9,
        "history": [trusted(RoundRecord, record)],
        "history_shown": 30,
    }
    fast = trusted(QuoteObservation, dict(obs))
    slow = QuoteObservation.model_validate({**obs, "history": [{**record, "trades": [trade]}]})
    assert fast == slow
    assert (
        fast.model_dump() == slow.model_dump() and fast.model_dump_json() == slow.model_dump_json()
    )
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.history[0].trades[0].price == 51


def test_rows_build_the_frame_of_their_rows_with_the_casts():
    rows = Rows(["step", "who", "bid"], [(0, "B1", 10), (1, "B2", 12)], {"bid": "int64"})
    pd.testing.assert_frame_equal(
        rows.frame(), pd.DataFrame({"step": [0, 1], "who": ["B1", "B2"], "bid": [10, 12]})
    )
    empty = Rows(["step", "bid"], [], {"bid": "int64"})
    assert len(empty) == 0 and empty.frame().dtypes["bid"] == "int64"
    joined = Rows(rows.columns, rows.rows + [(2, "B3", 7)], rows.dtypes).frame()
    assert joined["bid"].tolist() == [10, 12, 7]
    df = pd.DataFrame({"x": [1]})
    assert as_frame(df) is df


def test_an_episode_result_reads_rows_and_frames_alike():
    decisions = Rows(["step", "agent_id"], [(0, "B1")])
    market = {"states": pd.DataFrame({"step": [0]}), "trades": Rows(["step"], [])}
    result = EpisodeResult(
        {
            "decisions": decisions,
            "llm_calls": Rows(["step"], []),
            "llm_costs": Rows(["step"], []),
            "events": Rows(["step"], []),
        },
        market,
    )
    assert list(result.tables) == ["states", "trades"]
    assert result.decisions.to_dict("records") == [{"step": 0, "agent_id": "B1"}]
    assert result.decisions is result.decisions  # built once
    assert set(result.log_tables()) == {
        "decisions",
        "llm_calls",
        "llm_costs",
        "events",
        "states",
        "trades",
    }
    assert result.raw["trades"] is market["trades"] and "EpisodeResult" in repr(result)
