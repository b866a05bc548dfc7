"""Prompt templates: one Jinja setup for every market (DESIGN.md: prompts live in template files).

``template_env(*packages)`` loads ``<package>/templates/*.j2``, the first package that has a name
wins (a market's own templates, then shared ones such as ``markets/_shared/templates``). Strict:
an undefined variable raises instead of rendering empty; ``trim_blocks``/``lstrip_blocks`` so that
block tags do not leave blank lines. ``chat_messages`` renders a system and a user template with
the same context into OpenAI chat messages.

Quoting
-------
Text one agent wrote, shown to another agent: always as quoted, capped, inert data.

Slogans (supply_chain), listing descriptions (lemon) and bidder messages (english_auction) are
written by one agent, possibly an adversarial LLM, and read by others. Rendered raw, such text could
close a delimiter, start a fake "system" section, smuggle template syntax or terminal escapes, or
simply be 50 KB long. :func:`quote_text` turns it into data that cannot do any of that:

1. control characters are removed (NUL, C0/C1 controls, DEL), ANSI escape sequences and Unicode
   bidi controls / zero-width characters are stripped;
2. all whitespace (newlines included) collapses to single spaces, so the text cannot start a line
   of its own in the prompt;
3. it is capped in words (when ``max_words`` is given) and in characters, and a cut is marked
   with ``…``;
4. it is written as a JSON string literal (``"..."`` with quotes and backslashes escaped), so it
   is clearly delimited and cannot close the quotes around it or break a JSON example.

Templates receive the result as an ordinary variable; Jinja never evaluates a variable's content,
so ``{{ ... }}`` inside the text stays literal text.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined


@lru_cache(maxsize=None)
def template_env(*packages: str) -> Environment:
    loader = ChoiceLoader([PackageLoader(package, "templates") for package in packages])
    # auto_reload off: templates are package files, read once (on, Jinja stats each file on
    # every render: two stat calls per LLM request)
    return Environment(
        loader=loader,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        auto_reload=False,
    )


def chat_messages(env: Environment, system: str, user: str, **context: Any) -> list[dict[str, str]]:
    """``[{"role": "system", ...}, {"role": "user", ...}]`` from two templates of ``env``."""
    return [
        {"role": "system", "content": env.get_template(system).render(**context)},
        {"role": "user", "content": env.get_template(user).render(**context)},
    ]


#: characters of the notes an agent keeps for its own later prompts (the notes harness's default,
#: the oligopoly markets' PLANS.txt and INSIGHTS.txt), beyond which they are cut
NOTE_MAX_CHARS = 4000

ELLIPSIS = "…"
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# bidi embeddings/overrides/isolates and marks, zero-width characters, BOM
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Quoted:
    """The quoted literal (with its quotes), the cleaned text inside it and whether it was cut."""

    literal: str
    text: str
    truncated: bool

    def __str__(self) -> str:
        return self.literal


def clean_text(text: str) -> str:
    """``text`` without control characters, ANSI escapes and invisible bidi / zero-width
    characters, whitespace collapsed to single spaces and stripped."""
    text = _INVISIBLE.sub("", _ANSI.sub("", str(text)))
    return _SPACE.sub(" ", text.translate(_cleaning(text))).strip()


#: ASCII's whitespace (to a space) and other control characters (dropped): ``str.translate``'s
#: table for a text of ASCII only, the common case (a chat of a published game: 357,033 of them)
_ASCII_CLEANING = {c: " " if chr(c).isspace() else None for c in (*range(32), 127)}


@functools.cache
def _unicode_cleaning() -> dict[int, str | None]:
    """The table for any text: every whitespace character to a space, every other character of
    category Cc, Cf or Cs dropped (built once, on the first text that is not ASCII)."""
    table: dict[int, str | None] = {}
    for c in range(sys.maxunicode + 1):
        ch = chr(c)
        if ch.isspace():
            table[c] = " "
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs"):
            table[c] = None
    return table


def _cleaning(text: str) -> dict[int, str | None]:
    return _ASCII_CLEANING if text.isascii() else _unicode_cleaning()


def cap_text(text: str, max_chars: int, max_words: int | None = None) -> tuple[str, bool]:
    """``text`` cut to at most ``max_words`` words and ``max_chars`` characters (the ``…`` mark
    counts), and whether it was cut."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1 (got {max_chars})")
    cut = False
    if max_words is not None:
        words = text.split(" ")
        if len(words) > max_words:
            text, cut = " ".join(words[:max_words]), True
    if len(text) > max_chars or (cut and len(text) + 1 > max_chars):
        text, cut = text[: max_chars - 1].rstrip(), True
    return (text + ELLIPSIS if cut else text), cut


def quote_text(text: str, max_chars: int = 500, max_words: int | None = None) -> Quoted:
    """Text written by another agent as an inert JSON string literal (see module docstring)."""
    capped, cut = cap_text(clean_text(text), max_chars, max_words)
    return Quoted(literal=json.dumps(capped, ensure_ascii=False), text=capped, truncated=cut)
