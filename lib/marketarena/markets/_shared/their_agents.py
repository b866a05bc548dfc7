"""Agent Bazaar's own agents for seats of ours: what lemon's buyer (``lemon/authors_buyer.py``)
and crash's firm (``crash/authors_firm.py``) share (issue 53).

Both run the publisher's methods in ``core.pycode``'s interpreter, read at run time from the
user's copy of sethkarten/AI-Bazaar. Where their code would call a model (their
``LLMAgent.call_llm``) it pauses (:class:`Call`): the harness asks our model the
system prompt and user message their code built, then their method goes on with their own parse
of the answer (:func:`read_answer`: the keys their ``call_llm`` extracts, :func:`answer_keys`,
handed to their ``parse_func``; no JSON object: their ``on_parse_failure_return``). Their
``call_llm`` asks again when an answer holds no JSON object (up to their ``timeout``); here it
never does: such an answer is their fallback at once, so a run costs one call a decision.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal

from greenlet import getcurrent, greenlet
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.pycode import CodeError, Obj, Program, Raised
from marketarena.core.sources import SourceError
from marketarena.core.types import Reply
from marketarena.llm.schema import TextAnswer

JSON_FENCE = re.compile(r"```(?:json)?")
#: programs parsed, by (root, files, their modification times, host)
_PROGRAMS: dict[tuple, Program] = {}


def their_program(code: str | Path, files: tuple[str, ...], host: dict[str, Any]) -> Program:
    """Their ``files`` under ``code`` (the root of the user's copy), parsed once per version of
    them (their modification times); ``host``: the names that stand for ours in their code (a
    module's constant, known to the cache by identity). A missing or unreadable file is a
    ``SourceError`` naming it."""
    root = Path(code).expanduser()
    stamp = tuple((root / f).stat().st_mtime_ns if (root / f).exists() else 0 for f in files)
    key = (str(root), files, stamp, id(host))
    if key not in _PROGRAMS:
        if len(_PROGRAMS) >= 16:
            _PROGRAMS.clear()
        _PROGRAMS[key] = Program(root, list(files), host=host)
    return _PROGRAMS[key]


def check_renders(code: str | Path, files: tuple[str, ...], render: Callable[[Path], None]) -> None:
    """Before any game: every one of their ``files`` is under ``code`` and ``render(root)`` (a
    prompt of theirs built from a small state) runs; a missing file, one the interpreter cannot
    read or a prompt their code fails to build is a ``SourceError`` (a ``CodeError``) naming the
    file."""
    root = Path(code).expanduser()
    for name in files:
        if not (root / name).is_file():
            raise SourceError(root / name, "is missing (not a copy of sethkarten/AI-Bazaar?)")
    try:
        render(root)
    except Raised as exc:
        raise CodeError(root / files[0], f"their code failed rendering a prompt: {exc}") from None


def first_object(text: str) -> str:
    """The first ``{...}`` of ``text`` by brace matching outside quoted strings (their
    extraction), markdown fences removed; the text itself when it has no brace."""
    text = JSON_FENCE.sub("", text or "").strip()
    start = text.find("{")
    if start < 0:
        return text
    depth, quote, escape = 0, "", False
    for i in range(start, len(text)):
        c = text[i]
        if escape:
            escape = False
        elif quote:
            if c == "\\":
                escape = True
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def answer_keys(text: str, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """Their key extraction from a raw answer: the first JSON object (single-quoted keys and
    trailing commas relaxed), each key found at the top level, else in a nested object, else in a
    top-level key that contains it (``bid_decision``); missing keys are None. None: no JSON."""
    body = first_object(text)
    body = re.sub(r"'([^']+)'\s*:", r'"\1":', body)
    body = re.sub(r",(\s*[}\]])", r"\1", body)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None

    def find(d: dict, key: str) -> Any:
        if key in d:
            return d[key]
        for v in d.values():
            if isinstance(v, dict):
                hit = find(v, key)
                if hit is not None:
                    return hit
        return next((v for k, v in d.items() if key in str(k) and not isinstance(v, dict)), None)

    return {k: find(data, k) for k in keys}


def read_answer(text: str, msg: str, timestep: int, keys: list, parse_func: Any, *_: Any, **opt):
    """Their ``call_llm`` given the model's answer ``text``: the keys it extracts passed to their
    ``parse_func``; no JSON object: their ``on_parse_failure_return``."""
    found = answer_keys(text, tuple(keys))
    if found is None:
        return opt.get("on_parse_failure_return")
    return parse_func([found[k] for k in keys])


class Abandoned(BaseException):
    """The call's answer will not come (the run ended first): their method ends."""


class Call:
    """``obj.method(*args, **kw)`` of their code run until its model call: ``prompt`` is
    (system, user) it built (their ``system_prompt`` attribute and the message), None when it
    returned without asking; :meth:`answer` gives it the model's text and returns what the method
    returns; :meth:`abandon` ends it without an answer.

    The method runs in a greenlet of the thread that makes the call, which switches back here at
    the model call and on to the method again with the answer: one thread, so the event loop's
    other seats run while this one waits for its model, with no operating-system thread to start
    or wake (a switch costs microseconds where a thread's handoff on a busy machine took
    milliseconds: docs/speed.md). A call is answered in the thread that made it."""

    def __init__(self, program: Program, obj: Obj, method: str, args: tuple, kw: dict):
        self.program, self.obj = program, obj
        obj.attrs["call_llm"] = self._hook
        self._green = greenlet(self._run)
        self._done: tuple[str, Any] | None = None
        self.prompt: tuple[str, str] | None = self._green.switch(method, args, kw)

    def _hook(self, msg: str, *args: Any, **kw: Any) -> Any:
        text = self._green.parent.switch((self.obj.attrs["system_prompt"], msg))
        if text is None:
            raise Abandoned()
        return read_answer(text, msg, *args, **kw)

    def _run(self, method: str, args: tuple, kw: dict) -> None:
        """The method to its end; returns None (``prompt`` when it asked nothing)."""
        try:
            self._done = ("ok", self.program.call(self.obj, method, *args, **kw))
        except Abandoned:
            self._done = ("abandoned", None)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, raised there
            self._done = ("error", exc)
        return None

    def _resume(self, text: str | None) -> None:
        """The method goes on from its model call, here (the greenlet that resumes it is the one
        it comes back to)."""
        if not self._green.dead:
            self._green.parent = getcurrent()
            if self._green.switch(text) is not None:  # at a model call again
                self._green.switch(None)
                raise CodeError(
                    self.program.files[0].path,
                    f"their {self.obj.cls}'s method asked its model twice (one call a decision)",
                )

    def answer(self, text: str) -> Any:
        """The method's return, given the model's ``text``."""
        self._resume(text)
        if self._done is None:
            raise RuntimeError(f"their {self.obj.cls}'s method ended abnormally")
        kind, value = self._done
        if kind == "error":
            raise value
        return value

    def abandon(self) -> None:
        self._resume(None)


async def asked(call: Call, agent: Any, schema: type, decision: Any) -> tuple[Any, Any, list]:
    """(what their method returns, our model's text, the call's row) once our model (``agent``)
    answered the system prompt and user message their method built; (its return, None, []) when
    it asked nothing. A failed ask ends their method's thread."""
    if call.prompt is None:
        return call.answer(""), None, []
    messages = [
        {"role": "system", "content": call.prompt[0]},
        {"role": "user", "content": call.prompt[1]},
    ]
    try:
        result, row = await agent.ask(messages, schema, decision, purpose="act")
    except BaseException:
        call.abandon()
        raise
    text = result.action.text if result.action is not None else ""
    return call.answer(text), text, [row]


class TheirJSON(TextAnswer):
    """Any answer: their engine reads it (``call_llm``), the harness judges it; asked in JSON
    mode as their OpenAI client asks, never re-asked (module docstring). A market's subclass says
    how its stand-ins answer (``from_action``)."""

    max_reasks: ClassVar[int | None] = 0
    json_mode: ClassVar[bool] = True
    text: str = ""

    @classmethod
    def from_text(cls, text: str) -> tuple["TheirJSON", None]:
        return cls(text=text or ""), None


def invalid(calls: list[dict], error: str, failure: str = "format") -> Reply:
    """An answer their engine turns into its fallback: the market's fallback, the decision and
    its call logged invalid with the reason and its kind (``decisions.failure``: ``format`` for
    an answer their parse could not read, ``rule`` for one the market cannot play)."""
    for row in calls:
        row.update(valid=False, error=error)
    return Reply(action=None, calls=calls, error=f"llm: {error}", failure=failure)


class TheirCodeParams(Strict):
    """The params of a harness that runs their agent's code (lemon's buyer, crash's firm)."""

    code: str = Field(
        min_length=1,
        description="the root of your copy of sethkarten/AI-Bazaar (branch Market-v1), whose "
        "agent code renders the prompts; read at run time; relative to the project root",
    )
    prompt_algo: Literal["io", "cot"] = Field(
        default="cot", description="their prompting mode (their runs: cot)"
    )
    history_len: int = Field(
        default=3, ge=0, le=100, description="their history_len (their runs: 3)"
    )
