"""What it costs to rate a model, per market (issue 47): the table the results site shows.

For every market instance of the project's ``params.yaml``, one LLM entrant more (``rating_cost
.with_entrant``: double_auction's entrant, english_auction's challenger, elsewhere in the place
of one baseline) is estimated as ``marketarena estimate`` would (dry runs on the mock provider,
``--sample`` episodes of each play); prints its episodes, calls, prompt tokens (and those a
prefix-caching provider would serve from its cache), completion tokens and dollars at the
params' ``reference_prices``, and the total over the instances. ``--write`` keeps the figures in
``lib/marketarena/rating_cost.csv``, which the site prices (with a fingerprint of the params and
prompts they were measured with: the site says when yours differ).

    .venv/bin/python benchmarks/bench_cost_to_rate.py [--sample 20] [--write]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena import rating_cost
from marketarena.config import load_params
from marketarena.estimate import rating_cost_row
from marketarena.pipeline import Paths, run_embed, run_personas, run_reference
from marketarena.simulate import load_inputs

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--sample", type=int, default=20, help="episodes of each play (0: all)")
    ap.add_argument("--markets", nargs="*", help="instances (default: all)")
    ap.add_argument("--write", action="store_true", help="keep the figures in rating_cost.csv")
    args = ap.parse_args()
    params = load_params(args.params)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-rate-") as tmp:
        paths = Paths(Path(tmp))
        paths.data.mkdir(parents=True)
        params = params.model_copy(
            update={
                "llm": params.llm.model_copy(update={"cache_dir": Path(tmp) / "llm"}),
                "embedding": params.embedding.model_copy(
                    update={"cache_dir": str(Path(tmp) / "emb")}
                ),
            }
        )
        for instance in args.markets or list(params.markets):
            t0 = time.perf_counter()
            if params.markets[instance].market == "supply_chain" and not paths.personas.exists():
                run_personas(params, paths)
                run_embed(params, paths)
            run_reference(instance, params, paths)
            _, resources = load_inputs(instance, params, paths.data)
            rows.append(rating_cost_row(params, instance, resources, args.sample or None))
            print(f"{instance}: {time.perf_counter() - t0:.0f} s", flush=True)
    for line in rating_cost.describe(rows, params.reference_prices):
        print(line)
    if args.write:
        rating_cost.write_table(rows)
        print(f"-> {rating_cost.TABLE}")


if __name__ == "__main__":
    main()
