"""How long real models' answers are: completion tokens per call by kind of model (issue 56).

A real model's completion tokens are the largest unknown of a run's cost: the mock answers with
bare JSON (11 to 13 tokens a call in crash and lemon), while Agent Bazaar's logged runs of the
same markets show 47 to 195 a call for models that write their reasons and 370 to 465 for
thinking models. ``completion_priors.csv`` beside this module holds, per kind of answer and
market, the tokens per call real models wrote: written by
``benchmarks/bench_completion_priors.py --write`` from Agent Bazaar's ``*_token_usage.json``
(MIT; numbers derived from them, no file copied; PACT's and BAZAAR's logs record no token usage).
Its columns: ``kind``, ``market`` (a market kind, or ``any`` for the others), ``mean`` (the mean
over the kind's models of each model's tokens per call), ``low`` and ``high`` (the least and the
most of them), ``reasoning_share`` (the share beyond the same market's bare answer: an estimate,
no source logs reasoning tokens apart), ``n_models``, ``calls`` and ``source``.

The kinds (:data:`KINDS`), which a model entry may declare (``models.<alias>.answers_like``):

- ``bare_json``: the answer alone, as the harness asks (a non-thinking model asked for the answer
  alone under 60 tokens a call);
- ``chain_of_thought``: its reasons written before the answer (asked to, or unasked);
- ``thinking``: a reasoning model, its hidden reasoning billed as completion tokens (250 tokens a
  call or more over all its calls).

:func:`answer_tokens` turns a kind into completion tokens per call for a market, with a range:

- a market with its own rows (crash, lemon): the row's mean, low and high;
- any other market: the mock's own answer (the dry run's, bare JSON in the market's own format:
  bertrand's answers carry notes, english_auction's a status) plus what the kind adds over a bare
  answer in the ``any`` row (its mean, low and high less bare_json's mean, never below the
  mock's), so bare_json there is the mock's answer;
- an undeclared kind (None): the point is chain_of_thought's (the middle kind: most chat models
  write some reasons even when asked for JSON), the range runs from the least of bare_json's low
  and the mock's answer (the shortest valid answer) to thinking's high, so it covers every kind.

A model's own earlier runs of the instance take precedence over any prior (``estimate.py``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Kind = Literal["bare_json", "chain_of_thought", "thinking"]
KINDS: tuple[str, ...] = get_args(Kind)
#: the kind whose prior is the point for a model that declares none
POINT_KIND = "chain_of_thought"
TABLE = Path(__file__).with_name("completion_priors.csv")
COLUMNS = [
    "kind",
    "market",
    "mean",
    "low",
    "high",
    "reasoning_share",
    "n_models",
    "calls",
    "source",
]


class PriorsError(ValueError):
    """A malformed prior table: the message names the file and the row."""


class PriorRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Kind
    market: str = Field(min_length=1)
    mean: float = Field(ge=0.0, le=1_000_000.0)
    low: float = Field(ge=0.0, le=1_000_000.0)
    high: float = Field(ge=0.0, le=1_000_000.0)
    reasoning_share: float = Field(ge=0.0, le=1.0)
    n_models: int = Field(ge=1)
    calls: int = Field(ge=0)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self):
        if not self.low <= self.mean <= self.high:
            raise ValueError(
                f"low <= mean <= high must hold (got {self.low}, {self.mean}, {self.high})"
            )
        return self


@dataclass(frozen=True)
class Answer:
    """Completion tokens per call: the point, the range, and where they come from."""

    point: float
    low: float
    high: float
    source: str


def load_priors(path: Path | None = None) -> dict[tuple[str, str], PriorRow]:
    """(kind, market) -> row of the table at ``path`` (by default :data:`TABLE`), validated:
    :class:`PriorsError` names the file and the row (its line) of a malformed one. Read once
    per file and version (its modification time)."""
    path = Path(TABLE if path is None else path)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as err:
        raise PriorsError(f"{path}: cannot be read ({err.strerror})") from err
    return _load(path, stamp)


@lru_cache(maxsize=8)
def _load(path: Path, stamp: int) -> dict[tuple[str, str], PriorRow]:
    text = path.read_text(encoding="utf-8")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    lines = [(n, line) for n, line in lines if not line.startswith("#")]  # the header comment
    header = next(csv.reader([lines[0][1]])) if lines else []
    if header != COLUMNS:
        raise PriorsError(
            f"{path}: the header must be {','.join(COLUMNS)} (got {','.join(header)})"
        )
    out: dict[tuple[str, str], PriorRow] = {}
    for i, (n, line) in enumerate(lines[1:], start=1):
        where = f"{path}: row {i} (line {n})"
        cells = next(csv.reader([line]))
        if len(cells) != len(COLUMNS):
            raise PriorsError(f"{where}: {len(cells)} cells, the header has {len(COLUMNS)}")
        try:
            row = PriorRow(**dict(zip(COLUMNS, cells)))
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "row"
            raise PriorsError(f"{where}: {field}: {first['msg']}") from None
        if (row.kind, row.market) in out:
            raise PriorsError(f"{where}: a second row for kind {row.kind}, market {row.market}")
        out[(row.kind, row.market)] = row
    missing = [k for k in KINDS if (k, "any") not in out]
    if missing:
        raise PriorsError(f"{path}: no row for market any of kind(s) {', '.join(missing)}")
    return out


def write_priors(rows: list[dict], path: Path | None = None) -> None:
    """Write the prior rows (``benchmarks/bench_completion_priors.py``), validated first."""
    for i, row in enumerate(rows, start=1):
        try:
            PriorRow(**{k: row[k] for k in COLUMNS})
        except ValidationError as err:
            raise PriorsError(f"row {i}: {err.errors()[0]['msg']}") from None
    with open(TABLE if path is None else path, "w", newline="", encoding="utf-8") as fh:
        fh.write(
            "# written by benchmarks/bench_completion_priors.py --write from Agent Bazaar's "
            "token_usage.json (MIT); see completion_priors.py\n"
        )
        writer = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: row[k] for k in COLUMNS} for row in rows)


def answer_tokens(kind: str | None, market: str, mock: float, path: Path | None = None) -> Answer:
    """Completion tokens per call of a model answering like ``kind`` (None: undeclared) in
    ``market``, whose mock answers spent ``mock`` a call (the module docstring's rules)."""
    table = load_priors(path)
    if kind is None:
        each = {k: answer_tokens(k, market, mock, path) for k in KINDS}
        point = each[POINT_KIND]
        return Answer(
            point.point,
            min(mock, each["bare_json"].low),
            max(a.high for a in each.values()),
            f"kind not declared (models.<alias>.answers_like): {POINT_KIND}'s prior, the range "
            "covering every kind",
        )
    own = table.get((kind, market))
    if own is not None:
        return Answer(
            own.mean,
            own.low,
            own.high,
            f"{kind} prior ({market}: {own.n_models} models of {own.source})",
        )
    anyrow, bare = table[(kind, "any")], table[("bare_json", "any")].mean
    return Answer(
        mock + max(0.0, anyrow.mean - bare),
        mock + max(0.0, anyrow.low - bare),
        mock + max(0.0, anyrow.high - bare),
        f"{kind} prior (the mock's answer + what the kind adds over a bare answer in "
        f"{anyrow.n_models} models of {anyrow.source})",
    )
