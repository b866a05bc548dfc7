"""BAZAAR's figures (seed 002) for the ``double_auction`` market (an imported instance's games with
a chat add one: ``double_auction/sources/plots.py``).

Inputs are the metrics-stage frames (``agents``: one row per seat and game; ``agent_rounds``: one row
per seat and round) and the leaderboard frame of the ratings stage. Every function writes one PNG
and returns its path. Traders are listed in leaderboard order (best μ first) in every figure, and
coloured by :func:`marketarena.plots.style.agent_palette` over all trader names; baselines are
marked "(b)" on their labels where LLM traders are present, and their bars are hatched.

Offsets use one sign for both roles: bid - value for buyers, value - ask for sellers (negative =
shading, 0 = truthful). The trade margin is the surplus a trade brought its side: v - p for the
buyer, p - c for the seller.

1. ``leaderboard``: median TrueSkill μ over passes as a point (no bar: μ has no zero a bar could
   start from, and a bar from the axis's edge would make lengths mean nothing), error bar the 95%
   bootstrap interval of μ over games, labels with the games played and the 95% rank interval.
2. ``csa_strip``: CSα of every seat (jittered), the trader's mean as a black bar.
3. ``offset_by_trader``: mean quote offset per trader and role (over quoted rounds).
4. ``offset_per_game``: per-game mean offset of each seat (strip).
5. ``offset_by_round``: median offset per round, one small panel per trader, buyers and sellers,
   on an axis that holds every trader's line (Random's included).
6. ``trade_margin``: margin of every trade (strip) per trader.
7. ``trade_frequency``: share of rounds in which the trader traded (%).
8. ``calibration_shade``: the mean offset per round (minus the calibration's shade, value - bid
   and ask - cost: the offsets' sign, negative = shading, as in every other figure here), one
   small panel per baseline, ours (line) against BAZAAR's published games (dots), the panel's
   title marked "ok" when the baseline is within the calibration bounds
   (``calibration.behaviour``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from marketarena.plots.style import agent_palette, apply_theme, no_data, save

ROLE_COLOURS = {"buyer": "#1f77b4", "seller": "#d62728"}
MAX_STRIP_POINTS = 4000  # per trader; a seeded subsample beyond this keeps files light


def board_order(board: pd.DataFrame, names) -> list[str]:
    """``names`` in the board's order (best μ first), those it does not rank after, sorted."""
    ranked = [n for n in board["name"] if n in set(names)]
    return ranked + sorted(set(names) - set(ranked))


def _labels(order, board: pd.DataFrame) -> list[str]:
    kinds = dict(zip(board["name"], board.get("kind", pd.Series(["baseline"] * len(board)))))
    mixed = len(set(kinds.values())) > 1
    return [f"{n} (b)" if mixed and kinds.get(n) == "baseline" else n for n in order]


def _height(n: int) -> float:
    return max(3.0, 0.28 * n + 1.2)


def _subsample(df: pd.DataFrame, by: str, n: int = MAX_STRIP_POINTS) -> pd.DataFrame:
    shuffled = df.sample(frac=1.0, random_state=0)
    return shuffled[shuffled.groupby(by).cumcount() < n].sort_index()


def leaderboard(board: pd.DataFrame, path: Path) -> Path:
    """μ points (hollow for baselines where LLM traders are present); error bars: the 95%
    bootstrap interval of μ over games (± σ when the board has no interval); each row is labelled
    with μ, the games played and the rank interval. Points, not bars: TrueSkill's μ has no zero
    for a bar to start from."""
    apply_theme()
    b = board.sort_values("mu", ascending=True)
    fig, ax = plt.subplots(figsize=(7.5, _height(len(b))))
    pal = agent_palette(board["name"])
    mixed = "kind" in b.columns and (board["kind"] != "baseline").any()
    boot = {"mu_lo", "mu_hi"} <= set(b.columns) and b["mu_lo"].notna().all()
    lo_edge = b["mu_lo"] if boot else b["mu"] - b["sigma"]
    hi_edge = b["mu_hi"] if boot else b["mu"] + b["sigma"]
    xerr = np.vstack([b["mu"] - lo_edge, hi_edge - b["mu"]]).clip(min=0)
    labels = _labels(b["name"], board)
    for y, (name, kind) in enumerate(zip(b["name"], b.get("kind", ["baseline"] * len(b)))):
        hollow = mixed and kind == "baseline"
        ax.errorbar(
            b["mu"].iloc[y],
            y,
            xerr=xerr[:, [y]],
            fmt="o",
            ms=6,
            capsize=2,
            elinewidth=1,
            color=pal[name],
            mfc="white" if hollow else pal[name],
            mec=pal[name],
        )
    ax.set_yticks(range(len(b)), labels)
    right = float(hi_edge.max())
    for y, (_, r) in enumerate(b.iterrows()):
        ranks = (
            f", rank {int(r['rank_lo'])}-{int(r['rank_hi'])}"
            if "rank_lo" in b.columns and pd.notna(r["rank_lo"])
            else ""
        )
        ax.text(
            right + 0.05 * max(right, 1),
            y,
            f"{r['mu']:.2f}  (n={r['games']}{ranks})",
            va="center",
            fontsize=7,
        )
    span = max(right - float(lo_edge.min()), 1e-9)
    ax.set_xlim(float(lo_edge.min()) - 0.1 * span, right + 0.6 * span + 0.5)
    what = "95% bootstrap interval over games" if boot else "± σ"
    ax.set_xlabel(f"TrueSkill μ (median over passes), error bar: {what}")
    ax.set_title("double_auction: multi-pass TrueSkill by CSα")
    return save(fig, path)


def csa_strip(agents: pd.DataFrame, board: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    order = board_order(board, agents["name"].unique())
    fig, ax = plt.subplots(figsize=(7.5, _height(len(order))))
    pal = agent_palette(agents["name"])
    pts = _subsample(agents[["name", "csa"]], "name")
    import seaborn as sns  # here only: its import (scipy.stats) costs every other stage 1.5 s

    sns.stripplot(
        data=pts,
        x="csa",
        y="name",
        order=order,
        hue="name",
        palette=pal,
        legend=False,
        size=2.5,
        alpha=0.35,
        jitter=0.3,
        ax=ax,
    )
    means = agents.groupby("name")["csa"].mean()
    ax.scatter(
        [means[n] for n in order],
        range(len(order)),
        marker="|",
        s=250,
        color="black",
        zorder=5,
        label="mean",
    )
    ax.axvline(0, color="0.4", lw=0.8, ls="--")
    ax.set_yticks(range(len(order)), _labels(order, board))
    ax.set_xlabel("CSα per seat (0 = a truthful trader against the same pool; clipped to ±5)")
    ax.set_ylabel("")
    ax.legend(loc="lower right", fontsize=7)
    ax.set_title("Conditional surplus alpha, every seat of every game")
    return save(fig, path)


def offset_by_trader(agents: pd.DataFrame, board: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    order = board_order(board, agents["name"].unique())
    fig, ax = plt.subplots(figsize=(7.5, _height(len(order)) * 1.1))
    m = agents.groupby(["name", "role"])["mean_offset"].mean().unstack("role")
    y = np.arange(len(order))
    for k, role in enumerate(["buyer", "seller"]):
        vals = m.reindex(order)[role] if role in m else pd.Series(np.nan, index=order)
        ax.barh(
            y + (k - 0.5) * 0.4,
            vals,
            height=0.4,
            color=ROLE_COLOURS[role],
            label=f"{role}s ({'bid - value' if role == 'buyer' else 'cost - ask'})",
        )
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_yticks(y, _labels(order, board))
    ax.invert_yaxis()
    ax.set_xlabel("mean quote offset from private value (negative = shading)")
    ax.legend(loc="lower left", fontsize=7)
    ax.set_title("Average bid / ask offset by trader")
    return save(fig, path)


def _role_strip(
    points: pd.DataFrame,
    x: str,
    board: pd.DataFrame,
    order: list[str],
    path: Path,
    *,
    size: float,
    alpha: float,
    legend_loc: str,
    empty: str,
    xlabel: str,
    title: str,
) -> Path:
    """Every point of ``points[x]`` per trader (rows in leaderboard order), buyers and sellers
    dodged in their role colours, with a zero line (the shared shape of the offset and margin
    figures)."""
    fig, ax = plt.subplots(figsize=(7.5, _height(len(order))))
    if points.empty:
        no_data(ax, empty)
    else:
        import seaborn as sns

        sns.stripplot(
            data=_subsample(points, "name"),
            x=x,
            y="name",
            order=order,
            hue="role",
            palette=ROLE_COLOURS,
            hue_order=["buyer", "seller"],
            size=size,
            alpha=alpha,
            jitter=0.3,
            dodge=True,
            ax=ax,
        )
        ax.set_yticks(range(len(order)), _labels(order, board))
        ax.legend(title="role", loc=legend_loc, fontsize=7)
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("")
    ax.set_title(title)
    return save(fig, path)


def offset_per_game(agents: pd.DataFrame, board: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    return _role_strip(
        agents[["name", "role", "mean_offset"]].dropna(),
        "mean_offset",
        board,
        board_order(board, agents["name"].unique()),
        path,
        size=2.5,
        alpha=0.4,
        legend_loc="lower left",
        empty="no data",
        xlabel="per-game mean quote offset (negative = shading)",
        title="Mean offset per game",
    )


def _panels(order: list[str], draw, path: Path, *, handles, ylim, ylabel: str, title: str) -> Path:
    """One small panel per trader of ``order`` (6 a row, shared axes): ``draw(ax, name)`` fills
    a panel; a legend of ``handles``, a dashed zero line, round on x."""
    ncol = 6
    nrow = max(1, int(np.ceil(len(order) / ncol)))
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(2.2 * ncol, 1.7 * nrow + 0.6), sharex=True, sharey=True, squeeze=False
    )
    for ax, name in zip(axes.flat, order):
        draw(ax, name)
        ax.axhline(0, color="0.5", lw=0.6, ls="--")
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(order) :]:
        ax.set_visible(False)
    axes.flat[0].set_ylim(*ylim)
    fig.legend(handles=handles, loc="upper right", fontsize=8, ncol=2)
    fig.supxlabel("round", fontsize=9)
    fig.supylabel(ylabel, fontsize=9)
    fig.suptitle(title, fontweight="bold", fontsize=11)
    fig.tight_layout()
    return save(fig, path)


def offset_by_round(rounds: pd.DataFrame, board: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    med = rounds.groupby(["name", "role", "step"])["offset"].median().reset_index()
    lo, hi = (med["offset"].min(), med["offset"].max()) if len(med) else (-1, 1)

    def draw(ax, name):
        for role, g in med[med["name"] == name].groupby("role"):
            ax.plot(g["step"] + 1, g["offset"], color=ROLE_COLOURS[role], lw=1.2, label=role)
        ax.set_title(name, fontsize=8)

    handles = [plt.Line2D([], [], color=c, label=r + "s") for r, c in ROLE_COLOURS.items()]
    return _panels(
        board_order(board, rounds["name"].unique()),
        draw,
        path,
        handles=handles,
        ylim=(min(lo, -1) - 2, max(hi, 1) + 2),
        ylabel="median offset (negative = shading)",
        title="Offset trajectory by round",
    )


def trade_margin(rounds: pd.DataFrame, board: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    return _role_strip(
        rounds[rounds["traded"]][["name", "role", "margin"]],
        "margin",
        board,
        board_order(board, rounds["name"].unique()),
        path,
        size=2,
        alpha=0.3,
        legend_loc="lower right",
        empty="no trades",
        xlabel="trade margin: value - price (buyer), price - cost (seller)",
        title="Trade price vs valuation",
    )


def trade_frequency(agents: pd.DataFrame, board: pd.DataFrame, path: Path) -> Path:
    apply_theme()
    order = board_order(board, agents["name"].unique())
    freq = agents.groupby("name")["trade_freq"].mean().reindex(order) * 100
    fig, ax = plt.subplots(figsize=(7.5, _height(len(order))))
    pal = agent_palette(agents["name"])
    ax.barh(
        _labels(order, board), freq, color=[pal[n] for n in order], edgecolor="0.3", linewidth=0.5
    )
    for y, f in enumerate(freq):
        ax.text(f + 0.5, y, f"{f:.1f}%", va="center", fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, max(5.0, float(np.nanmax(freq)) * 1.15))
    ax.set_xlabel("rounds with a trade (%)")
    ax.set_title("Trade frequency")
    return save(fig, path)


def calibration_shade(shade: pd.DataFrame, behaviour: pd.DataFrame, path: Path) -> Path:
    """``shade``: ``calibration.shade_by_round``; ``behaviour``: ``calibration.behaviour`` (its
    order and ``within`` flags)."""
    apply_theme()
    order = list(behaviour["name"]) if len(behaviour) else sorted(shade["name"].unique())
    within = dict(zip(behaviour.get("name", []), behaviour.get("within", [])))
    # the offsets' sign (negative = shading), as offset_by_round and the other figures
    values = -shade[["ours", "bazaar"]].to_numpy(dtype=float) if len(shade) else np.array([[-1.0]])
    bottom, top = float(np.nanmin(values)), float(np.nanmax(values))

    def draw(ax, name):
        g = shade[shade["name"] == name]
        ax.plot(g["round"], -g["ours"], color="#1f77b4", lw=1.3)
        ax.plot(g["round"], -g["bazaar"], ls="none", marker="o", ms=2.2, color="#d62728")
        ax.set_title(name + (" (ok)" if within.get(name) else ""), fontsize=8)

    handles = [
        plt.Line2D([], [], color="#1f77b4", label="our pool"),
        plt.Line2D(
            [], [], color="#d62728", ls="none", marker="o", ms=3, label="BAZAAR's published games"
        ),
    ]
    return _panels(
        order,
        draw,
        path,
        handles=handles,
        ylim=(min(bottom, -1) - 2, max(top, 1) + 1),
        ylabel="mean offset (negative = shading)",
        title="Baselines against BAZAAR's logs: quote offset by round ((ok) = within bounds)",
    )


def draw_all(
    board: pd.DataFrame, agents: pd.DataFrame, rounds: pd.DataFrame, figures_dir: Path
) -> list[Path]:
    """Figures 1-7 of the module docstring."""
    d = Path(figures_dir)
    return [
        leaderboard(board, d / "leaderboard.png"),
        csa_strip(agents, board, d / "csa_strip.png"),
        offset_by_trader(agents, board, d / "offset_by_trader.png"),
        offset_per_game(agents, board, d / "offset_per_game.png"),
        offset_by_round(rounds, board, d / "offset_by_round.png"),
        trade_margin(rounds, board, d / "trade_margin.png"),
        trade_frequency(agents, board, d / "trade_frequency.png"),
    ]
