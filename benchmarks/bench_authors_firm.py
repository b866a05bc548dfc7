"""Agent Bazaar's crash firms' system prompts, rendered by their own code in our interpreter
(``markets/crash/authors_firm.py``), against the system prompt every published run logged
(``firm_attributes.json``: one per firm), issue 53.

    .venv/bin/python benchmarks/bench_authors_firm.py --logs AI-Bazaar/logs-data --code AI-Bazaar

``--code``: the root of a copy of sethkarten/AI-Bazaar (the version to check); ``--logs``: their
``logs-data``. Prints how many firms' prompts are identical, identical after whitespace
normalisation, and each kind of difference; asserts nothing. The user message of a day is not
logged in the snapshot (the crash prompt logs are absent: files over 4 MiB), so only the system
prompt can be checked against their logs here.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from marketarena.markets._shared.sources.agent_bazaar import discover, read_args
from marketarena.markets.crash.authors_firm import FirmSeat, FirmSetting


def normalised(text: str) -> str:
    return " ".join(text.split())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", type=Path, required=True)
    ap.add_argument("--code", type=Path, required=True)
    a = ap.parse_args()
    runs, _ = discover(a.logs, "crash")
    firms = exact = loose = 0
    kinds: Counter = Counter()
    for run in runs:
        attrs_file = run.path / "firm_attributes.json"
        if not attrs_file.is_file():
            kinds["run without firm_attributes.json"] += 1
            continue
        args = read_args(run)
        setting = FirmSetting(num_consumers=args.num_consumers or 50)
        for firm in json.loads(attrs_file.read_text()):
            seat = FirmSeat(
                a.code,
                firm["name"],
                firm.get("supply_unit_costs") or {"food": 1.0},
                firm["name"].startswith("stabilizing"),
                firm.get("persona"),
                setting,
            )
            firms += 1
            ours, theirs = seat.system_prompt, firm.get("system_prompt", "")
            exact += ours == theirs
            loose += normalised(ours) == normalised(theirs)
            if normalised(ours) != normalised(theirs):
                kinds[f"differs: {firm.get('persona')!r}, {run.model_folder}"] += 1
    print(f"{len(runs)} crash runs, {firms} firms")
    print(f"system prompt identical: {exact} / {firms} ({exact / max(firms, 1):.2%})")
    print(f"identical after whitespace normalisation: {loose} / {firms}")
    for kind, n in kinds.most_common():
        print(f"  {n:5d}  {kind}")


if __name__ == "__main__":
    main()
