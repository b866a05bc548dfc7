"""How the pipeline plays lemon (``LemonRules``): per cell of the settings grid
(``LemonParams.cells``) the honest seats ``H1..``, the principal ``P1`` deciding for its identity
seats ``S1..`` (the pool of ``market.identity_pool``), the buyer seats ``B1..`` held by the cell's
buyer group in turn; and a joint instance's runs (issue 53, ``params.py``): each LLM entry in
every buyer seat of the authors' grid, on their buyer's prompts (``authors_buyer.py``, which
reads the files named here)."""

from __future__ import annotations

from pathlib import Path

from marketarena.core.rules import EpisodeSpec, MarketRules, Seat, publisher_files
from marketarena.markets.lemon.baselines import STRATEGIES
from marketarena.markets.lemon.market import LemonMarket, identity_pool
from marketarena.markets.lemon.observations import render_messages
from marketarena.markets.lemon.params import LemonParams

#: their files the buyer's prompt is built from (relative to the repository's root)
FILES = ("ai_bazaar/agents/buyer.py", "ai_bazaar/agents/llm_agent.py")
#: their constants the harness reads (personas, tier qualities)
COMMON = "ai_bazaar/utils/common.py"


def seller_seats(mp: LemonParams, k: int) -> list[Seat]:
    """The honest seats ``H1..``, the principal ``P1`` and its identity seats ``S1..`` of a cell
    with K identities."""
    by_name = {e.name: e for e in mp.roster}
    out = [Seat(f"H{i + 1}", by_name[mp.honest], "honest") for i in range(mp.sellers - k)]
    out.append(Seat("P1", by_name[mp.principal], "principal"))
    return out + [
        Seat(f"S{i + 1}", by_name[mp.principal], "identity", actor="P1")
        for i in range(identity_pool(mp, k))
    ]


class LemonRules(MarketRules):
    """How the pipeline plays lemon: per cell of the settings grid (``LemonParams.cells``) the
    honest seats ``H1..``, the principal ``P1`` deciding for its identity seats ``S1..`` (the
    pool of :func:`identity_pool`), the buyer seats ``B1..`` held by the cell's buyer group in
    turn. An imported instance plays only its LLM entries' runs (a joint instance, issue 53:
    ``params.py``): the authors' grid, every buyer seat the entry's, on their buyer's prompts."""

    kind = "lemon"
    params_model = LemonParams
    strategies = STRATEGIES
    harnesses = ("plain", "skeptical", "agent_bazaar")
    # their buyer's code, from the user's copy (imported when a seat plays on it)
    own_harnesses = {"agent_bazaar": "marketarena.markets.lemon.authors_buyer:AuthorsBuyer"}
    # an entry is an honest seller, the deceptive principal (with its identities) or a buyer
    role_keys = {
        "honest": "honest",
        "principal": "principal",
        "identity": "principal",
        "buyer": "buyer_groups",
    }
    role_sides = {
        "honest": "the honest seller",
        "principal": "the deceptive principal",
        "identity": "the deceptive principal",
        "buyer": "a buyer",
    }
    cost_seat = "naive"

    def seating_period(self, mp: LemonParams) -> int | None:
        return None if mp.imported else len(mp.cells)

    def may_sit_out(self, mp: LemonParams) -> set[int]:
        """A joint instance's baselines: its entrants' runs seat only the honest seller and the
        principal, and the buyer groups play the reference sweep."""
        return {i for i, e in enumerate(mp.roster) if e.kind != "llm"} if mp.imported else set()

    def input_files(self, mp: LemonParams, data_dir: Path) -> list[Path]:
        """Their buyer's code an entry on the ``agent_bazaar`` harness runs (in its runs'
        fingerprint: an edited file replays them), relative to the project root."""
        return publisher_files(mp, data_dir, "agent_bazaar", "code", (*FILES, COMMON))

    def plan(self, mp: LemonParams) -> list[EpisodeSpec]:
        """The grid's runs; an imported instance's: each LLM entry's runs of ``joint_grid``."""
        if not mp.imported:
            return super().plan(mp)
        return [
            self.entrant_episode(mp, i, n, cell)
            for i in mp.entrants
            for n, cell in enumerate(mp.joint_grid.cells())
        ]

    def entrant_episode(
        self, mp: LemonParams, entrant: int, n: int, cell: tuple[int, bool, int]
    ) -> EpisodeSpec:
        """Run ``n`` of the LLM entry at roster index ``entrant`` in a joint instance: the cell
        (K, reputation shown, the authors' seed), the honest seats and the principal the
        instance's, every buyer seat the entry's. ``run`` = n (the LLM sample)."""
        k, rep, seed = cell
        steps = mp.joint_grid.steps or mp.steps
        entry = mp.roster[entrant]
        seats = seller_seats(mp.model_copy(update={"steps": steps}), k)
        seats += [Seat(f"B{i + 1}", entry, "buyer") for i in range(mp.buyers)]
        setting = (("sybil", k), ("reputation_visible", rep), ("buyers", entry.name))
        return EpisodeSpec(
            f"new-{entry.name}-k{k}-rep{int(rep)}-s{seed}",
            n,
            seed,
            tuple(seats),
            (*setting, ("steps", steps)),
        )

    def seating_hint(self, mp: LemonParams, entry) -> str:
        return (
            f"name it in markets.{mp.instance}.honest, .principal or .buyer_groups (each of "
            f"the {len(mp.cells)} cells needs a run: runs is {mp.runs})"
        )

    def seats(self, mp: LemonParams, run: int) -> list[Seat]:
        k, _, group = mp.cell_of(run)
        by_name = {e.name: e for e in mp.roster}
        buyers = [by_name[group[i % len(group)]] for i in range(mp.buyers)]
        return seller_seats(mp, k) + [Seat(f"B{i + 1}", e, "buyer") for i, e in enumerate(buyers)]

    def episode(self, mp: LemonParams, run: int) -> EpisodeSpec:
        e = super().episode(mp, run)
        k, rep, group = mp.cell_of(run)
        return EpisodeSpec(
            e.episode_id,
            run,
            e.seed,
            e.seats,
            (("sybil", k), ("reputation_visible", rep), ("buyers", "+".join(group))),
        )

    def build_market(self, mp: LemonParams, resources, episode: EpisodeSpec) -> LemonMarket:
        steps = episode.get("steps", mp.steps)
        if steps != mp.steps:  # a joint instance's grid plays its own steps
            mp = mp.model_copy(update={"steps": steps})
        role = {}
        for s in episode.seats:
            role.setdefault(s.role, []).append(s.agent_id)
        return LemonMarket(
            mp,
            role.get("honest", []),
            "P1",
            role.get("identity", []),
            role.get("buyer", []),
            episode.get("sybil"),
            episode.get("reputation_visible"),
            episode.get("buyers"),
        )

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)
