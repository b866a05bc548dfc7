"""How a joint crash instance plays its LLM entries (issue 53, ``params.py``): each entry's runs of
the authors' exp1 grid (``CrashParams.joint_grid``), the entry in every firm seat as their model
was, on their firm's code (``authors_firm.py``), in their engine's setting
(``CrashParams.joint_setting``).

A run ``new-<entry>-k<S>-d<L>-s<seed>`` (the imported runs are ``<model>-k<S>-d<L>-s<seed>``)
seats five firms under the authors' names, which their code shows in its prompts: the stabilizing
firms first (``stabilizing_firm`` when there is one, else ``stabilizing_firm_1``..), then the
competitors ``competitive_1``.. (their default persona, ``competitive``). Its seed is the authors'
seed (our market's draws: their consumers and shoppers are not reproduced). Its ``setting`` table
carries the entry as the run's ``model`` and the seed, as an imported run's does, so that the
board has one row per model whatever the run's origin.
"""

from __future__ import annotations

from pathlib import Path

from marketarena.core.rules import EpisodeSpec, Seat, publisher_files
from marketarena.markets.crash.params import CrashParams

#: their files the firm's prompt and bookkeeping are built from (relative to the repository)
FILES = (
    "ai_bazaar/agents/firm.py",
    "ai_bazaar/agents/llm_agent.py",
    "ai_bazaar/market_core/market_core.py",
)
#: their constants (the personas' descriptions, the ``Message`` kinds)
COMMON = "ai_bazaar/utils/common.py"
#: the good of their crash runs (one good), and the name their stabilizing firms start with
GOOD, STABILIZING = "food", "stabilizing_firm"
#: the prefix of a joint instance's new runs (an imported run's id starts with its model)
NEW = "new-"


def firm_names(stabilizing: int, firms: int) -> list[tuple[str, str]]:
    """(seat id, role) of a run with ``stabilizing`` stabilizing firms of ``firms``, as the
    authors name them."""
    if stabilizing == 1:
        stab = [STABILIZING]
    else:
        stab = [f"{STABILIZING}_{i + 1}" for i in range(stabilizing)]
    rivals = [f"competitive_{i + 1}" for i in range(firms - stabilizing)]
    return [(n, "stabilizing") for n in stab] + [(n, "competitor") for n in rivals]


def entrant_episode(mp: CrashParams, entrant: int, n: int, cell: tuple[int, int, int]):
    """Run ``n`` of the LLM entry at roster index ``entrant``: the cell (stabilizing firms,
    discovery limit, the authors' seed), every seat the entry's; ``run`` = n (the LLM sample)."""
    stabilizing, discovery, seed = cell
    entry = mp.roster[entrant]
    setting = mp.joint_setting()
    seats = tuple(Seat(name, entry, role) for name, role in firm_names(stabilizing, setting.firms))
    return EpisodeSpec(
        f"{NEW}{entry.name}-k{stabilizing}-d{discovery}-s{seed}",
        n,
        seed,
        seats,
        (
            ("discovery_limit", discovery),
            ("stabilizing", stabilizing),
            ("model", entry.name),
            ("days", setting.days),
        ),
    )


def plan(mp: CrashParams) -> list[EpisodeSpec]:
    """Every LLM entry's runs of the joint grid."""
    return [
        entrant_episode(mp, i, n, cell)
        for i in mp.entrants
        for n, cell in enumerate(mp.joint_grid.cells())
    ]


def input_files(mp: CrashParams, data_dir: Path) -> list[Path]:
    """Their firm's code an entry on the ``agent_bazaar`` harness runs (in its runs'
    fingerprint: an edited file replays them), relative to the project root."""
    return publisher_files(mp, data_dir, "agent_bazaar", "code", (*FILES, COMMON))
