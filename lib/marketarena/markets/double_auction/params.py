"""params.yaml ``markets.double_auction``: the BAZAAR setting (seed 002, DESIGN.md 7.2).

One *game* (= one episode) seats ``n_buyers`` buyers and ``n_sellers`` sellers for ``rounds`` rounds
of a call market (defaults 4 + 4 seats, 30 rounds, integer quotes 0..100). Private values are drawn
per game from one distribution of ``distributions``; game ``r`` plays ``distributions[r mod D]``.

Tournament: a *pool* and its *entrants*, as BAZAAR ran LLM games beside a large baseline pool.

- ``pool`` names the roster entries of the pool (default: every baseline entry). Pool game ``r``
  draws ``n_buyers + n_sellers`` distinct traders from the pool (uniformly, without replacement: a
  trader holds at most one seat per game); the first ``n_buyers`` drawn are the buyers. The draw
  uses ``SeedSequence([seed, r, 7])``, so game ``r``'s lineup never depends on other games.
- Every other roster entry is an *entrant* (an LLM by default): it plays ``entrant_games`` games of
  its own, each with the entrant in one seat (drawn) and the other seats drawn from the pool without
  replacement, from ``SeedSequence([seed, 8, key(name), k])`` for its game ``k`` (``key`` = the
  first 8 bytes of the name's SHA-256; the game's seed from ``SeedSequence([seed, 9, key, k])``). Entrants never meet each other, and an entrant's games
  depend on its own entry and the pool only: adding an entrant plays its games and nothing else,
  removing one drops its games; changing the pool changes every game.

Size: write either ``runs`` (pool games) or ``games_per_distribution`` (converted to
``runs = games_per_distribution × len(distributions)`` on load). Only ``runs`` is stored, and the
episode fingerprint leaves ``runs`` and ``entrant_games`` out, so raising either plays new games and
keeps the old ones. BAZAAR's scale (about 90,000 games) is a params change.

Post-processing keys (``csa_clip``, ``reference``, the ``rating_*`` keys) are read after the games
are played: changing them never replays a game.

An instance imported from BAZAAR's logs (``source: {format: bazaar, ...}``) takes
:func:`SOURCE_DEFAULTS` before its own keys: BAZAAR's 29 baselines as its roster
(``bazaar_baselines.py``).

**A joint instance** (issue 53) is an imported one whose roster names LLM entries: BAZAAR's
games are imported and each LLM entry is an entrant that plays ``entrant_games`` games in the
instance's setting against the pool, rated on one board with BAZAAR's players. A roster of LLM
entries only gets BAZAAR's 29 baselines put before them as the pool (:func:`joint_roster`); an
LLM entry without a ``harness`` gets ``bazaar`` (BAZAAR's own templates, ``bazaar_prompts.py``)
with ``params.prompts`` = ``source.prompts`` (default: the ``prompts`` folder beside the logs).
Only the entrants' games are played: the published games stand where the pool games would.
"""

from __future__ import annotations

import os
from typing import ClassVar, Literal

from pydantic import Field, StrictInt, model_validator

from marketarena.core.params import MAX_RUNS, MarketParams, RosterEntry, Strict, size
from marketarena.core.params import joint_roster as core_joint_roster

MAX_QUOTE = 100

Distribution = Literal["uniform", "correlated", "semi_bimodal", "heavy_tailed"]
DISTRIBUTIONS: tuple[str, ...] = ("uniform", "correlated", "semi_bimodal", "heavy_tailed")


class ValueParams(Strict):
    """Shape of the four private-value distributions; continuous draws are rounded to the nearest
    integer (half to even) and clipped: buyers to [1, 100], sellers to [0, 99].

    ``scheme: bazaar`` (default) draws ``correlated`` and ``heavy_tailed`` values as BAZAAR's 1,954
    published games show them (``analysis/calibration_targets.csv``, ``values`` rows): no common
    centre in ``correlated`` (within-game SD 27.5, game means SD 10.6, as uniform), and one-sided
    tails (a buyer's value piles at 100, a seller's cost at 0, never the reverse). ``scheme:
    design`` draws them as DESIGN.md 7.2 reads the seed (a common centre per game; tails clipped
    on both sides). ``uniform`` and ``semi_bimodal`` are the same in both (BAZAAR's logs agree)."""

    scheme: Literal["bazaar", "design"] = Field(
        default="bazaar", description="bazaar: the draws of BAZAAR's logs; design: DESIGN.md 7.2's"
    )
    correlated_jitter: float = Field(
        default=3.0,
        ge=0,
        description="bazaar correlated: each value uniform on its range plus "
        "N(0, jitter), independent across seats",
    )
    correlated_centre: tuple[float, float] = Field(
        default=(20.0, 80.0),
        description="design correlated: common centre ~ U(lo, hi), one per game",
    )
    correlated_noise_sd: float = Field(
        default=25.0,
        ge=0,
        description="design correlated: per-seat noise N(0, sd) around the centre",
    )
    bimodal_low: tuple[int, int] = Field(
        default=(0, 20), description="low band, integers inclusive"
    )
    bimodal_high: tuple[int, int] = Field(default=(80, 100), description="high band")
    heavy_centre: float = 50.0
    heavy_scale: float = Field(
        default=16.0,
        gt=0,
        description="centre + scale · t(df); 16 fits "
        "BAZAAR's quartiles and surplus (DESIGN.md's reading: 15)",
    )
    heavy_df: float = Field(default=3.0, gt=0, description="Student-t degrees of freedom")

    @model_validator(mode="after")
    def _ranges(self):
        for key in ("correlated_centre", "bimodal_low", "bimodal_high"):
            lo, hi = getattr(self, key)
            if lo > hi:
                raise ValueError(f"{key}: the range [{lo}, {hi}] is reversed")
        return self


class ReferenceParams(Strict):
    """The table of truthful play against the pool behind CSα (the `reference` stage)."""

    games_per_distribution: int = Field(
        default=2000,
        ge=10,
        le=MAX_RUNS,
        description="games with one truthful seat against the pool",
    )
    seed: int = Field(default=0, ge=0)
    bucket_width: int = Field(default=5, ge=1, description="buckets centred on multiples of width")
    min_count: int = Field(
        default=50, ge=2, description="buckets with fewer seats borrow neighbours"
    )
    sd_floor: float = Field(default=1.0, gt=0, description="σ_ref used is max(sd, sd_floor)")


class DoubleAuctionParams(MarketParams):
    runs: StrictInt = Field(
        default=400, ge=1, le=MAX_RUNS, description="pool games (see games_per_distribution)"
    )
    pool: list[str] | None = Field(
        default=None,
        description="roster names of the pool (default: "
        "every baseline); the other entries are entrants",
    )
    entrant_games: StrictInt = Field(
        default=100, ge=1, le=MAX_RUNS, description="games per entrant, against the pool"
    )
    rounds: int = size(30, le=10_000)
    n_buyers: int = size(4, le=100)
    n_sellers: int = size(4, le=100)
    distributions: list[Distribution] = Field(
        default_factory=lambda: list(DISTRIBUTIONS), min_length=1
    )
    values: ValueParams = Field(default_factory=ValueParams)
    prompt_history_rounds: int = size(
        30, ge=0, le=10_000, description="past rounds printed in an LLM prompt"
    )
    reference: ReferenceParams = Field(default_factory=ReferenceParams)

    #: quotes and values are integers 0..100, as in BAZAAR; fixed (the value draws, the answer
    #: schema and the CSα buckets all assume it), so not a param
    max_quote: ClassVar[int] = MAX_QUOTE
    csa_clip: float = Field(default=5.0, gt=0, description="CSα = clip((S - μ)/σ, -clip, clip)")
    csa_basis: Literal["auto", "ours"] = Field(
        default="auto",
        description="an imported instance's CSα: auto rates a game that logged every seat's "
        "CSα on it and every other on ours (a joint instance: every game on ours, its new games "
        "logged none); ours: every game on our truthful reference",
    )
    rating_passes: int = Field(default=200, ge=1, description="shuffled TrueSkill passes")
    rating_tau: float | None = Field(
        default=0.001,
        ge=0,
        description="TrueSkill τ of this market (null: ratings.trueskill.tau); "
        "near 0 lets σ shrink with the games played, as the seed's σ ≈ 0.03 after 24k games "
        "implies (exactly 0 lets σ collapse until one upset breaks the update)",
    )
    rating_scale: Literal["trueskill", "bazaar"] = Field(
        default="bazaar",
        description="bazaar: the seed's scale, μ0 5, σ0 25/3, β 25/6 (its logs "
        "rated so land on its table's range); trueskill: the ratings section's μ0, σ0, β",
    )
    rating_boot: int = Field(
        default=100,
        ge=0,
        le=10_000,
        description="bootstrap resamples of the games behind the μ and rank intervals (0: none)",
    )
    rating_boot_passes: int = Field(
        default=10, ge=1, le=1000, description="shuffled passes per resample (its μ: their median)"
    )
    roster: list[RosterEntry] = Field(
        default_factory=list,
        description="the pool and the "
        "entrants (at least 2); an imported instance: the pool its "
        "CSα reference plays against (empty: BAZAAR's 29 baselines, "
        "the pool BAZAAR's games were played against)",
    )
    shard_episodes: StrictInt | None = Field(
        default=600,
        ge=1,
        le=100_000,
        description="games per log shard (sharded Parquet: 90,000 "
        "games make 150 shards of 10 files); null writes a folder per game",
    )

    post_keys = frozenset(
        {
            "csa_clip",
            "csa_basis",
            "reference",
            "rating_passes",
            "rating_tau",
            "rating_scale",
            "rating_boot",
            "rating_boot_passes",
        }
    )

    @model_validator(mode="before")
    @classmethod
    def _games_per_distribution(cls, data):
        if isinstance(data, dict) and "games_per_distribution" in data:
            data = dict(data)
            gpd = data.pop("games_per_distribution")
            if "runs" in data:
                raise ValueError("give either runs or games_per_distribution, not both")
            if not isinstance(gpd, int) or isinstance(gpd, bool) or gpd < 1:
                raise ValueError(f"games_per_distribution must be a positive integer (got {gpd!r})")
            n = len(data.get("distributions") or DISTRIBUTIONS)
            data["runs"] = gpd * n
        return data

    @model_validator(mode="before")
    @classmethod
    def _joint(cls, data):
        return joint_roster(data)

    @model_validator(mode="after")
    def _consistent(self):
        seats = self.n_buyers + self.n_sellers
        if len(self.roster) < 2 and not (self.imported and not self.roster):
            raise ValueError(f"roster: at least 2 traders (got {len(self.roster)})")
        names = [e.name for e in self.roster]
        if self.pool is not None:
            unknown = [n for n in self.pool if n not in names]
            if unknown:
                raise ValueError(f"pool: {unknown} are not roster names")
            if len(set(self.pool)) != len(self.pool):
                raise ValueError(f"pool: a name is listed twice in {self.pool}")
        pool = self.pool_indices()
        if len(pool) < seats and not self.imported:
            what = "pool" if self.pool is not None else "pool (every baseline of the roster)"
            raise ValueError(
                f"{what}: {len(pool)} traders cannot fill {seats} seats (n_buyers + "
                "n_sellers; a trader holds at most one seat per game); add baselines "
                "or list the pool"
            )
        if len(set(self.distributions)) != len(self.distributions):
            raise ValueError(f"distributions: listed twice in {self.distributions}")
        return self

    def episode_params(self) -> dict:
        out = super().episode_params()
        out.pop("entrant_games", None)  # more games per entrant only adds games
        out["pool"] = [self.roster[i].name for i in self.pool_indices()]  # as resolved
        return out

    def pool_indices(self) -> list[int]:
        """Roster indices of the pool, in roster order."""
        if self.pool is None:
            return [i for i, e in enumerate(self.roster) if e.kind == "baseline"]
        wanted = set(self.pool)
        return [i for i, e in enumerate(self.roster) if e.name in wanted]

    def entrant_indices(self) -> list[int]:
        """Roster indices of the entrants (everyone outside the pool), in roster order."""
        pool = set(self.pool_indices())
        return [i for i in range(len(self.roster)) if i not in pool]

    @property
    def seats(self) -> int:
        return self.n_buyers + self.n_sellers

    @property
    def rated_on_ours(self) -> bool:
        """Every game of the instance on our CSα (``csa_basis``; always for a joint instance)."""
        return self.csa_basis == "ours" or self.joint

    @property
    def joint(self) -> bool:
        """An imported instance with LLM entrants (module docstring): its games, published and
        new, are all rated on our CSα, so every imported game must be in its setting."""
        return self.imported and any(self.roster[i].kind == "llm" for i in self.entrant_indices())

    @property
    def games_per_distribution(self) -> float:
        return self.runs / len(self.distributions)

    def distribution_of(self, run: int) -> str:
        return self.distributions[run % len(self.distributions)]


def prompts_folder(source: dict) -> str:
    """``source.prompts``, or the ``prompts`` folder beside the logs folder ``source.path``."""
    if source.get("prompts"):
        return str(source["prompts"])
    return os.path.join(os.path.dirname(str(source.get("path", "")).rstrip("/")), "prompts")


def joint_roster(data):
    """An imported instance's raw params with its LLM entries made entrants (module docstring):
    BAZAAR's 29 baselines before a roster with no baseline, and ``harness: bazaar`` with the
    prompts folder on an LLM entry without a harness (``core.params.joint_roster``)."""
    source = data.get("source") if isinstance(data, dict) else None
    if not isinstance(source, dict):
        return data
    pool = SOURCE_DEFAULTS()["bazaar"]["roster"] if source.get("format") == "bazaar" else []
    return core_joint_roster(data, pool, "bazaar", "prompts", prompts_folder(source))


def SOURCE_DEFAULTS() -> dict[str, dict]:
    """The params of an instance imported in each format (``core.registry.MarketKind``'s
    ``source_defaults``; the instance's own keys win). BAZAAR's games were played against its 29
    baselines: an imported instance without a roster gets them, the pool its CSα reference plays
    against (truthful self-play never meets some of the values BAZAAR's sellers held). A function,
    so the roster is built only for a params file that imports."""
    from marketarena.markets.double_auction.bazaar_baselines import bazaar_pool

    return {
        "bazaar": {
            "roster": [e.model_dump(mode="json", exclude_defaults=True) for e in bazaar_pool()]
        }
    }
