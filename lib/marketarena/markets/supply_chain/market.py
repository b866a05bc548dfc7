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
allocation; an over-budget set also raises the ``overspent`` flag shown next round); retail → no
prices and an empty slogan (nothing sold; an empty slogan has similarity 0 to every persona).
Non-fatal adjustments, logged as notes: bids on unknown items, below base price or with qty 0 are
dropped; prices for items not held are dropped; slogans longer than the word limit are truncated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.types import AgentId, Checked, Decision
from marketarena.markets.supply_chain import rules
from marketarena.markets.supply_chain.observations import (
    Bid,
    ItemSummary,
    Offer,
    ProcurementAction,
    ProcurementObservation,
    RetailAction,
    RetailObservation,
    SellerSummary,
    StepSummary,
)
from marketarena.markets.supply_chain.params import SupplyChainParams, consideration_size


@dataclass
class BuyerModel:
    """The persona table as arrays, plus the tribe parameters (from ``params.personas``)."""

    persona_ids: np.ndarray  # (P,) str
    persona_tribe: np.ndarray  # (P,) tribe index
    persona_rho: np.ndarray  # (P,)
    persona_vectors: np.ndarray  # (P, d) unit vectors
    tribe_names: list[str]
    tribe_weight: np.ndarray
    tribe_lambda: np.ndarray
    tribe_wtp_multiplier: np.ndarray  # NaN = no cap


class SupplyChainMarket:
    name = "supply_chain"

    def __init__(self, params: SupplyChainParams, agent_ids: list[AgentId], buyers: BuyerModel,
                 embed):
        """``embed(texts) -> (len, d) unit vectors``: the slogan embedder (cached)."""
        self.p = params
        self.ids = list(agent_ids)
        self.index = {a: i for i, a in enumerate(self.ids)}
        self.buyer_model = buyers
        self.embed = embed
        self.items = [it.id for it in params.items]
        self.item_index = {x: i for i, x in enumerate(self.items)}
        self.supply = np.array([it.qty for it in params.items], dtype=np.int64)
        self.base = np.array([it.base_price for it in params.items], dtype=np.int64)
        self.offers = [Offer(item=it.id, category=it.category, qty=it.qty, base_price=it.base_price)
                       for it in params.items]

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
        self._invalid_this_round: set[AgentId] = set()
        self.rows: dict[str, list] = {k: [] for k in (
            "states", "bids", "trades", "buyers", "visits", "attention", "slogans", "posts")}
        return self._procurement_decision()

    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        if self._phase == "procurement":
            return self._after_procurement(actions)
        return self._after_retail(actions)

    # ------------------------------------------------------------------ validation
    def check(self, agent_id: AgentId, action: BaseModel) -> Checked:
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
                    notes.append(f"dropped bid on {item} below base price ({bid.price} < {self.base[x]})")
                else:
                    kept[item] = bid
            total = sum(b.qty * b.price for b in kept.values())
            if total > self.funds[i]:
                self._invalid_this_round.add(agent_id)
                return Checked(None, f"overspent: bids total {total} > funds {self.funds[i]:.2f}", notes)
            return Checked(ProcurementAction(bids=kept), None, notes)
        notes, prices = [], {}
        for item, price in action.prices.items():
            x = self.item_index.get(item)
            if x is None or self.inv[i, x] == 0:
                notes.append(f"dropped price for {item!r} (not held)")
            else:
                prices[item] = price
        words = action.slogan.split()
        slogan = " ".join(words)
        if len(words) > self.p.slogan_max_words:
            slogan = " ".join(words[: self.p.slogan_max_words])
            notes.append(f"slogan truncated from {len(words)} to {self.p.slogan_max_words} words")
        return Checked(RetailAction(prices=prices, slogan=slogan), None, notes)

    def fallback(self, agent_id: AgentId, phase: str) -> BaseModel:
        return ProcurementAction() if phase == "procurement" else RetailAction()

    # ------------------------------------------------------------------ procurement
    def _acting(self) -> list[AgentId]:
        return [a for a, on in zip(self.ids, self.active) if on]

    def _inventory(self, i: int) -> dict[str, int]:
        return {x: int(self.inv[i, j]) for j, x in enumerate(self.items)}

    def _procurement_decision(self) -> Decision:
        self._phase = "procurement"
        hist = self.history[-self.p.history_window:] if self.p.history_window else []
        indicative = clearing = None
        if self._indicative is not None:
            alloc, price = self._indicative, self._bids[1]
            clearing = {x: self._clearing_price(alloc[:, j], price[:, j])
                        for j, x in enumerate(self.items)}
        obs = {}
        for a in self._acting():
            i = self.index[a]
            if self._indicative is not None:
                indicative = {x: Bid(qty=int(self._indicative[i, j]), price=int(self._bids[1][i, j]))
                              for j, x in enumerate(self.items) if self._indicative[i, j] > 0}
            obs[a] = ProcurementObservation(
                agent_id=a, step=self.t, steps=self.p.steps, round=self.r + 1, rounds=self.p.rounds,
                n_retailers=len(self.ids), funds=round(float(self.funds[i]), 2),
                overspent=bool(self.overspent[i]), offers=self.offers, inventory=self._inventory(i),
                indicative=indicative, indicative_clearing=clearing, history=hist,
            )
        return Decision("procurement", self.t, self.r, obs, ProcurementAction)

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
            valid[i] = a not in self._invalid_this_round
            for item, bid in act.bids.items():
                qty[i, self.item_index[item]] = bid.qty
                price[i, self.item_index[item]] = bid.price
        for a in self._invalid_this_round:
            self.overspent[self.index[a]] = True
        for a in actions:
            if a not in self._invalid_this_round:
                self.overspent[self.index[a]] = False
        self._invalid_this_round = set()
        return qty, price, valid

    def _after_procurement(self, actions: dict[AgentId, BaseModel]) -> Decision:
        qty, price, valid = self._bid_arrays(actions)
        alloc = rules.settle_auction(qty, price, valid & self.active, self.supply, self.base,
                                     self.auction_rng)
        final = self.r == self.p.rounds - 1
        for i, j in zip(*np.nonzero(qty)):
            self.rows["bids"].append((self.t, self.r, self.ids[i], self.items[j], int(qty[i, j]),
                                      int(price[i, j]), bool(valid[i]), int(alloc[i, j]), final))
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
        for i, j in zip(*np.nonzero(alloc)):
            self.rows["trades"].append((self.t, "procurement", self.ids[i], "supplier",
                                        self.items[j], int(alloc[i, j]), float(price[i, j])))
        self._indicative = self._bids = None
        return self._retail_decision()

    # ------------------------------------------------------------------ retail
    def _retail_decision(self) -> Decision:
        self._phase = "retail"
        hist = self.history[-self.p.history_window:] if self.p.history_window else []
        obs = {}
        for a in self._acting():
            i = self.index[a]
            held = self.inv[i] > 0
            avg = np.divide(self.inv_value[i], self.inv[i], out=np.zeros(len(self.items)), where=held)
            obs[a] = RetailObservation(
                agent_id=a, step=self.t, steps=self.p.steps, n_retailers=len(self.ids),
                funds=round(float(self.funds[i]), 2), offers=self.offers,
                inventory=self._inventory(i),
                avg_cost={x: round(float(avg[j]), 4) for j, x in enumerate(self.items) if held[j]},
                max_slogan_words=self.p.slogan_max_words, history=hist,
            )
        return Decision("retail", self.t, 0, obs, RetailAction)

    def _after_retail(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        m, n = len(self.ids), len(self.items)
        prices = np.full((m, n), np.nan)
        slogans = [""] * m
        for a, act in actions.items():
            i = self.index[a]
            for item, pr in act.prices.items():
                prices[i, self.item_index[item]] = pr
                self.rows["posts"].append((self.t, a, item, int(pr)))
            slogans[i] = act.slogan
        vectors = self._slogan_vectors(slogans)
        for a in actions:
            i = self.index[a]
            self.rows["slogans"].append((self.t, a, slogans[i], vectors[i].tolist()))

        bm = self.buyer_model
        buyers = rules.draw_buyers(
            self.buyer_rng, self.p.buyers_per_step, bm.persona_tribe, bm.persona_rho,
            bm.tribe_weight, bm.tribe_lambda, bm.tribe_wtp_multiplier,
            self.supply.astype(float), self.base.astype(float), self.p.demand_ratio)
        active_idx = np.flatnonzero(self.active)
        sims = bm.persona_vectors[buyers.persona] @ vectors[active_idx].T  # (k, a)
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

        self._log_step(buyers, walk, sims, mask_active, active_idx, sold, prices, slogans,
                       revenue, cogs, holding, profit)
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

    # ------------------------------------------------------------------ logging
    def _log_step(self, buyers, walk, sims, mask_active, active_idx, sold, prices, slogans,
                  revenue, cogs, holding, profit):
        t, rows, ids, items = self.t, self.rows, self.ids, self.items
        pid = self.buyer_model.persona_ids
        tribes = self.buyer_model.tribe_names
        for j in range(len(buyers.item)):
            rows["buyers"].append((t, j, pid[buyers.persona[j]], tribes[buyers.tribe[j]],
                                   items[buyers.item[j]], int(buyers.demand[j]),
                                   float(buyers.wtp[j]), int(walk.bought[j])))
        for b, s, x, wanted, stock, take, price in walk.visits:
            b, s, x = int(b), int(s), int(x)
            rows["visits"].append((t, b, ids[s], items[x], int(wanted), int(stock), int(take),
                                   float(price)))
            if take:
                rows["trades"].append((t, "sale", ids[s], f"buyer-{b}", items[x], int(take),
                                       float(price)))
        bj, aj = np.nonzero(mask_active)
        for b, a_local in zip(bj, aj):
            rows["attention"].append((t, int(b), ids[active_idx[a_local]],
                                      float(sims[b, a_local])))
        for i, a in enumerate(ids):
            rows["states"].append((
                t, a, float(self.funds[i]), int(self.inv[i].sum()), float(self.inv_value[i].sum()),
                float(revenue[i]), float(cogs[i]), float(holding[i]), float(profit[i]),
                float(self._spend[i]), int(self._won[i]), int(sold[i].sum()), bool(self.active[i]),
            ))
        summary_items = []
        for j, x in enumerate(items):
            units = int(sold[:, j].sum())
            rev = float((sold[:, j] * np.nan_to_num(prices[:, j])).sum())
            summary_items.append(ItemSummary(
                item=x, supply=int(self.supply[j]), units_won=int(self._step_alloc[:, j].sum()),
                clearing_price=self._clearing_price(self._step_alloc[:, j], self._step_price[:, j]),
                units_sold=units, avg_sale_price=round(rev / units, 2) if units else None))
        sellers = [SellerSummary(
            agent_id=a, units_sold=int(sold[i].sum()), slogan=slogans[i],
            prices={x: int(prices[i, j]) for j, x in enumerate(items) if not np.isnan(prices[i, j])})
            for i, a in enumerate(ids) if self.active[i] or sold[i].sum() > 0]
        self.history.append(StepSummary(step=t, items=summary_items, sellers=sellers))

    TABLE_COLUMNS = {
        "states": ["step", "agent_id", "funds", "inventory_units", "inventory_value", "revenue",
                   "cogs", "holding_cost", "profit", "spend", "units_won", "units_sold", "active"],
        "bids": ["step", "round", "agent_id", "item", "qty", "price", "valid_set", "allocated",
                 "final"],
        "trades": ["step", "kind", "agent_id", "counterparty", "item", "qty", "price"],
        "buyers": ["step", "buyer", "persona_id", "tribe", "item", "demand", "wtp", "bought"],
        "visits": ["step", "buyer", "agent_id", "item", "wanted", "stock_before", "bought", "price"],
        "attention": ["step", "buyer", "agent_id", "sim"],
        "slogans": ["step", "agent_id", "slogan", "vector"],
        "posts": ["step", "agent_id", "item", "price"],
    }

    def tables(self) -> dict[str, pd.DataFrame]:
        out = {name: pd.DataFrame(self.rows[name], columns=cols)
               for name, cols in self.TABLE_COLUMNS.items()}
        out["items"] = pd.DataFrame([it.model_dump() for it in self.p.items]).rename(
            columns={"id": "item"})
        return out
