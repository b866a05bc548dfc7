"""Data from the logs put into a page safely, for the results site and the episode viewer alike:
everything a log holds (an LLM's answer, a player's name) is hostile text."""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup


def script_json(value: Any) -> Markup:
    """``value`` as JSON for a ``<script type="application/json">`` block: ``<``, ``>`` and ``&``
    escaped, so no text in it can close the block; read back with ``JSON.parse`` of its
    ``textContent``."""
    return Markup(
        json.dumps(value, ensure_ascii=False, allow_nan=False, default=str, sort_keys=True)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
