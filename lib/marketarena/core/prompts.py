"""Prompt templates: one Jinja setup for every market (DESIGN.md: prompts live in template files).

``template_env(*packages)`` loads ``<package>/templates/*.j2``, the first package that has a name
wins (a market's own templates, then shared ones such as ``markets/_shared/templates``). Strict:
an undefined variable raises instead of rendering empty; ``trim_blocks``/``lstrip_blocks`` so that
block tags do not leave blank lines. ``chat_messages`` renders a system and a user template with
the same context into OpenAI chat messages.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined


@lru_cache(maxsize=None)
def template_env(*packages: str) -> Environment:
    loader = ChoiceLoader([PackageLoader(package, "templates") for package in packages])
    return Environment(loader=loader, undefined=StrictUndefined, trim_blocks=True,
                       lstrip_blocks=True, keep_trailing_newline=False)


def chat_messages(env: Environment, system: str, user: str, **context: Any) -> list[dict[str, str]]:
    """``[{"role": "system", ...}, {"role": "user", ...}]`` from two templates of ``env``."""
    return [{"role": "system", "content": env.get_template(system).render(**context)},
            {"role": "user", "content": env.get_template(user).render(**context)}]
