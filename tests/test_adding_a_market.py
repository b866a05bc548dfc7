"""Adding a market touches only its folder (docs/adding-a-market.md): ``tests/toy_market/toy/``, a
posted-price market written outside the package, is registered (``core.registry.register``),
proves itself with the contract suite the package ships (``marketarena.testing.contract``), plays
an LLM seat from its templates, and goes through every stage of the pipeline to its page on the
results site; and nothing under ``lib/`` names it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
import yaml

from marketarena.config import parse_params
from marketarena.core.registry import market_kind, market_names, register
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.pipeline import (
    Paths,
    run_figures,
    run_instances,
    run_metrics,
    run_overall,
    run_ratings,
    run_report,
    run_simulate,
    run_stats,
)
from marketarena.testing import contract, play_over_fake

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "toy_market" / "toy"


@pytest.fixture
def toy():
    """The toy market registered for the test, removed again after it."""
    from tests.toy_market import toy

    unregister = register(toy.KIND)
    try:
        yield toy.KIND
    finally:
        unregister()


def tiny_block() -> dict:
    return yaml.safe_load((TOY / "tiny_params.yaml").read_text(encoding="utf-8"))


def test_register_adds_the_kind_and_its_remover_removes_it():
    from tests.toy_market import toy

    assert "toy" not in market_names()
    unregister = register(toy.KIND)
    try:
        assert "toy" in market_names() and market_kind("toy").folder == TOY
        assert parse_params({"markets": {"toy": tiny_block()}}).markets["toy"].rounds == 5
    finally:
        unregister()
    assert "toy" not in market_names()
    with pytest.raises(KeyError, match="unknown market 'toy'"):
        market_kind("toy")


def test_the_toy_market_meets_the_contract(toy, tmp_path):
    contract.check_all("toy", tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == set(contract.CHECKS)  # a fresh world each


def test_the_toy_market_through_every_stage(toy, tmp_path):
    """instances -> simulate -> metrics -> stats -> ratings -> figures -> overall -> report, on
    params holding the toy instance alone."""
    params = parse_params({"markets": {"toy": tiny_block()}, "execution": {"workers": 1}})
    paths = Paths(tmp_path)
    infos = run_instances(params, paths)
    assert infos["toy"]["market"] == "toy"
    assert json.loads(paths.instance("toy").read_text())["code"] == infos["toy"]["code"]
    assert run_simulate("toy", params, paths, progress=False)["played"] == 4
    assert run_simulate("toy", params, paths, progress=False)["played"] == 0  # resumes: all done
    frames = run_metrics("toy", params, paths)
    assert len(frames["agents"]) == 8 and (paths.metrics("toy") / "validity.parquet").is_file()
    assert run_stats("toy", params, paths)["target"] == "profit"
    board = run_ratings("toy", params, paths)
    assert set(board["name"]) == {"fixed_6", "undercut"}
    on_disk = pd.read_csv(paths.reports / "leaderboards" / "toy.csv")
    assert set(on_disk["name"]) == {"fixed_6", "undercut"} and "fallback" in on_disk.columns
    # undercut posts 5, 4, 3, ... below fixed_6's 6 and sells every round: it leads the board
    assert board["name"].iloc[0] == "undercut"
    figures = run_figures("toy", params, paths)
    assert [p.name for p in figures] == ["profit.png"] and figures[0].stat().st_size > 0
    assert (paths.figure_data("toy") / "profit.csv").is_file()
    run_overall(params, paths)
    written = run_report(params, paths)
    site = paths.reports / "site"
    assert site / "toy.html" in written and site / "index.html" in written
    page = (site / "toy.html").read_text(encoding="utf-8")
    assert "Profit per seller" in page and "undercut" in page and "fixed_6" in page
    assert (site / "toy" / "figures" / "profit.png").is_file()
    assert "toy.html" in (site / "index.html").read_text(encoding="utf-8")


def test_a_market_registered_in_this_process_plays_in_spawned_workers(toy, tmp_path, monkeypatch):
    """A spawned worker (or a Ray task) starts with no registration of its own: the run it is sent
    carries the market's declaration, and the worker registers it (``simulate/context.py``). Its
    logs are those of one process."""
    from marketarena.simulate import workers

    monkeypatch.setattr(workers, "start_method", lambda: "spawn")
    block = {**tiny_block(), "runs": 6}
    logs = {}
    for n in (1, 2):
        params = parse_params({"markets": {"toy": block}, "execution": {"workers": n}})
        paths = Paths(tmp_path / f"w{n}")
        run_instances(params, paths)
        assert run_simulate("toy", params, paths, progress=False)["played"] == 6
        logs[n] = {
            p.relative_to(paths.episodes("toy")): p.read_bytes()
            for p in sorted(paths.episodes("toy").rglob("*.parquet"))
        }
    assert logs[1] == logs[2] and len(logs[1]) > 6


def test_an_llm_seller_reads_the_toy_templates_and_its_answer_is_the_price(toy, tmp_path):
    def responder(body):  # one below the lowest price of the last round, 9 at the first
        text = body["messages"][-1]["content"]
        last = re.search(r"Lowest price last round: (\d+)", text)
        return Reply({"price": 9 if last is None else int(last.group(1)) - 1})

    block = {
        **tiny_block(),
        "roster": [
            {"name": "gpt", "kind": "llm", "model": "fake"},
            {"name": "fixed_6", "kind": "baseline", "strategy": "fixed", "params": {"price": 6}},
        ],
    }
    params = parse_params(
        {
            "models": {
                "fake": {
                    "model": "fake-model",
                    "base_url": "http://fake.invalid/v1",
                    "api_key_env": None,
                    "max_tokens": 50,
                }
            },
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {"toy": block},
        }
    )
    fake = FakeEndpoint(responder=responder)
    result, table = play_over_fake("toy", params, fake)
    assert fake.n_calls == 5 and result.llm_calls["valid"].all()
    first = fake.requests[0].body["messages"]
    assert "values it at 10" in first[0]["content"]
    assert "Round 1." in first[-1]["content"] and "none yet" in first[-1]["content"]
    me = table.loc[table["name"] == "gpt", "agent_id"].item()
    sales = result.tables["sales"]
    assert sales.loc[sales["agent_id"] == me, "price"].tolist() == [9, 5, 4, 3, 2]
    summary = market_kind("toy").analysis.summarize(table, result)
    assert summary.iloc[0]["name"] == "gpt" and summary["invalid_decisions"].sum() == 0


def test_nothing_under_lib_names_the_toy_market():
    """Adding the toy market changed nothing outside its folder (and its tests)."""
    named = re.compile(r"\btoy\b|toy_market", re.IGNORECASE)
    found = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "lib").rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.suffix not in (".png", ".pyc")
        and named.search(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, f"lib/ names the toy market: {found}"
