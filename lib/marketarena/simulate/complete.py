"""A simulate run that would play nothing, recognised without planning.

A run that ends with every planned unit on disk records in its run log (``complete.json``) its
*run key*, a digest of what its episodes' fingerprints are made of that can be read without the
market's rules: the instance's params as written, the global sections its market uses, the
simulator's and the market's rules code (``planning.code_hash``), the resolved model specs of its
LLM aliases, the package version and the content of the input files it read; and the units it
left. The next run whose key is the same and whose units are all there, intact (every file its
``meta.json`` records, with its size and hash), with nothing else in the folder, returns at once:
it imports neither the market's rules nor pandas, so a simulate stage with nothing to play (DVC
runs one whenever its instance's code file changes: an edit to the market's figures) costs about
as much as starting Python. Anything else (no record, another key, a unit missing, changed or
partial, a leftover, a stopping rule) takes the full path: plan, fingerprints, sweep, play.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from marketarena.config import Params
from marketarena.core import digest, logs
from marketarena.core.files import write_atomic
from marketarena.core.registry import market_kind
from marketarena.simulate.planning import (
    code_hash,
    model_fingerprint,
    package_version,
    shared_sections,
)

RECORD = "complete.json"


def run_key(instance: str, params: Params, inputs: list[Path]) -> str:
    """The run key of ``instance`` with ``params`` and input files ``inputs`` (module docstring)."""
    mp = params.markets[instance]
    aliases = sorted({e.model for e in mp.roster if e.kind == "llm" and e.model})
    return digest.sha256_text(
        digest.canonical_json(
            {
                "instance": instance,
                "params": mp.model_dump(mode="json", by_alias=True),
                "shared": shared_sections(market_kind(mp.market).uses, params),
                "code": code_hash(mp.market),
                "version": package_version(),
                "models": {a: model_fingerprint(params, a) for a in aliases},
                "inputs": digest.hash_files(inputs) if inputs else "",
            }
        )
    )


def record(run_dir: Path, key: str, inputs: list[Path], out_dir: Path, planned: int) -> None:
    """Record a run that left every planned unit in ``out_dir``."""
    units = sorted(p.name for p in out_dir.iterdir() if p.is_dir())
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(
        run_dir / RECORD,
        json.dumps(
            {"key": key, "inputs": [str(p) for p in inputs], "units": units, "planned": planned},
            indent=1,
            sort_keys=True,
        )
        + "\n",
    )


def recorded(run_dir: Path) -> bool:
    """Whether a run of this instance left a record (cheap: one ``stat``)."""
    return (run_dir / RECORD).is_file()


def nothing_to_play(
    instance: str, params: Params, out_dir: Path, run_dir: Path
) -> dict[str, Any] | None:
    """The run's summary when its last run left it complete and nothing changed since (module
    docstring); None: take the full path."""
    if params.markets[instance].stop is not None:
        return None
    try:
        held = json.loads((run_dir / RECORD).read_text(encoding="utf-8"))
        inputs = [Path(p) for p in held["inputs"]]
        if not all(p.is_file() for p in inputs) or held["key"] != run_key(instance, params, inputs):
            return None
        if sorted(p.name for p in out_dir.iterdir()) != held["units"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for name in held["units"]:
        meta = logs.read_meta(out_dir / name)
        if (
            meta is None
            or meta.get("status") != "complete"
            or not logs.intact(out_dir / name, meta)
        ):
            return None
    planned = int(held.get("planned", 0))
    return {
        "market": instance,
        "planned": planned,
        "skipped": planned,
        "played": 0,
        "wall_time_s": 0.0,
    }
