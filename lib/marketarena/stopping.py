"""Stop a player's games once its rank is settled: the look at a player's games so far.

A market that plays one player's games against a field (double_auction's entrants against the
pool, english_auction's challengers against the fixed bidders) plays a fixed number of them
whatever they have settled. With a stopping rule (``markets.<instance>.stop``,
``core.params.StopRule``; off by default) ``simulate`` plays them in batches and, after each,
*looks*: it rates the player's games so far against the others' ratings held fixed, and stops
the player once its rank interval (or its μ interval) is as narrow as the rule asks, or at the
cap (the games the plan holds).

The look (:func:`look`): TrueSkill in the market's board environment, every opponent starting
from its rating on the field's board (``others``: μ, σ) and the player from the prior; the
player's μ is the median over ``passes`` shuffled passes of its games, and its 95% interval the
2.5-97.5 percentiles over ``boot`` bootstrap resamples of its games (each rated in one shuffled
pass), its half-widths shrunk by sqrt(1 - n / cap) (the finite-population correction: the
question is where its μ on all the cap's games will lie, and only the games still to come can
move it; at the cap the interval is a point). The rank of a μ is one plus the number of other
players whose μ is higher; the rank interval is that of the μ interval's ends. Opponents' ratings move a little within a lane (each
game updates every seat), but only the player's is read: the others are the field, rated on
many more games. Cheap: ``boot + passes`` lanes of the player's games in the compiled kernel
(``ratings.rate_orders``), milliseconds for hundreds of games.

Judged by its error, not its promise: ``benchmarks/bench_stopping.py`` applies it to BAZAAR's
26 LLMs, drawing each one's logged games in random order, and reports how often the stopped rank
lies within one of the rank on all its games and how many games it took, against fixed numbers
of games (docs/cost.md).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from marketarena.ratings import PreparedGames, TrueSkillParams, prepare_games, rate_orders


@dataclass(frozen=True)
class Interval:
    """A look at one player: its games, μ with its 95% bootstrap interval, and its rank (1 = the
    highest μ) with the rank interval of the μ interval."""

    games: int
    mu: float
    mu_lo: float
    mu_hi: float
    rank: int
    rank_lo: int
    rank_hi: int

    @property
    def rank_width(self) -> int:
        return self.rank_hi - self.rank_lo

    @property
    def mu_width(self) -> float:
        return self.mu_hi - self.mu_lo


def rank_of(mu: float, others: np.ndarray) -> int:
    """1 + the number of ``others`` (their μ) above ``mu``."""
    return 1 + int(np.sum(others > mu))


def look(games, player: str, others: Mapping[str, tuple[float, float]],
         ts: TrueSkillParams | None = None, boot: int = 100, passes: int = 10, seed: int = 0,
         cap: int | None = None, use: Sequence[int] | None = None) -> Interval:
    """The look at ``player`` after ``games`` (each a free-for-all: name -> score, the player in
    every one; or ``ratings.PreparedGames`` of them, ``use`` naming the ones played so far)
    against ``others`` (name -> (μ, σ), the field's board; the player left out of it): see the
    module docstring. ``cap``: the games the player may play at most; the interval then says
    where its μ on all of them will lie (its half-widths times sqrt(1 - n / cap): the games still
    to come are the only ones that can move it). Deterministic in ``seed``."""
    prep = games if isinstance(games, PreparedGames) else prepare_games(list(games))
    chosen = np.arange(prep.n_games) if use is None else np.asarray(use, dtype=np.int64)
    n = len(chosen)
    if n == 0:
        raise ValueError(f"no games of {player!r} to look at")
    rng = np.random.default_rng(seed)
    orders = [chosen[rng.permutation(n)] for _ in range(passes)]
    orders += [chosen[rng.permutation(rng.integers(0, n, size=n))] for _ in range(boot)]
    initial = {k: v for k, v in others.items() if k != player}
    players, mu, _ = rate_orders(prep, np.asarray(orders, dtype=np.int64), ts, initial=initial)
    mine = mu[:, players.index(player)]
    field = np.array([m for m, _ in initial.values()], dtype=float)
    point = float(np.median(mine[:passes]))
    lo = hi = point
    if boot:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = (float(x) for x in np.percentile(mine[passes:], [2.5, 97.5]))
        if cap:
            shrink = math.sqrt(max(0.0, 1 - n / cap))
            lo, hi = point - (point - lo) * shrink, point + (hi - point) * shrink
    return Interval(n, point, lo, hi, rank_of(point, field), rank_of(hi, field),
                    rank_of(lo, field))


def settled(interval: Interval, rank_width: int | None = None, mu_width: float | None = None,
            min_games: int = 0) -> bool:
    """Whether a look says stop: at least ``min_games`` games, and the rank interval at most
    ``rank_width`` ranks wide (``rank_hi - rank_lo``) or the μ interval at most ``mu_width``."""
    if interval.games < min_games:
        return False
    return ((rank_width is not None and interval.rank_width <= rank_width)
            or (mu_width is not None and interval.mu_width <= mu_width
                and math.isfinite(interval.mu_width)))


def field_ratings(agents, score: str, seat_score: str, ts: TrueSkillParams, passes: int = 50,
                  seed: int = 0) -> dict[str, tuple[float, float]]:
    """The field's board: name -> (median μ, median σ) over ``passes`` shuffled passes of its
    episodes (``agents``: the metrics' seats, ranked by ``score``)."""
    from marketarena.ratings import multipass, player_games

    board = multipass(player_games(agents, score, seat_score), ts, passes=passes, seed=seed)
    return {str(r.player): (float(r.mu), float(r.sigma)) for r in board.itertuples()}


class Batches:
    """The stopping rule over one ``simulate`` run (``mp.stop``; module docstring).

    ``units``: the run's planned units (``core.logs``); the players' episodes are held back
    (:attr:`held`) until :meth:`rounds`, a generator that yields, round after round, the units of
    every active player's next ``batch`` games still to play; once the caller has played them it
    looks at each player (its first games, read back from ``out_dir``) and drops the settled
    ones and those at their cap. The decisions depend on the logs alone, so a resumed run takes
    the same ones, round by round, and an episode's id and seed never depend on them.
    :meth:`prune` removes the units of games past a player's stop that an earlier run (with
    another rule, or none) left on disk."""

    def __init__(self, plugin, mp, units, out_dir, data_dir):
        self.plugin, self.mp, self.rule = plugin, mp, mp.stop
        self.out_dir, self.data_dir = out_dir, data_dir
        self.players = plugin.stop_players(mp) or {}
        self.unit_of = {e.episode_id: u for u in units for e in u.episodes}
        self.held = {self.unit_of[i].name for ids in self.players.values() for i in ids}
        self.ts = TrueSkillParams(**plugin.stop_rating(mp))
        self.looks: dict[str, list[Interval]] = {p: [] for p in self.players}
        self.stopped: dict[str, int] = {}  # player -> games it played
        self._field: dict[str, tuple[float, float]] | None = None

    def first(self, todo: list) -> list:
        """The units to play before any look: every one not held back."""
        return [item for item in todo if item[0].name not in self.held]

    def rounds(self, todo: list):
        """Yield each round's units to play (a subset of ``todo``, maybe empty: on disk already);
        look after each (see the class docstring)."""
        pending = {u.name: (u, specs) for u, specs in todo if u.name in self.held}
        active = dict(self.players)
        k = 0
        while active:
            part, seen = [], set()
            for ids in active.values():
                for i in ids[k * self.rule.batch:(k + 1) * self.rule.batch]:
                    name = self.unit_of[i].name
                    if name in pending and name not in seen:
                        seen.add(name)
                        part.append(pending[name])
            yield part
            k += 1
            for player, ids in list(active.items()):
                n = min(len(ids), k * self.rule.batch)
                interval = self.look(player, ids[:n])
                self.looks[player].append(interval)
                if n >= len(ids) or settled(interval, self.rule.rank_width, self.rule.mu_width,
                                            self.rule.min_games):
                    self.stopped[player] = n
                    del active[player]

    def look(self, player: str, ids: list[str]) -> Interval:
        from marketarena.core.reader import EpisodeReader
        from marketarena.ratings import player_games

        reader = EpisodeReader(self.out_dir)
        if self._field is None:
            mine = {i for ids in self.players.values() for i in ids}
            agents = self._agents(reader.subset(set(reader.episode_ids()) - mine))
            self._field = field_ratings(agents, self.plugin.rank_by, self.plugin.seat_score,
                                        self.ts, seed=self.rule.seed)
        agents = self._agents(reader.subset(ids))
        games = player_games(agents, self.plugin.rank_by, self.plugin.seat_score)
        return look(games, player, self._field, self.ts, self.rule.boot, self.rule.passes,
                    self.rule.seed, cap=len(self.players[player]))

    def _agents(self, reader):
        return self.plugin.compute_metrics(reader, self.mp, self.data_dir)["agents"]

    def prune(self) -> list[str]:
        """Remove the units of games past each player's stop left on disk; their names."""
        import shutil

        gone = []
        for player, n in self.stopped.items():
            for i in self.players[player][n:]:
                folder = self.out_dir / self.unit_of[i].name
                if folder.is_dir():
                    shutil.rmtree(folder)
                    gone.append(folder.name)
        return gone

    def lines(self) -> list[str]:
        """What the run says of its stops (``progress.summary_lines``)."""
        out = []
        for player, n in sorted(self.stopped.items()):
            cap = len(self.players[player])
            last = self.looks[player][-1]
            why = "at the cap" if n >= cap and not settled(
                last, self.rule.rank_width, self.rule.mu_width, self.rule.min_games) else "settled"
            out.append(f"  {player}: {n} of {cap} games ({why}); rank {last.rank} "
                       f"[{last.rank_lo}, {last.rank_hi}] among the field, μ {last.mu:.2f} "
                       f"[{last.mu_lo:.2f}, {last.mu_hi:.2f}]")
        return out
