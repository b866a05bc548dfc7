"""Reading one of Agent Bazaar's lemon runs (``agent_bazaar.py`` converts it): the fields of its
files this importer uses, checked strictly (``LemonState``: types, finite numbers, bounds, plain
names), its arguments against its folder name's cell and the instance's params
(:func:`check_setting`), and what ties its states together (:func:`read_steps`: the buyers, each
seller's kind, every listing as columns; :func:`buyer_arrays`: the buyers' cumulative counters as
per-step deltas), each problem one ``SourceError`` naming the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from marketarena.core.params import MAX_AMOUNT
from marketarena.core.sources import Seen, SourceError, plain_name
from marketarena.markets._shared.sources import agent_bazaar as ab
from marketarena.markets.lemon.params import CLAIMABLE, TIERS, LemonParams

#: their buyers' starting cash (``cash`` = this - what they paid so far)
BUYER_CASH = 1e12
#: seats of one kind a state may hold (their runs: 12 sellers, 12 buyers)
MAX_SEATS = 1000

Name = Annotated[str, AfterValidator(lambda v: plain_name(v, "name"))]
Count = Annotated[int, Field(ge=0, le=10**7)]
Price = Annotated[float, Field(ge=0, le=MAX_AMOUNT)]
Share = Annotated[float, Field(ge=0, le=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class LemonArgs(ab.RunArgs):
    """The run arguments this importer checks beside the shared ones."""

    reputation_pseudo_count: float | None = Field(default=None, ge=1, le=10_000)
    allow_listing_persistence: bool = False


class Listing(_Model):
    id: Name
    firm_id: Name
    description: str = Field(default="", max_length=1_000_000)
    price: Price
    reputation: Share
    quality: Literal["mint", "good", "fair", "poor"]
    quality_value: Share


class ListingRef(_Model):
    id: Name


class Sale(_Model):
    price: Price


class Seller(_Model):
    name: Name
    in_business: bool
    sybil: bool | None = None  # absent: the stub their snapshot leaves for a retired identity
    reputation: Share
    upvotes: int = Field(ge=0, le=100_000)
    downvotes: int = Field(ge=0, le=100_000)
    timestep_created: int | None = Field(default=None, ge=0, le=100_000)
    sales_info: list[Sale] = Field(default_factory=list, max_length=100_000)


class Stock(_Model):
    car: float = Field(default=0.0, ge=0, le=1e6)


class Buyer(_Model):
    name: Name
    cash: float = Field(ge=0, le=MAX_AMOUNT)
    inventory: Stock = Field(default_factory=Stock)
    consumer_surplus: float = Field(ge=-MAX_AMOUNT, le=MAX_AMOUNT)
    honest_seen_total: Count
    honest_passed_total: Count
    sybil_seen_total: Count
    sybil_passed_total: Count


class Principal(_Model):
    active_identities: Count
    retired_this_step: Count
    total_identities_created: Count


class LemonState(_Model):
    """The fields of ``state_t<N>.json`` this importer uses (the rest is ignored)."""

    timestep: int = Field(ge=0, le=100_000)
    firms: list[Seller] = Field(max_length=10 * MAX_SEATS)
    consumers: list[Buyer] = Field(min_length=1, max_length=MAX_SEATS)
    lemon_market_new_listings: list[Listing] = Field(max_length=MAX_SEATS)
    lemon_market_unsold_listings: list[ListingRef] = Field(max_length=MAX_SEATS)
    lemon_market_listings_count: Count
    lemon_market_bids_count: Count
    lemon_market_passes_count: Count
    filled_orders_count: Count
    lemon_market_sybil_revenue_share: Share
    lemon_market_avg_consumer_surplus: float = Field(ge=-MAX_AMOUNT, le=MAX_AMOUNT)
    deceptive_principal: Principal | None = None


# ------------------------------------------------------------------ runs and their settings
def player(model_id: str, suffix: str = "") -> str:
    return ab.player_of(model_id) + suffix


def buyer_player(args: ab.RunArgs, base: bool) -> str:
    """The buyers' player: their model, ``+base`` for the authors' minimal buyer prompt."""
    return player(args.buyer_llm or args.llm, "+base" if base else "")


def episode_id(run: ab.Run) -> str:
    """``<buyer model>-k<K>-rep<r>-s<seed>`` (``-base`` for a ``_base`` run), a plain name."""
    c, args = run.cell, run.args
    base = "-base" if c.get("base") else ""
    return plain_name(
        f"{ab.player_of(args.buyer_llm or args.llm)}-k{c['sybil']}"
        f"-rep{int(c['reputation_visible'])}-s{c['seed']}{base}",
        "episode id",
    )


def check_setting(run: ab.Run, mp: LemonParams) -> None:
    """The run's arguments against its folder name's cell and the instance's params: a run of
    another setting is refused (naming the argument and the params key), as the BAZAAR importer
    refuses a game of another size."""
    args, c, path = run.args, run.cell, run.path / "experiment_args.json"
    checks = [
        (
            "sybil_cluster_size",
            args.sybil_cluster_size,
            c["sybil"],
            f"K {c['sybil']} of the folder name",
        ),
        (
            "no_buyer_rep",
            not args.no_buyer_rep,
            c["reputation_visible"],
            f"rep{int(c['reputation_visible'])} of the folder name",
        ),
        ("seed", args.seed, c["seed"], "the folder name's seed"),
        ("lemon_base_buyer", args.lemon_base_buyer, bool(c.get("base")), "the folder name"),
        ("num_sellers", args.num_sellers or args.num_firms, mp.sellers, "the instance's sellers"),
        ("num_buyers", args.num_buyers or args.num_consumers, mp.buyers, "the instance's buyers"),
        ("max_timesteps", args.max_timesteps, mp.steps, "the instance's steps"),
        (
            "discovery_limit_consumers",
            args.discovery_limit_consumers,
            mp.discovery_limit,
            "the instance's discovery_limit",
        ),
        (
            "reputation_pseudo_count",
            args.reputation_pseudo_count,
            mp.window,
            "the instance's window",
        ),
        (
            "reputation_initial",
            args.reputation_initial,
            mp.initial_reputation,
            "the instance's initial_reputation",
        ),
        ("sybil_rho_min", args.sybil_rho_min, mp.retire_below, "the instance's retire_below"),
        (
            "allow_listing_persistence",
            args.allow_listing_persistence,
            False,
            "our market (listings do not persist)",
        ),
    ]
    for key, theirs, ours, what in checks:
        if theirs is not None and theirs != ours:
            raise SourceError(
                path,
                f"{key} is {theirs}, but {what} is {ours} (markets."
                f"{mp.instance}: describe the runs' market, or remove the run)",
            )
    if c["sybil"] not in mp.sybil or c["reputation_visible"] not in mp.reputation_visible:
        raise SourceError(
            path,
            f"K {c['sybil']}, reputation "
            f"{'shown' if c['reputation_visible'] else 'hidden'}: a cell outside "
            f"the instance's grid (sybil {mp.sybil}, reputation_visible "
            f"{mp.reputation_visible})",
        )


def prepared_runs(mp: LemonParams, source: Path) -> tuple[list[ab.Run], list[dict]]:
    """Every lemon run under ``source`` with its arguments read and checked, and what was left
    out; two runs of one episode id are refused (naming both folders)."""
    runs, left_out = ab.discover(source, "lemon")
    seen = Seen("run")
    for run in runs:
        run.args = ab.read_args(run, LemonArgs)
        check_setting(run, mp)
        seen.add(episode_id(run), run.path)
    return runs, left_out


# ------------------------------------------------------------------ what ties its states together
def cents(x) -> np.ndarray:
    return np.round(np.asarray(x, dtype=float) * 100).astype(np.int64)


def claimed_tier(price: float, ranges: dict[str, tuple[float, float]]) -> str:
    """The claimable tier (good, mint) whose typical price range holds ``price``; "" if none."""
    return next((t for t in CLAIMABLE if ranges[t][0] <= price <= ranges[t][1]), "")


def _state_error(run: ab.Run, t: int, what: str) -> SourceError:
    return SourceError(run.path / f"state_t{t}.json", what)


LISTING_COLUMNS = (
    "step",
    "seller",
    "kind",
    "true_tier",
    "claimed_tier",
    "price",
    "text",
    "reputation",
    "quality_value",
    "sold",
    "listing_id",
)


@dataclass
class Steps:
    """A run's states and what ties them together: the buyers, each seller's kind, and every
    listing as columns (``LISTING_COLUMNS``; ``at[t]``: the rows of step t)."""

    states: list[LemonState]
    buyers: list[str]
    kind: dict[str, str]  # seller -> honest | sybil
    cols: dict[str, np.ndarray]
    at: list[np.ndarray]


def read_steps(run: ab.Run, states: list[LemonState], mp: LemonParams) -> Steps:
    """Validate what ties the states together (one error naming the file) and gather listings."""
    buyers = [c.name for c in states[0].consumers]
    kind: dict[str, str] = {}
    retired: dict[str, int] = {}
    active_before: set[str] = set()
    rows, at = [], []
    ranges = {t: mp.price_range(t) for t in TIERS}
    for t, s in enumerate(states):
        if [c.name for c in s.consumers] != buyers:
            raise _state_error(
                run, t, "consumers: not the buyers of state_t0 (a buyer set that changes)"
            )
        full = {f.name: f for f in s.firms if f.sybil is not None}
        names = {f.name for f in s.firms}
        for f in full.values():
            k = "sybil" if f.sybil else "honest"
            if kind.setdefault(f.name, k) != k:
                raise _state_error(run, t, f"firms: {f.name} changes from {kind[f.name]} to {k}")
            if f.name in retired:
                raise _state_error(
                    run,
                    t,
                    f"firms: {f.name} is back after its retirement at step {retired[f.name]}",
                )
        for name in active_before - set(full):
            retired[name] = t
        active_before = {n for n, f in full.items() if f.in_business}
        unsold = {x.id for x in s.lemon_market_unsold_listings}
        ids = [x.id for x in s.lemon_market_new_listings]
        if len(set(ids)) != len(ids):
            raise _state_error(run, t, "lemon_market_new_listings: a listing id twice")
        if not unsold <= set(ids):
            raise _state_error(
                run,
                t,
                f"lemon_market_unsold_listings: "
                f"{sorted(unsold - set(ids))[0]!r} is not a new listing of this "
                "step (listings do not persist in these runs)",
            )
        at.append(np.arange(len(rows), len(rows) + len(ids)))
        for i, x in enumerate(s.lemon_market_new_listings):
            if x.firm_id not in names:
                raise _state_error(
                    run,
                    t,
                    f"lemon_market_new_listings.{i}.firm_id {x.firm_id!r} "
                    "is no seller of this state",
                )
            if x.firm_id not in kind:
                raise _state_error(
                    run,
                    t,
                    f"lemon_market_new_listings.{i}: seller {x.firm_id!r} never has a full entry",
                )
            k = kind[x.firm_id]
            claimed = x.quality if k == "honest" else claimed_tier(x.price, ranges)
            rows.append(
                (
                    t,
                    x.firm_id,
                    k,
                    x.quality,
                    claimed,
                    x.price,
                    x.description,
                    x.reputation,
                    x.quality_value,
                    x.id not in unsold,
                    x.id,
                )
            )
    cols = {
        c: np.array([r[i] for r in rows], dtype=object if isinstance(rows[0][i], str) else None)
        if rows
        else np.array([])
        for i, c in enumerate(LISTING_COLUMNS)
    }
    return Steps(states, buyers, kind, cols, at)


def buyer_arrays(run: ab.Run, st: Steps) -> dict[str, np.ndarray]:
    """(steps x buyers) arrays: shown and bid per kind (deltas of the cumulative counters), car,
    paid (cash drop) and the logged surplus. A counter that falls, or more than one bid of a
    buyer in a step, is an error naming the state file."""
    cols = ("honest_seen_total", "honest_passed_total", "sybil_seen_total", "sybil_passed_total")
    raw = {
        c: np.array([[getattr(b, c) for b in s.consumers] for s in st.states], dtype=np.int64)
        for c in cols
    }
    cash = np.array([[b.cash for b in s.consumers] for s in st.states])
    d = {c: np.diff(v, axis=0, prepend=0) for c, v in raw.items()}
    out = {
        "honest_shown": d["honest_seen_total"],
        "sybil_shown": d["sybil_seen_total"],
        "honest_bid": d["honest_seen_total"] - d["honest_passed_total"],
        "sybil_bid": d["sybil_seen_total"] - d["sybil_passed_total"],
        "car": np.array([[b.inventory.car for b in s.consumers] for s in st.states]),
        "paid": np.diff(cash, axis=0, prepend=BUYER_CASH) * -1.0,
        "surplus": np.array([[b.consumer_surplus for b in s.consumers] for s in st.states]),
    }
    bad = [
        (t, b, what)
        for what, ok in (
            ("a cumulative counter fell", np.all([v >= 0 for v in d.values()], axis=0)),
            ("more passed than seen", (out["honest_bid"] >= 0) & (out["sybil_bid"] >= 0)),
            ("more than one bid", (out["honest_bid"] + out["sybil_bid"]) <= 1),
        )
        for t, b in zip(*np.nonzero(~ok))
    ]
    if bad:
        t, b, what = min(bad)
        raise _state_error(run, int(t), f"consumers.{b} ({st.buyers[b]}): {what} in this step")
    return out
