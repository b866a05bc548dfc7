"""Agent Bazaar's own buyer for a seat of ours (issue 53): the ``agent_bazaar`` harness of lemon.

A model put on the authors' lemon board must see the task their buyer models saw. Their buyer's
prompt is built by Python code (ai_bazaar/agents/buyer.py and llm_agent.py of
sethkarten/AI-Bazaar), which this harness reads at run time from the user's copy (its ``code``
param: the repository's root; a joint instance fills it from ``source.prompts``, by default the
folder above the logs folder) and runs in ``core.pycode``'s interpreter, never copying it: their
``BuyerAgent`` is built as their environment builds it (``_create_system_prompt``,
``init_message_history``), and each of our decision points calls the method their environment
calls at that point, with the seat's state of our market:

==========================  ===================================================================
our decision point          their call
==========================  ===================================================================
``buy`` (round 1)           ``make_orders(timestep, listings, discovery_limit, include_rep)``
``review`` (round 2)        ``review_transaction(seller_id, description, quality_received,
                            quality_label, timestep)``, then ``record_transaction`` (their
                            order), made at the buyer's next ``buy`` from its history
==========================  ===================================================================

Their method runs once a decision, in a thread of its own (:class:`Call`): where their code would
call a model (``call_llm``), that thread waits while the harness asks ours the system prompt and
the user message it had built (their ``system_prompt`` and ``msg``), then goes on with their own
parse of the answer (the keys their ``call_llm`` extracts, ``_shared/their_agents.py``, passed
to their ``parse_func``; no JSON object: their ``on_parse_failure_return``); a run that ends
before the answer ends the thread. What their method returns is the action: an order of a listing is
a bid on it, none a pass; a vote ``True``/``False``/``None`` is up/down/abstain. The answer is
valid as the import counts the published models' answers (``authors_answers.parse_bid`` /
``parse_vote``); an invalid answer is the market's fallback (a pass, an abstention), which is
what their engine makes of it, and is counted invalid.

**What is ours, not theirs** (each named in docs/published-games.md):

- the seat's state: the listings each buyer sees and their order are drawn by our market (their
  ``random.sample`` is the identity here, over the listings we show); the sellers are our
  scripted ones (their runs had Gemini 3 Flash write the descriptions); our market's seat ``B<i>``
  is their ``consumer_<i-1>``; a listing's real id is our per-buyer alias of its seller;
- the persona: drawn uniformly from their ``PERSONAS`` (ai_bazaar/utils/common.py), as
  their environment draws it, but with the seat's seeded generator, not their global one;
- re-asks: their ``call_llm`` sends the same prompt again (up to ``timeout`` = 30 times) when
  an answer holds no JSON object; here there is no re-ask (an answer without JSON is their
  fallback at once, and invalid), so a run's cost is bounded by one call per decision;
- the request: JSON mode (``response_format: json_object``, as their OpenAI client asks) where
  the model entry's ``structured_output`` is not ``none``; temperature and ``max_tokens`` are the
  model entry's (their runs: 0.7 and 2,000).
"""

from __future__ import annotations

import copy
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

from marketarena.agents.harnesses.base import Harness
from marketarena.core.pycode import CodeError, Ns, Obj, Program
from marketarena.core.types import Reply
from marketarena.markets._shared.their_agents import (
    Call,
    TheirCodeParams,
    TheirJSON,
    asked,
    check_renders,
    invalid,
    read_answer,
    their_program,
)
from marketarena.markets.lemon.authors_answers import parse_bid, parse_vote
from marketarena.markets.lemon.observations import (
    BuyAction,
    BuyerObservation,
    ReviewAction,
    ReviewObservation,
)
from marketarena.markets.lemon.plan import COMMON, FILES

BUYER = "BuyerAgent"
VOTES = {True: "up", False: "down", None: "abstain"}
#: a listing id as their observation (a JSON dump) shows it; ``<id>`` is the answer format's
LISTING_ID = re.compile(r'"listing_id":\s*"([^"]+)"')


class Ask(BaseException):
    """Their code reached ``call_llm``: the prompt it built (a ``BaseException``, so that their
    own ``except Exception`` does not catch it)."""

    def __init__(self, system: str, user: str):
        self.system, self.user = system, user


class AuthorsJSON(TheirJSON):
    """Any answer (``_shared/their_agents.py``); the stand-ins bid, pass and vote as their buyer
    answers."""

    @classmethod
    def from_action(cls, action: Any, observation: Any, messages: list) -> "AuthorsJSON | None":
        """A bid, pass or vote as their buyer answers it: a bid names the listing id the prompt
        shows at the position of the listing ``observation`` lists (their ids follow its
        order)."""
        if isinstance(action, ReviewAction):
            vote = {"up": "upvote", "down": "downvote"}.get(action.vote, "abstain")
            return cls(text=json.dumps({"vote": vote}))
        if not isinstance(action, BuyAction) or not isinstance(observation, BuyerObservation):
            return None
        if action.decision == "pass":
            return cls(text=json.dumps({"decision": "pass", "listing_id": None}))
        aliases = [v.listing for v in observation.listings]
        if action.listing not in aliases:
            return None
        at = aliases.index(action.listing)
        ids = [i for i in LISTING_ID.findall(messages[-1]["content"]) if not i.startswith("<")]
        shown = ids[-len(observation.listings) :]  # the current observation's, in its order
        if len(shown) != len(observation.listings):
            return None
        return cls(text=json.dumps({"decision": "bid", "listing_id": shown[at]}))


def _order(**fields: Any) -> Ns:
    """Their ``Order(...)``: the fields it was given."""
    return Ns(**fields)


#: what stands for ours in their buyer's code: their ``random.sample`` is the identity over the
#: listings we show (module docstring), their ``Order(...)`` the fields it was given
HOST = {"random": Ns(sample=lambda seq, k: list(seq)[:k]), "Order": _order}


def program(code: str | Path) -> Program:
    """Their buyer's code in ``code`` (``their_agents.their_program``)."""
    return their_program(code, FILES, HOST)


def constant(code: str | Path, name: str) -> Any:
    """A module-level constant of their utils/common.py (``PERSONAS``, ``QUALITY_DICT``)."""
    p = program(code)
    return p.constant(p.module(COMMON), name)


class Seat:
    """Their ``BuyerAgent`` as our seat, driven step by step (module docstring): :meth:`begin`
    runs one of its methods to the model call (:class:`Call`: the prompt, then the answer), as the
    harness does; :meth:`prompt` returns the prompt a method would send, the seat's state left as
    it was, and :meth:`finish` runs a method with a given answer (the fidelity check,
    ``benchmarks/bench_authors_prompts.py``, answers with the published model's logged answers)."""

    def __init__(
        self,
        code: str | Path,
        name: str,
        persona: str,
        reputation_visible: bool,
        prompt_algo: str = "cot",
        history_len: int = 3,
    ):
        self.code, self.program = code, program(code)
        self.buyer = Obj(
            BUYER,
            name=name,
            persona=persona,
            args=Ns(lemon_base_buyer=False, no_buyer_rep=not reputation_visible),
            prompt_algo=prompt_algo,
            history_len=history_len,
            timeout=0,
            llm=Ns(),
            diary=[],
            trajectory=[],
            transaction_history=[],
            discovered_listings_this_step=[],
            _seller_anon_map={},
            _anon_listing_map={},
            system_prompt="",
        )
        self.program.call(self.buyer, "init_message_history")
        self.buyer.attrs["system_prompt"] = self.program.call(self.buyer, "_create_system_prompt")
        self.listing_ids: set[str] = set()

    def prompt(self, method: str, *args: Any, **kw: Any) -> tuple[str, str] | None:
        """(system, user) their ``method`` sends; None if it asks nothing (no listings). The
        seat's state is left as it was."""
        probe = copy.deepcopy(self.buyer)

        def stop(msg: str, *_: Any, **__: Any) -> Any:
            raise Ask(probe.attrs["system_prompt"], msg)

        probe.attrs["call_llm"] = stop
        try:
            self.program.call(probe, method, *args, **kw)
        except Ask as ask:
            self.listing_ids = set(probe.attrs["_anon_listing_map"])
            return ask.system, ask.user
        return None

    def finish(self, text: str, method: str, *args: Any, **kw: Any) -> Any:
        """Their ``method`` run with ``text`` as the model's answer (read as their ``call_llm``
        reads it); the seat's state moves on."""
        self.buyer.attrs["call_llm"] = partial(read_answer, text)
        return self.program.call(self.buyer, method, *args, **kw)

    def begin(self, method: str, *args: Any, **kw: Any) -> Call:
        """Their ``method`` run once, paused at the model call until :meth:`Call.answer` (the
        harness's way: half the work of :meth:`prompt` then :meth:`finish`, which run it
        twice)."""
        call = Call(self.program, self.buyer, method, args, kw)
        if call.prompt is not None:
            self.listing_ids = set(self.buyer.attrs["_anon_listing_map"])
        return call

    def record(self, seller: str, price: float, tier: str, timestep: int) -> None:
        """Their ``record_transaction`` of a purchase."""
        quality = constant(self.code, "QUALITY_DICT")
        self.program.call(
            self.buyer,
            "record_transaction",
            seller_id=seller,
            price_paid=float(price),
            quality_received=float(quality[tier]),
            quality_label=tier,
            timestep=timestep,
        )


def listings(views: list[tuple[str, float, str, float | None]]) -> list[Ns]:
    """Their listing objects for (real id, price, description, reputation or None) each."""
    return [
        Ns(
            id=i,
            firm_id=i,
            price=float(p),
            description=d,
            **({} if r is None else {"reputation": float(r)}),
        )
        for i, p, d, r in views
    ]


def check_code(code: str | Path) -> None:
    """Their buyer's code in ``code`` renders a prompt (a buyer shown one listing asks its
    model), before any game (``their_agents.check_renders``)."""

    def render(root: Path) -> None:
        personas = constant(root, "PERSONAS")
        seat = Seat(root, "consumer_0", str(personas[0]), True)
        one = listings([("seller", 10_000.0, "A car.", 0.8)])
        if seat.prompt("make_orders", 0, one, 3, True) is None:
            raise CodeError(root / FILES[0], "make_orders asked no model for one listing shown")

    check_renders(code, (*FILES, COMMON), render)


class AuthorsBuyer(Harness):
    """Their buyer's prompts and answer reading (module docstring)."""

    name = "agent_bazaar"
    Params = TheirCodeParams
    roles = frozenset({"buyer"})
    max_reasks = 0  # AuthorsJSON: their fallback at once (module docstring)

    def reset(self, rng: Any = None) -> None:
        self.rng, self.seat, self.recorded = rng, None, -1

    def _seat(self, agent_id: str, reputation_visible: bool) -> Seat:
        if self.seat is None:
            personas = constant(self.params.code, "PERSONAS")
            pick = 0 if self.rng is None else int(self.rng.integers(len(personas)))
            index = int(agent_id[1:]) - 1 if agent_id[1:].isdigit() else 0
            self.seat = Seat(
                self.params.code,
                f"consumer_{index}",
                personas[pick],
                reputation_visible,
                self.params.prompt_algo,
                self.params.history_len,
            )
        return self.seat

    async def _run(self, agent: Any, decision: Any, method: str, *args: Any, **kw: Any):
        """Their ``method``: to the prompt, asked, then on with the answer (module docstring)."""
        return await asked(self.seat.begin(method, *args, **kw), agent, AuthorsJSON, decision)

    async def respond(self, agent: Any, observation: Any, decision: Any, retry: Any = None):
        if retry is not None:  # never: the harness names only listings shown
            return Reply(action=None, error="re-asked by the market")
        if isinstance(observation, BuyerObservation):
            return await self._buy(agent, observation, decision)
        if isinstance(observation, ReviewObservation):
            return await self._review(agent, observation, decision)
        raise TypeError(f"the agent_bazaar harness plays buyers, not {type(observation).__name__}")

    async def _buy(self, agent: Any, obs: BuyerObservation, decision: Any) -> Reply:
        seat = self._seat(obs.agent_id, obs.reputation_visible)
        for tx in obs.history:  # their record_transaction, after the review (module docstring)
            if tx.step > self.recorded:
                seat.record(tx.listing, tx.price, tx.true_tier, tx.step - 1)
                self.recorded = tx.step
        views = [
            (v.listing, v.price, json.loads(v.description), v.reputation) for v in obs.listings
        ]
        orders, text, calls = await self._run(
            agent,
            decision,
            "make_orders",
            obs.step - 1,
            listings(views),
            len(views),  # their discovery limit: our market drew the listings shown
            obs.reputation_visible,
        )
        if text is not None:
            parsed = parse_bid(text, seat.listing_ids)
            if not parsed.valid:
                return invalid(calls, parsed.error, parsed.failure)
        if orders:
            listing = orders[0].attrs["listing_id"]
            return Reply(action=BuyAction(decision="bid", listing=listing), calls=calls)
        return Reply(action=BuyAction(decision="pass"), calls=calls)

    async def _review(self, agent: Any, obs: ReviewObservation, decision: Any) -> Reply:
        self._seat(obs.agent_id, True)
        quality = constant(self.params.code, "QUALITY_DICT")
        vote, text, calls = await self._run(
            agent,
            decision,
            "review_transaction",
            seller_id=obs.listing,
            description=json.loads(obs.description),
            quality_received=float(quality[obs.true_tier]),
            quality_label=obs.true_tier,
            timestep=obs.step - 1,
        )
        if text is not None:
            _, valid, error = parse_vote(text)
            if not valid:
                return invalid(calls, error)
        return Reply(action=ReviewAction(vote=VOTES.get(vote, "abstain")), calls=calls)
