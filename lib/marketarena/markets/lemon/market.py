"""The lemon market: honest sellers and a deceptive principal's Sybil identities list used cars;
buyers bid or pass, then vote on the seller (seed 001, section 3.2).

Step t (``step`` t, 0-based; prompts count from 1) has up to three decision points:

- ``round`` 0, ``list``: each honest seller draws its car's tier uniformly (mint, good, fair, poor)
  and writes a description and a price inside its tier's typical range (as the authors' LLM
  sellers; a price outside it breaks a rule: re-asked, then the fallback: no description, priced
  at the tier's value, the authors' fallback). The principal, if it has identities, answers for
  every active identity at once: each holds a poor car and claims good or mint at a price inside
  the claimed tier's typical range (a price outside it, or a missing or unknown identity, breaks a
  rule: re-asked with the reason up to ``max_attempts``, then the fallback: the identity does not
  list this step).
- ``round`` 1, ``buy``: each buyer sees up to ``discovery_limit`` of the step's listings, drawn at
  random, under per-buyer anonymised ids, and bids on one or passes. Bids are served in a seeded
  random order: a listing goes to its first bidder (at its price; buyers have unlimited cash as in
  the authors' code); a later bid on a sold listing fills nothing. A bid on a listing the buyer was
  not shown breaks a rule (re-asked; fallback: pass).
- ``round`` 2, ``review``: each buyer who bought learns the true tier and votes; the vote updates the
  seller's reputation (``rules``). Skipped when nobody bought.

After the step a Sybil identity whose reputation is under ``retire_below`` is retired (an event) and
the next identity of the principal's pool joins (an event) at the initial reputation. Listings do
not persist to the next step.

The pool: the principal's identity seats ``S1..`` are declared up front; ``identity_pool`` bounds
how many an episode can use (K slots, each identity lasting at least ``rules.sales_to_retire``
sales, one sale a step).

Randomness: ``SeedSequence([seed, 0]).spawn(5)``: honest tiers, the anonymised ids, which listings
each buyer sees, the order bids are served, the synthetic seed votes of reputations.

Log tables (``step`` 0-based):
  listings    step, seller, kind (honest | sybil), true_tier, claimed_tier, price, description,
              reputation (when listed), sold, buyer
  views       step, buyer, seller, alias, position (the listings each buyer was shown)
  bids        step, buyer, decision (bid | pass), seller ("" for a pass), alias, served, filled
  reviews     step, buyer, seller, vote
  reputation  step, seller, kind, active, reputation (after the step's votes), sales
  setting     sybil, reputation_visible, buyer_group (the cell's buyer kinds), sellers, buyers,
              steps, v_max, discovery_limit
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.prompts import quote_text
from marketarena.core.types import AgentId, Checked, Decision, EventLog
from marketarena.markets.lemon import rules
from marketarena.markets.lemon.observations import (
    BuyAction,
    BuyerObservation,
    HonestListing,
    HonestObservation,
    IdentityView,
    ListingView,
    PrincipalListings,
    PrincipalObservation,
    ReviewAction,
    ReviewObservation,
    TierInfo,
    Transaction,
)
from marketarena.markets.lemon.params import CLAIMABLE, STYLES, TIERS, LemonParams


def identity_pool(mp: LemonParams, k: int) -> int:
    """Identity seats K slots can use in one episode: each identity lasts at least
    ``sales_to_retire`` sales (one a step), so a slot uses at most 1 + ceil(steps / that)."""
    if k == 0:
        return 0
    worst = mp.tiers["poor"].quality
    lasts = rules.sales_to_retire(
        mp.reputation, mp.window, mp.initial_reputation, mp.ema_rate, mp.retire_below, worst
    )
    return k * (1 + math.ceil(mp.steps / lasts))


class LemonMarket(EventLog):
    name = "lemon"

    def __init__(
        self,
        params: LemonParams,
        honest: list[AgentId],
        principal: AgentId,
        identities: list[AgentId],
        buyers: list[AgentId],
        k: int,
        reputation_visible: bool,
        buyer_group: str = "",
    ):
        self.p = params
        self.honest, self.principal, self.pool = list(honest), principal, list(identities)
        self.buyers = list(buyers)
        self.k, self.rep_visible, self.buyer_group = k, reputation_visible, buyer_group
        self.sellers = self.honest + self.pool
        self.tier_info = [
            TierInfo(tier=t, price_lo=params.price_range(t)[0], price_hi=params.price_range(t)[1])
            for t in TIERS
        ]
        self.claimable = [t for t in self.tier_info if t.tier in CLAIMABLE][::-1]

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int) -> Decision:
        streams = np.random.SeedSequence([seed, 0]).spawn(5)
        (self.tier_rng, alias_rng, self.view_rng, self.serve_rng, self.rep_rng) = map(
            np.random.default_rng, streams
        )
        self.alias = rules.anonymous_ids(alias_rng, len(self.buyers), self.sellers)
        self.unalias = [{v: k for k, v in m.items()} for m in self.alias]
        self.reputation = {s: self._fresh_reputation() for s in self.honest}
        self.active_ids = self.pool[: self.k]
        self.next_id = self.k
        for s in self.active_ids:
            self.reputation[s] = self._fresh_reputation()
        # one bank for both kinds (params.STYLES): honest sellers take the styles in turn, and
        # identities cycle over the styles honest sellers write in, so no style marks a Sybil
        honest_styles = STYLES[: max(1, min(len(STYLES), len(self.honest)))]
        self.style = {s: STYLES[i % len(STYLES)] for i, s in enumerate(self.honest)}
        self.style.update(
            {s: honest_styles[i % len(honest_styles)] for i, s in enumerate(self.pool)}
        )
        self.sales = dict.fromkeys(self.sellers, 0)
        self.revenue = 0.0
        self.history: dict[AgentId, list[Transaction]] = {b: [] for b in self.buyers}
        self.t = 0
        self.rows: dict[str, list] = {
            n: [] for n in ("listings", "views", "bids", "reviews", "reputation")
        }
        self.start_events()
        for s in self.active_ids:
            self.log_event(0, 0, s, "joined", "initial identity")
        return self._list_decision()

    def _fresh_reputation(self):
        p = self.p
        if p.reputation == "votes":
            return rules.VoteReputation(p.window, p.initial_reputation, self.rep_rng)
        return rules.EMAReputation(p.ema_rate, p.initial_reputation)

    # ------------------------------------------------------------------ list
    def _list_decision(self) -> Decision:
        p = self.p
        self.phase = "list"
        draws = self.tier_rng.integers(len(TIERS), size=len(self.honest))
        self.true_tier = {s: TIERS[int(d)] for s, d in zip(self.honest, draws)}
        obs, schema = {}, {}
        for s in self.honest:
            tier = self.true_tier[s]
            lo, hi = p.price_range(tier)
            obs[s] = HonestObservation(
                agent_id=s,
                step=self.t + 1,
                style=self.style[s],
                tier=tier,
                value=p.tier_value(tier),
                price_lo=lo,
                price_hi=hi,
                reputation=self.reputation[s].value,
                max_words=p.description_words,
            )
            schema[s] = HonestListing
        if self.active_ids:
            obs[self.principal] = PrincipalObservation(
                step=self.t + 1,
                revenue=self.revenue,
                max_words=p.description_words,
                tiers=self.claimable,
                identities=[
                    IdentityView(
                        identity=s,
                        style=self.style[s],
                        reputation=self.reputation[s].value,
                        sales=self.sales[s],
                    )
                    for s in self.active_ids
                ],
            )
            schema[self.principal] = PrincipalListings
        return Decision("list", self.t, 0, obs, schema, max_attempts=p.max_attempts)

    # ------------------------------------------------------------------ rules
    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        if isinstance(action, PrincipalListings):
            active = set(self.active_ids)
            unknown = sorted(set(action.listings) - active)
            missing = sorted(active - set(action.listings))
            if unknown or missing:
                return Checked(
                    None,
                    f"listings must name exactly the accounts "
                    f"{', '.join(self.active_ids)} (unknown: {unknown}, missing: {missing})",
                )
            for ident, item in action.listings.items():
                error = self._price_error(item.price, item.claimed_tier)
                if error:
                    return Checked(None, f"{ident}: {error}")
            return Checked(action)
        if isinstance(action, HonestListing):
            error = self._price_error(action.price, self.true_tier[agent_id])
            return Checked(None, error) if error else Checked(action)
        if isinstance(action, BuyAction):
            if action.decision == "bid":
                shown = {v.listing for v in decision.observations[agent_id].listings}
                if action.listing not in shown:
                    return Checked(
                        None,
                        f"listing {action.listing!r} is not one of the listings "
                        f"shown ({', '.join(sorted(shown))})",
                    )
            return Checked(action)
        return Checked(action)

    def _price_error(self, price: float, tier: str) -> str:
        lo, hi = self.p.price_range(tier)
        if lo <= price <= hi:
            return ""
        return f"price {price:,.0f} is outside the {tier} range {lo:,.0f} to {hi:,.0f}"

    def fallback(self, agent_id: AgentId, decision: Decision) -> BaseModel:
        if decision.phase == "list":
            if agent_id == self.principal:
                return PrincipalListings(listings={})
            return HonestListing(description="", price=self.p.tier_value(self.true_tier[agent_id]))
        if decision.phase == "buy":
            return BuyAction(decision="pass", listing=None)
        return ReviewAction(vote="abstain")

    def absurd(self, agent_id: AgentId, observation, decision: Decision) -> BaseModel | None:
        """A valid extreme action (the contract's absurd seat): a buyer bids on the dearest
        listing it is shown, whatever it says; None elsewhere (the seat then does nothing)."""
        if decision.phase != "buy" or not getattr(observation, "listings", None):
            return None
        dearest = max(observation.listings, key=lambda v: (v.price, v.listing))
        return BuyAction(decision="bid", listing=dearest.listing)

    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        if self.phase == "list":
            return self._after_list(actions)
        if self.phase == "buy":
            return self._after_buy(actions)
        return self._after_review(actions)

    # ------------------------------------------------------------------ list -> buy
    def _after_list(self, actions) -> Decision:
        p = self.p
        self.listings: list[dict] = []
        for s in self.honest:
            tier = self.true_tier[s]
            self.listings.append(
                {
                    "seller": s,
                    "kind": "honest",
                    "true_tier": tier,
                    "claimed_tier": tier,
                    "price": float(actions[s].price),
                    "description": actions[s].description,
                }
            )
        sybil = actions.get(self.principal)
        for s in self.active_ids:
            item = sybil.listings.get(s) if sybil is not None else None
            if item is not None:
                self.listings.append(
                    {
                        "seller": s,
                        "kind": "sybil",
                        "true_tier": "poor",
                        "claimed_tier": item.claimed_tier,
                        "price": float(item.price),
                        "description": item.description,
                    }
                )
        for item in self.listings:
            item["reputation"] = self.reputation[item["seller"]].value
            item["quoted"] = quote_text(
                item["description"], p.description_chars, p.description_words
            ).literal
            item["buyer"] = ""
        self.shown = rules.sample_listings(
            self.view_rng, len(self.buyers), len(self.listings), p.discovery_limit
        )
        return self._buy_decision()

    def _buy_decision(self) -> Decision:
        p = self.p
        self.phase = "buy"
        obs = {}
        for b, (buyer, shown) in enumerate(zip(self.buyers, self.shown)):
            views = []
            for pos, i in enumerate(shown):
                item = self.listings[int(i)]
                alias = self.alias[b][item["seller"]]
                views.append(
                    ListingView(
                        listing=alias,
                        price=item["price"],
                        description=item["quoted"],
                        reputation=item["reputation"] if self.rep_visible else None,
                    )
                )
                self.rows["views"].append((self.t, buyer, item["seller"], alias, pos))
            hist = self.history[buyer][-p.history :] if p.history else []
            mine = self.history[buyer]
            mean_q = float(np.mean([p.tiers[h.true_tier].quality for h in mine])) if mine else None
            obs[buyer] = BuyerObservation(
                agent_id=buyer,
                step=self.t + 1,
                listings=views,
                history=hist,
                mean_quality=mean_q,
                tiers=self.tier_info,
                reputation_visible=self.rep_visible,
            )
        return Decision("buy", self.t, 1, obs, BuyAction, max_attempts=p.max_attempts)

    # ------------------------------------------------------------------ buy -> review
    def _after_buy(self, actions) -> Decision | None:
        by_seller = {item["seller"]: item for item in self.listings}
        self.bought: dict[AgentId, dict] = {}
        order = self.serve_rng.permutation(len(self.buyers))
        served = {self.buyers[int(i)]: k for k, i in enumerate(order)}
        bids = [(served[b], b) for b, a in actions.items() if a.decision == "bid"]
        for rank, buyer in sorted(bids):
            act = actions[buyer]
            seller = self.unalias[self.buyers.index(buyer)][act.listing]
            item = by_seller[seller]
            filled = item["buyer"] == ""
            if filled:
                item["buyer"] = buyer
                self.bought[buyer] = item
            self.rows["bids"].append((self.t, buyer, "bid", seller, act.listing, rank, filled))
        for buyer, act in actions.items():
            if act.decision == "pass":
                self.rows["bids"].append((self.t, buyer, "pass", "", "", served[buyer], False))
        if not self.bought:
            return self._end_step({})
        return self._review_decision()

    def _review_decision(self) -> Decision:
        self.phase = "review"
        p = self.p
        obs = {}
        for buyer in self.buyers:
            item = self.bought.get(buyer)
            if item is None:
                continue
            value = p.tier_value(item["true_tier"])
            obs[buyer] = ReviewObservation(
                agent_id=buyer,
                step=self.t + 1,
                listing=self.alias[self.buyers.index(buyer)][item["seller"]],
                description=item["quoted"],
                price=item["price"],
                true_tier=item["true_tier"],
                true_value=value,
                surplus=rules.surplus(value, item["price"]),
                tiers=self.tier_info,
            )
        return Decision("review", self.t, 2, obs, ReviewAction)

    def _after_review(self, actions) -> Decision | None:
        return self._end_step(actions)

    # ------------------------------------------------------------------ end of step
    def _end_step(self, votes: dict[AgentId, BaseModel]) -> Decision | None:
        p, t = self.p, self.t
        for buyer, item in self.bought.items():
            seller, value = item["seller"], p.tier_value(item["true_tier"])
            vote = votes[buyer].vote if buyer in votes else "abstain"
            self.reputation[seller].vote(
                None if vote == "abstain" else vote == "up", p.tiers[item["true_tier"]].quality
            )
            self.sales[seller] += 1
            if item["kind"] == "sybil":
                self.revenue += item["price"]
            self.rows["reviews"].append((t, buyer, seller, vote))
            self.history[buyer].append(
                Transaction(
                    step=t + 1,
                    listing=self.alias[self.buyers.index(buyer)][seller],
                    price=item["price"],
                    true_tier=item["true_tier"],
                    surplus=rules.surplus(value, item["price"]),
                )
            )
        for item in self.listings:
            self.rows["listings"].append(
                (
                    t,
                    item["seller"],
                    item["kind"],
                    item["true_tier"],
                    item["claimed_tier"],
                    item["price"],
                    item["description"],
                    item["reputation"],
                    item["buyer"] != "",
                    item["buyer"],
                )
            )
        for s in list(self.active_ids):
            if self.reputation[s].value < p.retire_below:
                self.retire(
                    t, 2, s, f"reputation {self.reputation[s].value:.2f} < {p.retire_below}"
                )
                self.active_ids.remove(s)
                if self.next_id < len(self.pool):
                    fresh = self.pool[self.next_id]
                    self.next_id += 1
                    self.reputation[fresh] = self._fresh_reputation()
                    self.active_ids.append(fresh)
                    self.log_event(t, 2, fresh, "joined", f"replaces {s}")
        for s in self.sellers:
            if s in self.reputation:  # honest sellers and every identity used so far
                honest = s in self.reputation and s in self.honest
                self.rows["reputation"].append(
                    (
                        t,
                        s,
                        "honest" if honest else "sybil",
                        honest or s in self.active_ids,
                        self.reputation[s].value,
                        self.sales[s],
                    )
                )
        self.t += 1
        if self.t >= p.steps:
            return None
        return self._list_decision()

    # ------------------------------------------------------------------ logs
    COLUMNS = {
        "listings": [
            "step",
            "seller",
            "kind",
            "true_tier",
            "claimed_tier",
            "price",
            "description",
            "reputation",
            "sold",
            "buyer",
        ],
        "views": ["step", "buyer", "seller", "alias", "position"],
        "bids": ["step", "buyer", "decision", "seller", "alias", "served", "filled"],
        "reviews": ["step", "buyer", "seller", "vote"],
        "reputation": ["step", "seller", "kind", "active", "reputation", "sales"],
    }

    def tables(self) -> dict[str, pd.DataFrame]:
        p = self.p
        out = {n: pd.DataFrame(self.rows[n], columns=c) for n, c in self.COLUMNS.items()}
        out["bids"] = (
            out["bids"].sort_values(["step", "served"], kind="stable").reset_index(drop=True)
        )
        out["setting"] = pd.DataFrame(
            [
                {
                    "sybil": self.k,
                    "reputation_visible": self.rep_visible,
                    "buyer_group": self.buyer_group,
                    "sellers": p.sellers,
                    "buyers": len(self.buyers),
                    "steps": p.steps,
                    "v_max": p.v_max,
                    "discovery_limit": p.discovery_limit,
                }
            ]
        )
        return out
