"""BAZAAR's 29 baselines by their names in its logs, and as roster entries of ours.

Data, kept at the top of the folder and light (``core.params`` alone) because two parts read it:
the params of an instance imported from BAZAAR's logs (``params.SOURCE_DEFAULTS``: its roster,
the pool its CSα reference plays against) and the importer (``sources/reader.py``: a logged
baseline's player name and strategy).
"""

from __future__ import annotations

from marketarena.core.params import RosterEntry

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

#: the params of our namesakes that BAZAAR's names carry (shading by 5 and by 10)
BASELINE_PARAMS: dict[str, dict[str, int]] = {"shade_5": {"delta": 5}, "shade_10": {"delta": 10}}


def bazaar_pool() -> list[RosterEntry]:
    """BAZAAR's 29 baselines as roster entries of ours (the default pool of params.yaml): the
    roster of an instance imported from BAZAAR's logs, what its truthful CSα reference plays
    against (the pool BAZAAR's games were played against)."""
    return [
        RosterEntry(
            name=name, kind="baseline", strategy=strategy, params=BASELINE_PARAMS.get(name, {})
        )
        for name, strategy in BASELINE_NAMES.values()
    ]
