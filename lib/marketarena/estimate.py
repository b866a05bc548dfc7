"""What an instance's LLM seats will cost before any call is made (``marketarena estimate``).

A dry run: the instance's planned episodes with LLM seats are played with every LLM alias
answered by the mock provider (``llm/mock.py``), through the real prompts, harnesses, re-asks and
market rules, in a temporary response cache; no endpoint is called, no key is needed, nothing is
written under ``data/``. A random answer would steer an episode where no model goes (a crash firm
pricing at 400,000 goes bankrupt on day one and is never asked again), so the answer to each
decision is a *stand-in*'s: the first baseline of the roster that plays the seat's role decides
what the seat does (the mock's random answer remains for what no stand-in answers: a harness's
extra calls, roles no baseline plays). The LLM seats then live as long as a baseline would. ``sample`` episodes,
spread evenly over the plan, stand for the others (their totals are scaled by episodes planned /
episodes played; ``sample: None`` plays them all).

Per instance and model alias it reports:

- ``calls``: the LLM calls (decisions asked, a harness's extra calls, the market's own re-asks
  after a broken rule); ``requests``: the requests they make with the mock's answers (always
  valid JSON, so no re-ask), and ``requests_max``, the re-ask bound, ``calls x (1 + max_reasks)``;
- ``prompt_tokens`` and ``completion_tokens``, counted as the mock counts them (about 4 UTF-8
  bytes a token: real tokenizers differ by some 10-25% on English text; a model that answers at
  length spends more completion tokens than the mock's bare JSON, at most ``max_tokens`` a request);
- ``cost_usd`` at the model's prices, and ``cost_max_usd``: every call re-asked to the bound, each
  request with its prompt grown by the previous answers and every answer at ``max_tokens``;
- ``wall_s``, the wall time at ``latency_s`` per request: the larger of the longest episode's chain
  of sequential requests (decision points, a harness's calls one after the other, re-asks) times
  the latency, and each endpoint's requests times the latency over its ``max_concurrency``; it is
  the ideal the side-by-side run approaches (``simulate``), not counting the CPU work.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.config import Params
from marketarena.core.registry import plugin_for
from marketarena.core.runner import run_episode
from marketarena.llm.spec import MockSpec


@dataclass
class ModelEstimate:
    instance: str
    model: str  # the alias
    episodes: int  # planned episodes seating it
    calls: float
    requests: float
    requests_max: float
    prompt_tokens: float
    completion_tokens: float
    cost_usd: float
    cost_max_usd: float
    max_concurrency: int
    endpoint: str


@dataclass
class InstanceEstimate:
    instance: str
    episodes: int  # planned episodes with LLM seats
    sampled: int  # of them played in the dry run
    latency_s: float
    wall_s: float
    depth: int  # the longest episode's chain of sequential requests
    models: list[ModelEstimate]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(m) for m in self.models])


def mock_params(params: Params, aliases: set[str], cache_dir: Path) -> Params:
    """``params`` with every alias in ``aliases`` answered by the mock provider (same name, caps,
    re-asks and prices), a fresh response cache and no budget."""
    models = dict(params.models)
    for alias in aliases:
        models[alias] = models[alias].model_copy(update={
            "provider": "mock", "base_url": None, "api_key_env": None, "mock": MockSpec(),
            "structured_output": "json_schema"})
    llm = params.llm.model_copy(update={"cache_dir": cache_dir, "max_cost_usd": None,
                                        "cache_only": False})
    return params.model_copy(update={"models": models, "llm": llm})


class StandInRuntime:
    """The dry run's LLM runtime: the real one (prompts, harness, client on the mock provider),
    its agents answering each decision with their stand-in's action (``stand_ins``: actor id ->
    a scripted agent, set per episode)."""

    def __init__(self, params: Params):
        from marketarena.agents.llm_agent import LLMRuntime

        self.runtime = LLMRuntime(params)
        self.stand_ins: dict = {}

    def agent(self, agent_id, entry, run, plugin, market):
        from marketarena.agents.llm_agent import LLMAgent

        inner = self.runtime.agent(agent_id, entry, run, plugin, market)
        stand_in = self.stand_ins.get(agent_id)
        if stand_in is None:
            return inner

        class StandIn(LLMAgent):
            def reset(self, rng) -> None:
                super().reset(rng)
                stand_in.reset(rng)

            async def act(self, observation, decision, retry=None):
                self.answer = (stand_in.decide(observation, decision) if retry is None
                               else stand_in.revise(observation, decision, retry))
                return await super().act(observation, decision, retry)

            async def ask(self, messages, schema, decision, purpose="act"):
                result, row = await super().ask(messages, schema, decision, purpose)
                answer = getattr(self.answer, "action", self.answer)
                if isinstance(answer, schema):
                    result.action = answer
                return result, row

        return StandIn(inner.agent_id, inner.spec, inner.client, inner.plugin, inner.sample,
                       inner.harness)

    async def aclose(self) -> None:
        await self.runtime.aclose()


def stand_ins(plugin, mp, resources, spec) -> dict:
    """Actor id -> the scripted agent that decides for an LLM seat in the dry run: the first
    baseline of the roster that plays the seat's role (none: the mock's answers)."""
    out = {}
    for seat in spec.seats:
        if seat.entry.kind != "llm" or seat.actor_id in out:
            continue
        for entry in mp.roster:
            roles = plugin.strategies[entry.strategy].roles if entry.kind == "baseline" else ()
            if entry.kind == "baseline" and (roles is None or seat.role in roles):
                stand = replace(seat, entry=entry)
                context = plugin.scripted_context(stand, mp, resources, spec)
                out[seat.actor_id] = plugin.strategies.make(seat.actor_id, entry, context)
                break
    return out


def sample_evenly(items: list, n: int | None) -> list:
    if n is None or n >= len(items):
        return items
    picks = np.unique(np.linspace(0, len(items) - 1, max(n, 1)).round().astype(int))
    return [items[i] for i in picks]


def episode_depth(calls: pd.DataFrame) -> int:
    """Sequential requests of one episode: its LLM call groups (decision point, attempt, purpose)
    one after the other, each as long as its longest chain of re-asks."""
    if calls.empty:
        return 0
    keys = ["step", "round", "phase", "attempt", "purpose"]
    return int(calls.groupby(keys, sort=False)["attempts"].max().sum())


def estimate(instance: str, params: Params, resources, latency_s: float = 1.0,
             sample: int | None = 20) -> InstanceEstimate | None:
    """The dry run of ``instance`` (see the module docstring); None when it seats no LLM.
    ``resources``: what ``simulate.load_inputs`` returns for it."""
    from marketarena.simulate import llm_aliases

    aliases = llm_aliases(params, instance)
    if not aliases:
        return None
    plugin, mp = plugin_for(params, instance)
    planned = [s for s in plugin.plan(mp) if any(seat.entry.kind == "llm" for seat in s.seats)]
    played = sample_evenly(planned, sample)
    with tempfile.TemporaryDirectory(prefix="marketarena-estimate-") as tmp:
        dry = mock_params(params, aliases, Path(tmp))

        async def run_all() -> list[pd.DataFrame]:
            runtime = StandInRuntime(dry)
            try:
                out = []
                for spec in played:
                    runtime.stand_ins = stand_ins(plugin, mp, resources, spec)
                    market, agents, _ = plugin.build_episode(mp, resources, spec, llm=runtime)
                    result = await run_episode(market, agents, spec.seed)
                    out.append(result.llm_calls)
                return out
            finally:
                await runtime.aclose()

        box: list[list[pd.DataFrame]] = []

        async def main() -> None:  # the result through a closure (see core.runner.play_episode)
            box.append(await run_all())

        asyncio.run(main())
    per_episode = box[0]
    scale = len(planned) / max(len(played), 1)
    calls = pd.concat(per_episode, ignore_index=True) if per_episode else pd.DataFrame()
    depth = max((episode_depth(c) for c in per_episode), default=0)
    models, load = [], {}
    for alias in sorted(aliases):
        spec = params.models[alias]
        mine = calls[calls["model"] == alias] if len(calls) else calls
        n = len(mine)
        prompt = float(mine["prompt_tokens"].sum()) if n else 0.0
        completion = float(mine["completion_tokens"].sum()) if n else 0.0
        requests = float(mine["attempts"].sum()) if n else 0.0
        bound = 1 + spec.max_reasks
        # every re-ask resends the conversation with the answers before it (at max_tokens)
        prompt_max = bound * prompt + n * spec.max_tokens * bound * (bound - 1) / 2
        price_in, price_out = spec.price_in_per_mtok / 1e6, spec.price_out_per_mtok / 1e6
        endpoint = f"mock:{alias}" if spec.provider == "mock" else (spec.base_url or "openai")
        seated = sum(any(s.entry.kind == "llm" and s.entry.model == alias for s in e.seats)
                     for e in planned)
        m = ModelEstimate(
            instance=instance, model=alias, episodes=seated, calls=n * scale,
            requests=requests * scale, requests_max=n * bound * scale,
            prompt_tokens=prompt * scale, completion_tokens=completion * scale,
            cost_usd=(prompt * price_in + completion * price_out) * scale,
            cost_max_usd=(prompt_max * price_in + n * bound * spec.max_tokens * price_out) * scale,
            max_concurrency=spec.max_concurrency, endpoint=endpoint)
        models.append(m)
        total, limit = load.get(endpoint, (0.0, spec.max_concurrency))
        load[endpoint] = (total + m.requests, min(limit, spec.max_concurrency))
    wall = max([depth * latency_s] + [r * latency_s / c for r, c in load.values()])
    return InstanceEstimate(instance, len(planned), len(played), latency_s, wall, depth, models)


def describe(e: InstanceEstimate) -> list[str]:
    """Lines ``marketarena estimate`` prints for one instance."""
    lines = [f"{e.instance}: {e.episodes} episodes with LLM seats (dry run of {e.sampled} on the "
             f"mock provider, scaled); wall time at {e.latency_s:g} s a request: "
             f"{_duration(e.wall_s)} (longest episode: {e.depth} sequential requests)"]
    for m in e.models:
        lines.append(
            f"  {m.model}: {m.calls:,.0f} calls, {m.requests:,.0f} requests "
            f"(at most {m.requests_max:,.0f} with every re-ask), "
            f"tokens {m.prompt_tokens:,.0f} prompt + {m.completion_tokens:,.0f} completion, "
            f"${m.cost_usd:,.2f} (at most ${m.cost_max_usd:,.2f}); "
            f"max_concurrency {m.max_concurrency} at {m.endpoint}")
    return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
