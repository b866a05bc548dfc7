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
one. :func:`game_tables` turns a game into the tables our market logs (``seats``, ``states``,
``trades``, ``game``, ``agents``), so our metrics run on BAZAAR's games unchanged: on all 1,954
logged games they reproduce every logged ``market_efficiency`` and every seat's
``seat_surplus_share`` exactly, and our call-market clearing reproduces every logged round's
trades from its quotes (58,620 rounds). :func:`import_logs` writes a folder of games as shards
(``core.logs``), their metrics (with each seat's *logged* CSα: BAZAAR's reference table is not
published), a check of the two figures, and a board: multipass TrueSkill on the seed's scale,
each game ranked by logged CSα (:func:`bazaar_board`). ``marketarena import-bazaar`` runs it.

Names: an LLM seat keeps its logged ``model_name`` as its player name (``kind: llm``); a baseline
takes our roster name (:data:`BASELINE_NAMES`, e.g. ``enhanced_adaptive_aggressive`` -> ``aa``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from marketarena.core import logs
from marketarena.core.plugin import AGENT_COLUMNS
from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.observations import RoundRecord, Trade

#: BAZAAR's baseline ``model_name`` -> (our roster name, our strategy) in the default pool.
BASELINE_NAMES: dict[str, tuple[str, str]] = {
    "truthful": ("truthful", "truthful"),
    "shading5": ("shade_5", "shade"),
    "shading10": ("shade_10", "shade"),
    "random": ("random", "random"),
    "zic_pure_biased_activity": ("zic", "zic"),
    "zic_plus": ("zic_plus", "zic_plus"),
    "linear_eq": ("linear_eq", "linear_eq"),
    "collusive": ("collusive", "collusive"),
    "gd": ("gd", "gd"),
    "fictitious": ("fictitious_play", "fictitious_play"),
    "gdx": ("gdx", "gdx"),
    "enhanced_bayesian": ("enhanced_bayesian", "bayesian"),
    "risk_aware": ("risk_aware", "risk_aware"),
    "momentum": ("momentum", "momentum"),
    "contrarian": ("contrarian", "contrarian"),
    "mean_reversion": ("mean_reversion", "mean_reversion"),
    "regression": ("regression", "regression"),
    "regime_switcher": ("regime_switcher", "regime_switcher"),
    "enhanced_adaptive_aggressive": ("aa", "aa"),
    "adaptive_aggressive_cliff": ("aa_cliff", "aa_cliff"),
    "adaptive": ("adaptive", "adaptive"),
    "qlearning": ("q_learning", "q_learning"),
    "roth_erev": ("roth_erev", "roth_erev"),
    "stochastic_shading_bandit": ("bandit", "bandit"),
    "sniper": ("sniper", "sniper"),
    "threat_tit_for_tat": ("tit_for_tat", "tit_for_tat"),
    "penny_jumper": ("penny_jumper", "penny_jumper"),
    "adversarial_exploiter": ("exploiter", "exploiter"),
    "signal_jammer": ("signal_jammer", "signal_jammer"),
}


class LoggedAgent(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str
    model_name: str
    is_llm: bool
    valuation: int | None = None
    cost: int | None = None


class LoggedInit(BaseModel):
    model_config = ConfigDict(extra="ignore")
    distribution: str
    num_rounds: int
    num_buyers: int
    num_sellers: int
    agents: dict[str, LoggedAgent]


class LoggedFinal(BaseModel):
    model_config = ConfigDict(extra="ignore")
    market_efficiency: float
    seat_surplus_share_map: dict[str, float]
    seat_csa_map: dict[str, float]
    final_payoff_map: dict[str, float]


@dataclass
class LoggedGame:
    """One logged game: seats in our order (buyers B1.., then sellers S1..), each seat's value
    (a seller's cost), its quotes per round (``quotes[t][seat]``, None = none) and the trades of
    each round (buyer, seller, price)."""

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

    def name(self, seat: str) -> str:
        """Player name: the logged model for an LLM, our roster name for a baseline."""
        m = self.model[seat]
        return m if self.is_llm[seat] else BASELINE_NAMES[m][0]

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


class LogError(ValueError):
    """A log line this module cannot use; the message names the file and line."""


def _seat_key(seat: str) -> tuple[int, int]:
    return (0 if seat.startswith("B") else 1, int(seat[1:]))


def read_game(path: str | Path) -> LoggedGame:
    """Read one BAZAAR game log (see the module docstring); raises :class:`LogError` naming the
    file and line of the first record it cannot use."""
    path = Path(path)
    init = final = None
    game_id = None
    raw_quotes: dict[tuple[int, str], int | None] = {}
    raw_trades: list[tuple[int, str, str, int]] = []
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                rec = json.loads(line)
                kind = rec["type"]
                if kind == "init":
                    game_id = rec.get("game_id")
                    init = LoggedInit.model_validate(rec["data"])
                elif kind == "bid_ask":
                    q = rec["price"]
                    if q is not None and (not isinstance(q, (int, float)) or q != int(q)):
                        raise ValueError(f"quote {q!r} is not an integer")
                    raw_quotes[(int(rec["round"]), str(rec["agent_id"]))] = (
                        None if q is None else int(q))
                elif kind == "trade":
                    p = rec["cleared_price"]
                    if p != int(p):
                        raise ValueError(f"cleared_price {p!r} is not an integer")
                    raw_trades.append((int(rec["round"]), str(rec["buyer_id"]),
                                       str(rec["seller_id"]), int(p)))
                elif kind == "final":
                    final = LoggedFinal.model_validate(rec["data"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, ValidationError) as exc:
                msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else exc
                raise LogError(f"{where}: {type(exc).__name__}: {msg}") from None
    if init is None or final is None:
        missing = "init" if init is None else "final"
        raise LogError(f"{path}: no {missing!r} record (an incomplete or aborted game)")
    seats = sorted(init.agents, key=_seat_key)
    role = {a: init.agents[a].role for a in seats}
    value = {}
    for a in seats:
        ag = init.agents[a]
        v = ag.valuation if ag.role == "buyer" else ag.cost
        if v is None or ag.role not in ("buyer", "seller"):
            raise LogError(f"{path}: seat {a}: role {ag.role!r} without its value")
        value[a] = int(v)
    rounds = init.num_rounds
    quotes = [{a: raw_quotes.get((t + 1, a)) for a in seats} for t in range(rounds)]
    trades: list[list[tuple[str, str, int]]] = [[] for _ in range(rounds)]
    for t, b, s, p in raw_trades:
        if not 1 <= t <= rounds or b not in role or s not in role:
            raise LogError(f"{path}: trade {b}-{s} in round {t} is outside the game")
        trades[t - 1].append((b, s, p))
    unknown = {ag.model_name for ag in init.agents.values()
               if not ag.is_llm and ag.model_name not in BASELINE_NAMES}
    if unknown:
        raise LogError(f"{path}: baseline(s) {sorted(unknown)} are not among BAZAAR's 29")
    return LoggedGame(game_id=str(game_id or path.stem), source=path.name,
                      distribution=init.distribution, rounds=rounds, seats=seats, role=role,
                      model={a: init.agents[a].model_name for a in seats},
                      is_llm={a: init.agents[a].is_llm for a in seats}, value=value,
                      quotes=quotes, trades=trades, final=final, n_buyers=init.num_buyers)


def game_tables(game: LoggedGame) -> dict[str, pd.DataFrame]:
    """The game in our log schema (``markets/double_auction/market.py``): ``agents``, ``seats``,
    ``states`` (a quote of None logged as -1), ``trades`` (rank = order within the round) and
    ``game`` (its competitive-equilibrium surplus from the values)."""
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
    return {
        "agents": agents,
        "seats": pd.DataFrame([(a, game.role[a], game.value[a], game.distribution) for a in seats],
                              columns=["agent_id", "role", "value", "distribution"]),
        "states": pd.DataFrame(state_rows, columns=cols["states"]),
        "trades": pd.DataFrame(trade_rows, columns=cols["trades"]).astype(
            {"bid": "int64", "ask": "int64"}),
        "game": pd.DataFrame([(game.distribution, game.rounds, ce, ce * game.rounds)],
                             columns=["distribution", "rounds", "ce_surplus_round", "ce_surplus"]),
    }


def logged_figures(games: list[LoggedGame], episode_ids: list[str]) -> pd.DataFrame:
    """Per seat: episode id, agent id, the game's logged market efficiency, the seat's logged
    surplus share and CSα (NaN where the game logged none: one all-LLM game)."""
    return pd.DataFrame([
        (e, a, g.final.market_efficiency, g.final.seat_surplus_share_map[a],
         g.final.seat_csa_map.get(a, np.nan))
        for g, e in zip(games, episode_ids) for a in g.seats],
        columns=["episode_id", "agent_id", "logged_efficiency", "logged_surplus_share", "logged_csa"])


def log_files(folder: str | Path) -> list[Path]:
    """The ``*.jsonl`` game logs under ``folder`` (recursively), sorted by path."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a folder of BAZAAR game logs (*.jsonl); fetch "
                                "github.com/lechmazur/bazaar and pass its logs/ folder")
    files = sorted(folder.rglob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{folder}: holds no *.jsonl game logs")
    return files


def read_games(folder: str | Path) -> list[LoggedGame]:
    return [read_game(p) for p in log_files(folder)]


def import_logs(folder: str | Path, out: str | Path, shard_episodes: int = 600,
                passes: int = 200, seed: int = 0) -> dict:
    """Import every game under ``folder`` into ``out``:

    - ``episodes/``: the games as shards of ``shard_episodes`` (our log schema; game ``k`` in
      file order is episode ``bz-<k:04d>``, its BAZAAR game id and file in the shard's meta);
    - ``metrics/agents.parquet``, ``metrics/market.parquet``: our metrics of those logs
      (``metrics.frames``), each seat's CSα being its logged one;
    - ``<out>/check.csv``: per seat, our efficiency and surplus share beside the logged ones;
    - ``<out>/board.csv``: :func:`bazaar_board`;
    - ``summary.json``: games, seats, the largest differences of the check, the board's Spearman
      with the seed's table.
    Returns the summary. Re-running replaces ``out``'s contents."""
    import shutil

    from marketarena.markets.double_auction import metrics as da_metrics
    from marketarena.markets.double_auction.calibration import llm_calibration

    out = Path(out)
    games = read_games(folder)
    ids = [f"bz-{k:04d}" for k in range(len(games))]
    root = out / "episodes"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    planned = [logs.PlannedEpisode(e, k, 0, f"bazaar:{g.game_id}")
               for k, (e, g) in enumerate(zip(ids, games))]
    tables = [game_tables(g) for g in games]
    for unit in logs.plan_units(planned, shard_episodes):
        chunk = [(tables[p.run], {"market": "double_auction", "source": "bazaar",
                                  "game_id": games[p.run].game_id, "file": games[p.run].source,
                                  "distribution": games[p.run].distribution}, {})
                 for p in unit.episodes]
        logs.write_shard(root, unit, chunk, {"importer": "marketarena import-bazaar"})
    from marketarena.core.reader import EpisodeReader

    reader = EpisodeReader(root)
    seats, _, market = da_metrics.frames({n: reader.table(n) for n in da_metrics.TABLES})
    logged = logged_figures(games, ids)
    seats = seats.merge(logged, on=["episode_id", "agent_id"])
    seats["csa"] = seats["logged_csa"]
    (out / "metrics").mkdir(parents=True, exist_ok=True)
    seats.to_parquet(out / "metrics" / "agents.parquet", index=False)
    market.to_parquet(out / "metrics" / "market.parquet", index=False)
    check = seats[["episode_id", "agent_id", "name", "game_efficiency", "logged_efficiency",
                   "surplus_share", "logged_surplus_share"]]
    check.to_csv(out / "check.csv", index=False)
    board = bazaar_board(seats, passes=passes, seed=seed)
    board.to_csv(out / "board.csv", index=False)
    summary = {
        "games": len(games), "seats": int(len(seats)),
        "llm_seats": int((seats["kind"] == "llm").sum()),
        "max_abs_diff_efficiency": float((check["game_efficiency"]
                                          - check["logged_efficiency"]).abs().max()),
        "max_abs_diff_surplus_share": float((check["surplus_share"]
                                             - check["logged_surplus_share"]).abs().max()),
        **llm_calibration(board),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
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
    board = multipass(player_games(rated, "csa"), ts, passes=passes, seed=seed)
    board = board.rename(columns={"player": "name"}).drop(columns=["mu_lo", "mu_hi"])
    info = rated.groupby("name").agg(kind=("kind", "first"), csa_mean=("csa", "mean"))
    board = board.merge(info.reset_index(), on="name")
    board = board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)
    board.insert(0, "rank", range(1, len(board) + 1))
    return board[["rank", "name", "kind", "mu", "sigma", "games", "csa_mean"]]


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
