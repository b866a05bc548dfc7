"""lemon: Agent Bazaar's C2C market, "The Lemon Market" (seed 001, section 3.2; DESIGN.md 7.4).

Honest sellers and a deceptive principal's Sybil identities list used cars; buyers see a few
listings, bid or pass, and vote on the seller; reputation is the up-share of the last votes, and an
identity under 0.3 is retired and replaced. Rules: ``rules.py`` (reputation, anonymised ids) and
``market.py`` (the three decision points of a step); what agents see and answer:
``observations.py`` + ``templates/`` (descriptions reach buyers only as quoted, capped data:
``core.prompts.quote_text``); params and the settings grid: ``params.py``; scripted agents and
their description banks: ``baselines.py``, ``styles.yaml``; metrics and the EAS: ``metrics.py``;
figures: ``plots/lemon.py``.

Seats and players: the principal is one player (seat ``P1``) deciding, in one answer, for its
identity seats ``S1..`` (their actor is ``P1``); its score sums them. LLM buyers may use the
``skeptical`` harness (``agents/harnesses/skeptical.py``), the seed's Skeptical Guardian.

Reference stage: ``reference@<instance>`` plays the instance's configuration with K = 0 (LLM
buyers replaced by the scripted ``reputation`` buyer, documented in the summary) and writes its
volume (bids per step), the base of the EAS's market-survival term, like double_auction's CSα table.

Imported instances (``source: {format: agent_bazaar, path: <logs-data>}``, the authors' own LLM
runs, ``agent_bazaar.py``; docs/agent-bazaar-lemon.md): the simulate stage imports the runs; the
reference stage plays our scripted sweep of the instance's grid with its roster instead (the seed's
Figure 4 from our rules, drawn beside the authors', ``figure4.py``); the metrics stage takes the
K = 0 volume from the imported runs themselves (``authors.own_reference``), replays their steps
under our rules (``replay.py``) and computes the authors' own lemon EAS (``authors.py``); the
board adds each buyer model's invalid-answer rate where its prompt logs are present; the figures
stage draws ``plots/lemon_authors.py``.

Prompts: the seed's appendix A prompt boxes are empty; the templates follow the authors' code
(sethkarten/AI-Bazaar: agents/buyer.py, seller.py, sybil.py), paraphrased: the buyer
is told the typical price range of each tier and that some sellers misrepresent car quality, and
sees price, description and reputation; the honest seller is told its car's condition and range
and picks a price in it. Added: the quoted-data note on descriptions and the answer formats.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.params import RosterEntry
from marketarena.core.plugin import EpisodeSpec, MarketPlugin, Seat, read_metrics
from marketarena.core.reader import OnceReader
from marketarena.core.runner import play_episode
from marketarena.core.summary import per_agent_summary
from marketarena.markets.lemon import metrics as lemon_metrics
from marketarena.markets.lemon.baselines import STRATEGIES
from marketarena.markets.lemon.market import LemonMarket, identity_pool
from marketarena.markets.lemon.observations import render_messages
from marketarena.markets.lemon.params import TIERS, LemonParams

#: what stands in for an LLM seat in the K = 0 reference
REFERENCE_STAND_IN = "reputation"


def reference_key(reputation_visible: bool, buyers: str) -> str:
    """The key of a cell's K = 0 reference volume in ``summary.json``."""
    return f"{'shown' if reputation_visible else 'hidden'}/{buyers}"


def summary_path(data_dir: Path, instance: str) -> Path:
    return Path(data_dir) / "references" / instance / "summary.json"


class LemonPlugin(MarketPlugin):
    kind = "lemon"
    params_model = LemonParams
    strategies = STRATEGIES
    harnesses = ("plain", "skeptical")
    rank_by = "score"
    metric_columns = lemon_metrics.AGENT_METRICS
    seat_score = "sum"  # the principal's identities add up
    # an entry is an honest seller, the deceptive principal (with its identities) or a buyer
    role_keys = {"honest": "honest", "principal": "principal", "identity": "principal",
                 "buyer": "buyer_groups"}
    role_sides = {"honest": "the honest seller", "principal": "the deceptive principal",
                  "identity": "the deceptive principal", "buyer": "a buyer"}
    source_formats = ("agent_bazaar",)
    #: the authors' lemon market (docs/agent-bazaar-lemon.md): each run's arguments are checked
    #: against these; the roster plays our scripted sweep of the same grid beside theirs
    source_params = {"agent_bazaar": {
        "sellers": 12, "buyers": 12, "steps": 50, "sybil": [0, 3, 6, 9],
        "reputation_visible": [True, False], "discovery_limit": 3, "reference_episodes": 3,
        "honest": "honest", "principal": "sybil", "buyer_groups": [["guardian"], ["naive"]],
        "roster": [{"name": n, "kind": "baseline", "strategy": n}
                   for n in ("honest", "sybil", "guardian", "naive")]}}

    def seating_period(self, mp: LemonParams) -> int:
        return len(mp.cells)

    def seating_hint(self, mp: LemonParams, entry) -> str:
        return (f"name it in markets.{mp.instance}.honest, .principal or .buyer_groups (each of "
                f"the {len(mp.cells)} cells needs a run: runs is {mp.runs})")

    def seats(self, mp: LemonParams, run: int) -> list[Seat]:
        k, _, group = mp.cell_of(run)
        by_name = {e.name: e for e in mp.roster}
        out = [Seat(f"H{i + 1}", by_name[mp.honest], "honest") for i in range(mp.sellers - k)]
        out.append(Seat("P1", by_name[mp.principal], "principal"))
        out += [Seat(f"S{i + 1}", by_name[mp.principal], "identity", actor="P1")
                for i in range(identity_pool(mp, k))]
        out += [Seat(f"B{i + 1}", by_name[group[i % len(group)]], "buyer") for i in range(mp.buyers)]
        return out

    def episode(self, mp: LemonParams, run: int) -> EpisodeSpec:
        e = super().episode(mp, run)
        k, rep, group = mp.cell_of(run)
        return EpisodeSpec(e.episode_id, run, e.seed, e.seats,
                           (("sybil", k), ("reputation_visible", rep), ("buyers", "+".join(group))))

    def build_market(self, mp: LemonParams, resources, episode: EpisodeSpec) -> LemonMarket:
        role = {}
        for s in episode.seats:
            role.setdefault(s.role, []).append(s.agent_id)
        return LemonMarket(mp, role.get("honest", []), "P1", role.get("identity", []),
                           role.get("buyer", []), episode.get("sybil"),
                           episode.get("reputation_visible"), episode.get("buyers"))

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    # ------------------------------------------------------------------ published games
    def import_source(self, mp: LemonParams, source: Path, out: Path) -> dict:
        """Agent Bazaar's lemon runs under ``source`` (their ``logs-data`` folder), one episode
        per run (``agent_bazaar.py``), converted in worker processes (one per core, at most 8)."""
        import os

        from marketarena.markets.lemon import agent_bazaar

        return agent_bazaar.import_runs(mp, Path(source), Path(out),
                                        workers=min(8, os.cpu_count() or 1))

    # ------------------------------------------------------------------ the K = 0 reference
    def compute_reference(self, mp: LemonParams, out_dir: Path, workers: int = 1) -> dict:
        """Bids per step of the configuration with K = 0, per (reputation visibility, buyer group):
        the mean over ``reference_episodes`` episodes (seeds from (seed, 10**6 + i)), LLM seats
        played by the scripted ``reputation`` buyer. An imported instance: our scripted sweep of
        its grid instead (``figure4.sweep``, ``reference_episodes`` seeds per cell), whose
        Figure 4 series (``sweep.parquet``) the figures draw beside the authors' runs."""
        if mp.imported:
            from marketarena.markets.lemon import figure4

            llm = [e.name for e in mp.roster if e.kind == "llm"]
            if llm:
                raise ValueError(f"markets.{mp.instance}.roster: an imported instance's roster "
                                 f"plays our scripted sweep beside the imported runs; {llm} "
                                 "are LLM entries (name baselines)")
            frame = figure4.sweep(self, mp, mp.reference_episodes)
            frame.to_parquet(Path(out_dir) / "sweep.parquet", index=False)
            return {"sweep_episodes": int(frame["episode_id"].nunique()),
                    "seeds_per_cell": mp.reference_episodes,
                    "volume_k0": "from the imported runs' own K = 0 runs (metrics stage)"}
        stand_in = RosterEntry(name=REFERENCE_STAND_IN, kind="baseline", strategy=REFERENCE_STAND_IN)
        roster = [e if e.kind == "baseline" else stand_in.model_copy(update={"name": e.name})
                  for e in mp.roster]
        volumes = {}
        for rep in mp.reputation_visible:
            for group in mp.buyer_groups:
                ref = mp.model_copy(update={"sybil": [0], "reputation_visible": [rep],
                                            "buyer_groups": [group], "roster": roster})
                bids = []
                for i in range(mp.reference_episodes):
                    spec = self.episode(ref, 0)
                    seed = int(np.random.SeedSequence([mp.seed, 10**6 + i]).generate_state(1)[0])
                    spec = EpisodeSpec(spec.episode_id, i, seed, spec.seats, spec.setting)
                    market, agents, _ = self.build_episode(ref, None, spec)
                    b = play_episode(market, agents, spec.seed).tables["bids"]
                    bids.append((b["decision"] == "bid").sum() / mp.steps)
                volumes[reference_key(rep, "+".join(group))] = float(np.mean(bids))
        return {"volume_k0": volumes, "episodes": mp.reference_episodes,
                "stand_in_for_llm_seats": REFERENCE_STAND_IN}

    def compute_metrics(self, reader, mp: LemonParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        if mp.imported:
            return self._imported_metrics(reader, mp, data_dir)
        volume = json.loads(summary_path(data_dir, mp.instance).read_text())["reference"]["volume_k0"]
        return lemon_metrics.compute(reader, mp.eas, volume, {t: mp.tier_value(t) for t in TIERS},
                                     mp.surplus_anchors())

    def _imported_metrics(self, reader, mp: LemonParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        """An imported instance's metrics: ours with the K = 0 volume of its own runs, each
        buyer seat's logged answers and invalid ones (``answers``, ``answers_invalid``: NaN
        without a prompt log), the replay, the authors' own EAS, and the Figure 4 series of
        their runs (``fig4_authors``) and of our sweep (``fig4_ours``, the reference stage's)."""
        from marketarena.markets.lemon import authors, figure4, replay

        reader = OnceReader(reader.require())
        setting, bids = reader.table("setting"), reader.table("bids")
        reference = authors.own_reference(setting, bids)
        frames = lemon_metrics.compute(reader, mp.eas, authors.reference_volumes(reference),
                                       {t: mp.tier_value(t) for t in TIERS}, mp.surplus_anchors())
        decisions = reader.table("decisions")
        agents = frames["agents"]
        if len(decisions):
            buy = decisions[decisions["phase"] == "buy"].groupby(["episode_id", "agent_id"])
            counts = pd.DataFrame({"answers": buy.size(),
                                   "answers_invalid": buy["valid"].apply(lambda v: (~v).sum())})
            agents = agents.join(counts, on=["episode_id", "agent_id"])
            logged = agents["episode_id"].isin(decisions["episode_id"]) & (agents["role"] == "buyer")
            agents.loc[logged, ["answers", "answers_invalid"]] = agents.loc[
                logged, ["answers", "answers_invalid"]].fillna(0)
        else:
            agents = agents.assign(answers=np.nan, answers_invalid=np.nan)
        frames["agents"] = agents
        frames.update(replay.replay(reader, mp))
        frames["their_score_runs"] = authors.their_runs(setting, reader.table("market_steps"))
        frames["their_score"] = authors.their_models(frames["their_score_runs"], setting)
        frames["reference_volume"] = reference
        frames["fig4_authors"] = figure4.series(reader.table("listings"), bids,
                                                reader.table("reputation"), setting)
        sweep = Path(data_dir) / "references" / mp.instance / "sweep.parquet"
        frames["fig4_ours"] = pd.read_parquet(sweep) if sweep.is_file() else pd.DataFrame()
        return frames

    def leaderboard(self, agents: pd.DataFrame, mp: LemonParams, ratings, stats) -> pd.DataFrame:
        """Buyers and sellers on separate boards (a role column). Sellers (honest and the
        principal, its identities summed) by revenue, TrueSkill by player. Buyers by their total
        surplus, TrueSkill when kinds share episodes; in cells of one buyer kind they never meet,
        so kinds are ranked by the mean EAS of their episodes; buyers carry their EAS components
        (from their own seats), the EAS on fixed anchors (95% interval), the seed's relative EAS
        and the market's components of their episodes, named ``market_*``
        (``metrics.eas.eas_board``). The pipeline adds every player's validity columns."""
        from marketarena.metrics.eas import eas_board
        from marketarena.ratings import leaderboard

        boards = []
        for role, rows in (("buyer", agents[agents["role"] == "buyer"]),
                           ("seller", agents[agents["role"].isin(["honest", "principal"])])):
            if rows["name"].nunique() == 0:
                continue
            seat_score = "mean" if role == "buyer" else "sum"
            board = leaderboard(rows, "score", ratings, stats, seat_score=seat_score)
            board.insert(1, "role", role)
            if role == "buyer":
                board = board.merge(eas_board(rows, mp.eas, stats.n_boot, stats.seed), on="name",
                                    how="left")
                if board["mu"].isna().all():  # buyer kinds never met: rank by EAS
                    board = board.sort_values("eas_mean", ascending=False, kind="stable")
                    board["rank"] = range(1, len(board) + 1)
                if "answers" in rows.columns:  # imported: answers re-parsed from prompt logs
                    answered = rows.groupby("name")[["answers", "answers_invalid"]].sum(
                        min_count=1)
                    answered["invalid_answer_rate"] = answered["answers_invalid"] / answered[
                        "answers"].where(answered["answers"] > 0)
                    board = board.merge(answered.reset_index(), on="name", how="left")
            boards.append(board)
        return pd.concat(boards, ignore_index=True)

    def stop_rows(self, agents: pd.DataFrame, mp: LemonParams, player: str):
        """The stopping rule rates a player on its side's board (:meth:`leaderboard`): a seller
        among the sellers by revenue (the principal's identities summed), a buyer among the
        buyers by score, or, where every cell seats one buyer kind (kinds never meet), by its
        episodes' EAS (a look by mean, ``stopping.look_mean``)."""
        if not any(player in group for group in mp.buyer_groups):
            return agents[agents["role"].isin(["honest", "principal"])], "score", "sum"
        buyers = agents[agents["role"] == "buyer"]
        if all(len(set(group)) == 1 for group in mp.buyer_groups):
            return buyers.dropna(subset=["eas"]), "eas", "mean"
        return buyers, "score", "mean"

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: LemonParams, instance: str) -> list[Path]:
        from marketarena.plots import lemon as plots

        frames = read_metrics(metrics_dir, ("market", "agents", "steps", "reputation"))
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        if mp.imported:
            from marketarena.plots import lemon_authors

            frames.update(read_metrics(metrics_dir, lemon_authors.FRAMES))
            return lemon_authors.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir),
                                          instance)
        return plots.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir), instance)

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        listings = result.tables["listings"]
        sold = listings[listings["sold"]]
        totals = pd.DataFrame(index=table["agent_id"])
        totals["revenue"] = sold.groupby("seller")["price"].sum()
        totals["sales"] = sold.groupby("seller").size()
        totals["purchases"] = sold.groupby("buyer").size()
        identities = table.loc[table["role"] == "identity", "agent_id"]
        totals.loc["P1", "revenue"] = totals.loc[identities, "revenue"].sum()
        totals = totals.fillna(0.0)
        return per_agent_summary(table, totals, result.decisions, sort_by="revenue")


PLUGIN = LemonPlugin()
