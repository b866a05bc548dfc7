"""The results site's cost to rate a model: the kept figures (rating_cost.csv) priced at the
params' reference prices, cached prompt tokens at the cached-input price, a total over the
instances, each instance marked when its params or prompts differ from those measured, and the
index page showing the table; the reference prices validated with the key named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from marketarena import rating_cost
from marketarena.config import ParamsError, parse_params
from marketarena.report.costs import cost_table

ROOT = Path(__file__).resolve().parents[2]
CRASH = {
    "runs": 1,
    "days": 5,
    "firms": 2,
    "roster": [
        {"name": "undercut", "kind": "baseline", "strategy": "undercut"},
        {"name": "myopic", "kind": "baseline", "strategy": "myopic"},
    ],
}
PRICES = {"cheap": {"in": 0.5, "cached_in": 0.05, "out": 2.0}, "dear": {"in": 3.0, "out": 15.0}}


def kept(tmp_path, monkeypatch, params) -> None:
    rows = [
        {
            "instance": "crash",
            "market": "crash",
            "episodes": 1,
            "calls": 10,
            "requests": 10,
            "prompt_tokens": 1_000_000,
            "cached_prompt_tokens": 600_000,
            "completion_tokens": 120,  # the mock's 12 a call
            "fingerprint": rating_cost.fingerprint(params, "crash"),
        },
        {
            "instance": "lemon",
            "market": "lemon",
            "episodes": 2,
            "calls": 20,
            "requests": 21,
            "prompt_tokens": 2_000_000,
            "cached_prompt_tokens": 0,
            "completion_tokens": 0,
            "fingerprint": "0" * 16,
        },
    ]
    monkeypatch.setattr(rating_cost, "TABLE", tmp_path / "rating_cost.csv")
    rating_cost.write_table(rows)


def test_the_kept_figures_are_priced_at_each_reference_model(tmp_path, monkeypatch, tiny_priors):
    """Per kind of answer at conftest.TINY_PRIORS' tokens a call: crash's own rows (bare_json 20,
    chain_of_thought 100, thinking 400); lemon has none, so the mock's answer (0 here) plus what
    the kind adds over bare_json's 10 (chain_of_thought 60 - 10), its one re-ask resending it."""
    params = parse_params({"markets": {"crash": CRASH}, "reference_prices": PRICES})
    kept(tmp_path, monkeypatch, params)
    table = cost_table(params)
    crash, lemon, total = table.rows
    assert table.models == ["cheap", "dear"] and table.point_kind == "chain_of_thought"
    # 10 requests x 100 tokens a call
    assert crash["usd"]["cheap"] == pytest.approx(0.4 * 0.5 + 0.6 * 0.05 + 1_000 / 1e6 * 2.0)
    assert crash["usd"]["dear"] == pytest.approx(1.0 * 3.0 + 1_000 / 1e6 * 15.0)  # no cached
    assert crash["usd_by_kind"]["thinking"]["dear"] == pytest.approx(3.0 + 4_000 / 1e6 * 15.0)
    assert crash["completion_by_kind"] == {
        "bare_json": 200,
        "chain_of_thought": 1_000,
        "thinking": 4_000,
    }
    # 21 requests x 50 tokens; the re-ask resends 50 more prompt tokens
    lemon_dear = (2_000_000 + 50) / 1e6 * 3.0 + 21 * 50 / 1e6 * 15.0
    assert lemon["usd"]["dear"] == pytest.approx(lemon_dear)
    assert crash["note"] == "" and lemon["note"] == "not in these params"
    assert total["calls"] == 30 and total["usd"]["dear"] == pytest.approx(3.015 + lemon_dear)
    assert table.kinds["thinking"]["completion_tokens"] == 4_000 + 21 * 290
    assert table.kinds["bare_json"]["per_call"] == {"crash": 20}
    other = parse_params({"markets": {"crash": {**CRASH, "days": 6}}, "reference_prices": PRICES})
    assert cost_table(other).rows[0]["note"] == "measured with other params or prompts"
    assert cost_table(parse_params({"markets": {"crash": CRASH}})) is None  # no prices


def test_the_index_page_shows_the_table(tmp_path, monkeypatch, tiny_priors):
    from stages.report import app

    params = parse_params({"markets": {"crash": CRASH}, "reference_prices": PRICES})
    kept(tmp_path, monkeypatch, params)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"markets": {"crash": CRASH}, "reference_prices": PRICES}))
    res = CliRunner().invoke(app, ["--params", str(path)])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "reports" / "site" / "index.html").read_text()
    assert 'id="cost-to-rate"' in html and "<th>cheap</th>" in html and "600,000" in html
    assert "$0.23" in html and "$9.03" in html  # crash at cheap, the total at dear
    assert 'id="cost-per-kind"' in html and "assume a model answering with chain of thought" in html
    assert "thinking: 400 in crash" in html


def test_reference_prices_are_checked_naming_the_key():
    with pytest.raises(
        ParamsError,
        match=r"reference_prices\.x\.cached_in must not exceed|"
        r"reference_prices\.x: .*cached_in must not exceed",
    ):
        parse_params(
            {
                "markets": {"crash": CRASH},
                "reference_prices": {"x": {"in": 1.0, "cached_in": 2.0, "out": 1.0}},
            }
        )
    with pytest.raises(ParamsError, match=r"reference_prices\.x\.out"):
        parse_params(
            {"markets": {"crash": CRASH}, "reference_prices": {"x": {"in": 1.0, "out": 1e9}}}
        )


def test_the_kept_table_is_of_the_default_params_and_the_default_params_price_it():
    defaults = yaml.safe_load((ROOT / "params.yaml").read_text())
    rows = rating_cost.read_table()
    assert rows and {r["instance"] for r in rows} == set(defaults["markets"])
    assert set(defaults["reference_prices"]) and all(r["calls"] > 0 for r in rows)
