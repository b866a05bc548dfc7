"""Who plays where: the seating of an instance's planned episodes, checked before any episode.

Computed once per run from the plan (``MarketRules.plan``), by ``simulate`` before it touches an
episode, by ``play``, and by ``marketarena validate``, which prints it. Three checks, generic over
every market; each error names the params key to change:

- **every roster entry plays**: an entry that no planned episode seats would silently be left out
  of the run and off the boards. The market's :meth:`~marketarena.core.rules.MarketRules.
  seating_hint` says which key would seat it (``markets.crash.competitors``, ``runs: 15`` for a
  whole round robin, ...);
- **every seat's role is one its player can play**: a scripted strategy declares the roles it plays
  (:attr:`~marketarena.core.scripted.ScriptedAgent.roles`, ``None``: any), so do harnesses
  (:attr:`~marketarena.agents.harnesses.base.Harness.roles`); a seller strategy in lemon's buyer
  seats would otherwise answer every decision invalidly, a configuration error scored as answers;
- **roles that exclude each other are held by different entries**: a market maps roles to *sides*
  (``MarketRules.role_sides``, e.g. lemon's honest seller, deceptive principal, buyer), and one
  entry may sit on one side only.

The summary (:class:`Seating`) holds per entry the episodes it plays, its seats, its roles and how
often it meets every other entry; ``validate`` prints it compactly (:func:`describe`). The
meetings come from one sparse product (episodes x entries), so 90,000 double_auction games cost a
fraction of a second on top of their plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.core.params import MarketParams
    from marketarena.core.rules import EpisodeSpec, MarketRules


@dataclass
class Seating:
    """Per roster entry (roster order): ``episodes`` it plays, ``seats`` it holds over the plan,
    its ``roles``; ``meetings[i, j]``: episodes entries i and j both play (diagonal: episodes)."""

    names: list[str]
    episodes: np.ndarray
    seats: np.ndarray
    roles: list[set[str]]
    meetings: np.ndarray
    n_episodes: int


def seating(mp: "MarketParams", specs: Sequence["EpisodeSpec"]) -> Seating:
    """The seating of the planned episodes ``specs`` of instance ``mp``."""
    index = {e.name: i for i, e in enumerate(mp.roster)}
    rows, cols, held = [], [], set()
    for k, spec in enumerate(specs):
        for seat in spec.seats:
            i = index[seat.entry.name]
            rows.append(k)
            cols.append(i)
            held.add((i, seat.role))
    return _summary(
        mp, len(specs), np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), held
    )


def from_matrix(mp: "MarketParams", matrix: np.ndarray, roles: Sequence[str]) -> Seating:
    """The seating of episodes given as an (episodes x seats) array of roster indices, seat
    position j holding role ``roles[j]`` in every episode (``MarketRules.seat_matrix``)."""
    held = {(int(i), roles[j]) for j in range(matrix.shape[1]) for i in np.unique(matrix[:, j])}
    rows = np.repeat(np.arange(matrix.shape[0]), matrix.shape[1])
    return _summary(mp, matrix.shape[0], rows, matrix.ravel().astype(np.int64), held)


#: above this many (episode, entry) cells the meetings are counted on a sparse matrix
_DENSE_CELLS = 4_000_000


def _summary(
    mp: "MarketParams",
    n_episodes: int,
    rows: np.ndarray,
    cols: np.ndarray,
    held: set[tuple[int, str]],
) -> Seating:
    """Episodes, seats and meetings from the (episode, entry) pair of every seat. A plan of up
    to :data:`_DENSE_CELLS` (episode, entry) cells is counted in a dense array: importing scipy
    for its sparse matrix took 0.18 s of every run's start, before its first episode (crash's
    LLM benchmark); the counts are the same (integers, exact in floating point far beyond any
    plan's episodes)."""
    names = [e.name for e in mp.roster]
    if n_episodes * len(names) <= _DENSE_CELLS:
        incidence = np.zeros((n_episodes, len(names)), dtype=np.int64)
        np.add.at(incidence, (rows, cols), 1)  # seats per (episode, entry)
        seats = incidence.sum(axis=0)
        played = (incidence > 0).astype(np.float64)  # plays in the episode or not
        meetings = np.rint(played.T @ played).astype(np.int64)
    else:
        from scipy import sparse

        incidence = sparse.csr_matrix(
            (np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n_episodes, len(names))
        )
        seats = np.asarray(incidence.sum(axis=0)).ravel()
        incidence.data[:] = 1
        meetings = np.asarray((incidence.T @ incidence).todense())
    roles: list[set[str]] = [set() for _ in names]
    for i, role in held:
        roles[i].add(role)
    return Seating(names, np.diag(meetings).copy(), seats, roles, meetings, n_episodes)


def of_plan(rules: "MarketRules", mp: "MarketParams") -> Seating:
    """The seating of the instance's whole plan without planning every episode: from the market's
    own seat matrix when it has one (``MarketRules.seat_matrix``: double_auction's random draws,
    computed in bulk), or from one period when the market repeats its seating
    (``MarketRules.seating_period``: the cells of a grid, the lineups of a round robin), ``runs =
    q x period + r`` seating as q whole periods plus the first r episodes; otherwise the plan. So
    ``validate`` stays fast at a million runs and at BAZAAR's 90,000 games."""
    fast = rules.seat_matrix(mp)
    if fast is not None:
        return from_matrix(mp, *fast)
    period = rules.seating_period(mp)
    if period is None or period >= mp.runs:
        return seating(mp, rules.plan(mp))
    first = [rules.episode(mp, run) for run in range(period)]
    whole, rest = divmod(mp.runs, period)
    one, part = seating(mp, first), seating(mp, first[:rest])
    return Seating(
        one.names,
        whole * one.episodes + part.episodes,
        whole * one.seats + part.seats,
        one.roles,
        whole * one.meetings + part.meetings,
        mp.runs,
    )


def check(
    rules: "MarketRules",
    mp: "MarketParams",
    s: Seating,
    harness_roles: Callable[[str], frozenset[str] | None],
) -> Seating:
    """``s`` when every entry is seated in roles it can play, else ``ValueError("<key>: <problem>")``
    (key relative to the instance, as ``check_params`` raises) when an entry plays no episode, sits
    in a role it cannot play, or holds roles that exclude each other. ``harness_roles``: the roles
    of an LLM harness by name (None: any), from the layer that knows the harnesses."""
    for i, entry in enumerate(mp.roster):
        allowed = rules.roles_of(entry, harness_roles)
        wrong = sorted(s.roles[i] - allowed) if allowed is not None else []
        if wrong:
            what = (
                f"strategy {entry.strategy!r}"
                if entry.kind == "baseline"
                else f"harness {rules.harness_of(entry)!r}"
            )
            raise ValueError(
                f"{rules.role_keys.get(wrong[0], 'roster')}: seats {entry.name!r} as "
                f"{wrong[0]}, a role its {what} cannot play (it plays "
                f"{', '.join(sorted(allowed))}); seat another entry there"
            )
        sides = sorted({rules.role_sides[r] for r in s.roles[i] if r in rules.role_sides})
        if len(sides) > 1:
            keys = sorted(
                {rules.role_keys.get(r, "roster") for r in s.roles[i] if r in rules.role_sides}
            )
            raise ValueError(
                f"{keys[-1]}: {entry.name!r} would be both {sides[0]} and {sides[1]} "
                f"(named in {' and '.join(keys)}), which exclude each other; give each "
                "side its own roster entry"
            )
    spare = rules.may_sit_out(mp)
    for i, entry in enumerate(mp.roster):
        if s.episodes[i] == 0 and i not in spare:
            raise ValueError(
                f"roster.{i}: {entry.name!r} is seated in none of the {s.n_episodes} "
                f"planned episodes, so it would never play; "
                f"{rules.seating_hint(mp, entry)}"
            )
    return s


def describe(s: Seating, width: int = 4) -> list[str]:
    """Lines for ``marketarena validate``: a table of the entries with their roles, episodes (and
    seats when some entry holds several per episode) and opponents: by name with the episodes
    shared when there are at most ``width`` of them, else how many it meets and how often."""
    several = bool((s.seats > s.episodes).any())
    rows = [["player", "roles", "episodes"] + ["seats"] * several + ["opponents"]]
    for i, name in enumerate(s.names):
        met = s.meetings[i].copy()
        met[i] = 0
        others = [(s.names[j], int(met[j])) for j in np.flatnonzero(met)]
        if not others:
            against = "none"
        elif len(others) <= width:
            against = ", ".join(f"{n} {k}" for n, k in others)
        else:
            counts = [k for _, k in others]
            spread = (
                f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
            )
            against = f"{len(others)} of {len(s.names) - 1}, {spread} episodes with each"
        rows.append(
            [name, ", ".join(sorted(s.roles[i])), str(int(s.episodes[i]))]
            + [str(int(s.seats[i]))] * several
            + [against]
        )
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    return [
        "  "
        + "  ".join(
            [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
            + [v.rjust(w) for v, w in zip(r[2:-1], widths[2:])]
            + [r[-1]]
        )
        for r in rows
    ]
