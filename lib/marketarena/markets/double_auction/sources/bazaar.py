"""BAZAAR's published games in our log schema: the importer of format ``bazaar``.

:func:`game_tables` turns a game read by ``reader.py`` into the tables our market logs
(``seats``, ``states``, ``trades``, ``game``, ``agents``; ``double_auction/market.py``), plus its
chat (``messages``) and the figures it logged (``bazaar_logged``), so our metrics run on BAZAAR's
games unchanged: on all 1,954 logged games they reproduce every logged ``market_efficiency`` and
every seat's ``seat_surplus_share`` exactly, and our call-market clearing reproduces every logged
round's trades from its quotes (58,620 rounds). ``DoubleAuctionBazaarSource`` (``__init__.py``)
writes a folder of games as episodes ``bz-<k>`` in shards (:func:`write_episodes`), after
:func:`check_setting`; :func:`import_report` says what came in (``import.json``).

One setting per instance, for the games our CSα rates: a game that logged no CSα for some seat is
rated on our truthful reference, which is for the instance's setting (rounds, seats,
distributions), so it must be in it. A game that logged every seat's CSα is rated on its own and
may be of any setting (BAZAAR's files mix none, but a folder may).

**The board is compared with the seed's table only for BAZAAR's own games** (the tournament the
table rates: :func:`seed_study`, recorded in the import report): every game in its setting (30
rounds, 4x4 seats, as all 1,954) and at least half of the games' LLMs in the table
(``SEED_LLM_TABLE`` of ``double_auction/analysis/calibration.py``). Other games in its format
(the collusion study, 3x3 seats; PACT, 1x1 seats, many of the same model names) are other
studies: the report says why (``seed_comparison``).

:func:`teacher_forced` hands one of our baselines the history a logged seat saw, round by round
(``benchmarks/bench_da_teacher_forced.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.rules import AGENT_COLUMNS
from marketarena.core.runner import DECISION_COLUMNS
from marketarena.core.types import Rows
from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.bazaar_baselines import BASELINE_NAMES
from marketarena.markets.double_auction.market import DoubleAuctionMarket
from marketarena.markets.double_auction.observations import QuoteObservation
from marketarena.markets.double_auction.sources.metrics import PUBLISHED_PREFIX
from marketarena.markets.double_auction.sources.reader import LogError, LoggedGame

#: chat table columns (``messages``): round (0-based ``step``), sender seat, recipients (a seat or
#: ``all``/``all_buyers``/``all_sellers``/``all_traders``), the text (cleaned and capped as every
#: foreign text: ``core.prompts.quote_text``), whether it was cut, and how long it was
MESSAGE_COLUMNS = ["step", "sender", "recipients", "text", "truncated", "chars"]
#: the chat's casts (an empty chat keeps its columns' types)
MESSAGE_DTYPES = {
    "step": "int64",
    "sender": "str",
    "recipients": "str",
    "text": "str",
    "truncated": "bool",
    "chars": "int64",
}
#: the judged answers' casts (``decisions``)
DECISION_DTYPES = {"step": "int64", "round": "int64", "attempt": "int64", "valid": "bool"} | {
    c: "str" for c in ("phase", "agent_id", "action", "error", "notes", "failure")
}
#: the kind of an invalid answer by phase (``decisions.failure``, :func:`decisions_table`)
FAILURE = {"quote": "format", "chat": "rule"}
#: per-seat figures the game logged (``bazaar_logged``): its efficiency, the seat's surplus share
#: and CSα (NaN where the game logged none)
LOGGED_COLUMNS = ["agent_id", "logged_efficiency", "logged_surplus_share", "logged_csa"]


def game_tables(game: LoggedGame) -> dict[str, Rows]:
    """The game in our log schema (``markets/double_auction/market.py``): ``agents``, ``seats``,
    ``states`` (a quote of None logged as -1), ``trades`` (rank = order within the round),
    ``game`` (its competitive-equilibrium surplus from the values), ``messages`` (the chat, empty
    without one), ``decisions`` (its judged answers, where it logged them:
    :func:`decisions_table`) and ``bazaar_logged`` (the figures the game logged, checked against
    ours). As row tuples (``core.types.Rows``), as our market's own tables are: a DataFrame a
    table cost more than the rest of an import of PACT's 9,089 games."""
    seats = game.seats
    agents = Rows(
        AGENT_COLUMNS,
        [
            (
                a,
                game.name(a),
                "llm" if game.is_llm[a] else "baseline",
                game.model[a] if game.is_llm[a] else "",
                "bazaar-llm" if game.is_llm[a] else BASELINE_NAMES[game.model[a]][1],
                "bazaar-llm" if game.is_llm[a] else "",
                game.role[a],
                a,
            )
            for a in seats
        ],
    )
    surplus = dict.fromkeys(seats, 0)
    state_rows, trade_rows = [], []
    for t in range(game.rounds):
        payoff = dict.fromkeys(seats, 0)
        price: dict[str, int] = {}
        for k, (b, s, p) in enumerate(game.trades[t]):
            vb, vs = game.value[b], game.value[s]
            payoff[b], payoff[s] = vb - p, p - vs
            price[b] = price[s] = p
            trade_rows.append(
                (t, k, b, s, game.quotes[t][b], game.quotes[t][s], p, vb, vs, vb - p, p - vs)
            )
        for a in seats:
            surplus[a] += payoff[a]
            q = game.quotes[t][a]
            state_rows.append(
                (
                    t,
                    a,
                    game.role[a],
                    game.value[a],
                    rules.NO_QUOTE if q is None else q,
                    a in price,
                    price.get(a, rules.NO_QUOTE),
                    payoff[a],
                    surplus[a],
                )
            )
    bv = np.array([game.value[a] for a in seats if game.role[a] == "buyer"])
    sv = np.array([game.value[a] for a in seats if game.role[a] == "seller"])
    ce = int(rules.ce_surplus(bv, sv))
    cols = DoubleAuctionMarket.TABLE_COLUMNS
    final = game.final
    tables = {
        "agents": agents,
        "seats": Rows(
            ["agent_id", "role", "value", "distribution"],
            [(a, game.role[a], game.value[a], game.distribution) for a in seats],
        ),
        "states": Rows(cols["states"], state_rows),
        "trades": Rows(cols["trades"], trade_rows, {"bid": "int64", "ask": "int64"}),
        "game": Rows(
            ["distribution", "rounds", "ce_surplus_round", "ce_surplus"],
            [(game.distribution, game.rounds, ce, ce * game.rounds)],
        ),
        "messages": Rows(
            MESSAGE_COLUMNS, [(t - 1, *rest) for t, *rest in game.messages], MESSAGE_DTYPES
        ),
        "bazaar_logged": Rows(
            LOGGED_COLUMNS,
            [
                (
                    a,
                    final.market_efficiency,
                    final.seat_surplus_share_map.get(a, np.nan),
                    final.seat_csa_map.get(a, np.nan),
                )
                for a in seats
            ],
        ),
    }
    if game.judged:
        tables["decisions"] = decisions_table(game)
    return tables


def decisions_table(game: LoggedGame) -> Rows:
    """The game's judged answers (``reader.LoggedGame.answers``: where it logged their raw text)
    as our ``decisions`` table (``core.runner.DECISION_COLUMNS``), so every board's validity
    columns (``metrics.validity``) count them as any played seat's: a quote (phase ``quote``,
    its action the logged quote) and a chat turn (phase ``chat``) per answer, attempt 0 (their
    engine never asked again), ``valid``, the ``error`` that made it invalid and its kind
    (``failure``, :data:`FAILURE`): an invalid quote is a ``format`` failure (no single
    ``<price>`` in range, or one their engine read as another price: either way the price was not
    read from the answer as the format says), a chat turn their engine refused
    (``communication_violation``) a ``rule`` failure (it was read, and broke their chat rule). A
    game that logged no raw answer has no such table: its validity is unknown, not assumed."""
    rows = [
        (
            t - 1,
            0,
            phase,
            seat,
            0,
            json.dumps({"quote": game.quotes[t - 1][seat]}) if phase == "quote" else "",
            valid,
            error,
            "",
            "" if valid else FAILURE[phase],
        )
        for t, seat, phase, valid, error in game.answers
    ]
    return Rows(DECISION_COLUMNS, rows, DECISION_DTYPES)


def game_meta(game: LoggedGame) -> dict:
    """An imported game's meta (``meta.json``): where it came from and its setting."""
    return {
        "market": "double_auction",
        "source": "bazaar",
        "game_id": game.game_id,
        "file": game.source,
        "lineup": [game.name(a) for a in game.seats],
        "setting": {"distribution": game.distribution},
    }


def check_setting(game: LoggedGame, path: str | Path, mp) -> None:
    """Refuse a game rated on our CSα (it did not log every seat's, or the instance rates every
    game on ours: ``csa_basis``, a joint instance) whose setting is not the instance's ``mp`` (our
    reference's), naming the file and the params key (module docstring); a game rated on its
    logged CSα passes whatever its setting."""
    if game.rated_on_logs and not mp.rated_on_ours:
        return
    for what, theirs, ours in (
        ("num_rounds", game.rounds, mp.rounds),
        ("num_buyers", game.n_buyers, mp.n_buyers),
        ("num_sellers", game.n_sellers, mp.n_sellers),
    ):
        if theirs != ours:
            key = {"num_rounds": "rounds"}.get(what, what.replace("num_", "n_"))
            raise LogError(
                path,
                f"{what} is {theirs}, but the instance's {key} is {ours} (one "
                "setting per instance: set it in params.yaml, or import these games "
                "into an instance of their own)",
            )
    if game.distribution not in mp.distributions:
        raise LogError(
            path,
            f"distribution {game.distribution!r} is not among the instance's "
            f"distributions {list(mp.distributions)}",
        )


def write_episodes(games: list[LoggedGame], out: str | Path, shard_episodes: int | None) -> int:
    """Write ``games`` into ``out`` as episodes ``bz-<k:04d>`` (``core.logs.write_games``)."""
    from marketarena.core.logs import write_games

    return write_games(
        Path(out),
        ((f"{PUBLISHED_PREFIX}{k:04d}", game_tables(g), game_meta(g)) for k, g in enumerate(games)),
        shard_episodes,
        fingerprint_of="bazaar",
    )


#: BAZAAR's tournament setting, (rounds, buyers, sellers), which the seed's table rates
SEED_SETTING = (30, 4, 4)


def seed_study(games: list[LoggedGame]) -> str:
    """Why ``games`` are not the tournament the seed's table rates (module docstring); ""."""
    from marketarena.markets.double_auction.analysis.calibration import SEED_LLM_TABLE

    for g in games:
        if (g.rounds, g.n_buyers, g.n_sellers) != SEED_SETTING:
            return (
                f"game {g.game_id} has {g.rounds} rounds and {g.n_buyers}x{g.n_sellers} "
                "seats, not BAZAAR's tournament (30 rounds, 4x4 seats): another study"
            )
    llms = {g.model[a] for g in games for a in g.seats if g.is_llm[a]}
    known = len(llms & SEED_LLM_TABLE.keys())
    return (
        ""
        if 2 * known >= len(llms)
        else f"{known} of the games' {len(llms)} LLMs are in the seed's table: another study"
    )


def import_report(games: list[LoggedGame]) -> dict:
    """What an import brought in (``core.sources.REPORT``): games, seats, LLM seats, chat messages,
    the answers judged (games that logged their raw text, answers, invalid ones, of which chat
    turns their engine refused), how many games logged their seats' CSα, and whether the board
    compares with the seed's table (:func:`seed_study`)."""
    other = seed_study(games)
    return {
        "format": "bazaar",
        "games": len(games),
        "seats": sum(len(g.seats) for g in games),
        "llm_seats": sum(sum(g.is_llm.values()) for g in games),
        "messages": sum(len(g.messages) for g in games),
        "games_with_judged_answers": sum(g.judged for g in games),
        "answers_judged": sum(len(g.answers) for g in games),
        "answers_invalid": sum(not a[3] for g in games for a in g.answers),
        "chat_violations": sum(
            not valid for g in games for _, _, phase, valid, _ in g.answers if phase == "chat"
        ),
        "games_with_logged_csa": sum(bool(g.final.seat_csa_map) for g in games),
        "distributions": sorted({g.distribution for g in games}),
        "seed_comparison": {"applies": not other, "why": other or "BAZAAR's own games"},
    }


def teacher_forced(game: LoggedGame, seat: str, agent, seed: int = 0) -> pd.DataFrame:
    """Hand ``agent`` (a baseline of ours) the history logged seat ``seat`` saw, round by round
    (its own logged quotes included), and record what it quotes. Per round: step, ours, theirs
    (None: sat out), and whether each quote fills when it replaces the seat's quote in the logged
    round (our clearing, ties broken by a generator seeded with (``seed``, round) shared by both
    quotes). ``agent`` is reset with ``default_rng(seed)``."""
    records = game.records()
    agent.reset(np.random.default_rng(seed))
    buyers = [a for a in game.seats if game.role[a] == "buyer"]
    sellers = [a for a in game.seats if game.role[a] == "seller"]
    rows = []
    for t in range(game.rounds):
        obs = QuoteObservation(
            agent_id=seat,
            role=game.role[seat],
            value=game.value[seat],
            round=t + 1,
            rounds=game.rounds,
            n_buyers=len(buyers),
            n_sellers=len(sellers),
            max_quote=100,
            surplus=0,
            history=records[:t],
        )
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
