"""The CSα reference: a truthful trader against the pool, tabulated by (distribution, role, bucket).

BAZAAR compares a seat's surplus "to the mean and standard deviation of truthful baselines under
identical conditions (round number, value distribution and spread)" (seed 002). Identical
conditions here: the same market (rounds, seats, value distributions) and the same opponents. The
reference (computed by the simulate stage before the games) plays
``reference.games_per_distribution`` games per distribution in which a truthful trader (it quotes
its value every round) holds one seat drawn at random and the other seats are drawn from the
pool exactly as an entrant's games draw them (``entrant_lineup``), so the table is the
distribution of what truthful play earns in this tournament. Opponents: the pool's scripted
entries except truthful ones (a truthful pool member never meets itself, so its own pool games
have the reference's conditions and its mean CSα lands near 0); drawn with replacement when fewer
than the seats to fill, and all truthful (self-play) when the pool has no other scripted entry.
"Round number": every game of an instance, and of its reference, has ``rounds`` rounds; CSα is
per seat and game. "Spread": the seat's private value, bucketed.

Game ``k`` of the reference plays ``distributions[k mod D]`` and is drawn as entrant game ``k`` of
the entry ``truthful-reference`` with base seed ``reference.seed``. The games are played without
logs (``core.runner.play_quietly``: the same seeding and checks as a logged episode), each built
by the market's rules as the simulate stage builds an episode (``MarketRules.build_episode``).

Table ``truthful_reference.parquet``, one row per (distribution, role, bucket); buckets are centred
on multiples of ``bucket_width`` w (bucket k holds the values nearest k·w: ``(2v + w) // 2w``; width
5: 0-2 -> 0, 3-7 -> 1, ..., 98-100 -> 20):
  n_raw, mean_raw, sd_raw  the truthful seats whose value fell in the bucket (sd with ddof = 1)
  n, mean, sd              the statistics CSα uses: if n_raw < min_count, the bucket borrows the
                           seats of its neighbours, one bucket further on each side at a time,
                           until it has min_count seats (pooled_lo..pooled_hi name the buckets used)
  sd_used                  max(sd, sd_floor): a bucket where truthful play always earns the same
                           (e.g. buyers valuing at 0-2 who never trade) gets a finite σ
CSα of a seat with game surplus S = clip((S - mean) / sd_used, -clip, clip).
``reference_info.json`` records how the table was built (params, opponents, games, seeds).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.lifetime import pool_map
from marketarena.core.params import RosterEntry
from marketarena.core.rules import EpisodeSpec, MarketRules
from marketarena.core.runner import play_quietly
from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.market import DoubleAuctionRules
from marketarena.markets.double_auction.params import DoubleAuctionParams
from marketarena.markets.double_auction.schedule import entrant_game

TABLE = "truthful_reference.parquet"
INFO = "reference_info.json"
KEYS = ["distribution", "role", "bucket"]
REFERENCE_ENTRY = RosterEntry(name="truthful-reference", kind="baseline", strategy="truthful")


def reference_opponents(mp: DoubleAuctionParams) -> list[RosterEntry]:
    """The pool's scripted entries other than truthful ones (see module docstring)."""
    return [
        mp.roster[i]
        for i in mp.pool_indices()
        if mp.roster[i].kind == "baseline" and mp.roster[i].strategy != "truthful"
    ]


def reference_episode(mp: DoubleAuctionParams, k: int) -> EpisodeSpec:
    """Reference game ``k``: truthful in a drawn seat, the opponents in the others."""
    entries = reference_opponents(mp) + [REFERENCE_ENTRY]
    me = len(entries) - 1
    return entrant_game(
        mp, entries, list(range(me)) or [me], me, mp.reference.seed, k, f"ref-{k:06d}"
    )


def play_reference_game(market_rules: MarketRules, mp: DoubleAuctionParams, k: int) -> dict:
    """One reference game, built by the market's rules as the simulate stage builds an episode:
    the truthful seat's role, value and game surplus, and the game's CE."""
    spec = reference_episode(mp, k)
    market, agents, _ = market_rules.build_episode(mp, None, spec)
    play_quietly(market, agents, spec.seed)
    me = next(s.agent_id for s in spec.seats if s.entry is REFERENCE_ENTRY)
    return {
        "game": k,
        "distribution": spec.get("distribution"),
        "role": market.role[me],
        "value": market.value[me],
        "surplus": market.surplus[me],
        "ce_surplus": int(rules.ce_surplus(market.bv, market.sv)) * mp.rounds,
    }


def play_reference_games(
    market_rules: MarketRules, mp: DoubleAuctionParams, games: range
) -> list[dict]:
    return [play_reference_game(market_rules, mp, k) for k in games]


def truthful_seats(
    mp: DoubleAuctionParams, workers: int = 1, market_rules: MarketRules | None = None
) -> pd.DataFrame:
    """Every reference game's truthful seat: game, distribution, role, value, surplus, ce_surplus.
    With ``workers`` > 1 the games are split into that many contiguous ranges played by spawned
    processes; the rows are the same, in game order. The processes end with this call however it
    ends: killed on an exception or Ctrl-C, and by the kernel if this process dies
    (``core/lifetime.py``). ``market_rules``: the analysis's rules (default: the market's)."""
    market_rules = market_rules or DoubleAuctionRules()
    n = mp.reference.games_per_distribution * len(mp.distributions)
    workers = max(1, min(workers, n // 200))  # a process is worth starting for 200 games or more
    cuts = np.linspace(0, n, workers + 1).astype(int)
    parts = pool_map(
        play_reference_games,
        [market_rules] * workers,
        [mp] * workers,
        [range(a, b) for a, b in zip(cuts[:-1], cuts[1:])],
        workers=workers,
    )
    return pd.DataFrame([row for part in parts for row in part])


def tabulate(seats: pd.DataFrame, distribution: str, mp: DoubleAuctionParams) -> pd.DataFrame:
    """The reference rows of one distribution from seat-level results (see module docstring)."""
    rp = mp.reference
    w = rp.bucket_width
    n_buckets = int(rules.value_bucket(mp.max_quote, w)) + 1
    rows = []
    for role, g in seats.groupby("role", sort=True):
        bucket = rules.value_bucket(g["value"].to_numpy(), w)
        values = [g["surplus"].to_numpy()[bucket == k].astype(float) for k in range(n_buckets)]
        for k in range(n_buckets):
            raw = values[k]
            lo = hi = k
            pooled = raw
            while len(pooled) < rp.min_count and (lo > 0 or hi < n_buckets - 1):
                lo, hi = max(lo - 1, 0), min(hi + 1, n_buckets - 1)
                pooled = np.concatenate(values[lo : hi + 1])
            sd = float(pooled.std(ddof=1)) if len(pooled) > 1 else np.nan
            rows.append(
                {
                    "distribution": distribution,
                    "role": role,
                    "bucket": k,
                    "value_lo": max(0, -(-(2 * k - 1) * w // 2)),
                    "value_hi": min(mp.max_quote, -(-(2 * k + 1) * w // 2) - 1),
                    "n_raw": len(raw),
                    "mean_raw": float(raw.mean()) if len(raw) else np.nan,
                    "sd_raw": float(raw.std(ddof=1)) if len(raw) > 1 else np.nan,
                    "n": len(pooled),
                    "mean": float(pooled.mean()) if len(pooled) else np.nan,
                    "sd": sd,
                    "sd_used": max(sd, rp.sd_floor) if np.isfinite(sd) else rp.sd_floor,
                    "pooled_lo": lo,
                    "pooled_hi": hi,
                }
            )
    return pd.DataFrame(rows)


def compute_reference(
    mp: DoubleAuctionParams,
    out_dir: Path,
    workers: int = 1,
    market_rules: MarketRules | None = None,
) -> dict:
    """The instance's reference (computed by the simulate stage before its games): writes the
    table and its info, returns the headline."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    seats = truthful_seats(mp, workers, market_rules)
    tables, summary = [], {}
    for dist in mp.distributions:
        mine = seats[seats["distribution"] == dist]
        tables.append(tabulate(mine, dist, mp))
        summary[dist] = {
            "games": int(len(mine)),
            "mean_ce_surplus": float(mine["ce_surplus"].mean()),
            "mean_truthful_surplus": {
                r: float(g["surplus"].mean()) for r, g in mine.groupby("role")
            },
        }
    table = pd.concat(tables, ignore_index=True)
    table.to_parquet(out_dir / TABLE, index=False)
    info = {
        "what": "surplus of a truthful seat against the pool, by (distribution, role, value "
        "bucket); see marketarena.markets.double_auction.analysis.reference",
        "opponents": [
            e.model_dump(mode="json", exclude_defaults=True) for e in reference_opponents(mp)
        ]
        or "truthful self-play (no scripted pool)",
        "params": mp.model_dump(
            mode="json",
            include={
                "rounds",
                "n_buyers",
                "n_sellers",
                "max_quote",
                "distributions",
                "values",
                "reference",
            },
        ),
        "rows": len(table),
        "seed_rule": "game k = entrant game k of 'truthful-reference' with seed reference.seed",
    }
    (out_dir / INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return {"table": TABLE, "distributions": summary}


def no_reference(seats: pd.DataFrame, missing: pd.Series) -> None:
    """Raise naming the (distribution, role, bucket) of the ``missing`` seats, if any."""
    if missing.any():
        bad = seats.loc[missing, KEYS].drop_duplicates().to_dict(orient="records")
        raise ValueError(
            f"the CSα reference has no row for {bad[:5]}; re-run the reference "
            "stage (or give the instance the roster its games were played against)"
        )


def load_reference(path: Path) -> pd.DataFrame:
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"{path}: no CSα reference table; run the simulate stage, which "
            "computes it before the games (dvc repro)"
        )
    return pd.read_parquet(path)


def seat_csa(
    seats: pd.DataFrame, reference: pd.DataFrame, mp: DoubleAuctionParams, strict: bool = True
) -> pd.DataFrame:
    """Add bucket, ref_mu, ref_sd and csa to ``seats`` (columns distribution, role, value, surplus).
    A seat whose (distribution, role, bucket) the reference has no row for is an error
    (:func:`no_reference`), or with ``strict=False`` gets a NaN CSα (an imported game that logged
    its own CSα need not have ours)."""
    out = seats.copy()
    out["bucket"] = rules.value_bucket(out["value"].to_numpy(), mp.reference.bucket_width)
    ref = reference[KEYS + ["mean", "sd_used"]].rename(
        columns={"mean": "ref_mu", "sd_used": "ref_sd"}
    )
    out = out.merge(ref, on=KEYS, how="left")
    if strict:
        no_reference(out, out["ref_mu"].isna())
    out["csa"] = rules.csa(
        out["surplus"], out["ref_mu"].to_numpy(), out["ref_sd"].to_numpy(), mp.csa_clip
    )
    return out
