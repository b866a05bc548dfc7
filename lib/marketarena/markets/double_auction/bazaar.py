"""BAZAAR's published games as data: read its JSONL logs into our log schema.

BAZAAR (seed 002) published 1,954 game logs in its repository (``lechmazur/bazaar``, folder
``logs/``, schema 1.4.0; no licence, so they are read, never copied into this project). One file
is one game, one JSON record a line:

- ``init``: ``data.distribution``, ``num_rounds``, ``num_buyers``, ``num_sellers`` and
  ``data.agents``: seat id (B1.., S1..) -> role, ``model_name``, ``is_llm``, ``valuation``
  (buyers) or ``cost`` (sellers);
- ``bid_ask``: ``round`` (1-based), ``agent_id``, ``price`` (the quote; null = none);
- ``trade``: ``round``, ``buyer_id``, ``seller_id``, ``bid``, ``ask``, ``cleared_price``;
- ``final``: ``market_efficiency``, ``seat_surplus_share_map``, ``seat_csa_map``,
  ``final_payoff_map`` and more (other record types are ignored).

:func:`read_game` validates the records this module uses and names the file and line of a bad
one (every ``*.jsonl`` entry is read as ``core.sources`` reads: a FIFO, a device or a link out of
the folder is refused, not skipped). :func:`game_tables` turns a game into the tables our market
logs (``seats``, ``states``, ``trades``, ``game``, ``agents``), so our metrics run on BAZAAR's
games unchanged: on all 1,954 logged games they reproduce every logged ``market_efficiency`` and
every seat's ``seat_surplus_share`` exactly, and our call-market clearing reproduces every logged
round's trades from its quotes (58,620 rounds). :func:`import_logs` writes a folder of games as shards
(``core.logs``), their metrics (with each seat's *logged* CSα: BAZAAR's reference table is not
published), a check of the two figures, and a board: multipass TrueSkill on the seed's scale,
each game ranked by logged CSα (:func:`bazaar_board`). ``marketarena import-bazaar`` runs it.

**The board is compared with the seed's table only for BAZAAR's own games** (the tournament the
table rates: :func:`seed_study`): every game in its setting (30 rounds, 4x4 seats, as all 1,954)
and at least half of the games' LLMs in the table (``calibration.SEED_LLM_TABLE``). Other games in
its format (the collusion study, 3x3 seats; PACT, 1x1 seats, many of the same model names) are
other studies: the summary says why (``seed_comparison``) and holds no correlation.

Names: an LLM seat keeps its logged ``model_name`` as its player name (``kind: llm``); a baseline
takes our roster name (:data:`BASELINE_NAMES`, e.g. ``enhanced_adaptive_aggressive`` -> ``aa``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from marketarena.core.plugin import AGENT_COLUMNS
from marketarena.core.prompts import quote_text
from marketarena.core.sources import (
    Seen,
    SourceError,
    number,
    plain_name,
    read_jsonl,
    utf8_name,
    validated,
)
from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.observations import RoundRecord, Trade
from marketarena.markets.double_auction.params import DISTRIBUTIONS, MAX_QUOTE

#: BAZAAR's baseline ``model_name`` -> (our roster name, our strategy) in the default pool.
BASELINE_NAMES: dict[str, tuple[str, str]] = {
    "truthful": ("truthful", "truthful"), "shading5": ("shade_5", "shade"),
    "shading10": ("shade_10", "shade"), "random": ("random", "random"),
    "zic_pure_biased_activity": ("zic", "zic"), "zic_plus": ("zic_plus", "zic_plus"),
    "linear_eq": ("linear_eq", "linear_eq"), "collusive": ("collusive", "collusive"),
    "gd": ("gd", "gd"), "fictitious": ("fictitious_play", "fictitious_play"),
    "gdx": ("gdx", "gdx"), "enhanced_bayesian": ("enhanced_bayesian", "bayesian"),
    "risk_aware": ("risk_aware", "risk_aware"), "momentum": ("momentum", "momentum"),
    "contrarian": ("contrarian", "contrarian"),
    "mean_reversion": ("mean_reversion", "mean_reversion"),
    "regression": ("regression", "regression"),
    "regime_switcher": ("regime_switcher", "regime_switcher"),
    "enhanced_adaptive_aggressive": ("aa", "aa"),
    "adaptive_aggressive_cliff": ("aa_cliff", "aa_cliff"), "adaptive": ("adaptive", "adaptive"),
    "qlearning": ("q_learning", "q_learning"), "roth_erev": ("roth_erev", "roth_erev"),
    "stochastic_shading_bandit": ("bandit", "bandit"), "sniper": ("sniper", "sniper"),
    "threat_tit_for_tat": ("tit_for_tat", "tit_for_tat"),
    "penny_jumper": ("penny_jumper", "penny_jumper"),
    "adversarial_exploiter": ("exploiter", "exploiter"),
    "signal_jammer": ("signal_jammer", "signal_jammer"),
}


#: bounds of what a game declares, checked before anything of that size is built (the tournament's
#: own bounds: ``DoubleAuctionParams.rounds``, ``n_buyers``, ``n_sellers``)
MAX_ROUNDS = 10_000
MAX_SIDE = 100
#: characters of a chat message kept (BAZAAR's longest: 254); longer ones are cut and flagged
MESSAGE_MAX_CHARS = 2000
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
                raise ValueError(f"seat {seat}: a {agent.role} without its "
                                 f"{'valuation' if agent.role == 'buyer' else 'cost'}")
        buyers = sum(a.role == "buyer" for a in self.agents.values())
        if (buyers, len(self.agents) - buyers) != (self.num_buyers, self.num_sellers):
            raise ValueError(f"{buyers} buyer and {len(self.agents) - buyers} seller seats, but "
                             f"num_buyers {self.num_buyers} and num_sellers {self.num_sellers}")
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

    def name(self, seat: str) -> str:
        """Player name: the logged model for an LLM, our roster name for a baseline."""
        m = self.model[seat]
        return m if self.is_llm[seat] else BASELINE_NAMES[m][0]

    @property
    def n_sellers(self) -> int:
        return len(self.seats) - self.n_buyers

    def records(self) -> list[RoundRecord]:
        """The public history as our market shows it: one :class:`RoundRecord` per round."""
        out = []
        for t in range(self.rounds):
            q = self.quotes[t]
            out.append(RoundRecord(
                round=t + 1, bids={a: q[a] for a in self.seats if self.role[a] == "buyer"},
                asks={a: q[a] for a in self.seats if self.role[a] == "seller"},
                trades=[Trade(buyer=b, seller=s, price=p) for b, s, p in self.trades[t]]))
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

    def seat(self, rec: dict, key: str, role: str | None = None) -> str:
        seat = rec.get(key)
        agents = self.init.agents
        if not isinstance(seat, str) or seat not in agents or (
                role is not None and agents[seat].role != role):
            raise ValueError(f"{key} {str(seat)[:40]!r} is not a {role or 'seat'} of this game")
        return seat

    def round(self, rec: dict) -> int:
        return number(rec.get("round"), "round", 1, self.init.num_rounds, integer=True)

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
        if kind not in ("bid_ask", "trade", "conversation", "final"):
            return  # other record types (payoff_change, round_end, ...): not used
        if self.init is None:
            raise ValueError(f"a {kind!r} record before the 'init' record")
        if kind == "bid_ask":
            t, seat = self.round(rec), self.seat(rec, "agent_id")
            q = rec.get("price")
            if (t, seat) in self.quotes:
                raise ValueError(f"a second quote of {seat} in round {t}")
            self.quotes[(t, seat)] = None if q is None else number(q, "quote", 0, MAX_QUOTE, True)
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
    value = {a: int(init.agents[a].valuation if role[a] == "buyer" else init.agents[a].cost)
             for a in seats}
    rounds = init.num_rounds
    quotes = [{a: reading.quotes.get((t + 1, a)) for a in seats} for t in range(rounds)]
    trades: list[list[tuple[str, str, int]]] = [[] for _ in range(rounds)]
    for t, b, s, p in reading.trades:
        trades[t - 1].append((b, s, p))
    unknown = {ag.model_name for ag in init.agents.values()
               if not ag.is_llm and ag.model_name not in BASELINE_NAMES}
    if unknown:
        raise LogError(path, f"baseline(s) {sorted(unknown)} are not among BAZAAR's 29")
    game_id = reading.game_id if reading.game_id is not None else path.stem
    try:
        game_id = plain_name(game_id, "game_id")
    except ValueError as exc:
        raise LogError(path, str(exc), 1) from None
    return LoggedGame(game_id=game_id, source=path.name,
                      distribution=init.distribution, rounds=rounds, seats=seats, role=role,
                      model={a: init.agents[a].model_name for a in seats},
                      is_llm={a: init.agents[a].is_llm for a in seats}, value=value,
                      quotes=quotes, trades=trades, final=final, n_buyers=init.num_buyers,
                      messages=reading.messages)


#: chat table columns (``messages``): round (0-based ``step``), sender seat, recipients (a seat or
#: ``all``/``all_buyers``/``all_sellers``/``all_traders``), the text (cleaned and capped as every
#: foreign text: ``core.prompts.quote_text``), whether it was cut, and how long it was
MESSAGE_COLUMNS = ["step", "sender", "recipients", "text", "truncated", "chars"]
#: per-seat figures the game logged (``bazaar_logged``): its efficiency, the seat's surplus share
#: and CSα (NaN where the game logged none)
LOGGED_COLUMNS = ["agent_id", "logged_efficiency", "logged_surplus_share", "logged_csa"]


def game_tables(game: LoggedGame) -> dict[str, pd.DataFrame]:
    """The game in our log schema (``markets/double_auction/market.py``): ``agents``, ``seats``,
    ``states`` (a quote of None logged as -1), ``trades`` (rank = order within the round),
    ``game`` (its competitive-equilibrium surplus from the values), ``messages`` (the chat, empty
    without one) and ``bazaar_logged`` (the figures the game logged, checked against ours)."""
    seats = game.seats
    agents = pd.DataFrame([
        (a, game.name(a), "llm" if game.is_llm[a] else "baseline",
         game.model[a] if game.is_llm[a] else "",
         "bazaar-llm" if game.is_llm[a] else BASELINE_NAMES[game.model[a]][1],
         "bazaar-llm" if game.is_llm[a] else "", game.role[a], a) for a in seats],
        columns=AGENT_COLUMNS)
    surplus = dict.fromkeys(seats, 0)
    state_rows, trade_rows = [], []
    for t in range(game.rounds):
        payoff = dict.fromkeys(seats, 0)
        price: dict[str, int] = {}
        for k, (b, s, p) in enumerate(game.trades[t]):
            vb, vs = game.value[b], game.value[s]
            payoff[b], payoff[s] = vb - p, p - vs
            price[b] = price[s] = p
            trade_rows.append((t, k, b, s, game.quotes[t][b], game.quotes[t][s], p, vb, vs,
                               vb - p, p - vs))
        for a in seats:
            surplus[a] += payoff[a]
            q = game.quotes[t][a]
            state_rows.append((t, a, game.role[a], game.value[a], rules.NO_QUOTE if q is None else q,
                               a in price, price.get(a, rules.NO_QUOTE), payoff[a], surplus[a]))
    bv = np.array([game.value[a] for a in seats if game.role[a] == "buyer"])
    sv = np.array([game.value[a] for a in seats if game.role[a] == "seller"])
    ce = int(rules.ce_surplus(bv, sv))
    from marketarena.markets.double_auction.market import DoubleAuctionMarket

    cols = DoubleAuctionMarket.TABLE_COLUMNS
    final = game.final
    return {
        "agents": agents,
        "seats": pd.DataFrame([(a, game.role[a], game.value[a], game.distribution) for a in seats],
                              columns=["agent_id", "role", "value", "distribution"]),
        "states": pd.DataFrame(state_rows, columns=cols["states"]),
        "trades": pd.DataFrame(trade_rows, columns=cols["trades"]).astype(
            {"bid": "int64", "ask": "int64"}),
        "game": pd.DataFrame([(game.distribution, game.rounds, ce, ce * game.rounds)],
                             columns=["distribution", "rounds", "ce_surplus_round", "ce_surplus"]),
        "messages": pd.DataFrame([(t - 1, *rest) for t, *rest in game.messages],
                                 columns=MESSAGE_COLUMNS).astype(
            {"step": "int64", "sender": "str", "recipients": "str", "text": "str",
             "truncated": "bool", "chars": "int64"}),
        "bazaar_logged": pd.DataFrame(
            [(a, final.market_efficiency, final.seat_surplus_share_map.get(a, np.nan),
              final.seat_csa_map.get(a, np.nan)) for a in seats], columns=LOGGED_COLUMNS),
    }


def game_meta(game: LoggedGame) -> dict:
    """An imported game's meta (``meta.json``): where it came from and its setting."""
    return {"market": "double_auction", "source": "bazaar", "game_id": game.game_id,
            "file": game.source, "lineup": [game.name(a) for a in game.seats],
            "setting": {"distribution": game.distribution}}


def log_files(folder: str | Path) -> list[Path]:
    """The ``*.jsonl`` entries under ``folder`` but folders (recursively, not into links to
    folders: reading refuses what is not a regular file), sorted; a name not UTF-8 is refused."""
    folder = Path(folder)
    if not folder.is_dir():
        raise LogError(folder, "not a folder of BAZAAR game logs (*.jsonl); clone "
                       "github.com/lechmazur/bazaar and pass its logs/ folder")
    files = sorted(Path(top) / name for top, _, names in os.walk(folder)
                   for name in names if name.endswith(".jsonl"))
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


def check_setting(game: LoggedGame, path: str | Path, rounds: int, n_buyers: int,
                  n_sellers: int, distributions) -> None:
    """Refuse a game whose setting is not the instance's (its CSα reference, its figures and its
    board assume one setting), naming the file and the params key."""
    for what, theirs, ours in (("num_rounds", game.rounds, rounds),
                               ("num_buyers", game.n_buyers, n_buyers),
                               ("num_sellers", game.n_sellers, n_sellers)):
        if theirs != ours:
            key = {"num_rounds": "rounds"}.get(what, what.replace("num_", "n_"))
            raise LogError(path, f"{what} is {theirs}, but the instance's {key} is {ours} (one "
                           "setting per instance: set it in params.yaml, or import these games "
                           "into an instance of their own)")
    if game.distribution not in distributions:
        raise LogError(path, f"distribution {game.distribution!r} is not among the instance's "
                       f"distributions {list(distributions)}")


def import_games(games: list[LoggedGame], out: str | Path, shard_episodes: int | None) -> int:
    """Write ``games`` into ``out`` as episodes ``bz-<k:04d>`` (``importing.write_games``)."""
    from marketarena.importing import write_games

    return write_games(Path(out), ((f"bz-{k:04d}", game_tables(g), game_meta(g))
                                   for k, g in enumerate(games)),
                       shard_episodes, fingerprint_of="bazaar")


#: BAZAAR's tournament setting, (rounds, buyers, sellers), which the seed's table rates
SEED_SETTING = (30, 4, 4)


def seed_study(games: list[LoggedGame]) -> str:
    """Why ``games`` are not the tournament the seed's table rates (module docstring); ""."""
    from marketarena.markets.double_auction.calibration import SEED_LLM_TABLE

    for g in games:
        if (g.rounds, g.n_buyers, g.n_sellers) != SEED_SETTING:
            return (f"game {g.game_id} has {g.rounds} rounds and {g.n_buyers}x{g.n_sellers} "
                    "seats, not BAZAAR's tournament (30 rounds, 4x4 seats): another study")
    llms = {g.model[a] for g in games for a in g.seats if g.is_llm[a]}
    known = len(llms & SEED_LLM_TABLE.keys())
    return "" if 2 * known >= len(llms) else \
        f"{known} of the games' {len(llms)} LLMs are in the seed's table: another study"


def import_report(games: list[LoggedGame]) -> dict:
    """What an import brought in (``importing.REPORT``): games, seats, LLM seats, chat messages,
    and how many games logged their seats' CSα."""
    return {"format": "bazaar", "games": len(games), "seats": sum(len(g.seats) for g in games),
            "llm_seats": sum(sum(g.is_llm.values()) for g in games),
            "messages": sum(len(g.messages) for g in games),
            "games_with_logged_csa": sum(bool(g.final.seat_csa_map) for g in games),
            "distributions": sorted({g.distribution for g in games})}


def bazaar_pool() -> list:
    """BAZAAR's 29 baselines as roster entries of ours (the default pool of params.yaml): what a
    truthful reference plays against when games log no CSα (``import-bazaar``)."""
    from marketarena.core.params import RosterEntry

    params = {"shade_5": {"delta": 5}, "shade_10": {"delta": 10}}
    return [RosterEntry(name=name, kind="baseline", strategy=strategy, params=params.get(name, {}))
            for name, strategy in BASELINE_NAMES.values()]


def own_csa(seats: pd.DataFrame, games: list[LoggedGame], out: Path, workers: int = 1,
            games_per_distribution: int = 2000) -> tuple[pd.DataFrame, dict]:
    """Our CSα (column ``own_csa``) of the seats of ``games`` (one setting), from a truthful
    reference under that setting against :func:`bazaar_pool` (``reference.py``), written into
    ``out``; and the reference's description."""
    from marketarena.markets.double_auction.params import DoubleAuctionParams
    from marketarena.markets.double_auction.reference import compute_reference, load_reference, \
        TABLE, seat_csa

    g = games[0]
    mp = DoubleAuctionParams(
        rounds=g.rounds, n_buyers=g.n_buyers, n_sellers=g.n_sellers,
        distributions=sorted({x.distribution for x in games}), roster=bazaar_pool(),
        reference={"games_per_distribution": games_per_distribution}).named("bazaar")
    compute_reference(mp, out, workers)
    rated = seat_csa(seats.drop(columns=["csa"], errors="ignore"), load_reference(out / TABLE), mp)
    about = {"games_per_distribution": games_per_distribution, "rounds": g.rounds,
             "n_buyers": g.n_buyers, "n_sellers": g.n_sellers,
             "distributions": list(mp.distributions),
             "opponents": "BAZAAR's 29 baselines (ours)"}
    return seats.assign(own_csa=rated["csa"].to_numpy()), about


def import_logs(folder: str | Path, out: str | Path, shard_episodes: int = 600,
                passes: int = 200, seed: int = 0, workers: int = 1,
                reference_games: int = 2000) -> dict:
    """Import every game under ``folder`` into ``out`` (``marketarena import-bazaar``):

    - ``episodes/``: the games as shards of ``shard_episodes`` (our log schema; game ``k`` in
      file order is episode ``bz-<k:04d>``, its BAZAAR game id and file in the shard's meta);
    - ``metrics/agents.parquet``, ``metrics/market.parquet``: our metrics of those logs
      (``metrics.frames``), each seat's CSα its logged one, or ours where the game logged none
      (column ``csa_source``: our truthful reference under the games' own setting, against
      BAZAAR's 29 baselines, in ``reference/``); the chat per seat when the games have one;
    - ``<out>/check.csv``: per seat, our efficiency and surplus share beside the logged ones;
    - ``<out>/board.csv``: :func:`bazaar_board`, saying which CSα rated each player;
    - ``summary.json``: games, seats, the largest differences of the check, the CSα used, the
      board's Spearman with the seed's table where that applies (:func:`seed_study`).

    Every game is read and checked before anything is written (``core.sources``: one error naming
    the file and line), and the new ``out`` is built aside and swapped in whole
    (``core.files.folder_replaced``): a failure leaves an earlier import exactly as it was.
    Returns the summary."""
    from marketarena.core.files import folder_replaced
    from marketarena.core.reader import EpisodeReader
    from marketarena.markets.double_auction import metrics as da_metrics
    from marketarena.markets.double_auction.calibration import llm_calibration

    out = Path(out)
    games = read_games(folder)
    unrated = [(g, p, f"bz-{k:04d}") for k, (g, p) in enumerate(zip(games, log_files(folder)))
               if not g.final.seat_csa_map]
    for g, path, _ in unrated:  # our CSα: one reference, so one setting for the games needing it
        first = unrated[0][0]
        check_setting(g, path, first.rounds, first.n_buyers, first.n_sellers,
                      {x.distribution for x, _, _ in unrated})
    with folder_replaced(out) as tmp:
        import_games(games, tmp / "episodes", shard_episodes)
        reader = EpisodeReader(tmp / "episodes")
        tables = {n: reader.table(n) for n in (*da_metrics.TABLES, "messages", "bazaar_logged")}
        seats, _, market = da_metrics.frames(tables)
        seats = da_metrics.with_logged(seats, tables["bazaar_logged"])
        reference = None
        if unrated:
            mine = seats["episode_id"].isin({e for _, _, e in unrated})
            own, reference = own_csa(seats[mine], [g for g, _, _ in unrated], tmp / "reference",
                                     workers, reference_games)
            seats = seats.merge(own[["episode_id", "agent_id", "own_csa"]],
                                on=["episode_id", "agent_id"], how="left")
        seats = da_metrics.choose_csa(seats)
        seats = da_metrics.with_chat(seats, tables["messages"])
        (tmp / "metrics").mkdir()
        seats.to_parquet(tmp / "metrics" / "agents.parquet", index=False)
        market.to_parquet(tmp / "metrics" / "market.parquet", index=False)
        check = seats[["episode_id", "agent_id", "name", "game_efficiency", "logged_efficiency",
                       "surplus_share", "logged_surplus_share"]]
        check.to_csv(tmp / "check.csv", index=False)
        board = bazaar_board(seats, passes=passes, seed=seed)
        if board.empty:
            raise LogError(folder, "no game can be rated: every seat needs a CSα")
        board.to_csv(tmp / "board.csv", index=False)
        other = seed_study(games)
        summary = {
            **import_report(games),
            "max_abs_diff_efficiency": float((check["game_efficiency"]
                                              - check["logged_efficiency"]).abs().max()),
            "max_abs_diff_surplus_share": float((check["surplus_share"]
                                                 - check["logged_surplus_share"]).abs().max()),
            "csa_source": seats.groupby("csa_source")["episode_id"].nunique().to_dict(),
            "own_csa_reference": reference,
            "seed_comparison": {"applies": not other, "why": other or "BAZAAR's own games"},
            **({} if other else llm_calibration(board)),
        }
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True,
                                                     allow_nan=True) + "\n")
    return summary


def bazaar_board(agents: pd.DataFrame, passes: int = 200, seed: int = 0,
                 tau: float = 0.001) -> pd.DataFrame:
    """Multipass TrueSkill on the seed's scale (``ratings.BAZAAR_SCALE``: μ0 5, σ0 25/3, β 25/6,
    τ ``tau``), one free-for-all game per logged game with a CSα for every seat, seats ranked by
    ``csa`` (their logged CSα);
    median μ and σ over ``passes`` shuffled passes. Columns: rank, name, kind, mu, sigma, games,
    csa_mean."""
    from marketarena.ratings import BAZAAR_SCALE, TrueSkillParams, multipass, player_games

    ts = TrueSkillParams(**BAZAAR_SCALE, tau=tau)
    rated = agents[agents.groupby("episode_id")["csa"].transform(lambda c: c.notna().all())]
    if rated.empty:
        return pd.DataFrame(columns=["rank", "name", "kind", "mu", "sigma", "games", "csa_mean",
                                     "csa_source"])
    board = multipass(player_games(rated, "csa"), ts, passes=passes, seed=seed)
    board = board.rename(columns={"player": "name"}).drop(columns=["mu_lo", "mu_hi"])
    agg = {"kind": ("kind", "first"), "csa_mean": ("csa", "mean")}
    if "csa_source" in rated:
        agg["csa_source"] = ("csa_source", lambda s: "+".join(sorted(set(s))))
    chat = [c for c in ("messages_sent", "messages_private") if c in rated]
    agg.update({f"{c}_mean": (c, "mean") for c in chat})
    info = rated.groupby("name").agg(**agg)
    board = board.merge(info.reset_index(), on="name")
    board = board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)
    board.insert(0, "rank", range(1, len(board) + 1))
    cols = ["rank", "name", "kind", "mu", "sigma", "games", "csa_mean", "csa_source",
            *[f"{c}_mean" for c in chat]]
    return board[[c for c in cols if c in board]]


def teacher_forced(game: LoggedGame, seat: str, agent, seed: int = 0) -> pd.DataFrame:
    """Hand ``agent`` (a baseline of ours) the history logged seat ``seat`` saw, round by round
    (its own logged quotes included), and record what it quotes. Per round: step, ours, theirs
    (None: sat out), and whether each quote fills when it replaces the seat's quote in the logged
    round (our clearing, ties broken by a generator seeded with (``seed``, round) shared by both
    quotes). ``agent`` is reset with ``default_rng(seed)``."""
    from marketarena.markets.double_auction.observations import QuoteObservation

    records = game.records()
    agent.reset(np.random.default_rng(seed))
    buyers = [a for a in game.seats if game.role[a] == "buyer"]
    sellers = [a for a in game.seats if game.role[a] == "seller"]
    rows = []
    for t in range(game.rounds):
        obs = QuoteObservation(agent_id=seat, role=game.role[seat], value=game.value[seat],
                               round=t + 1, rounds=game.rounds, n_buyers=len(buyers),
                               n_sellers=len(sellers), max_quote=100, surplus=0,
                               history=records[:t])
        ours = agent.quote(obs)
        theirs = game.quotes[t][seat]
        fills = []
        for q in (ours, theirs):
            quotes = dict(game.quotes[t], **{seat: q})
            bids = [rules.NO_QUOTE if quotes[a] is None else quotes[a] for a in buyers]
            asks = [rules.NO_QUOTE if quotes[a] is None else quotes[a] for a in sellers]
            rng = np.random.default_rng([seed, t])
            traded = {(buyers[i], sellers[j]) for _, i, j, _ in rules.clear_round(bids, asks, rng)}
            fills.append(any(seat in pair for pair in traded))
        rows.append((t, ours, theirs, fills[0], fills[1]))
    return pd.DataFrame(rows, columns=["step", "ours", "theirs", "ours_fills", "theirs_fills"])
