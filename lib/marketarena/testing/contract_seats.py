"""The seats the contract (``contract.py``) plays in a market's place, and the scores it compares:

- :class:`FallbackOrGarbage`: a seat answering garbage, or the fallback's own action validly, at
  some decisions (the invalid-answer rule);
- :class:`ContractSeat` in three modes (issue 55: boards that never reward doing nothing):
  **idle**, the do-nothing action answered validly at every decision (the action the market's
  fallback plays, :func:`fallback_answer`); **absurd**, a valid extreme action where the market
  declares one (``market.absurd(agent_id, observation, decision)``: crash posts 10^6 unit costs
  and buys 10^7 units, a lemon buyer bids on the dearest listing it is shown); **silent**, garbage
  at every decision;
- :func:`idle_absurd_and_silent_seats`: the check. One seat of episode 0 (a seat the EAS scores,
  where the market has one) is played by each mode under a name of its own (``contract_idle``,
  ...), so its scores are its seat's alone. In every market the silent seat never beats the idle
  one (its score, its EAS and components, its mu). In a market with an EAS the idle and the
  absurd seat are at the bottom of each EAS component among the episode's players, and strictly
  below every other player on the EAS.
"""

from __future__ import annotations

import contextlib
import types
from typing import Annotated, Literal, Union, get_args, get_origin

import numpy as np
from pydantic import BaseModel

from marketarena.testing.tiny import GARBAGE, World, expect, play, write


def zero_answer(model):
    """An answer of ``model`` with every required field at its zero (0, "", {}, [], None, False,
    a nested model's zero answer): what a market whose fallback is "nothing" (no production, no
    bids) accepts as the same action."""

    def zero(ann):
        origin, args = get_origin(ann), get_args(ann)
        if origin is Annotated:
            return zero(args[0])
        if origin in (Union, types.UnionType):
            return None if type(None) in args else zero(args[0])
        if origin is Literal:
            return args[0]
        if origin is dict:
            return {}
        if origin in (list, tuple, set):
            return []
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            return zero_answer(ann).model_dump(by_alias=True)
        return {bool: False, int: 0, float: 0.0, str: ""}.get(ann)

    return model.model_validate(
        {
            f.alias or name: zero(f.annotation)
            for name, f in model.model_fields.items()
            if f.is_required()
        }
    )


def fallback_answer(market, agent_id, decision):
    """A valid answer that plays as the market's fallback plays (its rules accept it and apply
    the fallback's own action), or None when there is none: the fallback itself when it is an
    answer of the decision's schema, else the schema's zero answer."""
    from marketarena.core.runner import _dump

    fallback = market.fallback(agent_id, decision)
    schema = decision.schema_for(agent_id)
    candidates = [fallback] if isinstance(fallback, schema) else []
    with contextlib.suppress(Exception):  # a schema without a zero answer: no candidate
        candidates.append(zero_answer(schema))
    for answer in candidates:
        checked = market.check(agent_id, answer, decision)
        applied = checked.action if checked.action is not None else answer
        if checked.error is None and _dump(applied) == _dump(fallback):
            return answer
    return None


class FallbackOrGarbage:
    """A seat's own agent, except at the decisions of odd steps where a valid answer plays as the
    market's fallback plays (:func:`fallback_answer`): there it answers garbage (``mode``
    "invalid": the fallback then plays) or that valid answer (``mode`` "valid"). Both arms play
    the same actions."""

    def __init__(self, inner, market, mode: str):
        self.inner, self.market, self.mode = inner, market, mode
        self.agent_id = inner.agent_id
        self.substituted = 0

    def reset(self, rng):
        self.inner.reset(rng)

    async def act(self, observation, decision, retry=None):
        if decision.step % 2 == 1 and retry is None:
            answer = fallback_answer(self.market, self.agent_id, decision)
            if answer is not None:
                self.substituted += 1
                return dict(GARBAGE) if self.mode == "invalid" else answer
        if retry is None:
            return await self.inner.act(observation, decision)
        return await self.inner.act(observation, decision, retry)


#: a player's scores on the board, every one "higher is better" (the EAS and its components
#: where the market reports them)
EAS_SCORES = ("eas", "stability", "integrity", "welfare", "profitability")


def player_scores(analysis, w: World, reader, name: str, agents=None) -> dict[str, float]:
    """The player's score of the episode (``rank_by``, its seats combined as the board combines
    them), its EAS columns where the market has them, its board mu, and its fallback share split
    by kind (:data:`VALIDITY_SHARES`). ``agents``: the episode's agents metrics, when the caller
    computed them already."""
    from marketarena.metrics.validity import player_validity, with_validity

    if agents is None:
        agents = analysis.compute_metrics(reader, w.mp, w.paths.data)["agents"]
    rows = agents[agents["name"] == name]
    out = {analysis.rank_by: float(rows[analysis.rank_by].agg(analysis.seat_score))}
    for col in EAS_SCORES:
        if col in rows.columns:
            out[col] = float(rows[col].mean())
    board = with_validity(
        analysis.leaderboard(agents, w.mp, w.params.ratings, w.params.stats),
        player_validity(reader),
    )
    row = board[board["name"] == name].iloc[0]
    out["mu"] = float(row["mu"])
    for col in VALIDITY_SHARES:
        out[col] = float(row[col])
    return out


#: the board's shares :func:`player_scores` reads (not scores: compared apart)
VALIDITY_SHARES = ("fallback", "format_failures", "rule_failures")


class ContractSeat:
    """A seat's own agent replaced by a contract mode (module docstring): ``idle`` answers the
    fallback's action validly, ``absurd`` the market's extreme action (else as idle), ``silent``
    garbage; where neither exists for a decision (a plan with no fallback), its own agent
    answers. A re-ask is answered as the first ask was."""

    def __init__(self, inner, market, mode: str):
        self.inner, self.market, self.mode = inner, market, mode
        self.agent_id = inner.agent_id

    def reset(self, rng):
        self.inner.reset(rng)

    async def act(self, observation, decision, retry=None):
        if self.mode == "silent":
            return dict(GARBAGE)
        answer = None
        if self.mode == "absurd" and hasattr(self.market, "absurd"):
            answer = self.market.absurd(self.agent_id, observation, decision)
        if answer is None:
            answer = fallback_answer(self.market, self.agent_id, decision)
        if answer is not None:
            return answer
        if retry is None:
            return await self.inner.act(observation, decision)
        return await self.inner.act(observation, decision, retry)


MODES = ("idle", "absurd", "silent")


def _seat_of(analysis, w: World, kind: str):
    """The actor the three modes play: in a market with an EAS, the first actor whose player's
    EAS a normal episode 0 scores; otherwise the last actor with a fallback answer."""
    result, table, spec, _, _ = play(kind, w.params, w.resources)
    agents = analysis.compute_metrics(
        write(w.paths.root / "plain", spec, table, result), w.mp, w.paths.data
    )["agents"]
    if "eas" in agents.columns:
        scored = agents.loc[agents["eas"].notna(), "agent_id"]
        expect(len(scored), "no seat of episode 0 has an EAS")
        return str(scored.iloc[0]), True
    return str(table["actor"].iloc[-1]), False


def idle_absurd_and_silent_seats(kind: str, w: World, analysis) -> None:
    actor, has_eas = _seat_of(analysis, w, kind)
    scores, others = {}, {}
    for mode in MODES:
        seat_name = f"contract_{mode}"
        result, table, spec, _, _ = play(
            kind,
            w.params,
            w.resources,
            wrap={actor: lambda a, m, mode=mode: ContractSeat(a, m, mode)},
        )
        table = table.copy()
        table.loc[table["actor"] == actor, "name"] = seat_name
        reader = write(w.paths.root / mode, spec, table, result)
        agents = analysis.compute_metrics(reader, w.mp, w.paths.data)["agents"]
        scores[mode] = player_scores(analysis, w, reader, seat_name, agents)
        if has_eas:
            others[mode] = (
                agents[(agents["name"] != seat_name) & agents["eas"].notna()]
                .groupby("name")[[c for c in EAS_SCORES if c in agents.columns]]
                .mean()
            )
    worse = [
        f"{k}: silent {scores['silent'][k]:.6g} > idle {v:.6g}"
        for k, v in scores["idle"].items()
        if k not in VALIDITY_SHARES and scores["silent"].get(k, -np.inf) > v + 1e-9
    ]
    expect(not worse, f"the silent seat ({actor}) beats the idle one: " + "; ".join(worse))
    for mode in ("idle", "absurd") if has_eas else ():
        rest, own = others[mode], scores[mode]
        for col in rest.columns:
            expect(
                own[col] <= rest[col].min() + 1e-9,
                f"the {mode} seat ({actor}) is not at the bottom of {col}: {own[col]:.4g} "
                f"above {rest[col].idxmin()}'s {rest[col].min():.4g}",
            )
        expect(
            (own["eas"] < rest["eas"]).all(),
            f"the {mode} seat ({actor}) is not below every player on the EAS: {own['eas']:.4g} "
            f"against {rest['eas'].to_dict()}",
        )
