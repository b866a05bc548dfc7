"""What the estimate before the first call (``simulate/preflight.py``, issue 56) adds to a run's
start: for each instance of the default params with one LLM seat added
(``rating_cost.with_entrant``: the mock provider, priced here at 1 USD per million tokens so that
the estimate runs), a simulate run with ``llm.max_cost_usd: 0`` (it stops right after the
estimate, before any episode) in a temporary folder; prints the seconds the estimate took
(``estimate_s`` of the run log's ``estimate.json``), its episodes and calls.

`PYTHONPATH=lib HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_preflight.py [instance ...]`
(default: every instance with planned episodes). Prints figures; asserts nothing.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(instance: str, base) -> dict:
    from marketarena.cli import _resources
    from marketarena.core.types import RunAborted
    from marketarena.pipeline import Paths
    from marketarena.rating_cost import ALIAS, with_entrant
    from marketarena.simulate import simulate
    from marketarena.simulate.preflight import ESTIMATE

    params = with_entrant(base, instance)
    spec = params.models[ALIAS].model_copy(
        update={"price_in_per_mtok": 1.0, "price_out_per_mtok": 1.0}
    )
    with tempfile.TemporaryDirectory(prefix="bench-preflight-") as tmp:
        llm = params.llm.model_copy(
            update={"max_cost_usd": 0.0, "cache_dir": Path(tmp) / "llm", "cache_only": False}
        )
        params = params.model_copy(update={"models": {ALIAS: spec}, "llm": llm})
        paths = Paths(tmp)
        paths.data.mkdir(parents=True)
        _resources(instance, params, paths, tmp)  # its inputs (personas, references) first
        from marketarena.pipeline import run_reference

        run_reference(instance, params, paths)
        started = time.perf_counter()
        with contextlib.suppress(RunAborted):  # it stops after the estimate: the cap is 0
            simulate(instance, params, paths.data, progress=False)
        total = time.perf_counter() - started
        held = json.loads((paths.data / "run_logs" / instance / ESTIMATE).read_text())
    return {"instance": instance, "total_s": total, **held}


def main(names: list[str]) -> None:
    from marketarena.config import load_params

    base = load_params(ROOT / "params.yaml")
    names = names or [n for n, mp in base.markets.items() if not mp.imported]
    print(f"{'instance':28} {'estimate s':>10} {'run start s':>11} {'episodes':>8} {'calls':>8}")
    for name in names:
        r = measure(name, base)
        print(
            f"{name:28} {r['estimate_s']:10.2f} {r['total_s']:11.2f} {r['episodes']:8,} "
            f"{r['calls']:8,}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
