"""One function per DVC stage; ``stages/*.py`` and the CLI are thin wrappers around these.

Paths follow DESIGN.md section 2 and are relative to the project root (``root``):

    personas   -> data/personas.parquet
    embed      -> data/persona_embeddings.parquet
    reference  -> data/references/<market>/ (summary.json + whatever the market needs)
    simulate   -> data/episodes/<market>/
    metrics    -> data/metrics/<market>/{agents,agent_steps,market}.parquet, reports/metrics/<market>.json
    stats      -> reports/stats.json, reports/stats/<market>_spearman.{md,tex}
    ratings    -> reports/leaderboards/<market>.csv, reports/leaderboards/overall.csv
    figures    -> reports/figures/<market>/*.png, reports/tables/*.{md,tex}
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from marketarena.config import Params
from marketarena.core.registry import get_plugin


class Paths:
    def __init__(self, root: str | Path = "."):
        self.root = Path(root)
        self.data = self.root / "data"
        self.reports = self.root / "reports"
        self.personas = self.data / "personas.parquet"
        self.embeddings = self.data / "persona_embeddings.parquet"

    def episodes(self, market: str) -> Path:
        return self.data / "episodes" / market

    def metrics(self, market: str) -> Path:
        return self.data / "metrics" / market

    def references(self, market: str) -> Path:
        return self.data / "references" / market


def _write_json(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=True, default=float) + "\n")


def run_personas(params: Params, paths: Paths) -> pd.DataFrame:
    from marketarena.personas import generate_personas

    df = generate_personas(params.personas)
    paths.personas.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(paths.personas, index=False)
    return df


def run_embed(params: Params, paths: Paths) -> pd.DataFrame:
    from marketarena.embeddings import Embedder, embed_personas

    embedder = Embedder(params.embedding.model, params.embedding.cache_dir)
    df = embed_personas(pd.read_parquet(paths.personas), embedder)
    df.to_parquet(paths.embeddings, index=False)
    return df


def run_reference(market: str, params: Params, paths: Paths) -> dict:
    """A market's reference data (equilibria, truthful-play tables...); ``null`` if it has none."""
    plugin = get_plugin(market)
    out = paths.references(market)
    out.mkdir(parents=True, exist_ok=True)
    summary = plugin.compute_reference(params, out) if plugin.compute_reference else None
    _write_json({"market": market, "reference": summary}, out / "summary.json")
    return summary


def run_simulate(market: str, params: Params, paths: Paths, progress: bool = True) -> dict:
    from marketarena.core.simulate import simulate

    return simulate(market, params, paths.data, paths.episodes(market), progress=progress)


def run_metrics(market: str, params: Params, paths: Paths) -> dict[str, pd.DataFrame]:
    plugin = get_plugin(market)
    frames = plugin.compute_metrics(paths.episodes(market), paths.data, params)
    out = paths.metrics(market)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in frames.items():
        df.to_parquet(out / f"{name}.parquet", index=False)
    agents = frames["agents"]
    summary = {
        "episodes": int(agents["episode_id"].nunique()),
        "agents": {
            name: {m: float(g[m].mean()) for m in plugin.metric_columns}
            for name, g in agents.groupby("name")
        },
    }
    _write_json(summary, paths.reports / "metrics" / f"{market}.json")
    return frames


def run_stats(params: Params, paths: Paths) -> dict:
    from marketarena.plots.tables import latex_table, markdown_table, write_tables
    from marketarena.stats import spearman_table

    result = {}
    for market in params.markets:
        plugin = get_plugin(market)
        agents = pd.read_parquet(paths.metrics(market) / "agents.parquet")
        others = [m for m in plugin.metric_columns if m != plugin.rank_by]
        table = spearman_table(agents, plugin.rank_by, others, cluster="episode_id",
                               n_boot=params.stats.n_boot, seed=params.stats.seed)
        result[market] = {"target": plugin.rank_by, "n_episodes": int(agents["episode_id"].nunique()),
                          "spearman": table.to_dict(orient="records")}
        out = paths.reports / "stats"
        write_tables(out / f"{market}_spearman.md", markdown_table(table) + "\n",
                     out / f"{market}_spearman.tex", latex_table(table) + "\n")
    _write_json(result, paths.reports / "stats.json")
    return result


def games_from_metrics(agents: pd.DataFrame, score: str) -> list[dict[str, float]]:
    """One free-for-all game per episode: agent name -> score (higher ranks better)."""
    return [dict(zip(g["name"], g[score].astype(float)))
            for _, g in agents.sort_values(["episode_id", "agent_id"]).groupby("episode_id")]


def leaderboard(agents: pd.DataFrame, score: str, params: Params) -> pd.DataFrame:
    from marketarena.ratings import TrueSkillParams, bootstrap_ratings
    from marketarena.stats import bootstrap_mean_ci

    ts = TrueSkillParams(**params.ratings.trueskill.model_dump())
    board = bootstrap_ratings(games_from_metrics(agents, score), ts, n_boot=params.ratings.n_boot,
                              seed=params.ratings.seed).rename(columns={"player": "name"})
    info = agents.groupby("name").agg(kind=("kind", "first"), strategy=("strategy", "first"),
                                      model=("model", "first"), episodes=("episode_id", "nunique"))
    per_name = agents.groupby(["name", "episode_id"])[score].mean().groupby("name")
    ci = pd.DataFrame(
        [(name, *bootstrap_mean_ci(v.to_numpy(), n_boot=params.stats.n_boot, seed=params.stats.seed))
         for name, v in per_name],
        columns=["name", f"{score}_mean", f"{score}_lo", f"{score}_hi"])
    board = board.merge(info.reset_index(), on="name").merge(ci, on="name")
    board["conservative"] = board["mu"] - 3 * board["sigma"]
    board = board.sort_values("mu", ascending=False).reset_index(drop=True)
    board.insert(0, "rank", range(1, len(board) + 1))
    return board


def overall_board(boards: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Standing across markets: the mean of an agent's percentile ranks in the market leaderboards.

    Percentile = 1 for the top of a market's board, 0 for its bottom. LLM agents are the same player
    in every market they play (identified by name); a baseline is specific to its market
    (``market/name``), since the same strategy name means different rules in different markets.
    Ratings from different markets are never pooled into one TrueSkill run: players of different
    markets never meet, so their ratings would not be comparable.
    """
    rows = []
    for market, board in boards.items():
        n = len(board)
        for _, r in board.iterrows():
            llm = r.get("kind") == "llm"
            rows.append({"player": r["name"] if llm else f"{market}/{r['name']}",
                         "kind": r.get("kind", ""), "market": market, "rank": int(r["rank"]),
                         "percentile": 1.0 - (r["rank"] - 1) / (n - 1) if n > 1 else 1.0})
    long = pd.DataFrame(rows)
    out = long.groupby("player").agg(kind=("kind", "first"), markets=("market", lambda m: ",".join(m)),
                                     n_markets=("market", "nunique"),
                                     mean_percentile=("percentile", "mean")).reset_index()
    out = out.sort_values(["mean_percentile", "player"], ascending=[False, True])
    out.insert(0, "rank", range(1, len(out) + 1))
    return out.reset_index(drop=True)


def run_ratings(params: Params, paths: Paths) -> dict[str, pd.DataFrame]:
    out = paths.reports / "leaderboards"
    out.mkdir(parents=True, exist_ok=True)
    boards = {}
    for market in params.markets:
        plugin = get_plugin(market)
        agents = pd.read_parquet(paths.metrics(market) / "agents.parquet")
        build = plugin.leaderboard or (lambda a, p: leaderboard(a, plugin.rank_by, p))
        boards[market] = build(agents, params)
        boards[market].to_csv(out / f"{market}.csv", index=False, float_format="%.6g")
    overall = overall_board(boards)
    overall.to_csv(out / "overall.csv", index=False, float_format="%.6g")
    return {**boards, "overall": overall}


def run_figures(params: Params, paths: Paths) -> list[Path]:
    written = []
    for market in params.markets:
        written += get_plugin(market).draw_figures(
            paths.metrics(market), paths.reports / "figures" / market, paths.reports / "tables",
            params)
    return written
