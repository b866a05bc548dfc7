"""One function per DVC stage; ``stages/*.py`` and the CLI are thin wrappers around these.

Paths follow DESIGN.md section 2, per market *instance* (a key of ``params.markets``), relative to
the project root (``root``):

    instance   -> data/instances/<instance>.json (kind + hash of the code its stages run)
    personas   -> data/personas.parquet
    embed      -> data/persona_embeddings.parquet
    reference  -> data/references/<instance>/ (summary.json + whatever the market needs)
    simulate   -> data/episodes/<instance>/
    metrics    -> data/metrics/<instance>/*.parquet, reports/metrics/<instance>.json
    stats      -> reports/stats.json, reports/stats/<instance>_spearman.{md,tex}
    ratings    -> reports/leaderboards/<instance>.csv, reports/leaderboards/overall.csv (+ .md note)
    figures    -> reports/figures/<instance>/*.png, reports/tables/<instance>_*.{md,tex}
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from marketarena.config import Params
from marketarena.core.reader import EpisodeReader
from marketarena.core.registry import plugin_for


class Paths:
    def __init__(self, root: str | Path = "."):
        self.root = Path(root)
        self.data = self.root / "data"
        self.reports = self.root / "reports"
        self.personas = self.data / "personas.parquet"
        self.embeddings = self.data / "persona_embeddings.parquet"

    def instance(self, instance: str) -> Path:
        return self.data / "instances" / f"{instance}.json"

    def episodes(self, instance: str) -> Path:
        return self.data / "episodes" / instance

    def metrics(self, instance: str) -> Path:
        return self.data / "metrics" / instance

    def references(self, instance: str) -> Path:
        return self.data / "references" / instance


def _write_json(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=True, default=float) + "\n")


#: the code the per-instance stages (reference, simulate, metrics) import besides their market's
#: own folder; ``data/instances/<instance>.json`` hashes it (tests/test_dvc_deps.py checks the list)
INSTANCE_CODE = ("core", "agents", "llm", "metrics", "markets/_shared", "config.py", "embeddings.py",
                 "personas.py", "simulate.py", "pipeline.py", "stats.py", "__init__.py")


def run_instance(instance: str, params: Params, paths: Paths) -> dict:
    """An instance's kind and the hash of the code its stages run (the kind's folder and the
    shared code): the per-instance stages depend on this file instead of on every market's code, so
    editing one market re-runs only its own instances."""
    from marketarena.core import logs

    mp = params.markets[instance]
    package = Path(__file__).resolve().parent
    code = [package / p for p in INSTANCE_CODE] + [package / "markets" / mp.market]
    info = {"instance": instance, "market": mp.market,
            "code": logs.hash_files([p for p in code if p.exists()])}
    _write_json(info, paths.instance(instance))
    return info


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


def run_reference(instance: str, params: Params, paths: Paths) -> dict:
    """An instance's reference data (equilibria, truthful-play tables...); ``null`` if none."""
    plugin, mp = plugin_for(params, instance)
    out = paths.references(instance)
    out.mkdir(parents=True, exist_ok=True)
    summary = plugin.compute_reference(mp, out)
    _write_json({"market": mp.market, "instance": instance, "reference": summary},
                out / "summary.json")
    return summary


def run_simulate(instance: str, params: Params, paths: Paths, progress: bool = True) -> dict:
    from marketarena.simulate import simulate

    return simulate(instance, params, paths.data, paths.episodes(instance), progress=progress)


def run_metrics(instance: str, params: Params, paths: Paths) -> dict[str, pd.DataFrame]:
    plugin, mp = plugin_for(params, instance)
    frames = plugin.compute_metrics(EpisodeReader(paths.episodes(instance)), mp, paths.data)
    out = paths.metrics(instance)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in frames.items():
        df.to_parquet(out / f"{name}.parquet", index=False)
    agents = frames["agents"]
    summary = {
        "market": mp.market,
        "episodes": int(agents["episode_id"].nunique()),
        "agents": {
            name: {m: float(g[m].mean()) for m in plugin.metric_columns}
            for name, g in agents.groupby("name")
        },
    }
    _write_json(summary, paths.reports / "metrics" / f"{instance}.json")
    return frames


def run_stats(params: Params, paths: Paths) -> dict:
    from marketarena.plots.tables import latex_table, markdown_table, write_tables
    from marketarena.stats import spearman_table

    result = {}
    for instance in params.markets:
        plugin, _ = plugin_for(params, instance)
        agents = pd.read_parquet(paths.metrics(instance) / "agents.parquet")
        others = [m for m in plugin.metric_columns if m != plugin.rank_by]
        table = spearman_table(agents, plugin.rank_by, others, cluster="episode_id",
                               n_boot=params.stats.n_boot, seed=params.stats.seed,
                               n_perm=params.stats.n_perm)
        result[instance] = {"target": plugin.rank_by,
                            "n_episodes": int(agents["episode_id"].nunique()),
                            "spearman": table.to_dict(orient="records")}
        out = paths.reports / "stats"
        write_tables(out / f"{instance}_spearman.md", markdown_table(table) + "\n",
                     out / f"{instance}_spearman.tex", latex_table(table) + "\n")
    _write_json(result, paths.reports / "stats.json")
    return result


def run_ratings(params: Params, paths: Paths) -> dict[str, pd.DataFrame]:
    from marketarena.ratings import overall_board

    out = paths.reports / "leaderboards"
    out.mkdir(parents=True, exist_ok=True)
    boards, players = {}, {}
    for instance in params.markets:
        plugin, mp = plugin_for(params, instance)
        agents = pd.read_parquet(paths.metrics(instance) / "agents.parquet")
        boards[instance] = plugin.leaderboard(agents, mp, params.ratings, params.stats)
        boards[instance].to_csv(out / f"{instance}.csv", index=False, float_format="%.6g")
        players[instance] = {e.name: e.global_player(plugin.harness_of(e)) for e in mp.roster}
    overall, note = overall_board(boards, players)
    overall.to_csv(out / "overall.csv", index=False, float_format="%.6g")
    (out / "overall.md").write_text(
        (note or "Cross-market standing: mean percentile rank over the market instances each "
         "player played (players in two or more instances only).") + "\n", encoding="utf-8")
    return {**boards, "overall": overall}


def run_figures(params: Params, paths: Paths) -> list[Path]:
    written = []
    for instance in params.markets:
        plugin, mp = plugin_for(params, instance)
        written += plugin.draw_figures(paths.metrics(instance), paths.reports / "figures" / instance,
                                       paths.reports / "tables", mp, instance)
    return written
