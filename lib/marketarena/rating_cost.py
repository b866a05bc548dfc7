"""What it costs to rate a model: per market, one LLM entrant at the default params.

A researcher's first question before adding a model. For every market instance of the params,
the instance with one LLM roster entry more (:func:`with_entrant`: an entrant of double_auction,
a challenger of english_auction, elsewhere in the place of one baseline: the market's
``MarketRules.cost_seat``) is
estimated as ``marketarena estimate`` estimates a run (``estimate.py``: dry runs on the mock
provider, the prior re-ask rate, the prompt tokens a prefix-caching provider would serve from
its cache), and the calls, tokens and episodes that entrant needs are kept
(``estimate.rating_cost_row``; this module only reads, prices and writes the table, so the results
site pricing it imports nothing of the estimate).

The figures of the project's default ``params.yaml`` are kept in ``rating_cost.csv`` beside this
module, one row per instance with a fingerprint of what they depend on (the instance's params,
its market's prompts and observations, the harnesses' templates: :func:`fingerprint`); the
results site prices them at ``params.reference_prices`` (a few reference models' list prices)
and says, per instance, when the current params or prompts differ from those they were measured
with. ``python benchmarks/bench_cost_to_rate.py --write`` measures them anew;
``marketarena estimate --rate`` measures them for any params file.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Mapping

from marketarena.config import Params
from marketarena.llm.spec import ReferencePrice
from marketarena.money import usd

ALIAS = "rated-model"
TABLE = Path(__file__).with_name("rating_cost.csv")
COLUMNS = [
    "instance",
    "market",
    "episodes",
    "calls",
    "requests",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "fingerprint",
]
PACKAGE = Path(__file__).resolve().parent


def with_entrant(params: Params, instance: str) -> Params:
    """``params`` with one LLM entry (alias :data:`ALIAS`, the mock provider) in ``instance``:
    in the place of the first baseline of the market's ``cost_seat`` strategy (keeping its name,
    so the market's own keys that name it still hold), else added to the roster as ``rated``."""
    from marketarena.config import parse_params
    from marketarena.core.registry import market_kind

    mp = params.markets[instance]
    raw = mp.model_dump(mode="json", by_alias=True)
    llm = {"name": "rated", "kind": "llm", "model": ALIAS}
    strategy = market_kind(mp.market).rules.cost_seat
    place = next(
        (i for i, e in enumerate(mp.roster) if e.kind == "baseline" and e.strategy == strategy),
        None,
    )
    if place is None:
        raw["roster"].append(llm)
    else:
        raw["roster"][place] = {**llm, "name": mp.roster[place].name}
    models = {ALIAS: {"model": ALIAS, "provider": "mock"}}
    data = params.model_dump(mode="json", by_alias=True, include={"personas", "embedding"})
    return parse_params(
        {
            **data,
            "models": models,
            "llm": params.llm.model_dump(mode="json"),
            "markets": {instance: raw},
        }
    )


def fingerprint(params: Params, instance: str) -> str:
    """What an instance's figures depend on: its params and the text its LLM seats are shown
    (the market's templates and observations, the shared templates, the harnesses)."""
    from marketarena.core.digest import hash_files
    from marketarena.core.registry import market_kind

    folder = market_kind(params.markets[instance].market).folder
    code = hash_files(
        [
            folder / "templates",
            folder / "observations.py",
            PACKAGE / "markets" / "_shared" / "templates",
            PACKAGE / "agents" / "templates",
            PACKAGE / "agents" / "harnesses",
        ]
    )
    dumped = params.markets[instance].model_dump(mode="json", by_alias=True)
    text = json.dumps({"params": dumped, "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_table(path: Path | None = None) -> list[dict]:
    """The kept rows (``path``, by default :data:`TABLE`), numbers as numbers; none when there
    is no file."""
    path = TABLE if path is None else path
    if not Path(path).is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for key in COLUMNS[2:-1]:
            row[key] = int(row[key])
    return rows


def write_table(rows: list[dict], path: Path | None = None) -> None:
    with open(TABLE if path is None else path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: row[k] for k in COLUMNS} for row in rows)


def priced(rows: list[dict], prices: Mapping[str, ReferencePrice]) -> list[dict]:
    """Each row with ``usd``: reference model -> dollars for its tokens (cached ones at the
    model's cached-input price), and a last row ``total`` summing every instance."""
    out = []
    for row in rows:
        usd = {
            name: p.cost_usd(
                row["prompt_tokens"], row["completion_tokens"], row["cached_prompt_tokens"]
            )
            for name, p in prices.items()
        }
        out.append({**row, "usd": usd})
    if out:
        total = {k: sum(r[k] for r in out) for k in COLUMNS[2:-1]}
        total["usd"] = {name: sum(r["usd"][name] for r in out) for name in prices}
        out.append({"instance": "total", "market": "", "fingerprint": "", **total})
    return out


def describe(rows: list[dict], prices: Mapping[str, ReferencePrice]) -> list[str]:
    """The priced table (:func:`priced`) as lines of text."""
    names = list(prices)
    head = (
        f"{'instance':26s} {'episodes':>8s} {'calls':>8s} {'prompt tok':>11s} "
        f"{'(cached)':>11s} {'compl. tok':>10s}" + "".join(f" {n[:18]:>18s}" for n in names)
    )
    lines = [head]
    for row in priced(rows, prices):
        lines.append(
            f"{row['instance']:26s} {row['episodes']:8,d} {row['calls']:8,d} "
            f"{row['prompt_tokens']:11,d} {row['cached_prompt_tokens']:11,d} "
            f"{row['completion_tokens']:10,d}"
            + "".join(f" {usd(row['usd'][n]):>18s}" for n in names)
        )
    return lines
