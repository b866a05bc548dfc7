"""What an instance's LLM seats will cost before any call is made (``marketarena estimate``).

A dry run (``dry_run.py``): the instance's planned episodes with LLM seats are played with every
LLM alias answered by the mock provider (``llm/mock.py``), through the real prompts, harnesses,
re-asks and market rules, in a temporary response cache; no endpoint is called, no key is needed,
nothing is written under ``data/``. ``sample`` episodes, spread evenly over the plan, stand for
the others (their totals are scaled by episodes planned / episodes played; ``sample: None`` plays
them all).

Several plays, because how long an episode lasts can depend on how the LLM plays
(english_auction's bidding rounds, crash's survival of a firm, lemon's purchases and reviews):

- ``stand-in:<name>``: a baseline of the roster that can play the seat's role decides what the
  seat does (the mock's answer to a harness's extra calls, or to roles no baseline plays,
  remains): every such baseline, one per strategy, at most ``dry_run.MAX_STAND_INS`` (4), in
  roster order. One alone misleads: english_auction's rule bidder barely bids, its increment
  bidder raises to its value;
- ``random``: the mock's random valid answers decide. Not a baseline's play: bids and withdrawals
  at random, failed bids re-asked by the market; but a crash firm pricing at random goes bankrupt
  within days and is asked no more.

The random play and the first stand-in's are played first; when they ask every episode as often
(double_auction's rounds, cournot's, bertrand's, supply_chain's days: the market's length does not
depend on the play) the others are not needed. The estimate is the stand-in play that asks most
(an LLM seat is taken to stay in the game as long as the most persistent baseline of its role:
the side a budget errs on), leaving out the baselines that play blind
(:data:`dry_run.BLIND_STRATEGIES`: a roster's ``random`` stands for no model; the mock's random
answers already bring random play into the range: lemon's random buyer, buying at every step and
reviewing every purchase, asked 26% more calls than the sensible model of the benchmark); the
range runs from the least of the plays to the most, the random play and the blind stand-ins
included, episode by episode (``dry_run.envelope``: each episode's fewest calls and tokens of any
play, summed, and its most: a model need not play as one play does in every episode; a crash
firm selling at half its unit cost went bankrupt sooner than every play's total said, 242 calls
against the least play's 332, but not sooner than the plays' least episode by episode, 177), and
every play's calls are shown. Against a hand-written sensible model on the fake
endpoint (``benchmarks/bench_estimate.py``, every market) this was within 4% in calls and 2% in
prompt tokens. Then per instance and model alias:

- ``calls``: the LLM calls (decisions asked, a harness's extra calls, the market's own re-asks
  after a broken rule);
- ``requests``: ``calls x (1 + reask_rate)``, each re-ask one more request. The rate is 0 where
  no call may be re-asked (the seats' harnesses cap ``max_reasks`` at 0: BAZAAR's and Agent
  Bazaar's own rules, :func:`seat_reasks`), else the caller's (``--reask-rate``), else the model's in its earlier runs (every instance's run log:
  re-asks per call, :func:`earlier_usage`), else :data:`PRIOR_REASK_RATE`; ``requests_max`` is
  the bound, ``calls x (1 + max_reasks)``;
- ``prompt_tokens``, counted as the mock counts them (about 4 UTF-8 bytes a token: real
  tokenizers differ by some 10-25% on English text), plus for each re-ask the conversation
  resent with the previous answer and the error quoted; ``cached_prompt_tokens``, those a
  provider that caches prompt prefixes would serve from its cache: the model's share in its
  earlier runs of this instance, else what ``llm.prompt_cache.PrefixCache`` (OpenAI's rule: prompts
  of 1,024 tokens and more, in blocks of 128, the longest prefix shared with a recent prompt)
  serves on the dry run's prompts; ``prefix_share``, the share of prompt tokens that repeat the
  previous request's prefix for the seat (no minimum, no blocks);
- ``completion_tokens``: the model's tokens per call in its earlier runs of this instance, else
  the prior for the kind of answers its entry declares (``models.<alias>.answers_like``:
  ``bare_json``, ``chain_of_thought``, ``thinking``; ``completion_priors.py``: what real models
  wrote per call in Agent Bazaar's logged runs, the range the kind's models' least and most),
  else, undeclared, chain_of_thought's prior with a range from the shortest answer (the mock's,
  or bare_json's least) to thinking's most, so the range covers every kind (at most
  ``max_tokens`` a request: the ceiling);
- ``cost_usd`` at the model's prices (cached prompt tokens at its cached-input price) with a
  range, ``cost_lo``..``cost_hi``: the fewest calls and tokens of any play at half the re-ask
  rate, with the largest share of prompt tokens cached of any play and 15% fewer tokens; the
  most calls and tokens of any play at twice the rate plus two points, with none cached and 15%
  more tokens (``TOKEN_SPREAD``: a real tokenizer's count differs from the mock's by some
  10-25%); and the ceiling ``cost_max_usd``: every call re-asked to the bound, each request with
  its prompt grown by the previous answers and every answer at ``max_tokens``.
  :func:`warnings` says when the range passes ``llm.max_cost_usd`` (with what the instance's
  spend ledger holds), or when the ceiling does;
- ``wall_s``, the wall time at ``latency_s`` per request: the larger of the longest episode's chain
  of sequential requests (decision points, a harness's calls one after the other, re-asks) times
  the latency, and each endpoint's requests times the latency over its ``max_concurrency``; it is
  the ideal the side-by-side run approaches (``simulate``), not counting the CPU work.

A pilot (``pilot``, ``marketarena estimate --pilot N``; ``pilot.py``): N of the planned LLM
episodes, spread evenly, are first played with the real models, through the response cache and
the budget (the instance's spend ledger); their calls, requests, tokens and the provider's cached
tokens, scaled to the plan, are the point (the model's own play, not a stand-in's; its re-ask rate
and answers' length over every other source). The dry run's plays, with the pilot's, make the
range. The pilot's requests have the run's cache keys: the run replays them at no cost.

Measured against real runs on the fake endpoint, market by market: ``benchmarks/bench_estimate.py``
(docs/cost.md).
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from marketarena.completion_priors import answer_tokens
from marketarena.config import Params
from marketarena.core.registry import rules_for
from marketarena.dry_run import (
    PlayTotals,
    blind_stand_ins,
    envelope,
    episode_depth,
    episode_lengths,
    mock_params,
    play_episodes,
    play_totals,
    sample_evenly,
    stand_in_names,
)
from marketarena.llm.client import UsageTotals
from marketarena.money import usd

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.pilot import Pilot, PilotUsage

#: re-asks per call assumed for a model with no earlier run (structured output keeps most answers
#: valid; a model that often breaks the schema shows its own rate after its first run)
PRIOR_REASK_RATE = 0.05
#: prompt tokens a re-ask adds besides the previous answer: the error quoted, the instruction
REASK_PROMPT_TOKENS = 60
#: how far a real tokenizer's counts may lie from the mock's 4 bytes a token (the range's margin)
TOKEN_SPREAD = 0.15


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
    cached_prompt_tokens: float = 0.0
    cost_lo: float = 0.0
    cost_hi: float = 0.0
    calls_lo: float = 0.0
    calls_hi: float = 0.0
    reask_rate: float = PRIOR_REASK_RATE
    reask_source: str = "prior"
    prefix_share: float = 0.0
    answer_tokens: float = 0.0  # completion tokens per call at the point
    mock_answer_tokens: float = 0.0  # the mock's, in the point's play
    completion_source: str = "the mock's answers"
    plays: dict[str, PlayTotals] = field(default_factory=dict)


@dataclass
class InstanceEstimate:
    instance: str
    episodes: int  # planned episodes with LLM seats
    sampled: int  # of them played in the dry run
    latency_s: float
    wall_s: float
    depth: int  # the longest episode's chain of sequential requests
    models: list[ModelEstimate]
    #: with a stopping rule (``markets.<instance>.stop``): the least share of these episodes it
    #: plays (:func:`stop_floor`); None: no rule, every one is played
    stop_floor: float | None = None
    pilot: Pilot | None = None  # ``--pilot``: its episodes played with the real models

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [{k: v for k, v in asdict(m).items() if k != "plays"} for m in self.models]
        )

    @property
    def cost_usd(self) -> float:
        return sum(m.cost_usd for m in self.models)

    @property
    def cost_hi(self) -> float:
        return sum(m.cost_hi for m in self.models)

    @property
    def cost_max_usd(self) -> float:
        return sum(m.cost_max_usd for m in self.models)


def earlier_usage(run_logs_dir: Path) -> dict[tuple[str, str], UsageTotals]:
    """(instance, alias) -> the alias's usage in every run log under ``run_logs_dir``
    (``data/run_logs/<instance>/``; ``core.run_logs``): what its earlier runs say of its re-ask
    rate, its answers' length and the provider's prompt cache."""
    from marketarena.core.run_logs import run_logs

    out: dict[tuple[str, str], UsageTotals] = {}
    root = Path(run_logs_dir)
    if not root.is_dir():
        return out
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for _, log in run_logs(folder):
            for episode in log.get("episodes", []):
                for alias, u in (episode.get("llm") or {}).items():
                    got = UsageTotals(
                        **{k: u.get(k) or 0 for k in UsageTotals.__dataclass_fields__}
                    )
                    out.setdefault((folder.name, alias), UsageTotals()).merge(got)
    return out


def estimate(
    instance: str,
    params: Params,
    resources,
    latency_s: float = 1.0,
    sample: int | None = 20,
    reask_rate: float | None = None,
    history: dict[tuple[str, str], UsageTotals] | None = None,
    episodes: set[str] | None = None,
    pilot: int = 0,
    ledger_path: Path | None = None,
    openai_factory=None,
) -> InstanceEstimate | None:
    """The dry run of ``instance`` (see the module docstring); None when it seats no LLM.
    ``resources``: what ``simulate.load_inputs`` returns for it; ``reask_rate``: re-asks per call
    (None: each model's in ``history``, :func:`earlier_usage`, else the prior); ``episodes``: only
    these planned episodes' ids (what a resumed run has left to play; None: every one);
    ``pilot``: that many of them played first with the real models (``pilot.py``), charged to
    the spend ledger at ``ledger_path`` (None: an in-memory budget), on ``openai_factory``'s
    endpoint (tests)."""
    from marketarena.simulate.limits import llm_aliases

    aliases = llm_aliases(params, instance)
    if not aliases:
        return None
    history = history or {}
    rules, mp = rules_for(params, instance)
    planned = [s for s in rules.plan(mp) if any(seat.entry.kind == "llm" for seat in s.seats)]
    if episodes is not None:
        planned = [s for s in planned if s.episode_id in episodes]
    flown = None
    if pilot:
        from marketarena.pilot import run_pilot

        flown = run_pilot(
            instance, params, resources, rules, mp, planned, pilot, ledger_path, openai_factory
        )
    played = sample_evenly(planned, sample)
    scale = len(planned) / max(len(played), 1)
    names = stand_in_names(rules, mp, planned)
    with tempfile.TemporaryDirectory(prefix="marketarena-estimate-") as tmp:

        def play(k: int | None):  # the k-th stand-in's play (None: the mock's own answers)
            return play_episodes(
                rules, mp, resources, played, mock_params(params, aliases, Path(tmp) / str(k)), k
            )

        runs = {"random": play(None), names[0]: play(0)}
        # the play decides the length
        if episode_lengths(runs["random"]) != episode_lengths(runs[names[0]]):
            runs.update({name: play(k) for k, name in enumerate(names) if k})
    plays_per = list(runs.values()) + ([flown.per_episode] if flown else [])
    depth = max((episode_depth(c) for per in plays_per for c, _ in per), default=0)
    models, load, blind = [], {}, blind_stand_ins(rules, mp, names)
    for alias in sorted(aliases):
        spec = params.models[alias]
        seated = sum(
            any(s.entry.kind == "llm" and s.entry.model == alias for s in e.seats) for e in planned
        )
        plays = {play: play_totals(per, alias, scale) for play, per in runs.items()}
        bounds = envelope(list(runs.values()), alias, scale) if len(runs) > 1 else None
        anywhere = UsageTotals()
        for (_, a), u in history.items():
            if a == alias:
                anywhere.merge(u)
        m = model_estimate(
            instance,
            alias,
            spec.model_copy(update={"max_reasks": seat_reasks(rules, planned, alias, spec)}),
            seated,
            plays,
            reask_rate,
            anywhere,
            history.get((instance, alias)),
            blind,
            market=params.markets[instance].market,
            pilot=flown.usage.get(alias) if flown else None,
            bounds=bounds,
        )
        models.append(m)
        total, limit = load.get(m.endpoint, (0.0, spec.max_concurrency))
        load[m.endpoint] = (total + m.requests, min(limit, spec.max_concurrency))
    wall = max([depth * latency_s] + [r * latency_s / c for r, c in load.values()])
    return InstanceEstimate(
        instance,
        len(planned),
        len(played),
        latency_s,
        wall,
        depth,
        models,
        stop_floor(rules, mp, [e.episode_id for e in planned]),
        flown,
    )


def seat_reasks(rules, planned: list, alias: str, spec) -> int:
    """The most re-asks a call of ``alias`` makes in ``planned``: the model entry's
    ``max_reasks``, capped by the harness of each of its seats (``Harness.max_reasks``: a
    publisher's harness makes none)."""
    from marketarena.agents.harnesses import harness_class

    caps = {
        harness_class(rules.harness_of(seat.entry), rules).max_reasks
        for e in planned
        for seat in e.seats
        if seat.entry.kind == "llm" and seat.entry.model == alias
    }
    if not caps or None in caps:
        return spec.max_reasks
    return min(spec.max_reasks, max(caps))


def stop_floor(rules, mp, llm_episodes: list[str]) -> float | None:
    """The least share of ``llm_episodes`` (the planned episodes with LLM seats) a stopping rule
    plays: each LLM player's games up to its first possible stop (the first look, every
    ``batch`` games, at ``min_games`` or more; all of them when fewer), and every episode with
    LLM seats that is no player's. None without a rule. The estimate is for every episode (the
    cap): the rule plays between this share and all of them."""
    if mp.stop is None or not llm_episodes:
        return None
    batch, least = mp.stop.batch, mp.stop.min_games
    first = -(-least // batch) * batch  # the first look at min_games or more
    players = rules.stop_players(mp)
    held = {i for ids in players.values() for i in ids}
    floor = {i for ids in players.values() for i in ids[:first]}
    return len(floor | (set(llm_episodes) - held)) / len(llm_episodes)


def model_estimate(
    instance: str,
    alias: str,
    spec,
    seated: int,
    plays: dict[str, PlayTotals],
    reask_rate: float | None,
    anywhere: UsageTotals,
    here: UsageTotals | None,
    blind: set[str] = frozenset(),
    market: str | None = None,
    pilot: PilotUsage | None = None,
    bounds: tuple[PlayTotals, PlayTotals] | None = None,
) -> ModelEstimate:
    """One alias's estimate from its plays' totals (module docstring): ``anywhere``, its usage
    in every earlier run (the re-ask rate); ``here``, in earlier runs of this instance (answer
    length, the provider's cache share); ``blind``, the stand-in plays that may bound the range
    but not be the point (unless every stand-in is blind); ``market``, the instance's market
    kind (the completion priors'; None: the instance's name); ``pilot``, its usage in the pilot
    (``pilot.py``): the point, its re-ask rate and answers' length over every other source;
    ``bounds``, the plays' least and most episode by episode (``dry_run.envelope``), the range's
    ends where they pass the plays'."""
    if spec.max_reasks == 0:
        rate, source = 0.0, "none: its harness never re-asks"
    elif pilot is not None and pilot.calls:
        rate, source = pilot.reask_rate, "the pilot's"
    elif reask_rate is not None:
        rate, source = reask_rate, "given"
    elif anywhere.calls:
        rate = (anywhere.attempts - anywhere.calls) / anywhere.calls
        source = f"its earlier runs ({anywhere.calls:,} calls)"
    else:
        rate, source = PRIOR_REASK_RATE, "prior"
    if pilot is not None:
        plays = {**plays, "pilot": pilot.play}
    fields = PlayTotals.__dataclass_fields__
    ends = list(plays.values())
    lo = PlayTotals(*(min(asdict(p)[k] for p in ends + list(bounds or [])[:1]) for k in fields))
    hi = PlayTotals(*(max(asdict(p)[k] for p in ends + list(bounds or [])[1:]) for k in fields))
    stand = {name: p for name, p in plays.items() if name not in ("random", "pilot")}
    point = max(
        ({n: p for n, p in stand.items() if n not in blind} or stand).values(),
        key=lambda p: p.calls,
    )
    per_answer = here.completion_tokens / here.calls if here and here.calls else None
    if pilot is not None and pilot.requests:
        per_answer = pilot.completion_tokens / pilot.requests  # a request's answer
    kind = getattr(spec, "answers_like", None)

    def answer(p: PlayTotals, side: str) -> float:
        """Completion tokens per call of play ``p`` at ``side`` (point, low, high)."""
        if per_answer is not None:
            return per_answer
        got = answer_tokens(kind, market or instance, p.completion_tokens / max(p.calls, 1))
        return getattr(got, side)

    cache_share = (
        here.cached_prompt_tokens / here.prompt_tokens if here and here.prompt_tokens else None
    )
    if pilot is not None and pilot.prompt_tokens:
        cache_share = pilot.cached_prompt_tokens / pilot.prompt_tokens

    def totals(
        p: PlayTotals, r: float, share: float | None, side: str = "point"
    ) -> tuple[float, float, float, float]:
        """(requests, prompt, cached prompt, completion tokens) of a play at re-ask rate ``r``,
        ``share`` of its prompt tokens cached (None: as its own prompts were), its answers at
        the completion prior's ``side``."""
        tokens = answer(p, side)
        completion = p.calls * tokens * (1 + r)
        prompt = p.prompt_tokens * (1 + r) + p.calls * r * (tokens + REASK_PROMPT_TOKENS)
        hit = p.cached_prompt_tokens * (1 + r) if share is None else prompt * share
        return p.calls * (1 + r), prompt, hit, completion

    shares = [p.cached_prompt_tokens / p.prompt_tokens for p in plays.values() if p.prompt_tokens]
    if pilot is not None:  # its own play, re-asks included, as its endpoint counted it
        point = pilot.play
        requests, prompt, completion = pilot.requests, pilot.prompt_tokens, pilot.completion_tokens
        hit = pilot.cached_prompt_tokens
    else:
        requests, prompt, hit, completion = totals(point, rate, cache_share)
    lo_t = [
        x * (1 - TOKEN_SPREAD)
        for x in totals(lo, rate / 2, max(shares + [cache_share or 0.0]), "low")
    ]
    hi_t = [x * (1 + TOKEN_SPREAD) for x in totals(hi, 2 * rate + 0.02, 0.0, "high")]
    bound = 1 + spec.max_reasks
    n = hi.calls
    # every re-ask resends the conversation with the answers before it (at max_tokens)
    prompt_max = bound * hi.prompt_tokens + n * spec.max_tokens * bound * (bound - 1) / 2
    endpoint = f"mock:{alias}" if spec.provider == "mock" else (spec.base_url or "openai")
    cost = spec.cost_usd(prompt, completion, hit)
    return ModelEstimate(
        instance=instance,
        model=alias,
        episodes=seated,
        calls=point.calls,
        requests=requests,
        requests_max=n * bound,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
        cost_max_usd=spec.cost_usd(prompt_max, n * bound * spec.max_tokens),
        max_concurrency=spec.max_concurrency,
        endpoint=endpoint,
        cached_prompt_tokens=hit,
        cost_lo=min(cost, spec.cost_usd(lo_t[1], lo_t[3], lo_t[2])),  # it holds the pilot's
        cost_hi=max(cost, spec.cost_usd(hi_t[1], hi_t[3], hi_t[2])),
        calls_lo=lo.calls,
        calls_hi=hi.calls,
        reask_rate=rate,
        reask_source=source,
        prefix_share=point.repeated_tokens / point.prompt_tokens if point.prompt_tokens else 0.0,
        answer_tokens=answer(point, "point"),
        mock_answer_tokens=point.completion_tokens / max(point.calls, 1),
        completion_source=(
            "the pilot's answers"
            if pilot is not None and pilot.requests
            else f"its earlier runs of {instance} ({here.calls:,} calls)"
            if per_answer is not None
            else answer_tokens(kind, market or instance, 0.0).source
        ),
        plays=plays,
    )


def describe(e: InstanceEstimate) -> list[str]:
    """Lines ``marketarena estimate`` prints for one instance."""
    lines = [
        f"{e.instance}: {e.episodes} episodes with LLM seats (dry run of {e.sampled} on the "
        f"mock provider, scaled); wall time at {e.latency_s:g} s a request: "
        f"{_duration(e.wall_s)} (longest episode: {e.depth} sequential requests)"
    ]
    for m in e.models:
        spread = (
            ""
            if round(m.calls_lo) == round(m.calls_hi)
            else (
                " (the pilot's play; plays: "
                if "pilot" in m.plays
                else " (the baseline that plays longest; plays: "
            )
            + ", ".join(
                f"{'random answers' if name == 'random' else name.removeprefix('stand-in:')}"
                f" {p.calls:,.0f}"
                for name, p in m.plays.items()
            )
            + ")"
        )
        cached = (
            f", {m.cached_prompt_tokens:,.0f} of them cached by a prefix-caching provider"
            if m.cached_prompt_tokens
            else ""
        )
        lines.append(
            f"  {m.model}: {m.calls:,.0f} calls{spread}, {m.requests:,.0f} requests at "
            f"{m.reask_rate:.0%} re-asks ({m.reask_source}; at most {m.requests_max:,.0f}); "
            f"tokens {m.prompt_tokens:,.0f} prompt{cached} + {m.completion_tokens:,.0f} "
            f"completion ({m.answer_tokens:,.0f} a call: {m.completion_source}); {usd(m.cost_usd)} (range {usd(m.cost_lo)} to {usd(m.cost_hi)}, "
            f"ceiling {usd(m.cost_max_usd)}); prompts repeat {m.prefix_share:.0%} of the seat's "
            f"previous one; max_concurrency {m.max_concurrency} at {m.endpoint}"
        )
    if e.pilot is not None:
        lines.append(
            f"  pilot: the point is the models' own play in {e.pilot.episodes} of the "
            f"{e.pilot.planned} episodes, scaled (re-asks and answers' length measured); they "
            f"cost {usd(e.pilot.cost_usd)}, {usd(e.pilot.spent_usd)} of it spent now (the rest "
            "answered by the response cache); the run replays them from the cache"
        )
    if e.stop_floor is not None:
        lines.append(
            f"  stopping rule (markets.{e.instance}.stop): these figures are for every episode "
            f"(the cap); the rule plays between {e.stop_floor:.0%} of them (each LLM player "
            f"settled at its first look) and all, {usd(e.cost_usd * e.stop_floor)} to "
            f"{usd(e.cost_usd)} at the point estimate"
        )
    return lines


def warnings(e: InstanceEstimate, limit: float | None, spent: float = 0.0) -> list[str]:
    """What to tell a user whose ``llm.max_cost_usd`` (``limit``) the estimate of ``e`` passes,
    with ``spent`` already in the instance's spend ledger (earlier runs)."""
    if limit is None:
        return []
    already = f" on top of {usd(spent)} its earlier runs spent" if spent else ""
    if spent + e.cost_hi > limit:
        return [
            f"warning: {e.instance}: the estimate's range reaches {usd(e.cost_hi)}{already}, "
            f"more than llm.max_cost_usd {usd(limit)}: the run may stop before its last "
            "episode (raise the limit, or plan fewer episodes)"
        ]
    if spent + e.cost_max_usd > limit:
        return [
            f"note: {e.instance}: its ceiling {usd(e.cost_max_usd)} (every call re-asked to "
            f"max_reasks, every answer max_tokens long){already} passes llm.max_cost_usd "
            f"{usd(limit)}; each request reserves its own ceiling while in flight, so the "
            "run stops if the reservations would pass the limit"
        ]
    return []


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def rating_cost_row(params: Params, instance: str, resources, sample: int | None = 20) -> dict:
    """One row of the rating-cost table (``rating_cost.COLUMNS``) for ``instance``: what the
    rated entrant of ``rating_cost.with_entrant`` needs, as :func:`estimate` says, its answers
    the mock's (``rating_cost.priced`` prices each kind's answers from them).
    ``resources``: the instance's inputs (``simulate.load_inputs``)."""
    from marketarena import rating_cost

    rated = rating_cost.with_entrant(params, instance)
    found = estimate(instance, rated, resources, sample=sample)
    (m,) = [m for m in found.models if m.model == rating_cost.ALIAS]
    # the table keeps the mock's answers; rating_cost.priced prices each kind's from them
    resent = (m.requests - m.calls) * (m.answer_tokens - m.mock_answer_tokens)
    return {
        "instance": instance,
        "market": params.markets[instance].market,
        "episodes": m.episodes,
        "calls": round(m.calls),
        "requests": round(m.requests),
        "prompt_tokens": round(m.prompt_tokens - resent),
        "cached_prompt_tokens": round(m.cached_prompt_tokens),
        "completion_tokens": round(m.requests * m.mock_answer_tokens),
        "fingerprint": rating_cost.fingerprint(params, instance),
    }
