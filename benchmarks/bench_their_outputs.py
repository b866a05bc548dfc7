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

Prints figures; asserts nothing. The readers and the comparison are
``lib/marketarena/markets/crash/sources/cached.py``'s, which the golden test
(``tests/markets/crash/test_their_outputs.py``, on a committed slice of their data) shares.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from marketarena.markets.crash.sources.cached import FIELDS, compare, figure3_cells


def grids(figs: Path) -> pd.DataFrame:
    """Every Figure 3 grid under ``figs`` (but their ``OLD`` folders), one row per cell."""
    cells = []
    for grid_file in sorted(figs.glob("*/data/exp1_heatmap_food.json")):
        folder = grid_file.parents[1]
        if folder.name.startswith("OLD"):
            continue
        table = figure3_cells(grid_file)
        if table.empty:  # an older grid of other rows: not readable
            print(f"skipped {folder.name}: its rows are not stabilizing firms 0-5")
            continue
        cells.append(table)
    if not cells:
        raise SystemExit(f"no Figure 3 grid under {figs}")
    return pd.concat(cells, ignore_index=True)


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
    table = compare(grids(Path(args.figs)), runs, args.tol)
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
