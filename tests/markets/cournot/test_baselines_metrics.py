"""Scripted Cournot firms' defining behaviour, metrics from logs, references, bootstrap, determinism."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from marketarena.config import ParamsError
from marketarena.core import logs
from marketarena.markets.cournot import KIND
from marketarena.markets.cournot.analysis import metrics as cm
from marketarena.markets.cournot.analysis.specialisation import (
    block_bootstrap_test,
    bootstrap_means,
    pooled_block_bootstrap_test,
)
from marketarena.markets.cournot.economics import CournotConfig, best_response, specialisation_cv
from marketarena.metrics import indices
from marketarena.pipeline import Paths, run_metrics, run_reference
from marketarena.simulate import simulate
from tests.markets.cournot.conftest import cournot_params, entry, play

NASH = np.array([[140 / 3, 80 / 3], [80 / 3, 140 / 3]])  # q_i = b (a - 2 c_i + c_j) / 3
MONO = np.array([[60.0, 0.0], [0.0, 60.0]])  # each firm alone on its cheap product: b (a - c) / 2


def quantities(result, agent_id):
    s = result.tables["states"]
    s = s[s["agent_id"] == agent_id].sort_values(["step", "product"])
    return s["quantity"].to_numpy().reshape(-1, 2)


def test_compute_reference_hook_matches_closed_form(tmp_path):
    params = cournot_params([entry("a", "nash"), entry("b", "nash")])
    summary = KIND.analysis.compute_reference(params.markets["cournot"], tmp_path)
    np.testing.assert_allclose(summary["nash"]["quantities"], NASH, atol=1e-6)
    np.testing.assert_allclose(summary["nash"]["prices"], [100 - (220 / 3) / 2] * 2, atol=1e-6)
    np.testing.assert_allclose(summary["nash"]["cv"], [3 / 11] * 2, atol=1e-8)
    np.testing.assert_allclose(summary["monopoly"]["quantities"], MONO, atol=1e-6)
    np.testing.assert_allclose(summary["monopoly"]["prices"], [70, 70], atol=1e-6)
    np.testing.assert_allclose(summary["monopoly"]["firm_profits"], [1800, 1800], atol=1e-4)
    assert summary["products"] == ["A", "B"] and (tmp_path / "reference.md").is_file()


def test_reference_with_binding_capacity_and_unconverged_error(tmp_path):
    # capacity 50 binds at Nash (73.3 wanted): the firm keeps its mix where the marginal profits equal
    params = cournot_params([entry("a", "nash"), entry("b", "nash")], capacity=50)
    q = np.asarray(
        KIND.analysis.compute_reference(params.markets["cournot"], tmp_path)["nash"]["quantities"]
    )
    np.testing.assert_allclose(q.sum(axis=1), [50, 50], atol=1e-6)
    params = cournot_params(
        [entry("a", "nash"), entry("b", "nash")], nash_max_iter=1, nash_tol=1e-12
    )
    with pytest.raises(
        ParamsError,
        match="markets.cournot.nash_max_iter: cournot_nash did not converge.*; raise nash_max_iter",
    ):
        KIND.analysis.compute_reference(params.markets["cournot"], tmp_path)


def test_nash_and_collude_play_their_references(pair):
    result, _, _ = play(pair)
    np.testing.assert_allclose(quantities(result, "F1"), np.tile(NASH[0], (6, 1)), atol=1e-6)
    np.testing.assert_allclose(quantities(result, "F2"), np.tile(MONO[1], (6, 1)), atol=1e-6)


def test_myopic_best_responds_to_last_round_and_converges_to_nash():
    params = cournot_params(
        [entry("my", "myopic"), entry("fix", "fixed", quantities=[30, 10])], rounds=4
    )
    result, _, _ = play(params)
    q = quantities(result, "F1")
    np.testing.assert_allclose(q[0], [50, 50])  # the seed's start: capacity split evenly
    others = np.array([[0, 0], [30, 10]])
    np.testing.assert_allclose(q[1], best_response(0, others, CournotConfig()), atol=1e-6)
    # against a fixed rival the best response is b (a - c - q_j / b) / 2 per product (capacity slack)
    np.testing.assert_allclose(q[1], [2 * (100 - 40 - 15) / 2, 2 * (100 - 50 - 5) / 2], atol=1e-6)
    params = cournot_params([entry("m1", "myopic"), entry("m2", "myopic", inertia=0.3)], rounds=40)
    result, _, _ = play(params)
    np.testing.assert_allclose(quantities(result, "F1")[-1], NASH[0], atol=1e-3)
    np.testing.assert_allclose(quantities(result, "F2")[-1], NASH[1], atol=1e-3)


def test_tit_for_tat_colludes_punishes_a_deviation_then_forgives():
    # rival colludes (0, 60) except in round 2, when it floods product A (30, 60)
    class Deviator:
        agent_id = "F2"

        def reset(self, rng):
            self.t = 0

        async def act(self, obs, decision):
            self.t += 1
            qa = 30 if self.t == 3 else 0
            return {
                "observations_and_thoughts": "",
                "new_content": {"PLANS.txt": "", "INSIGHTS.txt": ""},
                "chosen_quantities": {"Product_A": qa, "Product_B": 60},
            }

    import asyncio

    from marketarena.core.runner import run_episode
    from marketarena.markets.cournot.economics import reference_summary
    from marketarena.simulate import build

    params = cournot_params(
        [entry("tft", "tit_for_tat", punish_rounds=2), entry("x", "nash")], rounds=8
    )
    market, agents, _, _ = build("cournot", params, 0, resources=reference_summary(CournotConfig()))
    agents["F2"] = Deviator()
    result = asyncio.run(run_episode(market, agents, 0))
    q = quantities(result, "F1")
    expected = [MONO[0]] * 3 + [NASH[0]] * 2 + [MONO[0]] * 3
    np.testing.assert_allclose(q, expected, atol=1e-6)


def test_specialisation_cv_is_the_project_cv():
    q = np.array([[[30.0, 10.0], [0.0, 0.0]], [[5.0, 5.0], [0.0, 7.0]]])
    np.testing.assert_allclose(specialisation_cv(q), indices.cv(q, axis=-1))
    np.testing.assert_allclose(specialisation_cv(q), [[0.5, 0.0], [0.0, 1.0]])


def test_vectorised_bootstrap_equals_arch():
    x = np.random.default_rng(0).random(50)
    for block in (1, 7, 50):
        ours = bootstrap_means(x, block, 300, np.random.default_rng(11))
        arch = bootstrap_means(x, block, 300, np.random.default_rng(11), engine="arch")
        np.testing.assert_array_equal(ours, arch)
    assert block_bootstrap_test(x, 0.4, n_resamples=300, seed=3) == block_bootstrap_test(
        x, 0.4, n_resamples=300, seed=3, engine="arch"
    )


def test_pooled_bootstrap_known_answers():
    rng = np.random.default_rng(1)
    far = [0.9 + 0.02 * rng.standard_normal(50) for _ in range(4)]
    res = pooled_block_bootstrap_test(far, 3 / 11, n_resamples=2000)
    assert (
        res["p_value"] == 1 / 2001 and res["ci_lo"] > 0.85
    )  # (1 + 0) / (1 + B), never 0 and res["runs"] == 4 and res["n"] == 200
    at = [np.full(50, 3 / 11)] * 3
    res = pooled_block_bootstrap_test(at, 3 / 11, n_resamples=500)
    assert res["p_value"] == 1.0 and res["ci_lo"] == pytest.approx(3 / 11)
    # the pooled interval is narrower than one run's
    one = block_bootstrap_test(far[0], 3 / 11, n_resamples=2000)
    assert res is not one and (
        pooled_block_bootstrap_test(far, 3 / 11, n_resamples=2000)["ci_hi"]
        - pooled_block_bootstrap_test(far, 3 / 11, n_resamples=2000)["ci_lo"]
        < one["ci_hi"] - one["ci_lo"]
    )


def _pipeline(tmp_path, params):
    paths = Paths(tmp_path)
    run_reference("cournot", params, paths)
    simulate("cournot", params, paths.data, paths.episodes("cournot"), progress=False)
    return paths


def test_metrics_from_logs(tmp_path):
    params = cournot_params(
        [
            entry("nash", "nash"),
            entry("collude", "collude"),
            entry("fix", "fixed", quantities=[80, 40]),
        ],
        runs=3,
        rounds=10,
    )
    paths = _pipeline(tmp_path, params)
    frames = run_metrics("cournot", params, paths)
    agents = frames["agents"]
    assert sorted(agents["lineup"].unique()) == ["collude vs fix", "nash vs collude", "nash vs fix"]
    nc = agents[agents["lineup"] == "nash vs collude"].set_index("name")
    # nash (F1: 46.67, 26.67) vs collude (F2: 0, 60): P_A = 100 - 23.33, P_B = 100 - 43.33
    pa, pb = 100 - NASH[0, 0] / 2, 100 - (NASH[0, 1] + 60) / 2
    assert nc.loc["nash", "profit"] == pytest.approx(
        10 * ((pa - 40) * NASH[0, 0] + (pb - 50) * NASH[0, 1])
    )
    assert nc.loc["collude", "profit"] == pytest.approx(10 * (pb - 40) * 60)
    assert (
        nc.loc["nash", "mean_cv"] == pytest.approx(3 / 11) and nc.loc["nash", "cv_p_value"] == 1.0
    )
    assert nc.loc["collude", "mean_cv"] == pytest.approx(1) and nc.loc[
        "collude", "cv_p_value"
    ] == pytest.approx(1 / (1 + params.markets["cournot"].bootstrap.n_resamples))
    assert nc.loc["collude", "specialised"] and not nc.loc["nash", "specialised"]
    fix = agents[agents["name"] == "fix"]
    assert fix["scaled_rate"].eq(1.0).all() and fix["mean_quantity"].eq(100).all()
    assert agents["invalid_rate"].eq(0).all()
    spec = frames["specialisation"]
    assert set(spec["scope"]) == {"run", "pooled"} and len(spec) == 6 + 3
    pooled = spec[spec["scope"] == "pooled"].set_index("name")
    assert (
        pooled.loc["collude", "p_value"] == nc.loc["collude", "cv_p_value"]
        and pooled.loc["nash", "p_value"] == 1.0
    )
    summary = json.loads((paths.reports / "metrics" / "cournot.json").read_text())
    assert summary["episodes"] == 3 and set(summary["agents"]) == {"nash", "collude", "fix"}
    assert set(cm.AGENT_METRICS) <= set(agents.columns)


def test_same_seed_gives_identical_logs_and_metrics(tmp_path):
    params = cournot_params(
        [entry("m", "myopic"), entry("t", "tit_for_tat"), entry("n", "nash")], runs=3, rounds=8
    )
    a, b = _pipeline(tmp_path / "a", params), _pipeline(tmp_path / "b", params)
    for folder in logs.episode_folders(a.episodes("cournot")):
        for f in sorted(folder.glob("*.parquet")):
            assert f.read_bytes() == (b.episodes("cournot") / folder.name / f.name).read_bytes(), f
    ma, mb = run_metrics("cournot", params, a), run_metrics("cournot", params, b)
    for name in ma:
        pd.testing.assert_frame_equal(ma[name], mb[name])


def test_figures_and_table(tmp_path):
    import matplotlib

    matplotlib.use("Agg")

    params = cournot_params([entry("m", "myopic"), entry("c", "collude")], runs=2, rounds=8)
    paths = _pipeline(tmp_path, params)
    run_metrics("cournot", params, paths)
    out = KIND.analysis.draw_figures(
        paths.metrics("cournot"),
        tmp_path / "fig",
        tmp_path / "tab",
        params.markets["cournot"],
        "cournot",
    )
    assert [p.name for p in out] == [
        "fig2_quantities.png",
        "fig3_cv.png",
        "cournot_specialisation.md",
        "cournot_specialisation.tex",
    ]
    assert all(p.stat().st_size > 0 for p in out)
    md = (tmp_path / "tab" / "cournot_specialisation.md").read_text()
    assert "| pooled | pooled | c | 1.000 | 0.273 |" in md
    assert r"\begin{tabular}" in (tmp_path / "tab" / "cournot_specialisation.tex").read_text()
