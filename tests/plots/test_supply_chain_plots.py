"""Supply-chain figures and the shared style: files written, valid PNGs, robust to NaN / empty input."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketarena.markets.supply_chain.analysis import plots as sc
from marketarena.plots import style

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAMES = [("alpha_one", "llm"), ("beta", "llm"), ("cost_plus_20", "baseline")]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def _assert_png(path: Path, min_bytes: int = 10_000) -> None:
    assert path.exists()
    w, h = _png_size(path)
    assert w > 300 and h > 200
    assert path.stat().st_size > min_bytes


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """3 agents x 2 episodes x 3 steps, with NaNs where the schema allows them."""
    rng = np.random.default_rng(7)
    steps, market = [], []
    for e in ("e1", "e2"):
        funds = np.full(3, 1000.0)
        for t in range(3):
            profit = rng.normal(50, 20, 3)
            funds = funds + profit
            for i, (name, kind) in enumerate(NAMES):
                sims = rng.uniform(0.2, 0.6, 4)
                steps.append(
                    dict(
                        episode_id=e,
                        step=t,
                        agent_id=f"a{i}",
                        name=name,
                        strategy=name,
                        kind=kind,
                        npm=rng.uniform(0, 0.2),
                        profit=profit[i],
                        funds=funds[i],
                        osi=rng.uniform(0.5, 1),
                        bid_efficiency=rng.uniform(0, 1),
                        fill_rate=np.nan if (i == 2 and t == 1) else rng.uniform(0, 1),
                        sim_thrifty=sims[0],
                        sim_ethical=sims[1],
                        sim_hype=sims[2],
                        sim_quality=sims[3],
                        sim_weighted=float(sims @ [0.4, 0.3, 0.2, 0.1]),
                    )
                )
            market.append(
                dict(
                    episode_id=e,
                    step=t,
                    gini=rng.uniform(0, 0.3),
                    theil=rng.uniform(0, 0.1),
                    cv=rng.uniform(0, 0.5),
                    hhi=rng.uniform(0.3, 0.4),
                    cr4=1.0,
                    active_ratio=rng.uniform(0.3, 1),
                    rank_mobility=np.nan if t == 0 else rng.uniform(0, 1),
                )
            )
    df = pd.DataFrame(steps)
    # one agent never posts a slogan in e2, step 2
    mask = (df["episode_id"] == "e2") & (df["step"] == 2) & (df["name"] == "beta")
    df.loc[mask, [*sc.TRIBE_COLUMNS, "sim_weighted"]] = np.nan
    return df, pd.DataFrame(market)


def test_all_figures_written(frames, tmp_path):
    agent_steps, market = frames
    out = tmp_path / "nested" / "dir"
    paths = [
        sc.figure3_market_indices(market, out / "fig3.png"),
        sc.figure4_economics(agent_steps, out / "fig4.png"),
        sc.figure5_operations(agent_steps, out / "fig5.png"),
        sc.figure6_slogan_similarity(agent_steps, out / "fig6.png"),
        sc.figure7_slogan_map(agent_steps, out / "fig7.png"),
    ]
    for p in paths:
        assert isinstance(p, Path) and p.parent == out
        _assert_png(p, min_bytes=20_000)


def test_empty_frames_still_write_a_figure(tmp_path):
    empty = pd.DataFrame()
    for fn, name in [
        (sc.figure3_market_indices, "f3"),
        (sc.figure4_economics, "f4"),
        (sc.figure5_operations, "f5"),
        (sc.figure6_slogan_similarity, "f6"),
        (sc.figure7_slogan_map, "f7"),
    ]:
        _assert_png(fn(empty, tmp_path / f"{name}.png"), min_bytes=3_000)


def test_all_nan_columns_and_single_episode(frames, tmp_path):
    agent_steps, market = frames
    one = agent_steps[agent_steps["episode_id"] == "e1"].copy()
    one["fill_rate"] = np.nan  # a whole panel without data
    one[list(sc.TRIBE_COLUMNS)] = np.nan  # no slogans at all -> figure 7 "no data"
    _assert_png(sc.figure5_operations(one, tmp_path / "f5.png"))
    _assert_png(sc.figure6_slogan_similarity(one, tmp_path / "f6.png"))
    _assert_png(sc.figure7_slogan_map(one, tmp_path / "f7.png"), min_bytes=3_000)
    m = market[market["episode_id"] == "e1"].copy()
    m["rank_mobility"] = np.nan
    _assert_png(sc.figure3_market_indices(m, tmp_path / "f3.png"))


def test_figure7_constant_features(frames, tmp_path):
    agent_steps, _ = frames
    flat = agent_steps.copy()
    flat[list(sc.TRIBE_COLUMNS)] = 0.4
    _assert_png(sc.figure7_slogan_map(flat, tmp_path / "f7.png"))


def test_pca_sign_convention_and_determinism():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 4)) * [3.0, 1.0, 0.5, 0.1]
    a = sc.fit_slogan_pca(x)
    b = sc.fit_slogan_pca(x[::-1])  # row order does not matter
    np.testing.assert_allclose(a.components, b.components, atol=1e-12)
    # negating the data flips every SVD sign; the convention restores the same loadings
    c = sc.fit_slogan_pca(-x)
    np.testing.assert_allclose(a.components, c.components, atol=1e-12)
    for comp in a.components:
        assert comp[np.argmax(np.abs(comp))] > 0
    assert a.components.shape == (2, 4)
    np.testing.assert_allclose(a.components @ a.components.T, np.eye(2), atol=1e-12)
    assert 0 < a.explained[1] <= a.explained[0] <= 1
    np.testing.assert_allclose(a.transform(x).mean(axis=0), 0, atol=1e-12)


def test_agent_palette_is_stable_and_distinct():
    p1 = style.agent_palette(["b", "a", "c", "a"])
    p2 = style.agent_palette(["c", "b", "a"])
    assert p1 == p2 and list(p1) == ["a", "b", "c"]
    assert len(set(p1.values())) == 3
    many = style.agent_palette([f"agent_{i:02d}" for i in range(20)])
    assert len(set(many.values())) == 20
    beyond = style.agent_palette([f"agent_{i:02d}" for i in range(27)])
    assert len(set(beyond.values())) == 27
    markers = style.agent_markers(["b", "a"])
    assert markers == {"a": "o", "b": "s"}


def test_mean_ci_matches_hand_computation():
    df = pd.DataFrame({"g": ["x", "x", "x", "y"], "v": [1.0, 2.0, 3.0, 5.0]})
    out = style.mean_ci(df, ["g"], "v").set_index("g")
    assert out.loc["x", "mean"] == pytest.approx(2.0)
    half = 4.302652729911275 * 1.0 / np.sqrt(3)  # t(0.975, df=2) * sd / sqrt(n)
    assert out.loc["x", "lo"] == pytest.approx(2.0 - half)
    assert out.loc["x", "hi"] == pytest.approx(2.0 + half)
    assert out.loc["y", "mean"] == 5.0 and np.isnan(out.loc["y", "lo"]) and out.loc["y", "n"] == 1


def test_save_creates_folders_and_closes(tmp_path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    n_before = len(plt.get_fignums())
    p = style.save(fig, tmp_path / "a" / "b" / "x.png")
    assert p.exists() and p.read_bytes()[:8] == PNG_MAGIC
    assert len(plt.get_fignums()) == n_before - 1


def test_many_agents_error_bars_and_out_of_domain_values(tmp_path):
    """> BAND_MAX_AGENTS names switches to dodged error bars; inf and out-of-domain means don't crash."""
    rng = np.random.default_rng(3)
    n = sc.BAND_MAX_AGENTS + 2
    rows = []
    for e in ("e1", "e2", "e3"):
        for t in range(2):
            for i in range(n):
                rows.append(
                    dict(
                        episode_id=e,
                        step=t,
                        agent_id=f"a{i}",
                        name=f"agent_{i}",
                        strategy="s",
                        kind="llm" if i % 2 else "baseline",
                        npm=rng.normal(),
                        profit=rng.normal(),
                        funds=rng.normal(),
                        osi=1.2 if i == 0 else rng.uniform(),
                        bid_efficiency=np.inf if i == 1 else rng.uniform(),
                        fill_rate=rng.uniform(0, 0.02),
                        **{c: rng.uniform(0, 0.5) for c in sc.TRIBE_COLUMNS},
                        sim_weighted=rng.uniform(),
                    )
                )
    df = pd.DataFrame(rows)
    _assert_png(sc.figure5_operations(df, tmp_path / "f5.png"))
    _assert_png(sc.figure4_economics(df, tmp_path / "f4.png"))


def test_interval_clipping_keeps_mean_inside():
    panel = sc.Panel("x", "x", "x", (0.0, 1.0))
    lo, hi = panel.clip(
        np.array([-0.2, 0.9, np.nan]), np.array([0.4, 1.5, np.nan]), np.array([0.1, 1.2, 0.5])
    )
    np.testing.assert_allclose(lo[:2], [0.0, 0.9])
    np.testing.assert_allclose(hi[:2], [0.4, 1.2])
    assert np.isnan(lo[2]) and np.isnan(hi[2])
