"""plots.style.mean_ci: the Student-t default and the bootstrap over episodes, clipped to what the
quantity can be; dodge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketarena.plots.style import dodge, mean_ci


def shares():
    return pd.DataFrame({"cell": ["a", "a", "b", "b", "b"], "share": [0.0, 1.0, 0.9, 1.0, 1.0]})


def test_two_seeds_of_a_share_give_a_t_interval_outside_0_1_unless_bounded():
    t = mean_ci(shares(), ["cell"], "share").set_index("cell")
    assert t.loc["a", "lo"] < -5 and t.loc["a", "hi"] > 5  # t(1) = 12.7 with two seeds
    bounded = mean_ci(shares(), ["cell"], "share", bounds=(0, 1)).set_index("cell")
    assert bounded.loc["a", "lo"] == 0 and bounded.loc["a", "hi"] == 1


def test_the_bootstrap_interval_stays_inside_the_observed_values():
    boot = mean_ci(shares(), ["cell"], "share", method="bootstrap", n_boot=400).set_index("cell")
    assert 0 <= boot.loc["a", "lo"] <= 0.5 <= boot.loc["a", "hi"] <= 1
    assert 0.9 <= boot.loc["b", "lo"] <= boot.loc["b", "mean"] <= boot.loc["b", "hi"] <= 1
    assert boot.loc["b", "mean"] == pytest.approx(2.9 / 3) and boot.loc["a", "n"] == 2
    one = mean_ci(shares().iloc[[0]], ["cell"], "share", method="bootstrap")
    assert one["lo"].isna().all()  # no interval from one episode
    with pytest.raises(ValueError, match="method"):
        mean_ci(shares(), ["cell"], "share", method="normal")


def test_dodge_spreads_series_symmetrically():
    assert dodge(0, 1, 0.4) == 0.0
    assert [dodge(i, 3, 0.4) for i in range(3)] == pytest.approx([-0.2, 0.0, 0.2])


def test_an_interval_that_leaves_out_its_estimate_is_drawn_up_to_the_estimate():
    """A percentile bootstrap interval of five auctions' TrueSkill mu can lie wholly above mu
    (the ablation's figure 2 at quick scale): the bar stops at the estimate on that side, and
    matplotlib draws it instead of refusing a negative extent."""
    import matplotlib.pyplot as plt

    from marketarena.plots.style import error_extents

    below, above = error_extents([1.0, 5.0, 2.0], [1.5, 4.0, np.nan], [3.0, 4.5, 3.0])
    assert below.tolist()[:2] == [0.0, 1.0] and np.isnan(below[2])
    assert above.tolist() == [2.0, 0.0, 1.0]
    fig, ax = plt.subplots()
    ax.errorbar(
        [0, 1, 2],
        [1.0, 5.0, 2.0],
        yerr=error_extents([1.0, 5.0, 2.0], [1.5, 4.0, 1.0], [3.0, 4.5, 3.0]),
    )
    plt.close(fig)
