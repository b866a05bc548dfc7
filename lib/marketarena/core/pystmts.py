"""The statements of a publisher's function compiled once to closures of a frame (``pycode``'s
docstring says which are run; ``pyframe.py`` evaluates the expressions).

A statement's closure returns None when the next statement follows, else a signal: ``BREAK``,
``CONTINUE``, or :class:`Returned` (the function's value), which the enclosing block hands up to
its loop or to :func:`run_body`. Signals are values, not exceptions: a ``return`` in every call
of theirs costs nothing to unwind. Each statement counts one step (``Frame.tick``). A function's
body is compiled the first time it runs and kept on its node, so that each later call only runs
closures; a kind of statement the interpreter does not run is refused when it is reached, with
its line, never before.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

from marketarena.core.pyframe import CodeError, Frame, Raised, compiled, storer
from marketarena.core.pyvalues import BINOPS, ITERABLES

Run = Callable[[Frame], Any]


class Returned:
    """A ``return`` reached: the function's ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class _Signal:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


BREAK, CONTINUE = _Signal("BREAK"), _Signal("CONTINUE")


def run_body(fn: ast.FunctionDef, frame: Frame) -> Any:
    """What ``fn``'s body returns, run on ``frame`` (its arguments bound)."""
    body = fn.__dict__.get("_body") or _compile_body(fn)
    signal = body(frame)
    return signal.value if type(signal) is Returned else None


def _compile_body(fn: ast.FunctionDef) -> Run:
    body = fn._body = block(fn.body)  # type: ignore[attr-defined]
    return body


def block(stmts: list[ast.stmt]) -> Run:
    """Statements run in turn until one signals."""
    runs = [statement(s) for s in stmts]
    if not runs:
        return lambda f: None
    if len(runs) == 1:
        return runs[0]

    def run(f: Frame) -> Any:
        for r in runs:
            signal = r(f)
            if signal is not None:
                return signal
        return None

    return run


def statement(node: ast.stmt) -> Run:
    """``node`` as a closure of a frame (module docstring)."""
    make = _MAKERS.get(type(node))
    if make is None:

        def refused(f: Frame) -> Any:
            raise f.fail(node, f"statement {type(node).__name__} is not interpreted")

        return refused
    return make(node)


def _expr(node: ast.Expr) -> Run:
    value = compiled(node.value)

    def run(f: Frame) -> None:
        f.tick(node)
        value(f)

    return run


def _assign(node: ast.Assign) -> Run:
    value, targets = compiled(node.value), [storer(t) for t in node.targets]
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        ident = node.targets[0].id

        def run_name(f: Frame) -> None:
            f.tick(node)
            f.names[ident] = value(f)

        return run_name

    def run(f: Frame) -> None:
        f.tick(node)
        v = value(f)
        for store in targets:
            store(f, v)

    return run


def _annassign(node: ast.AnnAssign) -> Run:
    if node.value is None:
        return lambda f: f.tick(node)
    value, store = compiled(node.value), storer(node.target)

    def run(f: Frame) -> None:
        f.tick(node)
        store(f, value(f))

    return run


def _augassign(node: ast.AugAssign) -> Run:
    op = BINOPS.get(type(node.op))
    current, value, store = compiled(node.target), compiled(node.value), storer(node.target)

    def run(f: Frame) -> None:
        f.tick(node)
        if op is None:
            raise f.fail(node, f"operator {type(node.op).__name__} is not interpreted")
        store(f, f._op(node, op, current(f), value(f)))

    return run


def _if(node: ast.If) -> Run:
    test, body, orelse = compiled(node.test), block(node.body), block(node.orelse)

    def run(f: Frame) -> Any:
        f.tick(node)
        return body(f) if test(f) else orelse(f)

    return run


def _for(node: ast.For) -> Run:
    items_of, store = compiled(node.iter), storer(node.target)
    body, orelse = block(node.body), block(node.orelse)

    def run(f: Frame) -> Any:
        f.tick(node)
        items = items_of(f)
        if not isinstance(items, ITERABLES):
            raise f.fail(node, f"for over {type(items).__name__} is not interpreted")
        for item in items:
            store(f, item)
            signal = body(f)
            if signal is not None:
                if signal is BREAK:
                    return None
                if signal is not CONTINUE:
                    return signal  # a return
        return orelse(f)

    return run


def _return(node: ast.Return) -> Run:
    if node.value is None:
        return lambda f: f.tick(node) or Returned(None)
    value = compiled(node.value)

    def run(f: Frame) -> Returned:
        f.tick(node)
        return Returned(value(f))

    return run


def _assert(node: ast.Assert) -> Run:
    test = compiled(node.test)

    def run(f: Frame) -> None:
        f.tick(node)
        if not test(f):
            raise Raised(f"assertion failed at line {node.lineno}")

    return run


def _raise(node: ast.Raise) -> Run:
    def run(f: Frame) -> None:
        f.tick(node)
        raise Raised(f"raised at line {node.lineno}")

    return run


def _signal(signal: Any) -> Callable[[ast.stmt], Run]:
    def make(node: ast.stmt) -> Run:
        return lambda f: f.tick(node) or signal

    return make


def _try(node: ast.Try) -> Run:
    """Python's semantics: a handler runs for an error of the interpreted code (never for a
    ``CodeError`` of ours); ``else`` only when the body ended without an error or a signal;
    ``finally`` always, a signal of its own replacing the body's (and its error)."""
    body, orelse, final = block(node.body), block(node.orelse), block(node.finalbody)
    handlers = [(h.type, h.name, block(h.body)) for h in node.handlers]

    def handled(f: Frame, exc: Exception) -> Any:
        for kinds, name, handler in handlers:
            if kinds is None or f.catches(kinds, exc):
                if name:
                    f.names[name] = exc
                return handler(f)
        raise exc

    def run(f: Frame) -> Any:
        f.tick(node)
        try:
            try:
                signal = body(f)
            except CodeError:
                raise
            except Exception as exc:  # noqa: BLE001 - theirs: their handlers decide
                return handled(f, exc)
            return orelse(f) if signal is None else signal
        finally:
            if node.finalbody:
                after = final(f)
                if after is not None:
                    return after  # noqa: B012 - Python's: finally's signal wins

    return run


_MAKERS: dict[type, Callable[[Any], Run]] = {
    ast.Expr: _expr,
    ast.Assign: _assign,
    ast.AnnAssign: _annassign,
    ast.AugAssign: _augassign,
    ast.If: _if,
    ast.For: _for,
    ast.Return: _return,
    ast.Assert: _assert,
    ast.Try: _try,
    ast.Raise: _raise,
    ast.Pass: lambda node: lambda f: f.tick(node),
    ast.Break: _signal(BREAK),
    ast.Continue: _signal(CONTINUE),
}
