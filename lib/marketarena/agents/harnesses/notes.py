"""``notes``: seed 003's PLANS.txt / INSIGHTS.txt memory (cournot, bertrand; appendices B.4, C.4).

Every answer of the seed's format carries ``new_content`` (``PLANS.txt`` and ``INSIGHTS.txt``),
which the firm rewrites each round; this harness keeps the notes of its last valid answer and
passes them to the market's templates as ``notes`` (``notes.plans``, ``notes.insights``), which
show them under "files that you wrote the last time". An answer without valid JSON keeps the old
notes. Notes longer than ``max_chars`` are cut, so prompts stay bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from marketarena.agents.harnesses.base import Harness
from marketarena.core.params import Strict
from marketarena.core.prompts import NOTE_MAX_CHARS


@dataclass(frozen=True)
class Notes:
    plans: str = ""
    insights: str = ""


def clip(text: str, max_chars: int = NOTE_MAX_CHARS) -> str:
    return text[:max_chars]


class NotesParams(Strict):
    max_chars: int = Field(default=NOTE_MAX_CHARS, ge=1, description="notes are cut to this length")


class NotesHarness(Harness):
    name = "notes"
    Params = NotesParams

    def reset(self, rng: Any = None) -> None:
        self.notes = Notes()

    def extras(self, agent, observation: Any, decision) -> dict[str, Any]:
        return {"notes": self.notes}

    def remember(self, observation: Any, decision, action: BaseModel | None) -> None:
        content = getattr(action, "new_content", None)
        if content is not None:
            self.notes = Notes(
                clip(content.plans, self.params.max_chars),
                clip(content.insights, self.params.max_chars),
            )
