"""Harnesses: what an LLM seat is shown and which extra calls it makes (``roster[].harness``).

A harness wraps the generic LLM agent: it decides the messages of each call (the market's own
templates plus the blocks it adds) and may make extra calls (a review before acting, a plan), and it
keeps the memory those need across an episode. A harness never changes the market: the answer it
returns is judged and applied like any other agent's.

Harnesses are discovered: each module of this package defines :class:`Harness` subclasses with a
``name``; ``roster[].harness`` selects one by that name, among those the market lists in its
rules' ``harnesses``. A harness only one market offers lives in that market's folder and is named
in its rules' ``own_harnesses`` (english_auction's ``bdi``: AucArena's plan / bid / belief /
replan bidder), found before the shared ones. A harness's params are the roster entry's
``params``.

=============  =====================================================================================
``plain``      the market's prompt, one call per decision (re-asked with the reason when a market
               rule rejects the answer)
``notes``      seed 003's PLANS.txt / INSIGHTS.txt: the notes the model wrote in its last answer are
               shown in its next prompt (cournot, bertrand)
``reflection`` reflection on its top-k past steps, scored by signals the market reports (profit,
               market health), shown in every prompt (crash's Stabilizing Firm)
=============  =====================================================================================
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from marketarena.agents.harnesses.base import Harness


@lru_cache(maxsize=1)
def registry() -> dict[str, type[Harness]]:
    found: dict[str, type[Harness]] = {}
    for module in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{module.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Harness) and getattr(obj, "name", ""):
                found.setdefault(obj.name, obj)
    return found


def harness_class(name: str, rules: Any = None) -> type[Harness]:
    """The harness ``name``: the market's own (``rules.own_harnesses``: a class, or its
    ``"module:Class"`` so that the rules' import does not pay for it) or a shared one."""
    own = getattr(rules, "own_harnesses", {})
    if name in own:
        found = own[name]
        if isinstance(found, str):  # "module:Class", imported when a seat needs it
            module, _, attr = found.partition(":")
            found = getattr(importlib.import_module(module), attr)
        return found
    try:
        return registry()[name]
    except KeyError:
        known = ", ".join(sorted({*registry(), *own}))
        raise KeyError(f"unknown harness {name!r} (known: {known})") from None


def validate_harness(name: str, params: dict[str, Any], where: str, rules: Any = None) -> None:
    """``ValueError`` naming ``where`` when the harness is unknown or its params are wrong."""
    try:
        cls = harness_class(name, rules)
    except KeyError as exc:
        raise ValueError(f"{where}.harness: {exc.args[0]}") from None
    try:
        cls.Params.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{where}.params.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


__all__ = ["Harness", "harness_class", "registry", "validate_harness"]
