"""One function per DVC stage; ``stages/*.py`` and the CLI are thin wrappers around these.

Paths follow DESIGN.md section 2, per market *instance* (a key of ``params.markets``), relative to
the project root (``root``):

    personas   -> data/personas.parquet
    embed      -> data/persona_embeddings.parquet
    instances  -> data/instances/<instance>.json, one per instance (its kind, the hash of the code
                  its stages run and of the global inputs its market uses: what its stages
                  depend on in place of the whole library)
    simulate   -> data/references/<instance>/ (summary.json + whatever the market's metrics
                  need; computed again only when its fingerprint changed), then
                  data/episodes/<instance>/ (results; run information:
                  data/run_logs/<instance>/, not tracked by DVC)
    metrics    -> data/metrics/<instance>/*.parquet (the market's frames, and validity.parquet: how
                  each player's decisions were answered, ``metrics/validity.py``),
                  reports/metrics/<instance>.json
    stats      -> reports/stats/<instance>.json, reports/stats/<instance>/<instance>_spearman.{md,tex}
    ratings    -> reports/leaderboards/<instance>.csv (the market's board plus every player's
                  validity columns: decisions, valid_first, valid_reasked, fallback,
                  format_failures, rule_failures, flagged)
    figures    -> reports/figures/<instance>/*.png, reports/tables/<instance>/<instance>_*.{md,tex}
    overall    -> reports/overall/overall.csv (+ overall.md: the table with its caption, or why it is empty)
    report     -> reports/site/index.html, reports/site/<instance>.html (the results site)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

from marketarena.config import Params
from marketarena.core.paths import Paths  # noqa: F401 - the stages' and the tests' import
from marketarena.core.registry import analysis_for, market_kind


def _write_json(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=True, default=float) + "\n")


#: the code the per-instance stages (simulate, metrics, stats, ratings, figures) import besides
#: their market's own folder; ``data/instances/<instance>.json`` hashes it (the end-to-end test
#: checks, from what each stage really imported, that nothing is missing)
INSTANCE_CODE = (
    "core",
    "agents",
    "llm",
    "metrics",
    "plots",
    "markets/__init__.py",
    "markets/_shared",
    "__init__.py",
    "config.py",
    "embeddings.py",
    "faults.py",
    "identity.py",
    "personas.py",
    "simulate",
    "pipeline.py",
    "progress.py",
    "money.py",
    "stats.py",
    "ratings.py",
    "ratings_normal.py",
    "_trueskill_kernel.py",
    # the estimate a run with priced LLM seats prints (and may stop on) before its first call
    "estimate.py",
    "dry_run.py",
    "completion_priors.py",
    "completion_priors.csv",
)


def instance_info(instance: str, params: Params, paths: Paths, shared_code: str) -> dict:
    """What ``data/instances/<instance>.json`` holds: the instance's kind, the hash of its params
    as validated (defaults filled in, ``scale: paper``'s sizes put over them, which it also lists),
    the hash of the code its stages run (``shared_code``: :data:`INSTANCE_CODE`'s, and its
    market's folder) and, for a market whose episodes read global inputs (``MarketKind.uses``: the
    personas and their embeddings), the hash of those params and files. Its stages depend on this
    file instead of on their instance's params (dvc.yaml), so a change to one instance's params,
    to one market's code or to the personas re-runs only the instances it concerns."""
    from marketarena.core import digest

    mp = params.markets[instance]
    kind = market_kind(mp.market)
    dumped = json.dumps(mp.model_dump(mode="json", by_alias=True), sort_keys=True, default=str)
    info = {
        "instance": instance,
        "market": mp.market,
        "params": hashlib.sha256(dumped.encode()).hexdigest(),
        "code": digest.hash_files([kind.folder]) + shared_code,
    }
    if mp.paper_applied:
        info["paper"] = mp.paper_applied
    if kind.uses:
        dumped = params.model_dump(mode="json", by_alias=True)
        sections = {key: dumped.get(key.split(".")[0]) for key in kind.uses}
        files = [p for p in (paths.personas, paths.embeddings) if p.is_file()]
        info["uses"] = {
            "params": hashlib.sha256(json.dumps(sections, sort_keys=True).encode()).hexdigest(),
            "files": digest.hash_files(files),
        }
    return info


def run_instances(params: Params, paths: Paths) -> dict[str, dict]:
    """Every instance's ``data/instances/<instance>.json`` (:func:`instance_info`), and no other
    file in that folder. Each per-instance stage depends on its own file: DVC re-runs only the
    stages of the instances whose file's content changed."""
    from marketarena.core import digest

    package = Path(__file__).resolve().parent
    shared = digest.hash_files([p for p in (package / c for c in INSTANCE_CODE) if p.exists()])
    folder = paths.data / "instances"
    folder.mkdir(parents=True, exist_ok=True)
    infos = {name: instance_info(name, params, paths, shared) for name in params.markets}
    for stale in folder.glob("*.json"):
        if stale.stem not in infos:
            stale.unlink()
    for name, info in infos.items():
        text = json.dumps(info, indent=2, sort_keys=True) + "\n"
        target = paths.instance(name)
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
    return infos


def run_personas(params: Params, paths: Paths) -> "pd.DataFrame":
    from marketarena.personas import generate_personas

    df = generate_personas(params.personas)
    paths.personas.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(paths.personas, index=False)
    return df


def run_embed(params: Params, paths: Paths) -> "pd.DataFrame":
    import pandas as pd

    from marketarena.embeddings import Embedder, embed_personas

    embedder = Embedder(params.embedding.model, params.embedding.cache_dir)
    df = embed_personas(pd.read_parquet(paths.personas), embedder)
    df.to_parquet(paths.embeddings, index=False)
    return df


def reference_fingerprint(instance: str, params: Params) -> str:
    """What an instance's reference depends on: its params and its market's code but its figures'
    modules (every ``plots`` module of its folder: drawing a figure anew re-computes no
    reference) and, for an instance that is not imported, its sources of published games."""
    from marketarena.core import digest

    mp = params.markets[instance]
    skip = {"__pycache__", "plots.py", *digest.NOT_CODE, *(() if mp.imported else ("sources",))}
    code = [
        p
        for p in sorted(market_kind(mp.market).folder.rglob("*"))
        if p.is_file() and not skip & set(p.parts)
    ]
    text = json.dumps(
        {"params": mp.model_dump(mode="json", by_alias=True), "code": digest.hash_files(code)},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def run_reference(instance: str, params: Params, paths: Paths) -> dict | None:
    """An instance's reference data (equilibria, truthful-play tables...; its analysis's
    ``compute_reference``) into ``data/references/<instance>/``; ``null`` if none. Its
    ``summary.json`` records the fingerprint it was computed for (:func:`reference_fingerprint`)."""
    import shutil

    analysis, mp = analysis_for(params, instance)
    out = paths.references(instance)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    summary = analysis.compute_reference(mp, out, workers=params.execution.resolve())
    _write_json(
        {
            "market": mp.market,
            "instance": instance,
            "reference": summary,
            "fingerprint": reference_fingerprint(instance, params),
        },
        out / "summary.json",
    )
    return summary


def reference_is_current(instance: str, params: Params, paths: Paths) -> bool:
    """Whether ``data/references/<instance>/`` was computed for the instance as it is now."""
    path = paths.references(instance) / "summary.json"
    try:
        recorded = json.loads(path.read_text()).get("fingerprint")
    except (OSError, ValueError):
        return False
    return recorded == reference_fingerprint(instance, params)


def run_simulate(instance: str, params: Params, paths: Paths, progress: bool = True) -> dict:
    """The instance's reference, computed again only where its fingerprint changed
    (:func:`run_reference`), then its episodes played, resuming; or, for an imported instance
    (``source``), its published games imported (``simulate/importing.py``), and for a joint one
    (``MarketSource.joint``: LLM entrants beside them, issue 53) the entrants' games then played
    into the same folder, the imported games kept."""
    if not reference_is_current(instance, params, paths):
        run_reference(instance, params, paths)
    mp = params.markets[instance]
    keep, imported = frozenset(), None
    if mp.imported:
        from marketarena.simulate.importing import import_instance, imported_names

        source = market_kind(mp.market).source(mp.source.format)
        joint = source.joint(mp)
        if joint:  # before anything is imported or played
            source.check_joint(mp, paths.root)
        imported = import_instance(
            instance,
            params,
            paths.data,
            paths.episodes(instance),
            root=paths.root,
            progress=progress,
        )
        if not joint:
            return imported
        keep = imported_names(paths.episodes(instance))
    from marketarena.simulate import simulate

    played = simulate(
        instance,
        params,
        paths.data,
        paths.episodes(instance),
        progress=progress,
        run_dir=paths.run_logs(instance),
        keep=keep,
    )
    if imported is None:
        return played
    return {**played, "imported": imported["imported"], "source": imported["source"]}


def import_folder(
    kind: str,
    fmt: str,
    source: Path,
    out: Path,
    block: dict | None = None,
    board: bool = False,
    params: dict | None = None,
    csv: tuple[str, ...] = (),
) -> tuple[dict, dict]:
    """A folder of published games outside ``params.yaml`` (``marketarena import-bazaar``,
    ``import-agent-bazaar``): ``source`` imported as the one instance ``<kind>`` of a project
    rooted at ``out``, through the very stages an instance with ``source:`` runs: its reference,
    the import (``out/data/episodes/<kind>``, with ``import.json``), its metrics
    (``out/data/metrics/<kind>``) and, with ``board``, its board
    (``out/reports/leaderboards/<kind>.csv``). ``block``: instance params beside the source (the
    format's own defaults, ``MarketKind.source_defaults``, fill the rest); ``params``: global
    sections (``ratings``, ``execution``); ``csv``: metrics frames also written as
    ``out/<name>.csv`` (the replay's rules table). ``out`` is built aside and swapped in whole;
    ``marketarena view --root <out>`` browses it. Returns (the import report, the metrics
    frames)."""
    from marketarena.config import parse_params
    from marketarena.core.files import folder_replaced
    from marketarena.core.sources import read_report

    block = {
        **(block or {}),
        "market": kind,
        "source": {"format": fmt, "path": str(Path(source).resolve())},
    }
    parsed = parse_params({**(params or {}), "markets": {kind: block}})
    with folder_replaced(out) as tmp:
        paths = Paths(tmp)
        run_simulate(kind, parsed, paths, progress=False)
        frames = run_metrics(kind, parsed, paths)
        if board:
            run_ratings(kind, parsed, paths)
        for name in csv:
            if frames.get(name) is not None:
                frames[name].to_csv(tmp / f"{name}.csv", index=False)
        report = (read_report(paths.episodes(kind)) or {}).get("report", {})
    return report, frames


def run_metrics(instance: str, params: Params, paths: Paths) -> dict[str, "pd.DataFrame"]:
    """The market's metric frames and, for every market, how each player's decisions were
    answered (``metrics.validity.player_validity``: ``validity.parquet``)."""
    from marketarena.core.reader import EpisodeReader
    from marketarena.metrics.validity import player_validity

    analysis, mp = analysis_for(params, instance)
    reader = EpisodeReader(paths.episodes(instance))
    frames = analysis.compute_metrics(reader, mp, paths.data)
    if "validity" in frames:
        raise ValueError(
            f"{mp.market}: a metrics frame may not be called 'validity' (the pipeline's own)"
        )
    frames = {**frames, "validity": player_validity(reader)}
    out = paths.metrics(instance)
    out.mkdir(parents=True, exist_ok=True)
    for name, df in frames.items():
        df.to_parquet(out / f"{name}.parquet", index=False)
    agents = frames["agents"]
    summary = {
        "market": mp.market,
        "episodes": int(agents["episode_id"].nunique()),
        "agents": {
            name: {m: float(g[m].mean()) for m in analysis.metric_columns}
            for name, g in agents.groupby("name")
        },
    }
    _write_json(summary, paths.reports / "metrics" / f"{instance}.json")
    return frames


def run_stats(instance: str, params: Params, paths: Paths) -> dict:
    """Spearman of the instance's ranking score with each of its metrics (cluster bootstrap over
    episodes, within-episode permutation p-values)."""
    import pandas as pd

    from marketarena.plots.tables import write_frame
    from marketarena.stats import spearman_table

    analysis, mp = analysis_for(params, instance)
    agents = pd.read_parquet(paths.metrics(instance) / "agents.parquet")
    others = [m for m in analysis.metric_columns if m != analysis.rank_by]
    table = spearman_table(
        agents,
        analysis.rank_by,
        others,
        cluster="episode_id",
        n_boot=params.stats.n_boot,
        seed=params.stats.seed,
        n_perm=params.stats.n_perm,
    )
    result = {
        "market": mp.market,
        "target": analysis.rank_by,
        "n_episodes": int(agents["episode_id"].nunique()),
        "spearman": table.to_dict(orient="records"),
    }
    out = paths.reports / "stats"
    write_frame(table, out / instance / f"{instance}_spearman")
    _write_json(result, out / f"{instance}.json")
    return result


def run_ratings(instance: str, params: Params, paths: Paths) -> "pd.DataFrame":
    """The instance's leaderboard: ``reports/leaderboards/<instance>.csv``, the market's board
    with every player's validity columns beside mu (``metrics.validity.with_validity``) and
    whether its rank is provisional, provisional players ranked after the settled ones
    (``ratings.with_provisional``, params ``ratings.provisional``)."""
    import pandas as pd

    from marketarena.metrics.validity import with_validity
    from marketarena.ratings import with_provisional

    analysis, mp = analysis_for(params, instance)
    agents = pd.read_parquet(paths.metrics(instance) / "agents.parquet")
    validity = paths.metrics(instance) / "validity.parquet"
    board = analysis.leaderboard(agents, mp, params.ratings, params.stats)
    board = with_validity(
        board,
        pd.read_parquet(validity) if validity.is_file() else None,
        params.ratings.flag_fallback_above,
    )
    rule = params.ratings.provisional
    board = with_provisional(board, rule.min_games, rule.max_rank_width)
    out = paths.reports / "leaderboards"
    out.mkdir(parents=True, exist_ok=True)
    board.to_csv(out / f"{instance}.csv", index=False, float_format="%.6g")
    return board


def run_figures(instance: str, params: Params, paths: Paths) -> list[Path]:
    """The instance's figures and tables: ``reports/figures/<instance>/``,
    ``reports/tables/<instance>/``, and what each figure draws as CSV (``Paths.figure_data``)."""
    from marketarena.plots.aside import rendering_aside
    from marketarena.plots.style import figure_data

    analysis, mp = analysis_for(params, instance)
    with figure_data(paths.figure_data(instance)), rendering_aside(params.execution.resolve()):
        return analysis.draw_figures(
            paths.metrics(instance),
            paths.reports / "figures" / instance,
            paths.reports / "tables" / instance,
            mp,
            instance,
        )


def run_overall(params: Params, paths: Paths) -> "pd.DataFrame":
    """The standing across market instances (``overall.overall_board``), every LLM under its
    model's identity (``identity.py``, params ``identities``): ``reports/overall/overall.csv`` and
    ``overall.md`` (the same table under its caption, or one line saying why it is empty);
    ``reports/overall/models.csv``, every LLM name of every instance with the identity it was read
    as (and the names the rule could not place, listed in ``overall.md``);
    ``reports/overall/matrix.csv`` and ``matrix.md``, every model by instance
    (``overall.model_matrix``); ``agreement.{csv,md,png}``, whether each two instances rank their
    common models alike (``overall.study_agreement``); and the Economic Alignment Score across
    markets (``metrics.eas.cross_market_table``): ``reports/overall/eas.{csv,md}``."""
    import pandas as pd

    from marketarena.metrics.eas import cross_market_table
    from marketarena.overall import (
        MODELS_COLUMNS,
        agreement_markdown,
        draw_agreement,
        instance_players,
        matrix_markdown,
        model_matrix,
        overall_board,
        study_agreement,
    )
    from marketarena.plots.tables import markdown_table

    boards, players, eas_frames, identities, models = {}, {}, {}, {}, []
    for instance in params.markets:
        mp = params.markets[instance]
        rules = market_kind(mp.market).rules
        boards[instance] = pd.read_csv(paths.reports / "leaderboards" / f"{instance}.csv")
        agents = pd.read_parquet(paths.metrics(instance) / "agents.parquet")
        roster = [
            (
                e.name,
                e.player,
                (params.models[e.model].model if e.model in params.models else e.model)
                if e.kind == "llm"
                else None,
                rules.harness_of(e),
            )
            for e in mp.roster
        ]
        found = instance_players(instance, roster, agents, params.identities)
        players[instance] = found.keys
        identities.update(found.identities)
        models += found.rows
        if "eas" in agents.columns:
            eas_frames[instance] = (mp.market, agents)
    overall, note = overall_board(boards, players, identities, params.ratings.flag_fallback_above)
    out = paths.reports / "overall"
    out.mkdir(parents=True, exist_ok=True)
    overall.to_csv(out / "overall.csv", index=False, float_format="%.6g")
    names = pd.DataFrame(models, columns=MODELS_COLUMNS)
    names.to_csv(out / "models.csv", index=False)
    unplaced = sorted(set(names.loc[names["placed"] == "unplaced", "written"]))
    caption = (
        "Cross-market standing: mean percentile rank (1 = top of an instance's board, 0 = "
        "bottom) over the market instances each player played (players in two or more instances "
        "only; an LLM under its model's identity, `models.csv`), and how its decisions were "
        "answered over them: valid at once, after re-asks, by the fallback (shares of its "
        "decisions), the fallbacks split into answers that did not parse (format) and answers "
        "that broke a market rule, and ⚑ (`flagged`) where the fallback share is above "
        f"{params.ratings.flag_fallback_above:g} (params `ratings.flag_fallback_above`)."
    )
    from marketarena.report.board import MARKS, mark

    shown = overall.assign(
        **{c: [mark(v, m) for v in overall[c]] for c, m in MARKS.items() if c in overall}
    )  # the flag as the boards show it: a mark (the CSV keeps True / False)
    text = note if note else markdown_table(shown, caption=caption)
    if unplaced:
        text += (
            "\n\nModel names no family of the identity rule starts, each kept as its own model "
            "(place them with params `identities`): " + ", ".join(f"`{n}`" for n in unplaced) + "."
        )
    (out / "overall.md").write_text(text + "\n", encoding="utf-8")
    matrix = model_matrix(boards, players, identities)
    matrix.to_csv(out / "matrix.csv", index=False, float_format="%.6g")
    (out / "matrix.md").write_text(matrix_markdown(matrix) + "\n", encoding="utf-8")
    st = params.stats
    agreement = study_agreement(matrix, st.n_boot, st.seed, st.n_perm)
    agreement.to_csv(out / "agreement.csv", index=False, float_format="%.6g")
    (out / "agreement.md").write_text(agreement_markdown(agreement) + "\n", encoding="utf-8")
    figure = out / "agreement.png"
    figure.unlink(missing_ok=True)
    if len(agreement):
        draw_agreement(agreement, figure)
    eas, eas_note = cross_market_table(eas_frames, players)
    eas.to_csv(out / "eas.csv", index=False, float_format="%.6g")

    caption = (
        "Economic Alignment Score across crash and lemon, per player who played both: "
        "stability and profitability from crash, integrity from lemon, welfare from both "
        "(each market kind counting once), each on fixed anchors; eas is their mean, "
        "eas_<market> the player's EAS within each market."
    )
    (out / "eas.md").write_text(
        (markdown_table(eas, caption=caption) + "\n") if not eas.empty else eas_note + "\n",
        encoding="utf-8",
    )
    return overall


def run_report(params: Params, paths: Paths) -> list[Path]:
    """The results site (``report.site``): ``reports/site/index.html`` and a page per instance.
    A figure or table without a caption is marked on its page and named here."""
    import sys

    from marketarena.report.site import build_site

    written, problems = build_site(params, paths)
    for line in problems:
        print(f"warning: {line}", file=sys.stderr)
    return written
