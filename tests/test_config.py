"""params.yaml validation: every bad input stops with a message that names the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from marketarena.config import ParamsError, load_params, parse_params

BASE = {
    "markets": {"supply_chain": {"roster": [
        {"name": "a", "kind": "baseline", "strategy": "cost_plus"},
        {"name": "b", "kind": "baseline", "strategy": "reserve", "params": {"markup": 0.3}},
    ]}},
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


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["markets"]["supply_chain"].update(steps=-1), "markets.supply_chain.steps"),
    (lambda d: d["markets"]["supply_chain"].update(stesp=3), "markets.supply_chain.stesp"),
    (lambda d: d["markets"].update(nonsense={}), "markets.nonsense: unknown market"),
    (lambda d: d["markets"]["supply_chain"]["roster"][1].update(name="a"), "appears twice"),
    (lambda d: d["markets"]["supply_chain"]["roster"][0].update(strategy="magic"),
     "roster.0.strategy: unknown supply_chain strategy 'magic'"),
    (lambda d: d["markets"]["supply_chain"]["roster"][1]["params"].update(markup="high"),
     "roster.1.params.markup"),
    (lambda d: d["markets"]["supply_chain"]["roster"][1]["params"].update(tribe="goth"),
     "roster.1.params.tribe"),
    (lambda d: d["markets"]["supply_chain"]["roster"].append(
        {"name": "g", "kind": "llm", "model": "gpt-9"}), "roster.2.model: unknown model alias 'gpt-9'"),
    (lambda d: d["markets"]["supply_chain"]["roster"].append({"name": "g", "kind": "llm"}),
     "needs a 'model'"),
    (lambda d: d.update(personas={"tribes": {"thrifty": {"weight": 0.5, "lambda": 0.2}}}),
     "personas: tribe weights must sum to 1"),
    (lambda d: d.update(stats={"n_boot": 5}), "stats.n_boot"),
    (lambda d: d["markets"]["supply_chain"].update(items=[
        {"id": "a", "category": "c", "qty": 1, "base_price": 1},
        {"id": "a", "category": "c", "qty": 1, "base_price": 1}]), "item ids must be unique"),
    (lambda d: d["markets"]["supply_chain"]["roster"].pop(), "markets.supply_chain.roster"),
])
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
