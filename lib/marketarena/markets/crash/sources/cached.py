"""The authors' own cached outputs of their crash scoring, read into one shape and compared with
our "their score" (``published.py``'s per-run figures, ``their_runs``): issue 54's golden checks,
shared by the benchmark on the full snapshot (``benchmarks/bench_their_outputs.py``) and the test
on a committed slice of it (``tests/markets/crash/test_their_outputs.py``).

Two caches of their repository (``paper/fig/exp1``) hold the figures their exp1 scoring computes
per run (bankruptcy rate, final average price, price SD: ``published.py``):

- their Figure 3 grids (``<model folder>/data/exp1_heatmap_food.json``): per cell of stabilizing
  firms 0-5 x discovery limit 1/3/5, the mean over the cell's seeds (:func:`figure3_cells`); its
  ``per_seed_data`` lists the runs' figures in the order their threads finished, so not by seed;
- their health-vs-size cache (``data/exp1_health_vs_size_metrics.json``): per model (their display
  name) and stabilizing firms 0, 3, 5 at discovery limit 3, each run's figures
  (:func:`health_vs_size_runs`). For a model without a Figure 3 grid their script read the runs
  one seed after the other (8, 16, 64), so a cell of three records is one record per seed in that
  order; a model with a grid copies its grid's ``per_seed_data`` (no seed order).

:func:`compare` puts ours beside theirs per cell (their rows without a seed) or per run (with
one): ours is the mean over our runs of the same key. Agreement is to ``tol`` relative to their
value, absolute below 1 (a bankruptcy rate or SD near 0 has no useful relative error).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.identity import identify

#: their grids' rows and columns: stabilizing firms 0..5, discovery limits 1, 3, 5
STAB = range(6)
DLC = (1, 3, 5)
#: their figure -> our ``their_runs`` column
FIELDS = {"bankruptcy_rate": "b", "final_avg_price": "p_fin", "price_std": "sigma"}
#: the seeds their health-vs-size script reads a model's runs in, when it reads the state files
SEEDS = (8, 16, 64)
#: the discovery limit of their health-vs-size figure
HEALTH_DLC = 3
KEY = ["model", "stabilizing", "discovery_limit"]


def their_model(folder: str) -> str:
    """The model of one of their figure folders (``exp1_openai_gpt-5.4``, ``exp1_antrhopic_...``):
    the part after the provider, as ``identity.py`` reads it."""
    name = folder.removeprefix("exp1_")
    for sep in ("_", "-"):
        head, _, tail = name.partition(sep)
        if tail and head in ("openai", "anthropic", "antrhopic", "google", "meta-llama"):
            return tail
    return name


def figure3_cells(grid_file: Path) -> pd.DataFrame:
    """One row per available cell of a Figure 3 grid: model (from its folder), stabilizing,
    discovery_limit, their three figures and ``their_seeds`` (the runs the cell averages); empty
    when the grid's rows are not stabilizing firms 0-5 (an older grid of theirs)."""
    data = json.loads(Path(grid_file).read_text())["data"]
    model = their_model(Path(grid_file).parents[1].name)
    rows = []
    if len(data["available"]) == len(STAB):
        for i, stab in enumerate(STAB):
            for j, dlc in enumerate(DLC):
                if not data["available"][i][j]:
                    continue
                seeds = data.get("per_seed_data", {}).get(f"{i},{j}", {})
                row = {"model": model, "stabilizing": stab, "discovery_limit": dlc}
                row |= {f: data["grids"][f][i][j] for f in FIELDS}
                rows.append(row | {"their_seeds": len(seeds.get("bankruptcy_rate", [])) or None})
    return pd.DataFrame(rows, columns=[*KEY, *FIELDS, "their_seeds"])


def health_vs_size_runs(path: Path, models: dict[str, str]) -> pd.DataFrame:
    """One row per record of their health-vs-size cache for the display names in ``models``
    (display name -> model id, their script's ``MODELS``): model, stabilizing, discovery_limit
    (3), ``record`` (its place in the cell), ``seed`` (8, 16, 64 by place in a cell of three
    records, else NaN: module docstring) and their three figures."""
    data = json.loads(Path(path).read_text())
    rows = []
    for name, model in models.items():
        if name not in data:
            raise KeyError(f"error: {path}: no model {name!r} (it has {sorted(data)[:8]}...)")
        for k, records in data[name].items():
            for place, r in enumerate(records):
                seed = SEEDS[place] if len(records) == len(SEEDS) else np.nan
                row = {"model": model, "stabilizing": int(k), "discovery_limit": HEALTH_DLC}
                rows.append(row | {"record": place, "seed": seed} | {f: r[f] for f in FIELDS})
    return pd.DataFrame(rows, columns=[*KEY, "record", "seed", *FIELDS])


def compare(theirs: pd.DataFrame, runs: pd.DataFrame, tol: float) -> pd.DataFrame:
    """Per row of ``theirs`` (keyed by model, stabilizing, discovery_limit and, where it has one,
    seed) and field: their value, ours (the mean over our runs of the same key: ``runs`` is
    ``their_runs``), ``our_runs``, ``their_seeds`` where ``theirs`` has it, and ``agree`` (module
    docstring). Models are matched by
    identity (``identity.py``); a key without a run of ours has NaN, which does not agree."""
    key = [*KEY, "seed"] if "seed" in theirs and theirs["seed"].notna().all() else KEY
    ours = runs.assign(model=runs["model"].map(lambda m: identify(m).key))
    mine = ours.groupby(key)[list(FIELDS.values())].agg(["mean", "size"])
    rows = []
    for _, row in theirs.iterrows():
        at = (identify(row["model"]).key, *(row[c] for c in key[1:]))
        found = at in mine.index
        for field, col in FIELDS.items():
            value = float(row[field])
            got = float(mine.loc[at, (col, "mean")]) if found else math.nan
            rows.append(
                dict(zip(key, at))
                | {
                    "field": field,
                    "theirs": value,
                    "ours": got,
                    "our_runs": int(mine.loc[at, (col, "size")]) if found else 0,
                    "agree": abs(got - value) <= tol * max(1.0, abs(value)),
                }
                | ({"their_seeds": row["their_seeds"]} if "their_seeds" in row else {})
            )
    return pd.DataFrame(rows)
