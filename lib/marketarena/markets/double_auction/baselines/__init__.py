"""Scripted traders for double_auction: BAZAAR's 29 baselines as its published games show them.

BAZAAR (seed 002) published no code, but its repository (``lechmazur/bazaar``) holds 1,954 game
logs with every quote of 7,223 baseline seats under the 29 names of its table. Each strategy here
is re-specified from those quotes: the rule every seat of that name visibly follows, checked by
handing the strategy the exact history each logged seat saw (``benchmarks/
bench_da_teacher_forced.py``) and, in a pool of our own, against the logged offsets and fill rates
copied into ``../analysis/calibration_targets.csv`` (the pipeline's calibration table and
figure). Where the logs and a textbook source disagree, the strategy follows the logs; the
textbook variants kept are separately named and outside the default pool (``linear_eq_cs``,
``sniper_kaplan``, ``zip``).

Each class docstring says which rule the logs show and how exactly it reproduces them: "exact"
(every logged quote), a share of quotes exact and the mean distance, or "fitted" where no rule
reproduces the quotes and the strategy is a stated shape with parameters set to the logged
offsets and fills. Families (one module each):

| module | strategies |
|---|---|
| ``simple`` | truthful, shade, random, linear_eq, linear_eq_cs, collusive |
| ``belief`` | gd, fictitious_play, gdx, bayesian (enhanced_bayesian), risk_aware |
| ``market`` | momentum, contrarian, mean_reversion, regression, regime_switcher |
| ``aggressive`` | aa, aa_cliff, adaptive, zip |
| ``learning`` | q_learning, roth_erev, bandit |
| ``special`` | sniper, sniper_kaplan, tit_for_tat, penny_jumper, exploiter, signal_jammer, zic, zic_plus |

Every strategy is written once in buyer terms and mirrored for sellers (``base``), never quotes
through its value, and has a pydantic params model (roster entry ``params``; unknown keys are
errors).
"""

from __future__ import annotations

from marketarena.core.scripted import StrategyTable
from marketarena.markets.double_auction.baselines.aggressive import AA, ZIP, AACliff, Adaptive
from marketarena.markets.double_auction.baselines.base import Baseline, View, quote_action
from marketarena.markets.double_auction.baselines.belief import (
    GD,
    GDX,
    Bayesian,
    FictitiousPlay,
    RiskAware,
    midpoint_best_response,
)
from marketarena.markets.double_auction.baselines.learning import Bandit, QLearning, RothErev
from marketarena.markets.double_auction.baselines.market import (
    Contrarian,
    MeanReversion,
    Momentum,
    RegimeSwitcher,
    Regression,
)
from marketarena.markets.double_auction.baselines.simple import (
    Collusive,
    LinearEq,
    LinearEqCS,
    RandomTrader,
    Shade,
    Truthful,
)
from marketarena.markets.double_auction.baselines.special import (
    ZIC,
    Exploiter,
    PennyJumper,
    SignalJammer,
    Sniper,
    SniperKaplan,
    TitForTat,
    ZICPlus,
)

STRATEGIES = StrategyTable(
    "double_auction",
    {
        cls.strategy: cls
        for cls in (
            Truthful,
            Shade,
            RandomTrader,
            LinearEq,
            LinearEqCS,
            Collusive,
            GD,
            FictitiousPlay,
            GDX,
            Bayesian,
            RiskAware,
            Momentum,
            Contrarian,
            MeanReversion,
            Regression,
            RegimeSwitcher,
            AA,
            AACliff,
            Adaptive,
            ZIP,
            QLearning,
            RothErev,
            Bandit,
            Sniper,
            SniperKaplan,
            TitForTat,
            PennyJumper,
            Exploiter,
            SignalJammer,
            ZIC,
            ZICPlus,
        )
    },
)

#: Textbook variants kept beside the logged rules, outside the default pool.
TEXTBOOK = ("linear_eq_cs", "sniper_kaplan", "zip")

__all__ = ["STRATEGIES", "TEXTBOOK", "Baseline", "View", "midpoint_best_response", "quote_action"]
