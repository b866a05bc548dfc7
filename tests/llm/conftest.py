"""Shared by the LLM-layer tests."""

from __future__ import annotations

import asyncio
from typing import Any

from marketarena.llm import LLMClient


def ask(client: LLMClient, *args: Any, **kwargs: Any):
    """One call of ``client``, which is then closed: its answers are in the cache once it is."""

    async def once():
        async with client:
            return await client.complete(*args, **kwargs)

    return asyncio.run(once())
