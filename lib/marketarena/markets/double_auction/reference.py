"""The CSα reference: truthful self-play, tabulated by (distribution, role, value bucket).

For each distribution of ``markets.double_auction.distributions``, ``reference.games_per_distribution``
games are played with every seat truthful (every seat quotes its value every round), all at once with
:func:`rules.truthful_surplus` (the market's own :func:`rules.match`, batched). Values come from the
market's :func:`rules.draw_values` with the same shape parameters; generator:
``default_rng(SeedSequence([reference.seed, index of the distribution in DISTRIBUTIONS]))``.

Table ``truthful_reference.parquet``, one row per (distribution, role, bucket) for every bucket of
width ``bucket_width`` (value // width, the top value folded into the last bucket):
  n_raw, mean_raw, sd_raw  the seats whose value fell in the bucket (sd with ddof = 1)
  n, mean, sd              the statistics CSα uses: if n_raw < min_count, the bucket borrows the
                           seats of its neighbours, one bucket further on each side at a time,
                           until it has min_count seats (pooled_lo..pooled_hi name the buckets used)
  sd_used                  max(sd, sd_floor): a bucket where truthful play always earns the same
                           (e.g. buyers valuing at 1-4 who never trade) gets a finite σ
CSα of a seat with game surplus S = clip((S - mean) / sd_used, -clip, clip).
``reference_info.json`` records how the table was built (params, games, seats, seeds).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.params import DISTRIBUTIONS, DoubleAuctionParams

TABLE = "truthful_reference.parquet"
INFO = "reference_info.json"
KEYS = ["distribution", "role", "bucket"]


def truthful_seats(mp: DoubleAuctionParams, distribution: str) -> pd.DataFrame:
    """Seat-level truthful self-play results: role, value, surplus (one row per seat and game)."""
    rp = mp.reference
    ss = np.random.SeedSequence([rp.seed, DISTRIBUTIONS.index(distribution)])
    rng = np.random.default_rng(ss)
    g = rp.games_per_distribution
    bv, sv = rules.draw_values(distribution, mp.n_buyers, mp.n_sellers, rng, mp.values, games=g)
    sb, s_s = rules.truthful_surplus(bv, sv, mp.rounds, rng)
    ce = rules.ce_surplus(bv, sv) * mp.rounds
    frames = [pd.DataFrame({"role": role, "value": v.ravel(), "surplus": s.ravel(),
                            "game": np.repeat(np.arange(g), v.shape[1])})
              for role, v, s in (("buyer", bv, sb), ("seller", sv, s_s))]
    out = pd.concat(frames, ignore_index=True)
    out.attrs["ce_surplus"] = ce
    return out


def tabulate(seats: pd.DataFrame, distribution: str, mp: DoubleAuctionParams) -> pd.DataFrame:
    """The reference rows of one distribution from seat-level results (see module docstring)."""
    rp = mp.reference
    n_buckets = int(rules.value_bucket(mp.max_quote, rp.bucket_width, mp.max_quote)) + 1
    rows = []
    for role, g in seats.groupby("role", sort=True):
        bucket = rules.value_bucket(g["value"].to_numpy(), rp.bucket_width, mp.max_quote)
        values = [g["surplus"].to_numpy()[bucket == k].astype(float) for k in range(n_buckets)]
        for k in range(n_buckets):
            raw = values[k]
            lo = hi = k
            pooled = raw
            while len(pooled) < rp.min_count and (lo > 0 or hi < n_buckets - 1):
                lo, hi = max(lo - 1, 0), min(hi + 1, n_buckets - 1)
                pooled = np.concatenate(values[lo:hi + 1])
            sd = float(pooled.std(ddof=1)) if len(pooled) > 1 else np.nan
            rows.append({
                "distribution": distribution, "role": role, "bucket": k,
                "value_lo": k * rp.bucket_width,
                "value_hi": mp.max_quote if k == n_buckets - 1 else (k + 1) * rp.bucket_width - 1,
                "n_raw": len(raw), "mean_raw": float(raw.mean()) if len(raw) else np.nan,
                "sd_raw": float(raw.std(ddof=1)) if len(raw) > 1 else np.nan,
                "n": len(pooled), "mean": float(pooled.mean()) if len(pooled) else np.nan,
                "sd": sd, "sd_used": max(sd, rp.sd_floor) if np.isfinite(sd) else rp.sd_floor,
                "pooled_lo": lo, "pooled_hi": hi,
            })
    return pd.DataFrame(rows)


def compute_reference(mp: DoubleAuctionParams, out_dir: Path) -> dict:
    """The `reference@<instance>` stage: writes the table and its info, returns the headline."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables, summary = [], {}
    for dist in mp.distributions:
        seats = truthful_seats(mp, dist)
        tables.append(tabulate(seats, dist, mp))
        summary[dist] = {
            "games": mp.reference.games_per_distribution,
            "mean_ce_surplus": float(np.mean(seats.attrs["ce_surplus"])),
            "mean_seat_surplus": {r: float(g["surplus"].mean()) for r, g in seats.groupby("role")},
            "truthful_efficiency": float(seats["surplus"].sum() / max(seats.attrs["ce_surplus"].sum(), 1)),
        }
    table = pd.concat(tables, ignore_index=True)
    table.to_parquet(out_dir / TABLE, index=False)
    info = {
        "what": "truthful self-play seat surplus by (distribution, role, value bucket); see "
                "marketarena.markets.double_auction.reference",
        "params": mp.model_dump(mode="json", include={
            "rounds", "n_buyers", "n_sellers", "max_quote", "distributions", "values",
            "reference"}),
        "rows": len(table),
        "seed_rule": "default_rng(SeedSequence([reference.seed, DISTRIBUTIONS.index(d)]))",
    }
    (out_dir / INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return {"table": TABLE, "distributions": summary}


def load_reference(path: Path) -> pd.DataFrame:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no CSα reference table; run the reference stage "
                                "(dvc repro reference@double_auction)")
    return pd.read_parquet(path)


def seat_csa(seats: pd.DataFrame, reference: pd.DataFrame, mp: DoubleAuctionParams) -> pd.DataFrame:
    """Add bucket, ref_mu, ref_sd and csa to ``seats`` (columns distribution, role, value, surplus)."""
    out = seats.copy()
    out["bucket"] = rules.value_bucket(out["value"].to_numpy(), mp.reference.bucket_width,
                                       mp.max_quote)
    ref = reference[KEYS + ["mean", "sd_used"]].rename(columns={"mean": "ref_mu",
                                                                 "sd_used": "ref_sd"})
    out = out.merge(ref, on=KEYS, how="left")
    missing = out["ref_mu"].isna()
    if missing.any():
        bad = out.loc[missing, KEYS].drop_duplicates().to_dict(orient="records")
        raise ValueError(f"the CSα reference has no row for {bad[:5]}; re-run the reference stage")
    out["csa"] = rules.csa(out["surplus"], out["ref_mu"].to_numpy(), out["ref_sd"].to_numpy(),
                           mp.csa_clip)
    return out
