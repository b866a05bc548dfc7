"""The standing across market instances: who each board row is (:func:`instance_players`) and the
board of the players seen in two or more instances (:func:`overall_board`).

**Who a row is.** An LLM row, played or imported, is its model's identity (``identity.py``): a
roster entry of ours by the id its endpoint knows (``models.<alias>.model``), a published player by
the model its study logged (the seats' ``model`` column). So Agent Bazaar's crash
``claude-sonnet-4.6`` and its lemon ``anthropic/claude-sonnet-4-6`` are one player, and a user's
``gpt-4o-mini`` on our crash and on BAZAAR's board is one player. A roster entry's own ``player``
id wins over the model (and is how a baseline is followed across instances: baselines of one name
follow different rules in different markets, so they are followed only when asked). The harness is
not part of the key: one model under several harnesses is one player, its rows listed per
instance with their harness (``reports/overall/models.csv``). A variant in the name (a reasoning
budget, an effort) is: BAZAAR's ``claude-opus-4-20250514-16K`` and ``-0K`` are two rows of one
model.

**The standing.** A row's percentile on its instance's board is 1 for the top and 0 for the bottom
of its side (a board with a ``role`` column ranks each role apart: lemon's buyers and sellers).
Where one player holds several rows of an instance (two harnesses, a buyer and a seller, two
spellings of one model in one study), their percentiles are averaged first, so every instance
counts once; the standing is the mean over the instances. Ratings of different instances are never
pooled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from marketarena.identity import IdentityTable, ModelIdentity, identify

#: identity columns of the overall board and of ``reports/overall/models.csv``
IDENTITY_COLUMNS = ("model", "variant", "provider", "family", "date", "placed")
#: the identity columns the overall board shows (the rest are in ``reports/overall/models.csv``)
BOARD_IDENTITY = ("model", "variant", "provider")
#: ``reports/overall/models.csv``: per LLM name of an instance, the identity it was read as
MODELS_COLUMNS = ["instance", "name", "written", "key", "harness", *IDENTITY_COLUMNS]


@dataclass
class Players:
    """The players of one instance: ``keys[name]`` is a board row's or seat's cross-market key
    (None: followed in this instance only), ``identities[key]`` the model behind an LLM key,
    ``rows`` one line per LLM name (``reports/overall/models.csv``)."""

    keys: dict[str, str | None] = field(default_factory=dict)
    identities: dict[str, ModelIdentity] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, instance: str, name: str, written: str, harness: str, table) -> None:
        ident = identify(written, table)
        self.keys[name] = ident.key
        self.identities[ident.key] = ident
        self.rows.append(
            {
                "instance": instance,
                "name": name,
                "written": written,
                "key": ident.key,
                "harness": harness,
                **{c: getattr(ident, c) for c in IDENTITY_COLUMNS},
            }
        )


def instance_players(
    instance: str,
    roster: Iterable[tuple[str, str | None, str | None, str]],
    agents: pd.DataFrame,
    table: IdentityTable | None = None,
) -> Players:
    """The players of ``instance`` (the module docstring): ``roster`` as (name, explicit player id
    or None, the LLM's model id or None for a baseline, harness), then every LLM seat of
    ``agents`` (its ``name``, ``kind``, ``model``, ``harness`` columns) that no roster entry
    names: a published player, keyed by the model its study logged."""
    players = Players()
    for name, player, model, harness in roster:
        if player:
            players.keys[name] = player
        elif model:
            players.add(instance, name, model, harness, table)
        else:
            players.keys[name] = None
    if agents.empty or not {"name", "kind", "model"} <= set(agents.columns):
        return players
    llm = agents[agents["kind"] == "llm"]
    harness = llm["harness"] if "harness" in llm else pd.Series("", index=llm.index)
    seats = (
        pd.DataFrame({"name": llm["name"], "model": llm["model"], "harness": harness})
        .dropna(subset=["model"])
        .drop_duplicates("name")
    )
    for name, model, how in seats.itertuples(index=False):
        if name not in players.keys:
            players.add(instance, str(name), str(model), str(how or ""), table)
    return players


def percentiles(board: pd.DataFrame) -> pd.Series:
    """Each row's percentile on its side of ``board`` (1 = top, 0 = bottom; its ``role`` where
    the board has one): from ``rank`` among the rows of its side."""
    sides = board["role"] if "role" in board else pd.Series("", index=board.index)
    n = sides.map(sides.value_counts())
    # the rank within the side: a board's ranks restart per role, or run on across roles
    rank = board.groupby(sides, sort=False)["rank"].rank(method="min")
    return (1.0 - (rank - 1) / (n - 1)).where(n > 1, 1.0)


def percentile_intervals(board: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Each row's percentile interval on its side of ``board``, from the board's 95% rank
    interval (``rank_lo`` best, ``rank_hi`` worst: a TrueSkill board's bootstrap over games),
    by :func:`percentiles`' scale; NaN where the board has none (a board ranked by a score
    with its own interval: the EAS, a profit)."""
    nan = pd.Series(np.nan, index=board.index)
    if not {"rank_lo", "rank_hi"} <= set(board.columns) or board.empty:
        return nan, nan
    sides = board["role"] if "role" in board else pd.Series("", index=board.index)
    n = sides.map(sides.value_counts()).astype(float)
    # ranks within the side: where they run on across roles, the side starts after the others
    offset = board.groupby(sides, sort=False)["rank"].transform("min") - 1

    def pct(rank: pd.Series) -> pd.Series:
        r = (pd.to_numeric(rank, errors="coerce") - offset).clip(lower=1, upper=n)
        return (1.0 - (r - 1) / (n - 1)).where(n > 1, 1.0)

    return pct(board["rank_hi"]), pct(board["rank_lo"])


def _long(
    boards: Mapping[str, pd.DataFrame], players: Mapping[str, Mapping[str, str | None]]
) -> pd.DataFrame:
    """Every board row that has a cross-market key: player, kind, market, name, percentile."""
    parts = []
    for instance, board in boards.items():
        keys = players.get(instance, {})
        part = pd.DataFrame(
            {
                "player": board["name"].map(lambda n, keys=keys: keys.get(n)),
                "kind": board.get("kind", ""),
                "market": instance,
                "name": board["name"],
                "percentile": percentiles(board) if len(board) else [],
            }
        )
        part["percentile_lo"], part["percentile_hi"] = percentile_intervals(board)
        parts.append(part.dropna(subset=["player"]))
    columns = ["player", "kind", "market", "name", "percentile", "percentile_lo", "percentile_hi"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def _per_instance(long: pd.DataFrame) -> pd.DataFrame:
    """One row per player and instance (:func:`_long`'s rows): its rows there averaged, so that
    an instance counts once however many rows a player holds in it (``percentile``, and its
    interval's ends where every row has one), its ``kind`` and the rows' ``names``."""
    return long.groupby(["player", "market"], sort=False, as_index=False).agg(
        kind=("kind", "first"),
        percentile=("percentile", "mean"),
        percentile_lo=("percentile_lo", lambda x: x.mean(skipna=False)),
        percentile_hi=("percentile_hi", lambda x: x.mean(skipna=False)),
        names=("name", ",".join),
    )


def model_matrix(
    boards: Mapping[str, pd.DataFrame],
    players: Mapping[str, Mapping[str, str | None]],
    identities: Mapping[str, ModelIdentity],
) -> pd.DataFrame:
    """Models x studies (issue 54, "who is good at what"): per model (an identity key, whether
    it played one instance or several) and instance, its percentile on the instance's board
    (:func:`percentiles`, its rows averaged) with its interval where the board ranks with one
    (:func:`percentile_intervals`), its rank among that instance's models by it (1 = best;
    ``n_models`` of them) and the board rows it holds (``names``). Baselines and explicit
    ``player`` ids are not models: not here."""
    long = _long(boards, players)
    long = long[long["player"].isin(list(identities))]
    columns = [
        "player",
        *BOARD_IDENTITY,
        "market",
        "rank",
        "n_models",
        "percentile",
        "percentile_lo",
        "percentile_hi",
        "names",
    ]
    if long.empty:
        return pd.DataFrame(columns=columns)
    out = _per_instance(long)
    out["rank"] = (
        out.groupby("market")["percentile"].rank(method="min", ascending=False).astype(int)
    )
    out["n_models"] = out["market"].map(out["market"].value_counts())
    for col in BOARD_IDENTITY:
        out[col] = [getattr(identities[p], col) for p in out["player"]]
    out = out.sort_values(["player", "market"], kind="stable")
    return out[columns].reset_index(drop=True)


#: models two studies must have in common before their agreement is read (fewer: "too few")
MIN_COMMON = 8


def study_agreement(
    matrix: pd.DataFrame, n_boot: int = 2000, seed: int = 0, n_perm: int = 2000
) -> pd.DataFrame:
    """Do the studies agree? For every two instances, the Spearman of their common models'
    percentiles (:func:`model_matrix`) with a bootstrap interval over models and a permutation
    p-value (``stats.cluster_bootstrap_spearman``, every model its own cluster), the number of
    models in common, and a verdict in words: ``too few models in common`` below
    :data:`MIN_COMMON`, else ``agree`` / ``disagree`` where the interval excludes 0, ``cannot
    tell`` where it holds it."""
    from marketarena.stats import cluster_bootstrap_spearman

    columns = ["study_a", "study_b", "n_models", "rho", "rho_lo", "rho_hi", "p_perm", "verdict"]
    wide = matrix.pivot(index="player", columns="market", values="percentile")
    rows = []
    studies = sorted(wide.columns)
    for i, a in enumerate(studies):
        for b in studies[i + 1 :]:
            both = wide[[a, b]].dropna().set_axis(["a", "b"], axis=1)
            r = cluster_bootstrap_spearman(both, "a", "b", None, n_boot, seed, n_perm=n_perm)
            lo, hi, n = r["lo"], r["hi"], len(both)
            verdict = (
                "too few models in common"
                if n < MIN_COMMON
                else "agree"
                if lo > 0
                else "disagree"
                if hi < 0
                else "cannot tell"
            )
            rows.append([a, b, n, r["rho"], lo, hi, r["p_perm"], verdict])
    return pd.DataFrame(rows, columns=columns)


def agreement_markdown(agreement: pd.DataFrame) -> str:
    from marketarena.plots.tables import markdown_table

    if agreement.empty:
        return "Fewer than two instances have models: there is no pair of studies to compare."
    return markdown_table(
        agreement,
        caption="Do the studies agree? Per pair of instances, the Spearman correlation of the "
        "percentiles of the models they have in common (rho, with its 95% bootstrap interval "
        f"over models and a permutation p-value), and a verdict: below {MIN_COMMON} models in "
        "common, too few to tell; else they agree (or disagree) where the interval excludes 0, "
        "and cannot tell where it holds it.",
    )


def draw_agreement(agreement: pd.DataFrame, path) -> None:
    """The pairs of :func:`study_agreement` as points with their intervals, one line a pair
    (its models in common beside it); pairs with too few models drawn hollow."""
    from marketarena.plots.style import apply_theme, plt, save

    apply_theme()
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(agreement) + 1.6))
    labels = [
        f"{a} x {b} (n={n})" for a, b, n in agreement[["study_a", "study_b", "n_models"]].values
    ]
    y = np.arange(len(agreement))
    few = (agreement["verdict"] == "too few models in common").to_numpy()
    rho = agreement["rho"].to_numpy(dtype=float)
    lo, hi = agreement["rho_lo"].to_numpy(dtype=float), agreement["rho_hi"].to_numpy(dtype=float)
    ax.errorbar(rho, y, xerr=[rho - lo, hi - rho], fmt="none", ecolor="0.4", capsize=3)
    ax.scatter(rho[~few], y[~few], color="C0", zorder=3, label="enough models in common")
    ax.scatter(rho[few], y[few], facecolors="white", edgecolors="C0", zorder=3, label="too few")
    ax.axvline(0, color="0.6", lw=0.8)
    ax.set_yticks(y, labels)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("Spearman of the common models' percentiles (95% interval)")
    ax.set_title("Do the studies rank their common models alike?")
    ax.legend(loc="lower left", fontsize="small")
    save(fig, path)


def matrix_cell(row: Mapping[str, Any]) -> str:
    """A model's cell of the matrix: its percentile on the instance's board in points (100 = top
    of its side), its 95% interval where the board has one, and its rank among the instance's
    models: ``84 [60, 95] · 4/20``. The percentile comes first, so a column sorts by it."""

    def points(x: Any) -> str:
        return str(round(100 * float(x)))

    lo, hi = (
        pd.to_numeric(row.get(c), errors="coerce") for c in ("percentile_lo", "percentile_hi")
    )
    has = not (pd.isna(lo) or pd.isna(hi))  # also "" (a CSV read without NaN) and None
    interval = f" [{points(lo)}, {points(hi)}]" if has else ""
    return f"{points(row['percentile'])}{interval} · {row['rank']}/{row['n_models']}"


def matrix_wide(matrix: pd.DataFrame) -> pd.DataFrame:
    """:func:`model_matrix` as models x instances: per model the number of instances it played
    (``studies``) and a :func:`matrix_cell` per instance ("" where it did not play), the models
    that played most first."""
    cells = matrix.assign(cell=[matrix_cell(r) for r in matrix.to_dict(orient="records")])
    wide = cells.pivot(index="player", columns="market", values="cell").fillna("")
    wide.insert(0, "studies", (wide != "").sum(axis=1))
    wide = wide.sort_values(["studies", "player"], ascending=[False, True]).reset_index()
    wide.columns.name = None
    return wide


#: what a cell of the models x studies matrix says (the markdown table's and the site's caption)
MATRIX_CAPTION = (
    "Models across studies: each model (under its identity, `models.csv`) on each instance it "
    "played: its percentile on the board (100 = the top of its side, 0 = the bottom), in "
    "brackets its 95% interval where the board ranks with one (a TrueSkill board's rank "
    "interval; a board ranked by a score, such as the EAS, shows the score's interval on the "
    "model's page instead), then its rank among the instance's models / their number (1 = "
    "best); blank: not played. Percentiles of different studies are comparable as standings, "
    "not as skills. `matrix.csv` holds the numbers."
)


def matrix_markdown(matrix: pd.DataFrame) -> str:
    """:func:`model_matrix` as models x instances, each cell a :func:`matrix_cell` (blank: not
    played), under :data:`MATRIX_CAPTION`; one line when there is no model."""
    from marketarena.plots.tables import markdown_table

    if matrix.empty:
        return "No LLM played any instance: there is no model to follow across studies."
    return markdown_table(
        matrix_wide(matrix),
        caption=MATRIX_CAPTION,
    )


def overall_board(
    boards: Mapping[str, pd.DataFrame],
    players: Mapping[str, Mapping[str, str | None]],
    identities: Mapping[str, ModelIdentity] | None = None,
    flag_above: float | None = None,
) -> tuple[pd.DataFrame, str]:
    """Standing across market instances, for players that played at least two of them.

    ``players[instance][name]`` is the cross-market key of a board's row (None: this row exists in
    one instance only); ``identities[key]`` the model behind an LLM key, whose columns
    (:data:`BOARD_IDENTITY`) the board carries. A player's standing is the mean over its
    instances of its percentile there (:func:`percentiles`, several rows of one instance averaged
    first). Beside it, how the player's decisions were answered, pooled over those instances
    (``metrics.validity``: ``decisions``, ``valid_first``, ``valid_reasked``, ``fallback``,
    ``format_failures``, ``rule_failures``; NaN where no instance logged decisions) and
    ``flagged`` (its pooled fallback share above ``flag_above``, params
    ``ratings.flag_fallback_above``; None: the default), and the names it went by (``names``).
    Returns the board and a one-line note (empty when the board has rows).
    """
    from marketarena.metrics.validity import BOARD_COLUMNS, COLUMNS, FLAG, flag, pooled

    columns = ["rank", "player", *BOARD_IDENTITY, "kind", "markets", "n_markets"]
    columns += ["mean_percentile", "names", *BOARD_COLUMNS]
    long = _long(boards, players)
    if long.empty:
        return pd.DataFrame(columns=columns), _EMPTY
    out = (
        _per_instance(long)
        .groupby("player")
        .agg(
            kind=("kind", "first"),
            markets=("market", ",".join),
            n_markets=("market", "nunique"),
            mean_percentile=("percentile", "mean"),
        )
    )
    out["names"] = long.groupby("player")["name"].agg(lambda n: ",".join(dict.fromkeys(n)))
    out = out[out["n_markets"] >= 2].reset_index()
    if out.empty:
        return pd.DataFrame(columns=columns), _EMPTY
    known = identities or {}
    out["kind"] = [k if k or p not in known else "llm" for k, p in zip(out["kind"], out["player"])]
    for col in BOARD_IDENTITY:
        out[col] = [getattr(known[p], col) if p in known else "" for p in out["player"]]
    out = out.merge(pooled(boards, players), on="player", how="left")
    for col in COLUMNS:
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    out[FLAG] = flag(out) if flag_above is None else flag(out, flag_above)
    out = out.sort_values(["mean_percentile", "player"], ascending=[False, True])
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    return out[columns].reset_index(drop=True), ""


_EMPTY = (
    "No player played two or more market instances (a model, under its identity, or a "
    "baseline given the same `player` id), so there is no cross-market ranking; see the "
    "per-market boards."
)
