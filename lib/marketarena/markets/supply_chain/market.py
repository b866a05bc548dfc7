"""The supply_chain market (Market-Bench): procurement rounds, then retail, T times.

Decision points per step: ``rounds`` procurement rounds (all active retailers bid; every round but
the last is indicative), then one retail decision (prices + slogan). After retail the step's
buyers are drawn, see a persona-gated subset of retailers and walk them cheapest first.

Accounting, per retailer and step (all logged in ``states``):
  spend   = Σ allocated × own bid price (pay-as-bid), paid at settlement;
  revenue = Σ units sold × posted price;
  COGS    = units sold × average unit cost of the stock they came from (moving average);
  holding = h × base value of end-of-step stock;
  profit  = revenue − COGS − holding;   funds += revenue − holding − spend.
A retailer whose funds are negative after holding costs is bankrupt: inactive for the rest of the
episode (no decisions, invisible to buyers), its stock frozen. Unsold stock carries over.

Documented fallbacks (applied by the runner to an invalid answer): procurement → no bids (zero
allocation); an over-budget set is invalid too, and the market's response to it (``Overspent``)
also raises the ``overspent`` flag shown next round; retail → no prices and an empty slogan
(nothing sold; an empty slogan has similarity 0 to every persona).
Non-fatal adjustments, logged as notes: bids on unknown items, below base price or with qty 0 are
dropped; prices for items not held are dropped; a slogan is cleaned and capped in words and
characters (``core.prompts.quote_text``) and reaches rivals' prompts only as a quoted string.

:class:`SupplyChainRules` is what the pipeline plays it by (``core.rules``): every roster entry a
retailer in every episode, the personas and their embeddings as its inputs
(:func:`load_persona_vectors`, read again by the analysis for the slogan similarities), the
buyers and the slogan embedder loaded once per run (:class:`Resources`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.prompts import quote_text
from marketarena.core.rules import MarketRules, Seat
from marketarena.core.types import AgentId, Checked, Decision
from marketarena.embeddings import Embedder, quantize, similarity
from marketarena.markets.supply_chain import rules
from marketarena.markets.supply_chain.baselines import STRATEGIES
from marketarena.markets.supply_chain.log_tables import SupplyChainLog
from marketarena.markets.supply_chain.observations import (
    Bid,
    Offer,
    ProcurementAction,
    ProcurementObservation,
    RetailAction,
    RetailObservation,
    StepSummary,
    procurement_action,
    render_messages,
    retail_action,
)
from marketarena.markets.supply_chain.params import SupplyChainParams, consideration_size


@dataclass(frozen=True)
class Overspent:
    """What an over-budget bid set becomes: no bids this round, and the ``overspent`` flag."""

    requested: ProcurementAction


@dataclass
class BuyerModel:
    """The persona table as arrays, plus the tribe parameters (from ``params.personas``)."""

    persona_ids: np.ndarray  # (P,) str
    persona_tribe: np.ndarray  # (P,) tribe index
    persona_rho: np.ndarray  # (P,)
    persona_vectors: np.ndarray  # (P, d) unit vectors, quantised (``embeddings.quantize``)
    tribe_names: list[str]
    tribe_weight: np.ndarray
    tribe_lambda: np.ndarray
    tribe_wtp_multiplier: np.ndarray  # NaN = no cap


class SupplyChainMarket(SupplyChainLog):
    name = "supply_chain"

    def __init__(
        self, params: SupplyChainParams, agent_ids: list[AgentId], buyers: BuyerModel, embed
    ):
        """``embed(texts) -> (len, d) unit vectors``: the slogan embedder (cached)."""
        self.p = params
        self.ids = list(agent_ids)
        self.index = {a: i for i, a in enumerate(self.ids)}
        self.buyer_model = buyers
        self.embed = embed
        self.items = [it.id for it in params.items]
        self.item_index = {x: i for i, x in enumerate(self.items)}
        self._ids = np.array(self.ids, dtype=object)  # fancy-indexable names for the log tables
        self._items = np.array(self.items, dtype=object)
        self.supply = np.array([it.qty for it in params.items], dtype=np.int64)
        self.base = np.array([it.base_price for it in params.items], dtype=np.int64)
        self.offers = [
            Offer(item=it.id, category=it.category, qty=it.qty, base_price=it.base_price)
            for it in params.items
        ]

    # ------------------------------------------------------------------ episode lifecycle
    def reset(self, seed: int) -> Decision:
        auction_ss, buyer_ss = np.random.SeedSequence([seed, 0]).spawn(2)
        self.auction_rng = np.random.default_rng(auction_ss)
        self.buyer_rng = np.random.default_rng(buyer_ss)
        m, n = len(self.ids), len(self.items)
        self.funds = np.full(m, float(self.p.initial_funds))
        self.inv = np.zeros((m, n), dtype=np.int64)
        self.inv_value = np.zeros((m, n))  # cost basis of the stock held
        self.active = np.ones(m, dtype=bool)
        self.overspent = np.zeros(m, dtype=bool)
        self.t, self.r = 0, 0
        self.history: list[StepSummary] = []
        self._indicative: np.ndarray | None = None
        self._bids: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.chunks: dict[str, list[dict]] = {k: [] for k in self.TABLE_COLUMNS}
        return self._procurement_decision()

    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        if self._phase == "procurement":
            return self._after_procurement(actions)
        return self._after_retail(actions)

    # ------------------------------------------------------------------ validation
    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        i = self.index[agent_id]
        if isinstance(action, ProcurementAction):
            notes, kept = [], {}
            for item, bid in action.bids.items():
                x = self.item_index.get(item)
                if x is None:
                    notes.append(f"dropped bid on unknown item {item!r}")
                elif bid.qty == 0:
                    continue
                elif bid.price < self.base[x]:
                    notes.append(
                        f"dropped bid on {item} below base price ({bid.price} < {self.base[x]})"
                    )
                else:
                    kept[item] = bid
            total = sum(b.qty * b.price for b in kept.values())
            if total > self.funds[i]:
                return Checked(
                    Overspent(action),
                    f"overspent: bids total {total} > funds {self.funds[i]:.2f}",
                    notes,
                )
            return Checked(ProcurementAction(bids=kept), None, notes)
        notes, prices = [], {}
        for item, price in action.prices.items():
            x = self.item_index.get(item)
            if x is None or self.inv[i, x] == 0:
                notes.append(f"dropped price for {item!r} (not held)")
            else:
                prices[item] = price
        slogan = quote_text(action.slogan, self.p.slogan_max_chars, self.p.slogan_max_words)
        if slogan.truncated:
            notes.append(
                f"slogan cut to {self.p.slogan_max_words} words / "
                f"{self.p.slogan_max_chars} characters"
            )
        return Checked(RetailAction(prices=prices, slogan=slogan.text), None, notes)

    def fallback(self, agent_id: AgentId, decision: Decision) -> BaseModel:
        return ProcurementAction() if decision.phase == "procurement" else RetailAction()

    # ------------------------------------------------------------------ procurement
    def _acting(self) -> list[AgentId]:
        return [a for a, on in zip(self.ids, self.active) if on]

    def _inventory(self, i: int) -> dict[str, int]:
        return {x: int(self.inv[i, j]) for j, x in enumerate(self.items)}

    def _procurement_decision(self) -> Decision:
        self._phase = "procurement"
        hist = self.history[-self.p.history_window :] if self.p.history_window else []
        indicative = clearing = None
        if self._indicative is not None:
            alloc, price = self._indicative, self._bids[1]
            clearing = {
                x: self._clearing_price(alloc[:, j], price[:, j]) for j, x in enumerate(self.items)
            }
        obs = {}
        for a in self._acting():
            i = self.index[a]
            if self._indicative is not None:
                indicative = {
                    x: Bid(qty=int(self._indicative[i, j]), price=int(self._bids[1][i, j]))
                    for j, x in enumerate(self.items)
                    if self._indicative[i, j] > 0
                }
            obs[a] = ProcurementObservation(
                agent_id=a,
                step=self.t,
                steps=self.p.steps,
                round=self.r + 1,
                rounds=self.p.rounds,
                n_retailers=len(self.ids),
                funds=round(float(self.funds[i]), 2),
                overspent=bool(self.overspent[i]),
                offers=self.offers,
                inventory=self._inventory(i),
                indicative=indicative,
                indicative_clearing=clearing,
                history=hist,
                prompts=self.p.prompts,
            )
        return Decision("procurement", self.t, self.r, obs, procurement_action(tuple(self.items)))

    @staticmethod
    def _clearing_price(alloc: np.ndarray, price: np.ndarray) -> int | None:
        won = alloc > 0
        return int(price[won].min()) if won.any() else None

    def _bid_arrays(self, actions: dict[AgentId, BaseModel]):
        m, n = len(self.ids), len(self.items)
        qty = np.zeros((m, n), dtype=np.int64)
        price = np.zeros((m, n), dtype=np.int64)
        valid = np.zeros(m, dtype=bool)
        for a, act in actions.items():
            i = self.index[a]
            overspent = isinstance(act, Overspent)
            valid[i] = not overspent
            self.overspent[i] = overspent
            # a void (over-budget) set is logged as requested, valid_set False, allocated 0
            for item, bid in (act.requested if overspent else act).bids.items():
                qty[i, self.item_index[item]] = bid.qty
                price[i, self.item_index[item]] = bid.price
        return qty, price, valid

    def _after_procurement(self, actions: dict[AgentId, BaseModel]) -> Decision:
        qty, price, valid = self._bid_arrays(actions)
        alloc = rules.settle_auction(
            qty, price, valid & self.active, self.supply, self.base, self.auction_rng
        )
        final = self.r == self.p.rounds - 1
        i, j = np.nonzero(qty)
        self._log(
            "bids",
            step=self.t,
            round=self.r,
            agent_id=self._ids[i],
            item=self._items[j],
            qty=qty[i, j],
            price=price[i, j],
            valid_set=valid[i],
            allocated=alloc[i, j],
            final=final,
        )
        if not final:
            self._indicative, self._bids = alloc, (qty, price, valid)
            self.r += 1
            return self._procurement_decision()
        cost = alloc * price
        self.funds -= cost.sum(axis=1)
        self.inv += alloc
        self.inv_value += cost
        self._spend, self._won = cost.sum(axis=1), alloc.sum(axis=1)
        self._step_alloc, self._step_price = alloc, price
        i, j = np.nonzero(alloc)
        self._log(
            "trades",
            step=self.t,
            kind="procurement",
            agent_id=self._ids[i],
            counterparty="supplier",
            item=self._items[j],
            qty=alloc[i, j],
            price=price[i, j].astype(float),
        )
        self._indicative = self._bids = None
        return self._retail_decision()

    # ------------------------------------------------------------------ retail
    def _retail_decision(self) -> Decision:
        self._phase = "retail"
        hist = self.history[-self.p.history_window :] if self.p.history_window else []
        obs = {}
        for a in self._acting():
            i = self.index[a]
            held = self.inv[i] > 0
            avg = np.divide(
                self.inv_value[i], self.inv[i], out=np.zeros(len(self.items)), where=held
            )
            obs[a] = RetailObservation(
                agent_id=a,
                step=self.t,
                steps=self.p.steps,
                n_retailers=len(self.ids),
                funds=round(float(self.funds[i]), 2),
                offers=self.offers,
                inventory=self._inventory(i),
                avg_cost={x: round(float(avg[j]), 4) for j, x in enumerate(self.items) if held[j]},
                max_slogan_words=self.p.slogan_max_words,
                history=hist,
                prompts=self.p.prompts,
            )
        return Decision("retail", self.t, 0, obs, retail_action(tuple(self.items)))

    def _after_retail(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        m, n = len(self.ids), len(self.items)
        prices = np.full((m, n), np.nan)
        slogans = [""] * m
        for a, act in actions.items():
            i = self.index[a]
            for item, pr in act.prices.items():
                prices[i, self.item_index[item]] = pr
            slogans[i] = act.slogan
        vectors = self._slogan_vectors(slogans)
        i, j = np.nonzero(~np.isnan(prices))
        self._log(
            "posts",
            step=self.t,
            agent_id=self._ids[i],
            item=self._items[j],
            price=prices[i, j].astype(np.int64),
        )
        acted = np.array(sorted(self.index[a] for a in actions), dtype=np.int64)
        self._log(
            "slogans",
            step=self.t,
            agent_id=self._ids[acted],
            slogan=[slogans[i] for i in acted],
            vector=[vectors[i] for i in acted],
        )

        bm = self.buyer_model
        buyers = rules.draw_buyers(
            self.buyer_rng,
            self.p.buyers_per_step,
            bm.persona_tribe,
            bm.persona_rho,
            bm.tribe_weight,
            bm.tribe_lambda,
            bm.tribe_wtp_multiplier,
            self.supply.astype(float),
            self.base.astype(float),
            self.p.demand_ratio,
        )
        active_idx = np.flatnonzero(self.active)
        sims = similarity(bm.persona_vectors[buyers.persona], vectors[active_idx])  # (k, a), exact
        sizes = np.array([consideration_size(len(active_idx), r, self.p.k_max) for r in buyers.rho])
        mask_active = rules.consideration_mask(self.buyer_rng, sims, buyers.lam, sizes, self.p.tau)
        visible = np.zeros((len(buyers.item), m), dtype=bool)
        visible[:, active_idx] = mask_active
        walk = rules.purchase_walk(self.buyer_rng, buyers, visible, prices, self.inv)

        sold = self.inv - walk.stock
        held = self.inv > 0
        avg_cost = np.divide(self.inv_value, self.inv, out=np.zeros((m, n)), where=held)
        cogs_cell = sold * avg_cost
        revenue_cell = sold * np.nan_to_num(prices)
        self.inv_value -= cogs_cell
        self.inv_value[walk.stock == 0] = 0.0  # no rounding residue on emptied stock
        self.inv = walk.stock
        revenue, cogs = revenue_cell.sum(axis=1), cogs_cell.sum(axis=1)
        holding = self.p.holding_cost * (self.inv * self.base).sum(axis=1)
        self.funds += revenue - holding
        profit = revenue - cogs - holding
        bankrupt_now = self.active & (self.funds < 0)
        self.active &= ~bankrupt_now

        self._log_step(
            buyers,
            walk,
            sims,
            mask_active,
            active_idx,
            sold,
            prices,
            slogans,
            revenue,
            cogs,
            holding,
            profit,
        )
        self.t += 1
        self.r = 0
        if self.t >= self.p.steps:
            return None
        return self._procurement_decision()

    def _slogan_vectors(self, slogans: list[str]) -> np.ndarray:
        d = self.buyer_model.persona_vectors.shape[1]
        out = np.zeros((len(slogans), d), dtype=np.float32)
        texts = sorted({s for s in slogans if s})
        if texts:
            vecs = dict(zip(texts, self.embed(texts)))
            for i, s in enumerate(slogans):
                if s:
                    out[i] = vecs[s]
        return out


def load_persona_vectors(data_dir: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Personas and their embeddings (quantised, as the embed stage writes them), aligned row by
    row."""
    personas = pd.read_parquet(data_dir / "personas.parquet")
    emb = pd.read_parquet(data_dir / "persona_embeddings.parquet").set_index("persona_id")
    vectors = quantize(np.stack(emb.loc[personas["persona_id"], "vector"].to_numpy()))
    return personas, vectors


@dataclass
class Resources:
    buyers: BuyerModel
    embedder: Embedder


class SupplyChainRules(MarketRules):
    kind = "supply_chain"
    params_model = SupplyChainParams
    strategies = STRATEGIES
    cost_seat = "volume"

    def seats(self, mp: SupplyChainParams, run: int) -> list[Seat]:
        """Every roster entry, every episode: retailers ``R01, R02, ...`` in roster order."""
        return [Seat(f"R{i + 1:02d}", e, "retailer") for i, e in enumerate(mp.roster)]

    def seating_period(self, mp: SupplyChainParams) -> int:
        return 1  # every episode seats the whole roster

    def input_files(self, mp: SupplyChainParams, data_dir: Path) -> list[Path]:
        return [data_dir / "personas.parquet", data_dir / "persona_embeddings.parquet"]

    def load_resources(self, mp: SupplyChainParams, data_dir: Path, shared) -> Resources:
        personas_params, embedding = shared["personas"], shared["embedding"]
        personas, vectors = load_persona_vectors(data_dir)
        tribes = list(personas_params.tribes)
        unknown = sorted(set(personas["tribe"]) - set(tribes))
        if unknown:
            raise ValueError(
                f"{data_dir / 'personas.parquet'}: tribes {unknown} are not in "
                "params personas.tribes; re-run the personas stage"
            )
        spec = personas_params.tribes
        buyers = BuyerModel(
            persona_ids=personas["persona_id"].to_numpy(),
            persona_tribe=personas["tribe"].map({t: i for i, t in enumerate(tribes)}).to_numpy(),
            persona_rho=personas["rho"].to_numpy(dtype=float),
            persona_vectors=vectors,
            tribe_names=tribes,
            tribe_weight=np.array([spec[t].weight for t in tribes]),
            tribe_lambda=np.array([spec[t].lam for t in tribes]),
            tribe_wtp_multiplier=np.array(
                [
                    np.nan if spec[t].wtp_multiplier is None else spec[t].wtp_multiplier
                    for t in tribes
                ]
            ),
        )
        return Resources(buyers=buyers, embedder=Embedder(embedding.model, embedding.cache_dir))

    def build_market(
        self, mp: SupplyChainParams, resources: Resources, episode
    ) -> SupplyChainMarket:
        return SupplyChainMarket(
            mp, [s.agent_id for s in episode.seats], resources.buyers, resources.embedder.encode
        )

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)
