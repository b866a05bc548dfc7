"""Our "their score" of Agent Bazaar's crash runs against the authors' own cached outputs (issue 54,
golden checks): their Figure 3 grids (``paper/fig/exp1/<run folder>/data/exp1_heatmap_food.json``:
per cell of stabilizing firms x discovery limit, the mean over seeds of each run's bankruptcy
rate, final average price and price SD, as their ``exp1_score.py`` computes them) beside the same
per-run figures our import computes (``data/metrics/<instance>/their_runs.parquet``:
``markets/crash/sources/published.py``), cell by cell.

Their cache was made on their machine from their full logs; the published snapshot may lack runs
(files of 4 MiB or more) and our import cuts the 13 runs whose folders mix two executions, so a
cell can differ for that reason: the report names each cell that differs and how many runs each
side averaged where that is known.

    .venv/bin/python benchmarks/bench_their_outputs.py --figs AI-Bazaar/paper/fig/exp1 \\
        --project <a project with crash_authors imported> [--instance crash_authors] [--tol 1e-6]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from marketarena.identity import identify

#: their grids' rows and columns: stabilizing firms 0..5, discovery limits 1, 3, 5
STAB = range(6)
DLC = (1, 3, 5)
#: their annotation -> our their_runs column
FIELDS = {"bankruptcy_rate": "b", "final_avg_price": "p_fin", "price_std": "sigma"}


def their_model(folder: Path) -> str:
    """The model of one of their figure folders (``exp1_openai_gpt-5.4``, ``exp1_antrhopic_...``):
    the part after the provider, matched to ours by identity (``identity.py``)."""
    name = folder.name.removeprefix("exp1_")
    for sep in ("_", "-"):
        head, _, tail = name.partition(sep)
        if tail and head in ("openai", "anthropic", "antrhopic", "google", "meta-llama"):
            return tail
    return name


def compare(figs: Path, runs: pd.DataFrame, tol: float) -> pd.DataFrame:
    rows = []
    for grid_file in sorted(figs.glob("*/data/exp1_heatmap_food.json")):
        folder = grid_file.parents[1]
        if folder.name.startswith("OLD"):
            continue
        model = identify(their_model(folder)).key
        mine = runs[runs["model"].map(lambda m: identify(m).key) == model]
        data = json.loads(grid_file.read_text())["data"]
        if len(data["available"]) != len(STAB):  # an older grid of other rows: not readable
            print(f"skipped {folder.name}: {len(data['available'])} rows, not stabilizing 0-5")
            continue
        for i, stab in enumerate(STAB):
            for j, dlc in enumerate(DLC):
                if not data["available"][i][j]:
                    continue
                cell = mine[(mine["stabilizing"] == stab) & (mine["discovery_limit"] == dlc)]
                for theirs, ours in FIELDS.items():
                    value = data["grids"][theirs][i][j]
                    got = float(cell[ours].mean()) if len(cell) else math.nan
                    rows.append(
                        {
                            "model": model,
                            "stabilizing": stab,
                            "discovery_limit": dlc,
                            "field": theirs,
                            "theirs": value,
                            "ours": got,
                            "our_runs": len(cell),
                            "agree": abs(got - value) <= tol * max(1.0, abs(value)),
                        }
                    )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--figs", required=True, help="AI-Bazaar's paper/fig/exp1 folder")
    ap.add_argument("--project", required=True, help="a project with the crash runs imported")
    ap.add_argument("--instance", default="crash_authors")
    ap.add_argument("--tol", type=float, default=1e-6, help="relative tolerance")
    args = ap.parse_args()
    runs = pd.read_parquet(
        Path(args.project) / "data" / "metrics" / args.instance / "their_runs.parquet"
    )
    table = compare(Path(args.figs), runs, args.tol)
    if table.empty:
        raise SystemExit("no grid of theirs matched a model of the import")
    for field, g in table.groupby("field"):
        print(f"{field}: {int(g['agree'].sum())} of {len(g)} cells agree (tolerance {args.tol:g})")
    print(
        f"models: {', '.join(sorted(table['model'].unique()))}; cells: {len(table) // len(FIELDS)}"
    )
    off = table[~table["agree"]]
    if len(off):
        print("cells that differ:")
        print(off.to_string(index=False, float_format=lambda x: f"{x:.6g}"))


if __name__ == "__main__":
    main()
