"""BAZAAR's published game logs, read strictly.

BAZAAR (seed 002) published 1,954 game logs in its repository (``lechmazur/bazaar``, folder
``logs/``, schema 1.4.0; no licence, so they are read, never copied into this project); its
collusion study (``lechmazur/emergent_collusion``) and PACT publish theirs in the same schema. One
file is one game, one JSON record a line:

- ``init``: ``data.distribution``, ``num_rounds``, ``num_buyers``, ``num_sellers`` and
  ``data.agents``: seat id (B1.., S1..) -> role, ``model_name``, ``is_llm``, ``valuation``
  (buyers) or ``cost`` (sellers);
- ``bid_ask``: ``round`` (1-based), ``agent_id``, ``price`` (the quote; null = none);
- ``trade``: ``round``, ``buyer_id``, ``seller_id``, ``bid``, ``ask``, ``cleared_price``;
- ``conversation``: ``round``, ``player_id``, ``recipient_id`` (a seat or a group), ``message``;
- ``final``: ``market_efficiency``, ``seat_surplus_share_map``, ``seat_csa_map``,
  ``final_payoff_map`` and more;
- from schema 1.7.0 (PACT's newer games) a ``bid_ask`` and a ``conversation`` also carry the
  model's ``raw_response``, and ``communication_violation`` (``round``, ``player_id``,
  ``reason``, ``raw_response``) records a chat answer their engine refused (other record types are
  ignored).

**The answers, judged** (:attr:`LoggedGame.answers`), where a game logged them (a raw response
on its records: :attr:`LoggedGame.judged`): each quote answer is valid when it holds exactly one
``<price>XX</price>`` whose price is the quote their engine logged (``BazaarPrice``, the rule our
BAZAAR harness applies); a malformed one, for which their engine played another price, is an
invalid answer; each chat turn is valid unless a ``communication_violation`` refused it. Games
that log no raw response (schema 1.4.0: BAZAAR's, the collusion study's, PACT's older ones) have
no judged answers: whether their answers were valid is unknown, never assumed.

:func:`read_game` validates the records this module uses and names the file and line of a bad
one (every ``*.jsonl`` entry is read as ``core.sources`` reads: a FIFO, a device or a link out of
the folder is refused, not skipped). :func:`games_setting` says, from each game's first and last
records, the setting (rounds, seats, distributions) an instance importing a folder takes: that of
the games rated on our CSα (those that did not log every seat's), which must share one.

Names: an LLM seat keeps its logged ``model_name`` as its player name (``kind: llm``); a baseline
takes our roster name (``bazaar_baselines.BASELINE_NAMES``, e.g. ``enhanced_adaptive_aggressive``
-> ``aa``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from marketarena.core.prompts import quote_text
from marketarena.core.sources import (
    Seen,
    SourceError,
    number,
    parse_json,
    plain_name,
    read_bytes,
    read_jsonl,
    utf8_name,
    validated,
)
from marketarena.markets.double_auction.bazaar_baselines import BASELINE_NAMES
from marketarena.markets.double_auction.observations import RoundRecord, Trade
from marketarena.markets.double_auction.params import DISTRIBUTIONS, MAX_QUOTE

#: bounds of what a game declares, checked before anything of that size is built (the tournament's
#: own bounds: ``DoubleAuctionParams.rounds``, ``n_buyers``, ``n_sellers``)
MAX_ROUNDS = 10_000
MAX_SIDE = 100
#: characters of a chat message kept (BAZAAR's longest: 254); longer ones are cut and flagged
MESSAGE_MAX_CHARS = 2000
#: characters kept of the reason their engine gave for refusing an answer
REASON_MAX_CHARS = 300
#: seat ids: B1.., S1..
SEAT = re.compile(r"^([BS])([1-9][0-9]{0,2})$")
#: a chat message's recipients besides one seat
GROUPS = frozenset({"all", "all_buyers", "all_sellers", "all_traders"})

Quote = Annotated[int, Field(ge=0, le=MAX_QUOTE)]


class LoggedAgent(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)
    role: Literal["buyer", "seller"]
    model_name: str
    is_llm: bool
    valuation: Quote | None = None
    cost: Quote | None = None

    @field_validator("model_name")
    @classmethod
    def _plain(cls, v: str) -> str:
        return plain_name(v, "model_name")


class LoggedInit(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)
    distribution: Literal[DISTRIBUTIONS]  # type: ignore[valid-type]
    num_rounds: int = Field(ge=1, le=MAX_ROUNDS)
    num_buyers: int = Field(ge=1, le=MAX_SIDE)
    num_sellers: int = Field(ge=1, le=MAX_SIDE)
    agents: dict[str, LoggedAgent] = Field(min_length=2)

    @model_validator(mode="after")
    def _seats(self):
        for seat, agent in self.agents.items():
            m = SEAT.match(seat)
            if not m:
                raise ValueError(f"seat id {seat[:40]!r} is not B<n> or S<n>")
            if agent.role != ("buyer" if m.group(1) == "B" else "seller"):
                raise ValueError(f"seat {seat} is a {agent.role}")
            if (agent.valuation if agent.role == "buyer" else agent.cost) is None:
                raise ValueError(
                    f"seat {seat}: a {agent.role} without its "
                    f"{'valuation' if agent.role == 'buyer' else 'cost'}"
                )
        buyers = sum(a.role == "buyer" for a in self.agents.values())
        if (buyers, len(self.agents) - buyers) != (self.num_buyers, self.num_sellers):
            raise ValueError(
                f"{buyers} buyer and {len(self.agents) - buyers} seller seats, but "
                f"num_buyers {self.num_buyers} and num_sellers {self.num_sellers}"
            )
        return self


Finite = Annotated[float, Field(allow_inf_nan=False)]


class LoggedFinal(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    market_efficiency: Finite = Field(ge=-1e6, le=1e6)
    seat_surplus_share_map: dict[str, Annotated[float, Field(ge=0, le=1e6)]]
    seat_csa_map: dict[str, Annotated[float, Field(ge=-1e3, le=1e3)]]
    final_payoff_map: dict[str, Annotated[float, Field(ge=-1e9, le=1e9)]]


@dataclass
class LoggedGame:
    """One logged game: seats in our order (buyers B1.., then sellers S1..), each seat's value
    (a seller's cost), its quotes per round (``quotes[t][seat]``, None = none), the trades of
    each round (buyer, seller, price) and the chat (round, sender, recipients, text, truncated,
    characters written)."""

    game_id: str
    source: str
    distribution: str
    rounds: int
    seats: list[str]
    role: dict[str, str]
    model: dict[str, str]
    is_llm: dict[str, bool]
    value: dict[str, int]
    quotes: list[dict[str, int | None]]
    trades: list[list[tuple[str, str, int]]]
    final: LoggedFinal
    n_buyers: int = field(default=0)
    messages: list[tuple[int, str, str, str, bool, int]] = field(default_factory=list)
    #: the answers judged (module docstring): (round, seat, phase ``quote`` or ``chat``, valid,
    #: why not, capped), in log order; empty where the game logged no raw response
    answers: list[tuple[int, str, str, bool, str]] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """Whether the game logged its answers' raw text (so :attr:`answers` judges them)."""
        return bool(self.answers)

    def name(self, seat: str) -> str:
        """Player name: the logged model for an LLM, our roster name for a baseline."""
        m = self.model[seat]
        return m if self.is_llm[seat] else BASELINE_NAMES[m][0]

    @property
    def n_sellers(self) -> int:
        return len(self.seats) - self.n_buyers

    @property
    def setting(self) -> tuple[int, int, int]:
        """(rounds, buyers, sellers)."""
        return self.rounds, self.n_buyers, self.n_sellers

    @property
    def rated_on_logs(self) -> bool:
        """Whether the game logged every seat's CSα (then it is rated on it; else on ours)."""
        return set(self.seats) <= set(self.final.seat_csa_map)

    def records(self) -> list[RoundRecord]:
        """The public history as our market shows it: one :class:`RoundRecord` per round."""
        out = []
        for t in range(self.rounds):
            q = self.quotes[t]
            out.append(
                RoundRecord(
                    round=t + 1,
                    bids={a: q[a] for a in self.seats if self.role[a] == "buyer"},
                    asks={a: q[a] for a in self.seats if self.role[a] == "seller"},
                    trades=[Trade(buyer=b, seller=s, price=p) for b, s, p in self.trades[t]],
                )
            )
        return out


class LogError(SourceError):
    """A log line this module cannot use; the message names the file and line."""


def _seat_key(seat: str) -> tuple[int, int]:
    m = SEAT.match(seat)
    return (0 if m.group(1) == "B" else 1, int(m.group(2)))


class _Reading:
    """The records of one game file as they are read, checked one by one."""

    def __init__(self, path: Path):
        self.path = path
        self.init: LoggedInit | None = None
        self.final: LoggedFinal | None = None
        self.game_id: str | None = None
        self.quotes: dict[tuple[int, str], int | None] = {}
        self.trades: list[tuple[int, str, str, int]] = []
        self.messages: list[tuple[int, str, str, str, bool, int]] = []
        self.answers: list[tuple[int, str, str, bool, str]] = []

    def seat(self, rec: dict, key: str, role: str | None = None) -> str:
        seat = rec.get(key)
        agents = self.init.agents
        if (
            not isinstance(seat, str)
            or seat not in agents
            or (role is not None and agents[seat].role != role)
        ):
            raise ValueError(f"{key} {str(seat)[:40]!r} is not a {role or 'seat'} of this game")
        return seat

    def round(self, rec: dict) -> int:
        return number(rec.get("round"), "round", 1, self.init.num_rounds, integer=True)

    def judge_quote(self, t: int, seat: str, quote: int | None, raw) -> None:
        """A quote answer judged by BAZAAR's rule (exactly one ``<price>XX</price>``, 0-100) and
        against the quote their engine logged for it."""
        from marketarena.markets.double_auction.bazaar_prompts import BazaarPrice

        if not isinstance(raw, str):
            raise ValueError(f"raw_response {str(raw)[:40]!r} is not text")
        answer, why = BazaarPrice.from_text(raw)
        if answer is not None and answer.price != quote:
            why = (
                f"the answer's price {answer.price} is not the quote their engine logged ({quote})"
            )
        self.answers.append((t, seat, "quote", why is None, why or ""))

    def read(self, rec: dict, line: int) -> None:
        kind = rec.get("type")
        if not isinstance(kind, str):
            raise ValueError("a record without a 'type'")
        if kind == "init":
            if self.init is not None:
                raise ValueError("a second 'init' record")
            self.game_id = rec.get("game_id")
            self.init = validated(LoggedInit, rec.get("data"), self.path, line, "data")
            return
        if kind not in ("bid_ask", "trade", "conversation", "final", "communication_violation"):
            return  # other record types (payoff_change, round_end, ...): not used
        if self.init is None:
            raise ValueError(f"a {kind!r} record before the 'init' record")
        if kind == "bid_ask":
            t, seat = self.round(rec), self.seat(rec, "agent_id")
            q = rec.get("price")
            if (t, seat) in self.quotes:
                raise ValueError(f"a second quote of {seat} in round {t}")
            self.quotes[(t, seat)] = None if q is None else number(q, "quote", 0, MAX_QUOTE, True)
            if "raw_response" in rec:
                self.judge_quote(t, seat, self.quotes[(t, seat)], rec["raw_response"])
        elif kind == "trade":
            t = self.round(rec)
            b, s = self.seat(rec, "buyer_id", "buyer"), self.seat(rec, "seller_id", "seller")
            p = number(rec.get("cleared_price"), "cleared_price", 0, MAX_QUOTE, integer=True)
            self.trades.append((t, b, s, p))
        elif kind == "conversation":
            t, sender = self.round(rec), self.seat(rec, "player_id")
            to = rec.get("recipient_id")
            if to not in GROUPS:
                to = self.seat(rec, "recipient_id")
            text = rec.get("message")
            if text is None:
                text = ""
            if not isinstance(text, str):
                raise ValueError(f"message {str(text)[:40]!r} is not text")
            if text.strip():  # an empty message is the documented way to stay silent
                q = quote_text(text, MESSAGE_MAX_CHARS)
                self.messages.append((t, sender, to, q.text, q.truncated, len(text)))
            if "raw_response" in rec:
                self.answers.append((t, sender, "chat", True, ""))
        elif kind == "communication_violation":
            t, sender = self.round(rec), self.seat(rec, "player_id")
            reason = rec.get("reason")
            why = quote_text(reason if isinstance(reason, str) else "", REASON_MAX_CHARS).text
            self.answers.append((t, sender, "chat", False, why or "refused by their engine"))
        else:
            if self.final is not None:
                raise ValueError("a second 'final' record")
            self.final = validated(LoggedFinal, rec.get("data"), self.path, line, "data")
            seats = set(self.init.agents)
            for key in ("seat_surplus_share_map", "seat_csa_map", "final_payoff_map"):
                stray = set(getattr(self.final, key)) - seats
                if stray:
                    raise ValueError(f"data.{key}: {sorted(stray)[:3]} are not seats of this game")


def read_game(path: str | Path, root: str | Path | None = None) -> LoggedGame:
    """Read one BAZAAR game log (see the module docstring), strictly (``core.sources``; ``root``:
    the folder of logs, which a link must stay in): raises :class:`LogError` naming the file and
    line of the first record it cannot use, or the file when it lacks a record or is not a
    regular JSONL file at all."""
    path = Path(path)
    reading = _Reading(path)
    try:
        for line_no, rec in read_jsonl(path, root=root):
            try:
                reading.read(rec, line_no)
            except SourceError:
                raise
            except (ValueError, TypeError) as exc:
                raise LogError(path, str(exc), line_no) from None
    except LogError:
        raise
    except SourceError as exc:
        raise LogError(exc.path, exc.what, exc.line) from None
    init, final = reading.init, reading.final
    if init is None or final is None:
        missing = "init" if init is None else "final"
        raise LogError(path, f"no {missing!r} record (an incomplete or aborted game)")
    seats = sorted(init.agents, key=_seat_key)
    role = {a: init.agents[a].role for a in seats}
    value = {
        a: int(init.agents[a].valuation if role[a] == "buyer" else init.agents[a].cost)
        for a in seats
    }
    rounds = init.num_rounds
    quotes = [{a: reading.quotes.get((t + 1, a)) for a in seats} for t in range(rounds)]
    trades: list[list[tuple[str, str, int]]] = [[] for _ in range(rounds)]
    for t, b, s, p in reading.trades:
        trades[t - 1].append((b, s, p))
    unknown = {
        ag.model_name
        for ag in init.agents.values()
        if not ag.is_llm and ag.model_name not in BASELINE_NAMES
    }
    if unknown:
        raise LogError(path, f"baseline(s) {sorted(unknown)} are not among BAZAAR's 29")
    game_id = reading.game_id if reading.game_id is not None else path.stem
    try:
        game_id = plain_name(game_id, "game_id")
    except ValueError as exc:
        raise LogError(path, str(exc), 1) from None
    return LoggedGame(
        game_id=game_id,
        source=path.name,
        distribution=init.distribution,
        rounds=rounds,
        seats=seats,
        role=role,
        model={a: init.agents[a].model_name for a in seats},
        is_llm={a: init.agents[a].is_llm for a in seats},
        value=value,
        quotes=quotes,
        trades=trades,
        final=final,
        n_buyers=init.num_buyers,
        messages=reading.messages,
        answers=reading.answers,
    )


def log_files(folder: str | Path) -> list[Path]:
    """The ``*.jsonl`` entries under ``folder`` but folders (recursively, not into links to
    folders: reading refuses what is not a regular file), sorted; a name not UTF-8 is refused."""
    folder = Path(folder)
    if not folder.is_dir():
        raise LogError(
            folder,
            "not a folder of BAZAAR game logs (*.jsonl); clone "
            "github.com/lechmazur/bazaar and pass its logs/ folder",
        )
    files = sorted(
        Path(top) / name
        for top, _, names in os.walk(folder)
        for name in names
        if name.endswith(".jsonl")
    )
    for path in files:
        utf8_name(path)
    if not files:
        raise LogError(folder, "holds no *.jsonl game logs")
    return files


def read_games(folder: str | Path) -> list[LoggedGame]:
    """Every game under ``folder``, read strictly (:func:`read_game`); the same game (game id)
    in two files is refused, naming both."""
    seen = Seen("game")
    games = []
    for path in log_files(folder):
        game = read_game(path, folder)
        seen.add(game.game_id, path)
        games.append(game)
    return games


@dataclass(frozen=True)
class GameHeader:
    """What a game's ``init`` and ``final`` records say of it: its setting, its distribution and
    whether it logged every seat's CSα (:attr:`LoggedGame.rated_on_logs`)."""

    path: Path
    setting: tuple[int, int, int]  # rounds, buyers, sellers
    distribution: str
    rated_on_logs: bool


def read_header(path: Path, root: str | Path | None = None) -> GameHeader:
    """The header of one game from its first and last records when they are its ``init`` and
    ``final`` (as BAZAAR writes them): the file is read as every foreign file is
    (``core.sources.read_bytes``) but only those two lines are parsed. Any other file (records in
    another order, a record this cannot use) is read whole (:func:`read_game`), which names what
    is wrong with it."""
    data = read_bytes(path, root=root)
    try:
        lines = data.strip().split(b"\n")
        first, last = parse_json(lines[0], path), parse_json(lines[-1], path)
        if first.get("type") == "init" and last.get("type") == "final":
            init = LoggedInit.model_validate(first.get("data"))
            final = LoggedFinal.model_validate(last.get("data"))
            return GameHeader(
                path,
                (init.num_rounds, init.num_buyers, init.num_sellers),
                init.distribution,
                set(init.agents) <= set(final.seat_csa_map),
            )
    except (SourceError, ValueError, TypeError, AttributeError):
        pass  # read whole below: its error names the line
    game = read_game(path, root)
    return GameHeader(path, game.setting, game.distribution, game.rated_on_logs)


def games_setting(folder: str | Path) -> dict:
    """The params of the setting an instance importing the games under ``folder`` takes:
    ``rounds``, ``n_buyers``, ``n_sellers`` and ``distributions``. Those of the games rated on
    our CSα (every game that did not log every seat's), which must share one setting, our
    reference's (:class:`LogError` naming the first game in another); when every game logged its
    own CSα, the first game's setting and the distributions of the games in it (the reference
    then only stands beside the logged CSα). From each game's header (:func:`read_header`): a
    few seconds for BAZAAR's 1,954 games, which the import then reads whole."""
    headers = [read_header(path, folder) for path in log_files(folder)]
    ours = [h for h in headers if not h.rated_on_logs]
    chosen = ours or [h for h in headers if h.setting == headers[0].setting]
    first = chosen[0]
    for h in ours:
        if h.setting != first.setting:
            raise LogError(
                h.path,
                f"has {_shown(h.setting)}, but {first.path.name} has "
                f"{_shown(first.setting)}: the games rated on our CSα (they logged "
                "none) share one setting, our reference's; import them apart",
            )
    rounds, n_buyers, n_sellers = first.setting
    return {
        "rounds": rounds,
        "n_buyers": n_buyers,
        "n_sellers": n_sellers,
        "distributions": sorted({h.distribution for h in chosen}),
    }


def _shown(setting: tuple[int, int, int]) -> str:
    rounds, n_buyers, n_sellers = setting
    return f"{rounds} rounds and {n_buyers}x{n_sellers} seats"
