"""Small supply_chain worlds without the embedding model: hand-made persona vectors and a
deterministic fake slogan embedder, so rule tests run in milliseconds."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from marketarena.core.params import RosterEntry
from marketarena.markets.supply_chain.market import BuyerModel, SupplyChainMarket
from marketarena.markets.supply_chain.params import ItemSpec, SupplyChainParams

DIM = 8


def fake_embed(texts):
    """Deterministic unit vectors from a hash of the text (stands in for sentence-transformers)."""
    out = []
    for t in texts:
        seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=DIM)
        out.append(v / np.linalg.norm(v))
    return np.array(out, dtype=np.float32)


def buyer_model(n_per_tribe=5, wtp=(1.5, 2.5, 3.0, 2.5), rho=0.6, seed=0) -> BuyerModel:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(4 * n_per_tribe, DIM))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return BuyerModel(
        persona_ids=np.array([f"p{i}" for i in range(4 * n_per_tribe)]),
        persona_tribe=np.repeat(np.arange(4), n_per_tribe),
        persona_rho=np.full(4 * n_per_tribe, rho),
        persona_vectors=vecs.astype(np.float32),
        tribe_names=["thrifty", "ethical", "hype", "quality"],
        tribe_weight=np.array([0.4, 0.3, 0.2, 0.1]),
        tribe_lambda=np.array([0.2, 0.8, 0.9, 0.5]),
        tribe_wtp_multiplier=np.array([np.nan if w is None else w for w in wtp], dtype=float),
    )


def small_params(**overrides) -> SupplyChainParams:
    roster = [
        RosterEntry(name="cp", kind="baseline", strategy="cost_plus"),
        RosterEntry(name="vol", kind="baseline", strategy="volume"),
        RosterEntry(name="res", kind="baseline", strategy="reserve"),
        RosterEntry(name="rnd", kind="baseline", strategy="random", params={"overspend_prob": 0.5}),
        RosterEntry(name="fol", kind="baseline", strategy="follower"),
        RosterEntry(name="tgt", kind="baseline", strategy="targeter", params={"tribe": "hype"}),
    ]
    items = [
        ItemSpec(id="a", category="commodity", qty=40, base_price=10),
        ItemSpec(id="b", category="luxury", qty=10, base_price=100),
    ]
    base = dict(runs=1, steps=4, rounds=2, beta=5, roster=roster, items=items)
    base.update(overrides)
    return SupplyChainParams(**base)


def make_market(params=None, buyers=None) -> SupplyChainMarket:
    params = params or small_params()
    ids = [f"R{i + 1:02d}" for i in range(len(params.roster))]
    return SupplyChainMarket(params, ids, buyers or buyer_model(), fake_embed)


@pytest.fixture
def market():
    return make_market()
