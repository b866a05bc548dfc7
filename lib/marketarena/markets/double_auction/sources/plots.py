"""The figure of an imported instance's games with a chat (BAZAAR's collusion study).

``chat_surplus``: per trader, the mean surplus share of its seats against the messages it sent to
its own side per game (a seller to sellers, a buyer to buyers: the channel a cartel needs; both
with 95% intervals over seats), and per game the mean trade price against the messages sellers
sent to sellers and buyers to buyers. Nearly every trader writes one message a round, so the
count of messages says little; whom they are written to is the study's question. The other
figures are the market's (``double_auction/analysis/plots.py``), in its conventions.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from marketarena.markets.double_auction.analysis.plots import ROLE_COLOURS, board_order
from marketarena.plots.style import (
    agent_palette,
    apply_theme,
    error_extents,
    mean_ci,
    no_data,
    save,
)


def chat_surplus(
    agents: pd.DataFrame, market: pd.DataFrame, board: pd.DataFrame, path: Path
) -> Path:
    """Surplus share and price against the volume of chat (module docstring)."""
    apply_theme()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    order = board_order(board, agents["name"].unique())
    pal = agent_palette(agents["name"])
    share = mean_ci(agents, ["name"], "surplus_share", bounds=(0, None)).set_index("name")
    sent = mean_ci(agents, ["name"], "messages_to_rivals", bounds=(0, None)).set_index("name")
    for name in order:
        x, y = sent.loc[name], share.loc[name]
        left.errorbar(
            x["mean"],
            y["mean"],
            xerr=[[e] for e in error_extents(x["mean"], x["lo"], x["hi"])],
            yerr=[[e] for e in error_extents(y["mean"], y["lo"], y["hi"])],
            marker="o",
            ms=6,
            capsize=2,
            color=pal[name],
            label=name,
            lw=1,
        )
    left.set_xlabel("messages to its own side per game (mean, 95% interval over seats)")
    left.set_ylabel("surplus share (mean, 95% interval over seats)")
    left.set_ylim(bottom=0)
    left.set_title("Surplus share against chat, per trader")
    left.legend(fontsize=7, loc="best", ncol=2)
    per_game = agents.pivot_table(
        index="episode_id", columns="role", values="messages_to_rivals", aggfunc="sum", fill_value=0
    )
    games = market.set_index("episode_id").join(per_game).dropna(subset=["mean_price"])
    if len(games):
        for role, colour in ROLE_COLOURS.items():
            if role not in games:
                continue
            right.scatter(
                games[role], games["mean_price"], s=8, alpha=0.3, color=colour, edgecolor="none"
            )
            bins = pd.qcut(games[role], q=min(8, games[role].nunique()), duplicates="drop")
            binned = games.groupby(bins, observed=True).agg(
                x=(role, "mean"), y=("mean_price", "mean")
            )
            right.plot(
                binned["x"],
                binned["y"],
                color=colour,
                lw=1.8,
                marker="s",
                ms=4,
                label=f"{role}s to {role}s (mean per bin of games)",
            )
        right.legend(fontsize=8, loc="best")
        right.set_xlim(left=0)
    else:
        no_data(right, "no trades")
    right.set_xlabel("messages to one's own side in the game")
    right.set_ylabel("mean trade price of the game")
    right.set_title("Price against chat, per game")
    return save(fig, path)
