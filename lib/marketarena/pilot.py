"""``marketarena estimate --pilot N``: N of the planned episodes with LLM seats played with the
real model, measured and scaled to the plan (issue 56).

The dry run (``dry_run.py``) prices a seat from baselines standing in for the model, or from the
mock's random answers; where the model's own play sets an episode's length (english_auction's
bidding rounds, crash's survival, lemon's purchases) neither is the model. The pilot asks it:

- **What it plays**: N of the planned LLM episodes, spread evenly over the plan
  (``dry_run.sample_evenly``), with the instance's real params (no ``dry_run.mock_params``):
  the models' endpoints and keys, the real response cache (``llm.cache_dir``) and the budget
  (``llm.max_cost_usd``, charged to the instance's spend ledger ``data/llm_spend/<instance>.jsonl``
  as a run charges it, ``simulate.spend_ledger_path``: a pilot that would pass the cap stops as a
  run does). Nothing is written under ``data/episodes``: the episodes are played and dropped.
- **What it costs**: its requests, at the models' prices; answers already in the response cache
  (an earlier pilot, an earlier run) cost nothing. ``Pilot.spent_usd`` is what it spent now,
  ``Pilot.cost_usd`` what its episodes cost at the models' prices, cache or not.
- **What the run reuses**: the pilot's requests are the run's: the same episodes (the plan's seeds),
  the same prompts through the same ``LLMRuntime``, so the same response-cache keys
  (``llm/response_cache.py``: model, messages, sampling, schema, sample index, endpoint). The run
  that follows replays the pilot's episodes from the cache at no cost (temperature above zero
  included: the cache answers the same request the same way).
- **What it measures**, per alias (:class:`PilotUsage`): calls, requests (with the client's
  re-asks: ``llm_calls.attempts``), prompt tokens (re-asked requests included), completion tokens
  and the prompt tokens the provider reported as cached, as its endpoint reported them; scaled
  to the plan.
- **How it scales**: per alias, by its seats in the plan over its seats in the pilot's episodes
  (:func:`seats_of`), not by episodes planned / N: an episode can seat an alias more than once
  (crash seats a roster's firm twice in some of its episodes, each seat asked every day). With
  episodes planned / N, a pilot of crash's first episode (one seat of 12 in 10 episodes) put both
  of the benchmark's crash firms 14-19% short (``benchmarks/bench_estimate.py --cases``). Weighing
  the episodes by a dry-run play's calls instead (a ratio estimate) was tried and dropped: the
  play is not the model (english_auction's random bidder, capped at 51 calls every episode,
  came out 33% over when weighed by the planner's bidding).

``estimate.model_estimate`` takes the pilot as the point (its calls, requests, tokens and cache
share; its re-ask rate and tokens per answer over the priors, the earlier runs and ``--reask-rate``,
which the CLI refuses beside ``--pilot``); the dry run's plays still make the range, widened to
hold the pilot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from marketarena.config import ParamsError
from marketarena.dry_run import (
    PlayTotals,
    StandInRuntime,
    play_episodes,
    play_totals,
    sample_evenly,
)


@dataclass
class PilotUsage:
    """One alias's usage in the pilot, scaled to the plan."""

    calls: float = 0.0
    requests: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    cached_prompt_tokens: float = 0.0  # as the provider reported them
    play: PlayTotals = field(default_factory=PlayTotals)  # its prompts as the dry run counts them

    @property
    def reask_rate(self) -> float:
        return self.requests / self.calls - 1 if self.calls else 0.0


@dataclass
class Pilot:
    episodes: int  # played
    planned: int
    usage: dict[str, PilotUsage]
    per_episode: list  # (llm_calls, llm_messages) of each episode played
    cost_usd: float  # its episodes at the models' prices (answers from the cache included)
    spent_usd: float  # what it spent now (answers not in the response cache)


def seats_of(episodes: list, alias: str) -> int:
    """The seats ``alias`` takes in ``episodes`` (``EpisodeSpec``s)."""
    return sum(
        seat.entry.kind == "llm" and seat.entry.model == alias
        for spec in episodes
        for seat in spec.seats
    )


def run_pilot(
    instance: str,
    params,
    resources,
    rules,
    mp,
    planned: list,
    n: int,
    ledger_path: Path | None = None,
    openai_factory=None,
) -> Pilot:
    """Play ``n`` of ``planned`` (spread evenly) with the real models (module docstring)."""
    from marketarena.simulate.limits import llm_aliases

    if not 1 <= n <= len(planned):
        raise ParamsError(
            f"--pilot {n}: must be from 1 to {len(planned)} (the episodes of {instance} with "
            "LLM seats)"
        )
    played = sample_evenly(planned, n)
    runtime = StandInRuntime(params, openai_factory=openai_factory, ledger_path=ledger_path)
    runtime.runtime.check_keys(llm_aliases(params, instance))
    per_episode = play_episodes(rules, mp, resources, played, params, None, runtime)
    usage, scales = {}, {}
    for alias in llm_aliases(params, instance):  # its seats planned over its seats played
        scale = scales[alias] = seats_of(planned, alias) / max(seats_of(played, alias), 1)
        u = PilotUsage(play=play_totals(per_episode, alias, scale))
        for calls, _ in per_episode:
            mine = calls[calls["model"] == alias] if len(calls) else calls
            u.calls += len(mine)
            if len(mine):
                u.requests += float(mine["attempts"].sum())
                u.prompt_tokens += float(mine["prompt_tokens"].sum())
                u.completion_tokens += float(mine["completion_tokens"].sum())
                u.cached_prompt_tokens += float(mine["cached_prompt_tokens"].sum())
        for name in (
            "calls",
            "requests",
            "prompt_tokens",
            "completion_tokens",
            "cached_prompt_tokens",
        ):
            setattr(u, name, getattr(u, name) * scale)
        usage[alias] = u
    cost = sum(
        params.models[a].cost_usd(u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens)
        / scales[a]
        for a, u in usage.items()
    )
    return Pilot(
        len(played),
        len(planned),
        usage,
        per_episode,
        cost,
        runtime.runtime.client.usage().cost_usd,
    )
