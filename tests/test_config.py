"""params.yaml validation: every bad input stops with a message that names the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from marketarena.config import ParamsError, load_params, parse_params

BASE = {
    "markets": {
        "supply_chain": {
            "roster": [
                {"name": "a", "kind": "baseline", "strategy": "cost_plus"},
                {"name": "b", "kind": "baseline", "strategy": "reserve", "params": {"markup": 0.3}},
            ]
        }
    },
}


def bad(mutate):
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(ParamsError) as exc:
        parse_params(data)
    return str(exc.value)


def test_defaults_give_the_paper_setting():
    p = parse_params(copy.deepcopy(BASE))
    mp = p.markets["supply_chain"]
    assert (mp.steps, mp.rounds, mp.k_max, mp.tau, mp.demand_ratio) == (6, 2, 20, 1.0, 0.95)
    assert mp.catalogue_value == 300_000
    assert p.personas.tribes["hype"].lam == 0.9


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["markets"]["supply_chain"].update(steps=-1), "markets.supply_chain.steps"),
        (lambda d: d["markets"]["supply_chain"].update(stesp=3), "markets.supply_chain.stesp"),
        (lambda d: d["markets"].update(nonsense={}), "markets.nonsense: unknown market"),
        (lambda d: d["markets"]["supply_chain"]["roster"][1].update(name="a"), "appears twice"),
        (
            lambda d: d["markets"]["supply_chain"]["roster"][0].update(strategy="magic"),
            "roster.0.strategy: unknown supply_chain strategy 'magic'",
        ),
        (
            lambda d: d["markets"]["supply_chain"]["roster"][1]["params"].update(markup="high"),
            "roster.1.params.markup",
        ),
        (
            lambda d: d["markets"]["supply_chain"]["roster"][1]["params"].update(tribe="goth"),
            "roster.1.params.tribe",
        ),
        (
            lambda d: d["markets"]["supply_chain"]["roster"].append(
                {"name": "g", "kind": "llm", "model": "gpt-9"}
            ),
            "roster.2.model: unknown model alias 'gpt-9'",
        ),
        (
            lambda d: d["markets"]["supply_chain"]["roster"].append({"name": "g", "kind": "llm"}),
            "needs a 'model'",
        ),
        (
            lambda d: d.update(personas={"tribes": {"thrifty": {"weight": 0.5, "lambda": 0.2}}}),
            "personas: tribe weights must sum to 1",
        ),
        (lambda d: d.update(stats={"n_boot": 5}), "stats.n_boot"),
        (
            lambda d: d["markets"]["supply_chain"].update(
                items=[
                    {"id": "a", "category": "c", "qty": 1, "base_price": 1},
                    {"id": "a", "category": "c", "qty": 1, "base_price": 1},
                ]
            ),
            "item ids must be unique",
        ),
        (lambda d: d["markets"]["supply_chain"]["roster"].pop(), "markets.supply_chain.roster"),
        (
            lambda d: d.update(models={"m": {"model": "x", "max_tokens": 10**18}}),
            "params.yaml: models.m.max_tokens: Input should be less than or equal to 1000000",
        ),
        (
            lambda d: d.update(models={"m": {"model": "x", "max_concurrency": 10**9}}),
            "params.yaml: models.m.max_concurrency: Input should be less than or equal to 1000",
        ),
    ],
)
def test_bad_params_name_the_key(mutate, expected):
    assert expected in bad(mutate)


def test_load_params_file_errors(tmp_path):
    with pytest.raises(ParamsError, match="no such params file"):
        load_params(tmp_path / "missing.yaml")
    broken = tmp_path / "p.yaml"
    broken.write_text("markets: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(broken)
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(BASE))
    assert load_params(good).markets["supply_chain"].runs == 10


def test_repository_params_yaml_is_valid():
    from pathlib import Path

    params = load_params(Path(__file__).resolve().parents[1] / "params.yaml")
    assert len(params.markets["supply_chain"].roster) == 20
    assert len({e.strategy for e in params.markets["supply_chain"].roster}) >= 5


# ------------------------------------------------------------------ issue 16 / 14: what validate must catch
BERTRAND = {
    "roster": [
        {"name": "n", "kind": "baseline", "strategy": "nash"},
        {"name": "c", "kind": "baseline", "strategy": "collude"},
    ]
}


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["markets"]["supply_chain"].update(seed=-1), "markets.supply_chain.seed"),
        (lambda d: d["markets"]["supply_chain"].update(runs=True), "markets.supply_chain.runs"),
        (lambda d: d["markets"]["supply_chain"].update(runs=2.5), "markets.supply_chain.runs"),
        (lambda d: d["markets"]["supply_chain"].update(runs=10**9), "markets.supply_chain.runs"),
        (lambda d: d["markets"]["supply_chain"].update(runs="1e9"), "markets.supply_chain.runs"),
        (
            lambda d: d["markets"]["supply_chain"].update(tau=float("inf")),
            "markets.supply_chain.tau",
        ),
        (
            lambda d: d["markets"]["supply_chain"].update(alpha=float("nan")),
            "markets.supply_chain.alpha",
        ),
        (
            lambda d: d["markets"]["supply_chain"].update(
                items=[{"id": "a", "category": "c", "qty": 1, "base_price": 10**20}]
            ),
            "items.0.base_price",
        ),
        (
            lambda d: d["markets"].update(bertrand={**BERTRAND, "alpha": float("inf")}),
            "markets.bertrand.alpha",
        ),
        (
            lambda d: d["markets"].update(
                double_auction={
                    "values": {"bimodal_low": [20, 0]},
                    "roster": [
                        {"name": f"t{i}", "kind": "baseline", "strategy": "truthful"}
                        for i in range(8)
                    ],
                }
            ),
            "bimodal_low: the range [20, 0] is reversed",
        ),
        (lambda d: d.update(ratings={"trueskill": {"sigma": -1}}), "ratings.trueskill.sigma"),
        (lambda d: d.update(ratings={"trueskill": {"mu": float("inf")}}), "ratings.trueskill.mu"),
        (lambda d: d.update(models=["gpt-4o"]), "models: must be a mapping"),
        (lambda d: d.update(llm=["x"]), "llm: must be a mapping"),
        (lambda d: d.update(personas={"rho": float("nan")}), "personas.rho"),
        (
            lambda d: d["markets"]["supply_chain"]["roster"][0].update(harness="reflection"),
            "'harness' is for LLM agents",
        ),
        (
            lambda d: d["markets"]["supply_chain"].update(market="nonsense"),
            "markets.supply_chain.market: unknown market 'nonsense'",
        ),
    ],
)
def test_validate_catches_what_a_later_stage_would_crash_on(mutate, expected):
    assert expected in bad(mutate)


def test_an_unknown_or_unsupported_harness_is_named():
    models = {"m": {"model": "x", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}}

    def with_llm(harness):
        data = copy.deepcopy(BASE)
        data["models"] = models
        data["markets"]["supply_chain"]["roster"].append(
            {"name": "g", "kind": "llm", "model": "m", "harness": harness}
        )
        return data

    with pytest.raises(
        ParamsError, match=r"roster.2.harness: supply_chain offers the harnesses plain"
    ):
        parse_params(with_llm("notes"))
    assert parse_params(with_llm("plain")).markets["supply_chain"].roster[2].harness == "plain"


def test_market_instances_of_one_kind():
    params = parse_params(
        {
            "markets": {
                "bertrand_a1": {"market": "bertrand", "alpha": 1, **BERTRAND},
                "bertrand_a10": {"market": "bertrand", "alpha": 10, **BERTRAND},
                "bertrand": BERTRAND,
            }
        }
    )
    kinds = {name: (mp.market, mp.instance, mp.alpha) for name, mp in params.markets.items()}
    assert kinds == {
        "bertrand_a1": ("bertrand", "bertrand_a1", 1.0),
        "bertrand_a10": ("bertrand", "bertrand_a10", 10.0),
        "bertrand": ("bertrand", "bertrand", 1.0),
    }


def test_params_files_that_yaml_would_silently_accept(tmp_path):
    twice = tmp_path / "twice.yaml"
    twice.write_text(yaml.safe_dump(BASE) + "markets:\n  cournot: {}\n")
    with pytest.raises(ParamsError, match="duplicate key 'markets'"):
        load_params(twice)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(yaml.safe_dump(BASE).encode() + "# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ParamsError, match="not UTF-8"):
        load_params(latin1)
    inner = tmp_path / "inner.yaml"
    inner.write_text("markets:\n  supply_chain:\n    runs: 2\n    runs: 3\n    roster: []\n")
    with pytest.raises(ParamsError, match="duplicate key 'runs'"):
        load_params(inner)


def test_a_params_file_nested_too_deeply_is_named(tmp_path):
    """The audit's E1: 5,000 nested lists gave `unexpected RecursionError ...; This is likely a
    bug`, naming neither the file nor the cause."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("markets: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ParamsError) as info:
        load_params(deep)
    assert str(info.value) == (
        f"{deep}: lists or mappings nested too deeply (hundreds of levels); "
        "params are a few levels deep"
    )
