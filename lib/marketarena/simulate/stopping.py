"""Stop a player's games once the question asked of its rank is answered: the look at a
player's games so far.

A market plays each LLM player's games against a field a fixed number of times whatever they
have settled: double_auction's entrants against the pool, english_auction's challengers against
the fixed bidders, and elsewhere (``MarketRules.stop_players``) the planned episodes that seat
the player: cournot's and bertrand's lineups with it, crash's and lemon's cells it sits in (a
batch spans the cells in plan order), the field being the episodes that seat no LLM player.
With a stopping rule (``markets.<instance>.stop``, ``core.params.StopRule``; off by default)
``simulate`` plays them in batches and, after each, *looks*: it rates the player's games so far
against the others' ratings held fixed, and stops the player once the rule's question is
answered (below), or at the cap (the games the plan holds).

What is rated is the market's board (``MarketAnalysis.stop_rows``): one free-for-all per episode
ranked by ``rank_by``, the seats of a player combined by ``seat_score``; lemon's on the
player's side of the market (sellers by revenue; buyers by score, or by their episodes' EAS
where buyer kinds never meet, as its buyer board ranks them).

The look (:func:`look`): TrueSkill in the market's board environment, every opponent starting
from its rating on the field's board (``others``: μ, σ) and the player from the prior; the
player's μ is the median over ``passes`` shuffled passes of its games, and its interval at
``level`` the percentiles over ``boot`` bootstrap resamples of its games (each rated in one
shuffled pass; the rule's default 0.99: the 0.5-99.5 percentiles). The rank of a μ is one plus the number of other players whose μ is higher; the rank
interval is that of the μ interval's ends. Opponents' ratings move a little within a lane (each
game updates every seat), but only the player's is read: the others are the field, rated on
many more games. Cheap: ``boot + passes`` lanes of the player's games in the compiled kernel
(``ratings.rate_orders``), milliseconds for hundreds of games.

The question a rule asks (:func:`answered`, ``core.params.StopRule``), one of: ``rank_width``
(the rank interval at most that many ranks wide), ``top_k`` (the rank interval lies entirely
within 1..k, "in", or entirely beyond k, "out") or ``mu_width`` (the μ interval at most that
wide); the player stops once it is answered, after ``min_games``, or at the cap.

A player that meets nobody in its games (each game holds it alone: lemon's buyers in cells of one
kind) has no TrueSkill to read; its look (:func:`look_mean`) is the mean of its per-game score
with the same bootstrap interval, and its rank is among the field's mean scores.

Judged against a known truth (``benchmarks/bench_known_truth.py``, ``known_truth.stop_rows``,
docs/cost.md "Judged against a known truth"): a new player of known skill joining a field of known
skills. An earlier look shrank the interval by sqrt(1 - n / cap) (where all the cap's games would
place the player: a point at the cap); it covered the true rank in 0-50% of draws and is gone. The
interval as it stands is one of the player's skill. At 95% it covered the true rank in only 83-93%
of draws at the stop (a look after every batch is a chance to stop on a lucky narrow one), hence
the rule's 99%; docs/cost.md has its coverage at the stop and the games each question saves
against a fixed schedule answering as often.
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


def look(
    games,
    player: str,
    others: Mapping[str, tuple[float, float]],
    ts: TrueSkillParams | None = None,
    boot: int = 100,
    passes: int = 10,
    seed: int = 0,
    use: Sequence[int] | None = None,
    level: float = 0.95,
) -> Interval:
    """The look at ``player`` after ``games`` (each a free-for-all: name -> score, the player in
    every one; or ``ratings.PreparedGames`` of them, ``use`` naming the ones played so far)
    against ``others`` (name -> (μ, σ), the field's board; the player left out of it): see the
    module docstring. ``level``: the interval's coverage (0.95: the 2.5-97.5 percentiles).
    Deterministic in ``seed``."""
    return looks(games, player, others, ts, boot, passes, seed, use, (level,))[0]


def looks(
    games,
    player: str,
    others: Mapping[str, tuple[float, float]],
    ts: TrueSkillParams | None = None,
    boot: int = 100,
    passes: int = 10,
    seed: int = 0,
    use: Sequence[int] | None = None,
    levels: Sequence[float] = (0.95,),
) -> list[Interval]:
    """:func:`look` at each of ``levels`` from the same lanes (one rating of the games)."""
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
    return [_interval(point, mine[passes:], n, field, level) for level in levels]


def look_mean(
    values: Sequence[float],
    others: Mapping[str, float],
    boot: int = 100,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """The look at a player that meets nobody in its games: its mean score over ``values`` (one
    per game so far), the percentiles of the means of ``boot`` bootstrap resamples (the 2.5-97.5
    at ``level`` 0.95), its rank among ``others`` (name -> the field's mean score)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        raise ValueError("no games to look at")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, n, size=(boot, n))].mean(axis=1) if boot else np.empty(0)
    field = np.array(list(others.values()), dtype=float)
    return _interval(float(values.mean()), means, n, field, level)


def _interval(
    point: float, resampled: np.ndarray, n: int, field: np.ndarray, level: float = 0.95
) -> Interval:
    """The :class:`Interval` of a point and its resampled values (none: a point interval): their
    (1 - level) / 2 and (1 + level) / 2 percentiles, ranked among ``field``."""
    lo = hi = point
    if len(resampled):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = [50 * (1 - level), 50 * (1 + level)]
            lo, hi = (float(x) for x in np.percentile(resampled, q))
    return Interval(n, point, lo, hi, rank_of(point, field), rank_of(hi, field), rank_of(lo, field))


def top_k_answer(interval: Interval, k: int) -> str | None:
    """The answer to "is the player in the top ``k``?": "in" when its rank interval lies within
    1..k (``rank_hi <= k``), "out" when it lies beyond k (``rank_lo > k``), None while it
    straddles k."""
    if interval.rank_hi <= k:
        return "in"
    if interval.rank_lo > k:
        return "out"
    return None


def settled(
    interval: Interval,
    rank_width: int | None = None,
    mu_width: float | None = None,
    min_games: int = 0,
    top_k: int | None = None,
) -> bool:
    """Whether a look answers the question asked, after at least ``min_games`` games: the rank
    interval at most ``rank_width`` ranks wide (``rank_hi - rank_lo``), the μ interval at most
    ``mu_width``, or the top-``top_k`` question answered (:func:`top_k_answer`); any of those
    given."""
    if interval.games < min_games:
        return False
    return (
        (rank_width is not None and interval.rank_width <= rank_width)
        or (
            mu_width is not None
            and interval.mu_width <= mu_width
            and math.isfinite(interval.mu_width)
        )
        or (top_k is not None and top_k_answer(interval, top_k) is not None)
    )


def answered(interval: Interval, rule) -> bool:
    """Whether ``rule``'s question (``core.params.StopRule``) is answered by ``interval``."""
    return settled(interval, rule.rank_width, rule.mu_width, rule.min_games, rule.top_k)


def field_ratings(
    games, ts: TrueSkillParams, passes: int = 50, seed: int = 0
) -> dict[str, tuple[float, float]]:
    """The field's board: name -> (median μ, median σ) over ``passes`` shuffled passes of its
    ``games`` (free-for-alls: name -> score; a game of one player is no game and left out)."""
    from marketarena.ratings import multipass

    games = [g for g in games if len(g) >= 2]
    if not games:
        return {}
    board = multipass(games, ts, passes=passes, seed=seed)
    return {str(r.player): (float(r.mu), float(r.sigma)) for r in board.itertuples()}


def field_means(games) -> dict[str, float]:
    """Name -> its mean score over the ``games`` it is in (the field of :func:`look_mean`)."""
    totals: dict[str, list[float]] = {}
    for g in games:
        for name, score in g.items():
            totals.setdefault(name, []).append(float(score))
    return {name: float(np.mean(v)) for name, v in totals.items()}


class Batches:
    """The stopping rule over one ``simulate`` run (``mp.stop``; module docstring).

    ``units``: the run's planned units (``core.logs``); the players' episodes are held back
    (:attr:`held`) until :meth:`rounds`, a generator that yields, round after round, the units of
    every active player's next ``batch`` games still to play; once the caller has played them it
    looks at each player (its first games, read back from ``out_dir``) and drops the settled
    ones and those at their cap. An episode may seat two LLM players (a cournot lineup of two):
    it is played once, for the first that reaches it, and counts for both. The decisions depend
    on the logs alone, so a resumed run takes the same ones, round by round, and an episode's id
    and seed never depend on them. :meth:`prune` removes the units of games past every stop that
    an earlier run (with another rule, or none) left on disk."""

    def __init__(self, kind, mp, units, out_dir, data_dir):
        """``kind``: the instance's ``core.registry.MarketKind`` (its rules say whose episodes
        are whose, its analysis what a look rates)."""
        self.analysis, self.mp, self.rule = kind.analysis_of(mp), mp, mp.stop
        self.out_dir, self.data_dir = out_dir, data_dir
        self.players = kind.rules.stop_players(mp)
        self.units = list(units)
        self.unit_of = {e.episode_id: u for u in self.units for e in u.episodes}
        self.held = {self.unit_of[i].name for ids in self.players.values() for i in ids}
        self.ts = TrueSkillParams(**self.analysis.stop_rating(mp))
        self.looks: dict[str, list[Interval]] = {p: [] for p in self.players}
        self.stopped: dict[str, int] = {}  # player -> games it played
        self._field_agents = None  # the metrics' seats of the field's episodes (read once)
        self._fields: dict[str, tuple[bool, dict]] = {}  # player -> (by mean?, its field)

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
            part = []
            for ids in active.values():
                for i in ids[k * self.rule.batch : (k + 1) * self.rule.batch]:
                    unit = pending.pop(self.unit_of[i].name, None)  # once, whoever reaches it
                    if unit is not None:
                        part.append(unit)
            yield part
            k += 1
            for player, ids in list(active.items()):
                n = min(len(ids), k * self.rule.batch)
                interval = self.look(player, ids[:n])
                self.looks[player].append(interval)
                if n >= len(ids) or answered(interval, self.rule):
                    self.stopped[player] = n
                    del active[player]

    def look(self, player: str, ids: list[str]) -> Interval:
        """The look at ``player`` after its episodes ``ids`` (module docstring): TrueSkill against
        the field's ratings, or its mean score against the field's means when it meets nobody."""
        from marketarena.core.reader import EpisodeReader

        reader = EpisodeReader(self.out_dir)
        if self._field_agents is None:
            mine = {i for ids in self.players.values() for i in ids}
            self._field_agents = self._agents(reader.subset(set(reader.episode_ids()) - mine))
        games = [g for g in self._games(self._agents(reader.subset(ids)), player) if player in g]
        by_mean = all(len(g) == 1 for g in games)
        if player not in self._fields:
            field = self._games(self._field_agents, player)
            self._fields[player] = (
                by_mean,
                field_means(field)
                if by_mean
                else field_ratings(field, self.ts, seed=self.rule.seed),
            )
        if by_mean != self._fields[player][0]:
            raise ValueError(f"{player}: its games changed from meeting others to meeting none")
        field = self._fields[player][1]
        if not field:
            from marketarena.config import ParamsError

            raise ParamsError(
                f"markets.{self.mp.instance}.stop: the field's episodes rate nobody "
                f"on {player}'s board, so there is nothing to rank it against (its "
                "episodes so far are kept; drop stop to play them all)"
            )
        rule = self.rule
        if by_mean:
            return look_mean([g[player] for g in games], field, rule.boot, rule.seed, rule.level)
        return look(
            games, player, field, self.ts, rule.boot, rule.passes, rule.seed, level=rule.level
        )

    def _games(self, agents, player: str) -> list[dict[str, float]]:
        from marketarena.ratings import player_games

        return player_games(*self.analysis.stop_rows(agents, self.mp, player))

    def _agents(self, reader):
        return self.analysis.compute_metrics(reader, self.mp, self.data_dir)["agents"]

    def prune(self) -> list[str]:
        """Remove the units past each player's stop left on disk (a unit that holds an episode
        still needed, a field episode or one before another player's stop, stays); their names."""
        import shutil

        past = {i for player, n in self.stopped.items() for i in self.players[player][n:]}
        past -= {i for player, n in self.stopped.items() for i in self.players[player][:n]}
        gone = []
        for unit in self.units:
            folder = self.out_dir / unit.name
            if all(e.episode_id in past for e in unit.episodes) and folder.is_dir():
                shutil.rmtree(folder)
                gone.append(folder.name)
        return gone

    def lines(self) -> list[str]:
        """What the run says of its stops (``progress.summary_lines``)."""
        out = []
        for player, n in sorted(self.stopped.items()):
            cap = len(self.players[player])
            last = self.looks[player][-1]
            why = "answered" if answered(last, self.rule) else "at the cap"
            if self.rule.top_k is not None and answered(last, self.rule):
                side = {"in": "in", "out": "out of"}[top_k_answer(last, self.rule.top_k)]
                why = f"answered: {side} the top {self.rule.top_k}"
            what = "mean score" if self._fields.get(player, (False,))[0] else "μ"
            out.append(
                f"  {player}: {n} of {cap} games ({why}); rank {last.rank} "
                f"[{last.rank_lo}, {last.rank_hi}] among the field, {what} {last.mu:.2f} "
                f"[{last.mu_lo:.2f}, {last.mu_hi:.2f}]"
            )
        return out
