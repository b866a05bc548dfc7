"""The estimate's dry run (``estimate.py``): the instance's params with its LLM aliases answered by
the mock provider, the stand-ins (the roster's baselines that decide for an LLM seat in a play),
the sampled episodes played through the real prompts, harnesses and rules, and each play's totals
per alias (calls, tokens, what a provider's prompt cache would serve) and chain of sequential
requests per episode.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.config import Params
from marketarena.core.runner import run_episode
from marketarena.llm.prompt_cache import PrefixCache, prompt_text, repeat_share
from marketarena.llm.schema import TextAnswer
from marketarena.llm.spec import MockSpec

#: stand-in plays at most (the roster's baselines that can play an LLM seat's role)
MAX_STAND_INS = 4
#: baseline strategies that play without reading the game: their plays bound the range but are
#: never the estimate's point (``estimate.py``'s docstring)
BLIND_STRATEGIES = frozenset({"random"})


@dataclass
class PlayTotals:
    """One play's totals for one alias, scaled to the plan."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cached_prompt_tokens: float = 0.0  # what a prefix-caching provider would serve
    repeated_tokens: float = 0.0  # prompt tokens repeating the seat's previous prompt's prefix


def sample_evenly(items: list, n: int | None) -> list:
    """``n`` of ``items`` spread evenly over them (None, or ``n`` as many or more: all)."""
    if n is None or n >= len(items):
        return items
    picks = np.unique(np.linspace(0, len(items) - 1, max(n, 1)).round().astype(int))
    return [items[i] for i in picks]


def mock_params(params: Params, aliases: set[str], cache_dir: Path) -> Params:
    """``params`` with every alias in ``aliases`` answered by the mock provider (same name, caps,
    re-asks and prices), a fresh response cache and no budget."""
    models = dict(params.models)
    for alias in aliases:
        models[alias] = models[alias].model_copy(
            update={
                "provider": "mock",
                "base_url": None,
                "api_key_env": None,
                "mock": MockSpec(),
                "structured_output": "json_schema",
            }
        )
    llm = params.llm.model_copy(
        update={"cache_dir": cache_dir, "max_cost_usd": None, "cache_only": False}
    )
    return params.model_copy(update={"models": models, "llm": llm})


class StandInRuntime:
    """The dry run's LLM runtime: the real one (prompts, harness, client on the mock provider),
    its agents answering each decision with their stand-in's action (``stand_ins``: actor id ->
    a scripted agent, set per episode; empty: the mock's own answers). ``runtime``: what
    ``LLMRuntime`` takes besides the params (the pilot's endpoint factory and spend ledger,
    ``pilot.py``)."""

    def __init__(self, params: Params, **runtime):
        from marketarena.agents.llm_agent import LLMRuntime

        self.runtime = LLMRuntime(params, **runtime)
        self.stand_ins: dict = {}

    def agent(self, agent_id, entry, run, rules, market):
        from marketarena.agents.llm_agent import LLMAgent

        inner = self.runtime.agent(agent_id, entry, run, rules, market)
        stand_in = self.stand_ins.get(agent_id)
        if stand_in is None:
            return inner

        class StandIn(LLMAgent):
            def reset(self, rng) -> None:
                super().reset(rng)
                stand_in.reset(rng)

            async def act(self, observation, decision, retry=None):
                self.observation = observation
                self.answer = (
                    stand_in.decide(observation, decision)
                    if retry is None
                    else stand_in.revise(observation, decision, retry)
                )
                return await super().act(observation, decision, retry)

            async def ask(self, messages, schema, decision, purpose="act"):
                result, row = await super().ask(messages, schema, decision, purpose)
                answer = getattr(self.answer, "action", self.answer)
                if isinstance(answer, schema):
                    result.action = answer
                elif issubclass(schema, TextAnswer):  # a publisher's format: said in it
                    said = schema.from_action(answer, self.observation, messages)
                    result.action = said if said is not None else result.action
                return result, row

        return StandIn(
            inner.agent_id, inner.spec, inner.client, inner.rules, inner.sample, inner.harness
        )

    async def aclose(self) -> None:
        await self.runtime.aclose()


def role_players(rules, mp, role: str) -> list:
    """The roster's baselines that can play ``role``, one per strategy, in roster order."""
    out, strategies = [], set()
    for entry in mp.roster:
        if entry.kind != "baseline" or entry.strategy in strategies:
            continue
        roles = rules.strategies[entry.strategy].roles
        if roles is None or role in roles:
            out.append(entry)
            strategies.add(entry.strategy)
    return out


def stand_ins(rules, mp, resources, spec, k: int = 0) -> dict:
    """Actor id -> the scripted agent that decides for an LLM seat in the dry run: the ``k``-th
    baseline of the roster that plays the seat's role (``role_players``, cycled; none: the mock's
    answers)."""
    out = {}
    for seat in spec.seats:
        if seat.entry.kind != "llm" or seat.actor_id in out:
            continue
        players = role_players(rules, mp, seat.role)
        if players:
            stand = replace(seat, entry=players[k % len(players)])
            context = rules.scripted_context(stand, mp, resources, spec)
            out[seat.actor_id] = rules.strategies.make(seat.actor_id, stand.entry, context)
    return out


def stand_in_names(rules, mp, planned) -> list[str]:
    """The stand-in plays (``stand-in:<roster name>``): every baseline that can play an LLM seat's
    role, one per strategy, at most :data:`MAX_STAND_INS`, in roster order (the longest list of
    the LLM seats' roles)."""
    roles = {seat.role for spec in planned for seat in spec.seats if seat.entry.kind == "llm"}
    lists = [role_players(rules, mp, role) for role in sorted(roles)]
    longest = max(lists, key=len, default=[])
    return [f"stand-in:{e.name}" for e in longest[:MAX_STAND_INS]] or ["stand-in"]


def blind_stand_ins(rules, mp, names: list[str]) -> set[str]:
    """The stand-in plays among ``names`` whose baseline plays blind (:data:`BLIND_STRATEGIES`)."""
    blind = {
        f"stand-in:{e.name}"
        for e in mp.roster
        if e.kind == "baseline" and e.strategy in BLIND_STRATEGIES
    }
    return set(names) & blind


def episode_depth(calls: pd.DataFrame) -> int:
    """Sequential requests of one episode: its LLM call groups (decision point, attempt, purpose)
    one after the other, each as long as its longest chain of re-asks."""
    if calls.empty:
        return 0
    keys = ["step", "round", "phase", "attempt", "purpose"]
    return int(calls.groupby(keys, sort=False)["attempts"].max().sum())


def requests_of(messages: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(model alias, seat, prompt text) of every request of one episode in the order sent, from
    its ``llm_messages`` (each re-ask's request: the previous one's messages and what it added)
    and ``llm_calls`` (the model of each call)."""
    out, conversation = [], []
    for row in messages.itertuples(index=False):
        said = json.loads(row.messages)
        conversation = said if row.reask == 0 else conversation + said
        out.append((row.model, row.agent_id, prompt_text(conversation)))
    return out


def _models_of_messages(calls: pd.DataFrame, messages: pd.DataFrame) -> pd.DataFrame:
    """``messages`` with the model of its call (``call``: the call's position among the
    ``llm_calls`` rows of its decision attempt, ``core.runner``)."""
    keys = ["step", "round", "phase", "agent_id", "attempt"]
    calls = calls.assign(call=calls.groupby(keys, sort=False).cumcount())
    return messages.merge(
        calls[keys + ["call", "model"]], on=keys + ["call"], how="left", sort=False
    )


def play_totals(
    per_episode: list[tuple[pd.DataFrame, pd.DataFrame]], alias: str, scale: float
) -> PlayTotals:
    """One alias's totals over a play's episodes ((llm_calls, llm_messages) each), scaled."""
    total = PlayTotals()
    cache = PrefixCache()  # the provider's, over the run (episodes in plan order)
    for calls, messages in per_episode:
        mine = calls[calls["model"] == alias] if len(calls) else calls
        total.calls += len(mine)
        if not len(mine):
            continue
        total.prompt_tokens += float(mine["prompt_tokens"].sum())
        total.completion_tokens += float(mine["completion_tokens"].sum())
        prompts = [
            (seat, text)
            for model, seat, text in requests_of(_models_of_messages(calls, messages))
            if model == alias
        ]
        total.cached_prompt_tokens += sum(cache.serve(text) for _, text in prompts)
        repeated, _ = repeat_share(prompts)
        total.repeated_tokens += repeated
    return PlayTotals(*(v * scale for v in asdict(total).values()))


def envelope(
    plays: list[list[tuple[pd.DataFrame, pd.DataFrame]]], alias: str, scale: float
) -> tuple[PlayTotals, PlayTotals]:
    """The least and the most of ``plays`` (each a play's (llm_calls, llm_messages) per episode,
    the same episodes in the same order) episode by episode: per episode, the fewest (most)
    calls, prompt and completion tokens of ``alias`` in any play, summed and scaled. A model need
    not play as one play does in every episode: a crash firm that dumps its goods below cost goes
    bankrupt sooner than every baseline in most episodes, and the mock's random answers sooner
    than it in a few (``estimate.py``'s range). Cached and repeated tokens are not counted (the
    range prices its own share of cached tokens)."""
    least, most = PlayTotals(), PlayTotals()
    for episode in zip(*plays, strict=True):
        got = []
        for calls, _ in episode:
            mine = calls[calls["model"] == alias] if len(calls) else calls
            got.append(
                (
                    float(len(mine)),
                    float(mine["prompt_tokens"].sum()) if len(mine) else 0.0,
                    float(mine["completion_tokens"].sum()) if len(mine) else 0.0,
                )
            )
        for k, name in enumerate(("calls", "prompt_tokens", "completion_tokens")):
            setattr(least, name, getattr(least, name) + min(g[k] for g in got) * scale)
            setattr(most, name, getattr(most, name) + max(g[k] for g in got) * scale)
    return least, most


def play_episodes(
    rules, mp, resources, played, dry: Params, k: int | None, runtime: StandInRuntime | None = None
):
    """(llm_calls, llm_messages) of each episode of ``played`` in the dry run where the ``k``-th
    stand-in decides (None: the mock's random answers). ``runtime``: the runtime to play them
    with (default: a :class:`StandInRuntime` of ``dry``); its usage is read after the play."""

    async def run_all() -> list[tuple[pd.DataFrame, pd.DataFrame]]:
        nonlocal runtime
        runtime = runtime or StandInRuntime(dry)
        try:
            out = []
            for spec in played:
                runtime.stand_ins = {} if k is None else stand_ins(rules, mp, resources, spec, k)
                market, agents, _ = rules.build_episode(mp, resources, spec, llm=runtime)
                result = await run_episode(market, agents, spec.seed)
                out.append((result.llm_calls, result.frame("llm_messages")))
            return out
        finally:
            await runtime.aclose()

    box: list = []

    async def main() -> None:  # the result through a closure (see core.runner.play_episode)
        box.append(await run_all())

    asyncio.run(main())
    return box[0]


def episode_lengths(per_episode) -> list[int]:
    """The calls of each episode of a play."""
    return [len(calls) for calls, _ in per_episode]
