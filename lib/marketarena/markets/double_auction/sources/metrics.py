"""The metrics of an instance imported from BAZAAR's logs, beyond those of played games
(``double_auction/analysis/metrics.py``): each game's logged figures beside ours, its CSα (the
logged one, or ours), the chat per seat, and the check of our figures against the logged ones.

- :func:`imported_csa`: a game's CSα is its logged one where it logged every seat's, else ours
  (``csa_source``); ours (``own_csa``) stands beside the logged one for the games in the
  instance's setting.
- :func:`with_chat`: the chat per seat, to whom.
- :func:`check`: per seat, our game efficiency and surplus share beside the logged ones (on all
  1,954 of BAZAAR's games they agree exactly); :func:`largest_differences` over it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.markets.double_auction.analysis.reference import no_reference, seat_csa


def with_logged(seats: pd.DataFrame, logged: pd.DataFrame) -> pd.DataFrame:
    """``seats`` with the figures an imported game logged (``bazaar.LOGGED_COLUMNS``) beside
    ours: ``logged_efficiency``, ``logged_surplus_share``, ``logged_csa``."""
    return seats.merge(logged, on=["episode_id", "agent_id"], how="left")


def choose_csa(seats: pd.DataFrame, ours_only: bool = False) -> pd.DataFrame:
    """An imported game's CSα: the logged one where the game logged a CSα for every seat
    (BAZAAR's own reference, not published), else ours (``own_csa``: our truthful reference
    under the game's setting); ``csa_source`` says which (``logged`` or ``ours``), per game, so
    that a game is never rated on a mix of the two scales. ``ours_only`` (a joint instance,
    whose new games logged none): every game on ours, the logged CSα kept beside it."""
    out = seats.copy()
    logged_game = out["logged_csa"].notna().groupby(out["episode_id"]).transform("all")
    logged_game &= not ours_only
    own = out["own_csa"] if "own_csa" in out else pd.Series(np.nan, index=out.index)
    out["csa"] = np.where(logged_game, out["logged_csa"], own)
    out["csa_source"] = np.where(logged_game, "logged", "ours")
    return out


def in_setting(seats: pd.DataFrame, mp, rounds: pd.Series | None = None) -> pd.Series:
    """Per seat, whether its game is in the instance's setting (``mp``'s buyers and sellers and,
    given ``rounds``, episode_id -> its rounds, ``mp.rounds``): our reference's."""
    ep = seats["episode_id"]
    buyers = seats["role"].eq("buyer").groupby(ep).transform("sum")
    sellers = seats["role"].eq("seller").groupby(ep).transform("sum")
    same = (buyers == mp.n_buyers) & (sellers == mp.n_sellers)
    return same if rounds is None else same & ep.map(rounds).eq(mp.rounds)


def imported_csa(
    seats: pd.DataFrame,
    reference: pd.DataFrame,
    mp,
    logged: pd.DataFrame,
    rounds: pd.Series | None = None,
) -> pd.DataFrame:
    """The seats of imported games with their CSα (:func:`choose_csa`): ours (``own_csa``) is
    needed only for the games rated on it, so a seat of a game that logged its CSα may have a
    value our reference never met (NaN ``own_csa``: BAZAAR's games against a pool other than the
    instance's roster), or be of a game in another setting than our reference's (NaN too:
    :func:`in_setting`, ``rounds`` episode_id -> its rounds); a seat of a game rated on ours may
    not (an error naming its bucket; the importer refuses such a game in another setting)."""
    seats = seat_csa(seats, reference, mp, strict=False).rename(columns={"csa": "own_csa"})
    seats.loc[~in_setting(seats, mp, rounds), ["ref_mu", "ref_sd", "own_csa"]] = np.nan
    seats = choose_csa(with_logged(seats, logged), ours_only=mp.rated_on_ours)
    no_reference(seats, (seats["csa_source"] == "ours") & seats["ref_mu"].isna())
    return seats


#: the episode ids of imported games begin so (``bazaar.write_episodes``); a joint instance's new
#: games are its entrants' (``x-<name>-<k>``)
PUBLISHED_PREFIX = "bz-"
#: whose prompt a seat saw, by its origin and harness (``prompts`` of :func:`with_origin`)
PROMPTS = {
    "bazaar-llm": "BAZAAR's (their game)",
    "bazaar": "BAZAAR's templates (your copy)",
    "plain": "ours (marketarena's templates)",
}


def with_origin(seats: pd.DataFrame) -> pd.DataFrame:
    """Per seat, ``origin``: ``published`` (an imported game) or ``new`` (a joint instance's
    entrant's game); ``prompts``: whose prompt an LLM seat saw (:data:`PROMPTS`; empty for a
    scripted seat, which reads no prompt)."""
    published = seats["episode_id"].str.startswith(PUBLISHED_PREFIX)
    prompts = seats["harness"].map(PROMPTS).fillna("")
    prompts = prompts.where(seats["kind"] == "llm", "")
    return seats.assign(origin=np.where(published, "published", "new"), prompts=prompts)


def with_chat(seats: pd.DataFrame, messages: pd.DataFrame) -> pd.DataFrame:
    """Per seat, its chat (``messages`` of an imported game), by whom each message reached, not
    by how it was addressed (BAZAAR's schema 1.4.0 writes a 1x1 game's messages to
    ``all_traders``, 1.7.0 to the one other seat: the same behaviour, counted the same):

    - ``messages_sent``: every message it wrote (an empty one, BAZAAR's way of staying silent,
      is not logged as a message);
    - ``messages_private``: to one trader while others could have read it (a game of more than
      two traders), whatever the address (a seat, or a group of one); ``messages_group`` the rest;
    - ``messages_to_rivals``: reaching only its own side (a seller to all sellers or to one
      seller): the channel a cartel needs; ``messages_to_counterparties``: reaching only the
      other side; a message reaching both sides counts in neither;
    - ``chat_chars``: characters written; ``messages_received``: sent to it privately.

    Zero for a seat that wrote nothing; the columns are absent without a chat."""
    if messages is None or messages.empty or "sender" not in messages:
        return seats
    side = seats.set_index(["episode_id", "agent_id"])["role"]
    sides = seats.groupby("episode_id")["role"].value_counts().unstack(fill_value=0)
    buyers = messages["episode_id"].map(sides.get("buyer", 0)).fillna(0).to_numpy()
    sellers = messages["episode_id"].map(sides.get("seller", 0)).fillna(0).to_numpy()
    own = pd.Series(list(zip(messages["episode_id"], messages["sender"]))).map(side).to_numpy()
    to = messages["recipients"].to_numpy()
    seat_to = pd.Series(list(zip(messages["episode_id"], to))).map(side).fillna("").to_numpy()
    # the traders of each side a message reaches (never its sender)
    everyone = np.isin(to, ("all", "all_traders"))
    reach_b = np.where(everyone | (to == "all_buyers"), buyers - (own == "buyer"), 0)
    reach_b = np.where(seat_to == "buyer", 1, reach_b)
    reach_s = np.where(everyone | (to == "all_sellers"), sellers - (own == "seller"), 0)
    reach_s = np.where(seat_to == "seller", 1, reach_s)
    rivals, others = (
        np.where(own == "buyer", reach_b, reach_s),
        np.where(own == "buyer", reach_s, reach_b),
    )
    m = messages.assign(
        private=(reach_b + reach_s == 1) & (buyers + sellers > 2),
        to_rivals=(rivals > 0) & (others == 0),
        to_counterparties=(others > 0) & (rivals == 0),
    )
    key = ["episode_id", "sender"]
    sent = m.groupby(key).agg(
        messages_sent=("text", "size"),
        messages_private=("private", "sum"),
        messages_to_rivals=("to_rivals", "sum"),
        messages_to_counterparties=("to_counterparties", "sum"),
        chat_chars=("chars", "sum"),
    )
    sent["messages_group"] = sent["messages_sent"] - sent["messages_private"]
    received = (
        m[m["private"]].groupby(["episode_id", "recipients"]).size().rename("messages_received")
    )
    out = seats.merge(
        sent.rename_axis(["episode_id", "agent_id"]).reset_index(),
        on=["episode_id", "agent_id"],
        how="left",
    )
    out = out.merge(
        received.rename_axis(["episode_id", "agent_id"]).reset_index(),
        on=["episode_id", "agent_id"],
        how="left",
    )
    cols = [
        "messages_sent",
        "messages_private",
        "messages_group",
        "messages_to_rivals",
        "messages_to_counterparties",
        "chat_chars",
        "messages_received",
    ]
    out[cols] = out[cols].fillna(0).astype("int64")
    return out


#: the check's columns: ours beside the logged, per seat
CHECK_COLUMNS = [
    "episode_id",
    "agent_id",
    "name",
    "game_efficiency",
    "logged_efficiency",
    "surplus_share",
    "logged_surplus_share",
]


def check(seats: pd.DataFrame) -> pd.DataFrame:
    """Per seat, our game efficiency and surplus share beside the ones its game logged."""
    return seats[CHECK_COLUMNS].reset_index(drop=True)


def largest_differences(check: pd.DataFrame) -> dict[str, float | None]:
    """The largest |ours - logged| of the efficiency and of the surplus share over the seats of
    :func:`check` that have both (None: none has; never NaN, so it is JSON)."""
    out = {}
    for what, ours, theirs in (
        ("efficiency", "game_efficiency", "logged_efficiency"),
        ("surplus_share", "surplus_share", "logged_surplus_share"),
    ):
        diff = (check[ours] - check[theirs]).abs().dropna()
        out[what] = float(diff.max()) if len(diff) else None
    return out
