"""Figures 3-7 of Market-Bench (seed 000) for the ``supply_chain`` market.

Every function takes the metrics-stage frames (``market``, ``agent_steps``: their schemas in
``metrics.py`` beside this module) and an output path, writes exactly one PNG and returns its path.

Conventions shared by all figures (and stated on each figure):

- Aggregation is per step across episodes: first the mean within an episode (a roster name is unique
  per episode, but if one name ever had several instances they are averaged), then the mean across
  episodes. Bands are Student-t 95% confidence intervals of that mean across episodes
  (:func:`marketarena.plots.style.mean_ci`), clipped to the metric's domain (e.g. [0, 1] for shares,
  so a t-interval from few episodes never suggests a negative fill rate); with more than
  ``BAND_MAX_AGENTS`` lines they are drawn as dodged error bars instead of shaded bands, which would
  merge into haze. No interval is drawn with fewer than two episodes. The paper's
  Figure 6 caption uses mean ± std; we use the 95% CI everywhere for one consistent reading.
- One line per agent *name*, coloured by :func:`agent_palette` over all names in the frame, so an
  agent has the same colour and marker in Figures 4-7. When both LLM and baseline agents are
  present, baselines are dashed.
- NaN values (e.g. fill rate without directed demand, similarities without a slogan, rank mobility at
  step 0) are skipped, never plotted as zero. An empty frame or a panel without data gets a
  "no data" note instead of an exception.
- Figure 7 fits a PCA (numpy SVD) on the four tribe-similarity columns of all agent-step rows with
  complete features; each component's sign is fixed so that its largest-magnitude loading is positive.
  Points are per-name means of the projected rows across episodes (PCA is linear, so this equals the
  projection of the mean features). Arrows show the four tribe loadings (a biplot), and the loadings
  are printed under the figure, so the reader can tell what each axis means. With more than 12 steps
  an evenly spaced subset of steps (always including the first and last) is shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from marketarena.plots.style import (
    agent_markers,
    agent_palette,
    apply_theme,
    integer_steps,
    mean_ci,
    no_data,
    save,
    sorted_names,
)

TRIBES: tuple[str, ...] = ("thrifty", "ethical", "hype", "quality")
TRIBE_COLUMNS: tuple[str, ...] = tuple(f"sim_{t}" for t in TRIBES)
MAX_MAP_PANELS = 12
BAND_MAX_AGENTS = 6
"""Up to this many agents a figure draws shaded 95% bands; beyond, dodged error bars."""


@dataclass(frozen=True)
class Panel:
    column: str
    title: str
    ylabel: str
    bounds: tuple[float | None, float | None] = (None, None)  # domain; intervals are clipped to it

    def clip(
        self, lo: np.ndarray, hi: np.ndarray, mean: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Interval clipped to the domain, but always containing the mean (NaN stays NaN)."""
        a, b = self.bounds
        a = -np.inf if a is None else a
        b = np.inf if b is None else b
        with np.errstate(invalid="ignore"):
            lo = np.where(np.isnan(lo), np.nan, np.fmin(np.clip(lo, a, b), mean))
            hi = np.where(np.isnan(hi), np.nan, np.fmax(np.clip(hi, a, b), mean))
        return lo, hi


MARKET_PANELS: tuple[Panel, ...] = (
    Panel("gini", "Gini (funds)", "Gini coefficient (0–1)", (0.0, 1.0)),
    Panel("theil", "Theil (funds)", "Theil index (nats)", (0.0, None)),
    Panel("cv", "CV (funds)", "coefficient of variation (σ/μ)", (0.0, None)),
    Panel("hhi", "HHI (revenue shares)", "Herfindahl index (0–1)", (0.0, 1.0)),
    Panel("cr4", "CR4 (revenue shares)", "top-4 revenue share (0–1)", (0.0, 1.0)),
    Panel("active_ratio", "Active ratio", "share of agents that sold (0–1)", (0.0, 1.0)),
    Panel("rank_mobility", "Rank mobility", "1 − Spearman ρ of funds ranks", (0.0, 2.0)),
)

ECONOMICS_PANELS: tuple[Panel, ...] = (
    Panel("npm", "Net profit margin (NPM)", "cumulative profit / revenue (ratio)"),
    Panel("profit", "Per-step profit", "profit in step (money units)"),
    Panel("funds", "Funds", "end-of-step funds (money units)"),
)

OPERATIONS_PANELS: tuple[Panel, ...] = (
    Panel("osi", "Order Stability Index (OSI)", "cumulative OSI (0–1)", (0.0, 1.0)),
    Panel("bid_efficiency", "Bid efficiency", "won/bid qty × base value/spend", (0.0, None)),
    Panel("fill_rate", "Fill rate", "units sold / directed demand (0–1)", (0.0, 1.0)),
)

SIMILARITY_PANELS: tuple[Panel, ...] = (
    Panel("sim_thrifty", "Thrifty", "cosine similarity", (-1.0, 1.0)),
    Panel("sim_ethical", "Ethical", "cosine similarity", (-1.0, 1.0)),
    Panel("sim_hype", "Hype", "cosine similarity", (-1.0, 1.0)),
    Panel("sim_quality", "Quality", "cosine similarity", (-1.0, 1.0)),
    Panel("sim_weighted", "Weighted MMS", "tribe-weighted cosine similarity", (-1.0, 1.0)),
)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _n_episodes(df: pd.DataFrame) -> int:
    return int(df["episode_id"].nunique()) if "episode_id" in df.columns and not df.empty else 0


def _aggregation_note(n_episodes: int, intervals: str = "bands") -> str:
    if n_episodes >= 2:
        return f"mean across {n_episodes} episodes; {intervals}: 95% CI of the mean"
    return f"{n_episodes} episode{'s' if n_episodes != 1 else ''}; no interval"


def _empty_figure(path: str | Path, title: str, message: str = "no data") -> Path:
    apply_theme()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.set_title(title)
    no_data(ax, message)
    return save(fig, path)


def _grid(
    n_panels: int, ncols: int, panel_w: float, panel_h: float, extra_h: float = 0.0
) -> tuple[Figure, list[Axes]]:
    """Constrained-layout grid; ``extra_h`` inches are added for a legend below the panels."""
    nrows = math.ceil(n_panels / ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(panel_w * ncols, panel_h * nrows + 0.7 + extra_h),
        squeeze=False,
        layout="constrained",
    )
    return fig, list(axes.ravel())


def _has_values(df: pd.DataFrame, column: str) -> bool:
    if column not in df.columns:
        return False
    vals = pd.to_numeric(df[column], errors="coerce").astype(float)
    return bool(np.isfinite(vals.to_numpy()).any())


def _steps(df: pd.DataFrame) -> list[int]:
    return sorted({int(s) for s in pd.to_numeric(df["step"], errors="coerce").dropna()})


def _per_episode(df: pd.DataFrame, keys: Sequence[str], column: str) -> pd.DataFrame:
    """Mean of ``column`` per ``keys`` (collapses duplicate instances within an episode)."""
    vals = pd.to_numeric(df[column], errors="coerce").astype(float)
    vals = vals.where(np.isfinite(vals.to_numpy()))  # ±inf -> NaN, skipped like NaN
    return vals.groupby([df[k] for k in keys], sort=True).mean().reset_index()


def _agent_styles(df: pd.DataFrame) -> tuple[list[str], dict, dict, dict[str, str]]:
    names = sorted_names(df["name"])
    palette = agent_palette(names)
    markers = agent_markers(names)
    kinds = (
        df.assign(name=df["name"].astype(str)).groupby("name")["kind"].first().astype(str).to_dict()
        if "kind" in df.columns
        else {}
    )
    mixed = len({kinds.get(n, "") for n in names}) > 1
    linestyles = {n: ("--" if mixed and kinds.get(n) == "baseline" else "-") for n in names}
    return names, palette, markers, linestyles


def _legend_handles(names, palette, markers, linestyles) -> list[Line2D]:
    return [
        Line2D([], [], color=palette[n], marker=markers[n], linestyle=linestyles[n], label=n)
        for n in names
    ]


def _place_legend(
    fig: Figure, handles: list[Line2D], spare_ax: Axes | None, title: str, below: bool = False
) -> None:
    """Legend in a free grid cell, else below the panels (wide figures) or to their right."""
    n = len(handles)
    if n == 0:
        return
    common = dict(handles=handles, frameon=False, title=title, handlelength=2.2)
    if spare_ax is not None:
        spare_ax.axis("off")
        spare_ax.legend(
            loc="center", ncol=1 if n <= 12 else 2, fontsize=8 if n <= 24 else 7, **common
        )
    elif below and n > 6:
        fig.legend(loc="outside lower center", ncol=min(5, n), fontsize=8, **common)
    else:
        fig.legend(loc="outside right center", ncol=1 if n <= 24 else 2, fontsize=8, **common)


def _plot_agent_panel(
    ax: Axes,
    df: pd.DataFrame,
    panel: Panel,
    names: list[str],
    palette: dict,
    markers: dict,
    linestyles: dict,
    steps: list[int],
) -> None:
    ax.set_title(panel.title)
    if not _has_values(df, panel.column):
        no_data(ax, "no data")
        return
    per_ep = _per_episode(df, ["episode_id", "step", "name"], panel.column)
    stats = mean_ci(per_ep, ["name", "step"], panel.column)
    stats["name"] = stats["name"].astype(str)
    bands = len(names) <= BAND_MAX_AGENTS
    dodge_width = 0.0 if bands else min(0.4, 0.025 * len(names))
    for i, name in enumerate(names):
        s = stats[stats["name"] == name].sort_values("step")
        s = s[s["mean"].notna()]
        if s.empty:
            continue
        offset = (i / max(len(names) - 1, 1) - 0.5) * dodge_width
        x = s["step"].to_numpy(dtype=float) + offset
        y = s["mean"].to_numpy(dtype=float)
        lo, hi = panel.clip(s["lo"].to_numpy(dtype=float), s["hi"].to_numpy(dtype=float), y)
        ax.plot(
            x,
            y,
            color=palette[name],
            marker=markers[name],
            linestyle=linestyles[name],
            label=name,
            zorder=3,
        )
        if not np.isfinite(lo).any():
            continue
        if bands:
            ax.fill_between(x, lo, hi, color=palette[name], alpha=0.18, linewidth=0, zorder=2)
        else:
            ok = np.isfinite(lo)
            ax.errorbar(
                x[ok],
                y[ok],
                yerr=np.vstack([y[ok] - lo[ok], hi[ok] - y[ok]]),
                fmt="none",
                ecolor=palette[name],
                elinewidth=0.8,
                alpha=0.7,
                capsize=0,
                zorder=2,
            )
    ax.set_xlabel("step")
    ax.set_ylabel(panel.ylabel)
    integer_steps(ax, steps)


def _agent_figure(
    agent_steps: pd.DataFrame,
    path: str | Path,
    panels: Sequence[Panel],
    title: str,
    ncols: int,
    sharey: bool = False,
) -> Path:
    if agent_steps is None or agent_steps.empty:
        return _empty_figure(path, title)
    apply_theme()
    df = agent_steps.copy()
    df["name"] = df["name"].astype(str)
    names, palette, markers, linestyles = _agent_styles(df)
    steps = _steps(df)
    spare = len(panels) % ncols != 0  # a free grid cell takes the legend
    legend_below = not spare and len(names) > 6
    extra_h = 0.35 + 0.2 * math.ceil(len(names) / 5) if legend_below else 0.0
    fig, axes = _grid(len(panels), ncols, 4.2, 3.2, extra_h)
    for ax, panel in zip(axes, panels, strict=False):
        _plot_agent_panel(ax, df, panel, names, palette, markers, linestyles, steps)
    for ax in axes[len(panels) + 1 :]:
        ax.axis("off")
    if sharey:
        used = axes[: len(panels)]
        lims = [ax.get_ylim() for ax in used if ax.has_data()]
        if lims:
            lo, hi = min(a for a, _ in lims), max(b for _, b in lims)
            for ax in used:
                if ax.has_data():
                    ax.set_ylim(lo, hi)
    handles = _legend_handles(names, palette, markers, linestyles)
    mixed = len(set(linestyles.values())) > 1
    legend_title = "agent (dashed: baseline)" if mixed else "agent"
    _place_legend(fig, handles, axes[len(panels)] if spare else None, legend_title, below=True)
    intervals = "bands" if len(names) <= BAND_MAX_AGENTS else "error bars (points dodged)"
    fig.suptitle(f"{title}\n({_aggregation_note(_n_episodes(df), intervals)})", fontsize=12)
    return save(fig, path)


# ----------------------------------------------------------------------------------------------
# Figure 3
# ----------------------------------------------------------------------------------------------


def figure3_market_indices(market: pd.DataFrame, path: str | Path) -> Path:
    """Market indices over steps, one small multiple per index (Market-Bench Figure 3)."""
    title = "Figure 3 — Market-level indices over time"
    if market is None or market.empty:
        return _empty_figure(path, title)
    apply_theme()
    df = market.copy()
    steps = _steps(df)
    n_ep = _n_episodes(df)
    fig, axes = _grid(len(MARKET_PANELS) + 1, 4, 3.3, 2.8)
    colour = plt.get_cmap("tab10")(0)
    for ax, panel in zip(axes, MARKET_PANELS, strict=False):
        ax.set_title(panel.title)
        if not _has_values(df, panel.column):
            no_data(ax)
            continue
        per_ep = _per_episode(df, ["episode_id", "step"], panel.column)
        if n_ep > 1:
            for _, e in per_ep.groupby("episode_id"):
                e = e[e[panel.column].notna()].sort_values("step")
                ax.plot(e["step"], e[panel.column], color="0.6", linewidth=0.6, alpha=0.6, zorder=1)
        stats = mean_ci(per_ep, ["step"], panel.column).sort_values("step")
        stats = stats[stats["mean"].notna()]
        x = stats["step"].to_numpy(dtype=float)
        ax.plot(x, stats["mean"], color=colour, marker="o", linewidth=2.0, zorder=3)
        lo, hi = panel.clip(
            stats["lo"].to_numpy(dtype=float),
            stats["hi"].to_numpy(dtype=float),
            stats["mean"].to_numpy(dtype=float),
        )
        if np.isfinite(lo).any():
            ax.fill_between(x, lo, hi, color=colour, alpha=0.25, linewidth=0, zorder=2)
        ax.set_xlabel("step")
        ax.set_ylabel(panel.ylabel)
        integer_steps(ax, steps)
    key_ax = axes[len(MARKET_PANELS)]
    key_ax.axis("off")
    key = [Line2D([], [], color=colour, marker="o", linewidth=2.0, label="mean across episodes")]
    if n_ep > 1:
        key.append(
            plt.Rectangle((0, 0), 1, 1, color=colour, alpha=0.25, label="95% CI of the mean")
        )
        key.append(Line2D([], [], color="0.6", linewidth=0.6, label="single episode"))
    key_ax.legend(handles=key, loc="center", frameon=False)
    for ax in axes[len(MARKET_PANELS) + 1 :]:
        ax.axis("off")
    fig.suptitle(f"{title}\n({_aggregation_note(n_ep)})", fontsize=12)
    return save(fig, path)


# ----------------------------------------------------------------------------------------------
# Figures 4-6
# ----------------------------------------------------------------------------------------------


def figure4_economics(agent_steps: pd.DataFrame, path: str | Path) -> Path:
    """NPM, per-step profit and funds over steps, one line per agent name (Figure 4)."""
    return _agent_figure(
        agent_steps, path, ECONOMICS_PANELS, "Figure 4 — Economic outcomes over time", ncols=3
    )


def figure5_operations(agent_steps: pd.DataFrame, path: str | Path) -> Path:
    """OSI, bid efficiency and fill rate over steps, one line per agent name (Figure 5)."""
    return _agent_figure(
        agent_steps, path, OPERATIONS_PANELS, "Figure 5 — Operational dynamics over time", ncols=3
    )


def figure6_slogan_similarity(agent_steps: pd.DataFrame, path: str | Path) -> Path:
    """Slogan–persona similarity per tribe and weighted MMS, one line per agent (Figure 6)."""
    return _agent_figure(
        agent_steps,
        path,
        SIMILARITY_PANELS,
        "Figure 6 — Slogan–persona similarity over time",
        ncols=3,
        sharey=True,  # all panels are cosine similarities: a common scale makes tribes comparable
    )


# ----------------------------------------------------------------------------------------------
# Figure 7
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SloganPCA:
    """A 2-D PCA of the tribe-similarity features."""

    mean: np.ndarray  # (4,)
    components: np.ndarray  # (2, 4): rows are PC1, PC2 loadings
    explained: np.ndarray  # (2,): share of total variance

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=float) - self.mean) @ self.components.T


def fit_slogan_pca(features: np.ndarray) -> SloganPCA:
    """PCA via SVD of the centred ``(n, 4)`` matrix; sign fixed so the largest |loading| is > 0.

    Degenerate inputs (rank < 2) still give two orthonormal axes with zero explained variance for
    the missing ones. Needs at least one row.
    """
    x = np.asarray(features, dtype=float)
    mean = x.mean(axis=0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=True)
    comps = vt[:2].copy()
    for k in range(comps.shape[0]):
        j = int(np.argmax(np.abs(comps[k])))
        if comps[k, j] < 0:
            comps[k] *= -1
    var = np.zeros(2)
    var[: min(2, len(s))] = (s**2)[:2]
    total = float((s**2).sum())
    explained = var / total if total > 0 else np.zeros(2)
    return SloganPCA(mean=mean, components=comps, explained=explained)


def _map_steps(steps: list[int]) -> list[int]:
    if len(steps) <= MAX_MAP_PANELS:
        return steps
    idx = np.unique(np.round(np.linspace(0, len(steps) - 1, MAX_MAP_PANELS)).astype(int))
    return [steps[i] for i in idx]


def figure7_slogan_map(agent_steps: pd.DataFrame, path: str | Path) -> Path:
    """PCA map of tribe-similarity features, one panel per step, one point per agent (Figure 7)."""
    title = "Figure 7 — Slogan positions in tribe-similarity space (PCA)"
    if (
        agent_steps is None
        or agent_steps.empty
        or not set(TRIBE_COLUMNS) <= set(agent_steps.columns)
    ):
        return _empty_figure(path, title)
    df = agent_steps.copy()
    df["name"] = df["name"].astype(str)
    feats = df[list(TRIBE_COLUMNS)].apply(pd.to_numeric, errors="coerce").astype(float)
    complete = feats.notna().all(axis=1).to_numpy()
    if complete.sum() < 2:
        return _empty_figure(path, title, "no data (fewer than two slogans with similarities)")
    apply_theme()
    pca = fit_slogan_pca(feats.to_numpy()[complete])
    rows = df.loc[complete, ["episode_id", "step", "name"]].reset_index(drop=True)
    xy = pca.transform(feats.to_numpy()[complete])
    rows["pc1"], rows["pc2"] = xy[:, 0], xy[:, 1]
    per_ep = (
        rows.groupby(["episode_id", "step", "name"], sort=True)[["pc1", "pc2"]].mean().reset_index()
    )
    pts = per_ep.groupby(["step", "name"], sort=True)[["pc1", "pc2"]].mean().reset_index()

    names, palette, markers, _ = _agent_styles(df)
    all_steps = _steps(df)
    shown = _map_steps(all_steps)
    ncols = min(3, max(1, len(shown)))
    fig, axes = _grid(len(shown), ncols, 3.6, 3.4)

    # shared limits from all plotted points, with room for the loading arrows
    span_pts = np.abs(pts[["pc1", "pc2"]].to_numpy()).max() if not pts.empty else 0.0
    arrow_len = span_pts * 0.85 if span_pts > 0 else 1.0
    loadings = pca.components.T  # (4, 2)
    scale = arrow_len / max(float(np.linalg.norm(loadings, axis=1).max()), 1e-12)
    lim = max(span_pts, arrow_len * 1.25) * 1.1 or 1.0

    tribe_labels = [t.capitalize() for t in TRIBES]
    for ax, step in zip(axes, shown, strict=False):
        ax.set_title(f"step {step}")
        ax.axhline(0, color="0.8", linewidth=0.6, zorder=0)
        ax.axvline(0, color="0.8", linewidth=0.6, zorder=0)
        for (lx, ly), lab in zip(loadings, tribe_labels, strict=True):
            ax.annotate(
                "",
                xy=(lx * scale, ly * scale),
                xytext=(0, 0),
                arrowprops=dict(arrowstyle="-|>", color="0.55", lw=0.8, shrinkA=0, shrinkB=0),
                zorder=1,
            )
            ax.text(
                lx * scale * 1.15,
                ly * scale * 1.15,
                lab,
                color="0.35",
                fontsize=7.5,
                style="italic",
                ha="center",
                va="center",
                zorder=1,
            )
        s = pts[pts["step"] == step]
        if s.empty:
            no_data(ax, "no slogans")
            ax.set_xlim(-lim, lim)
            ax.set_ylim(-lim, lim)
            continue
        for _, r in s.iterrows():
            ax.scatter(
                r["pc1"],
                r["pc2"],
                color=palette[r["name"]],
                marker=markers[r["name"]],
                s=36,
                edgecolor="white",
                linewidth=0.5,
                zorder=3,
            )
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal", adjustable="box")
    for i, ax in enumerate(axes[: len(shown)]):
        if i % ncols == 0:  # left column
            ax.set_ylabel(f"PC2 ({pca.explained[1]:.0%} of variance)")
        else:
            ax.tick_params(labelleft=False)
        if i + ncols >= len(shown):  # bottom-most panel of its column
            ax.set_xlabel(f"PC1 ({pca.explained[0]:.0%} of variance)")
        else:
            ax.tick_params(labelbottom=False)
    for ax in axes[len(shown) :]:
        ax.axis("off")

    handles = [
        Line2D([], [], color=palette[n], marker=markers[n], linestyle="", markersize=6, label=n)
        for n in names
    ]
    _place_legend(fig, handles, None, "agent")
    load_txt = "   ".join(
        f"PC{k + 1} = "
        + " ".join(f"{pca.components[k, j]:+.2f}·{tribe_labels[j]}" for j in range(len(TRIBES)))
        for k in range(2)
    )
    n_ep = _n_episodes(df)
    subset = "" if shown == all_steps else f"; {len(shown)} of {len(all_steps)} steps shown"
    fig.suptitle(
        f"{title}\n(points: per-agent mean across {n_ep} episode{'s' if n_ep != 1 else ''}"
        f"{subset}; arrows: direction of higher similarity to each tribe, from the mean slogan)",
        fontsize=12,
    )
    fig.text(0.5, -0.01, f"loadings: {load_txt}", ha="center", va="top", fontsize=8, color="0.25")
    return save(fig, path)


__all__ = [
    "MARKET_PANELS",
    "TRIBE_COLUMNS",
    "SloganPCA",
    "figure3_market_indices",
    "figure4_economics",
    "figure5_operations",
    "figure6_slogan_similarity",
    "figure7_slogan_map",
    "fit_slogan_pca",
]
