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

The kept completion tokens are the mock's answers (bare JSON in the market's format). A real
model writes more (issue 56), so :func:`priced` prices every instance once per kind of answer
(``completion_priors.KINDS``: ``bare_json``, ``chain_of_thought``, ``thinking``) at that kind's
completion tokens per call (``completion_priors.answer_tokens``, the priors from Agent Bazaar's
logged runs): ``requests`` x the kind's tokens a call, each re-ask resending the longer answer
(``requests - calls`` x the difference from the mock's, added to the prompt tokens). ``usd`` is
at :data:`completion_priors.POINT_KIND` (chain_of_thought, what ``marketarena estimate`` assumes
for a model that declares no kind), ``usd_by_kind`` at each kind.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Mapping

from marketarena.completion_priors import KINDS, POINT_KIND, answer_tokens
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
    # the instance's own LLM entries keep their models (a roster that already seats one)
    models = {
        **params.model_dump(mode="json", by_alias=True, include={"models"}).get("models", {}),
        ALIAS: {"model": ALIAS, "provider": "mock"},
    }
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


def by_kind(row: dict) -> dict[str, dict]:
    """Kind -> (prompt tokens, completion tokens, tokens a call) of a kept row whose model
    answers like that kind (the module docstring)."""
    mock = row["completion_tokens"] / row["requests"] if row["requests"] else 0.0
    out = {}
    for kind in KINDS:
        tokens = answer_tokens(kind, row["market"], mock).point
        out[kind] = {
            "prompt_tokens": row["prompt_tokens"]
            + (row["requests"] - row["calls"]) * (tokens - mock),
            "completion_tokens": row["requests"] * tokens,
            "per_call": tokens,
        }
    return out


def priced(rows: list[dict], prices: Mapping[str, ReferencePrice]) -> list[dict]:
    """Each row with ``completion_by_kind`` (kind -> completion tokens), ``usd_by_kind`` (kind ->
    reference model -> dollars, cached prompt tokens at the model's cached-input price) and
    ``usd`` (:data:`completion_priors.POINT_KIND`'s), and a last row ``total`` summing every
    instance."""
    out = []
    for row in rows:
        kinds = by_kind(row)
        dollars = {
            kind: {
                name: p.cost_usd(
                    t["prompt_tokens"], t["completion_tokens"], row["cached_prompt_tokens"]
                )
                for name, p in prices.items()
            }
            for kind, t in kinds.items()
        }
        out.append(
            {
                **row,
                "completion_by_kind": {k: t["completion_tokens"] for k, t in kinds.items()},
                "usd_by_kind": dollars,
                "usd": dollars[POINT_KIND],
            }
        )
    if out:
        total = {k: sum(r[k] for r in out) for k in COLUMNS[2:-1]}
        total["completion_by_kind"] = {
            k: sum(r["completion_by_kind"][k] for r in out) for k in KINDS
        }
        total["usd_by_kind"] = {
            k: {name: sum(r["usd_by_kind"][k][name] for r in out) for name in prices} for k in KINDS
        }
        total["usd"] = total["usd_by_kind"][POINT_KIND]
        out.append({"instance": "total", "market": "", "fingerprint": "", **total})
    return out


def describe(rows: list[dict], prices: Mapping[str, ReferencePrice]) -> list[str]:
    """The priced table (:func:`priced`) as lines of text: per instance the mock's completion
    tokens and dollars at :data:`completion_priors.POINT_KIND`; then the total per kind."""
    names = list(prices)
    head = (
        f"{'instance':26s} {'episodes':>8s} {'calls':>8s} {'prompt tok':>11s} "
        f"{'(cached)':>11s} {'mock compl.':>11s}" + "".join(f" {n[:18]:>18s}" for n in names)
    )
    lines = [f"dollars at {POINT_KIND}'s completion tokens", head]
    table = priced(rows, prices)
    for row in table:
        lines.append(
            f"{row['instance']:26s} {row['episodes']:8,d} {row['calls']:8,d} "
            f"{row['prompt_tokens']:11,d} {row['cached_prompt_tokens']:11,d} "
            f"{row['completion_tokens']:11,d}"
            + "".join(f" {usd(row['usd'][n]):>18s}" for n in names)
        )
    if table:
        lines.append("every instance, per kind of answer (completion tokens, dollars)")
        for kind in KINDS:
            total = table[-1]
            lines.append(
                f"{kind:26s} {total['completion_by_kind'][kind]:>54,.0f}"
                + "".join(f" {usd(total['usd_by_kind'][kind][n]):>18s}" for n in names)
            )
    return lines
