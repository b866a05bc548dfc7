"""The evaluator behind ``core/pycode.py``: its errors and :class:`Frame`, one function's locals,
evaluating its expressions, each compiled once to a closure (:func:`compiled`; the statements:
``pystmts.py``; the values and builtins they use: ``pyvalues.py``; ``pycode``'s docstring says
what is run and what is refused).

The steps counted against :data:`MAX_STEPS` are statements and the iterations of comprehensions
(``Frame.tick``): everything that can repeat is one of them, so a runaway loop is stopped, while
an expression's own parts cost no count."""

from __future__ import annotations

import ast
import json
import operator
from typing import TYPE_CHECKING, Any, Callable

from marketarena.core.pyvalues import (
    BINOPS,
    BUILTINS,
    CMPOPS,
    METHODS,
    Ns,
    Obj,
)
from marketarena.core.sources import SourceError

if TYPE_CHECKING:  # the program a frame runs in (``pycode``, which builds frames)
    from marketarena.core.pycode import Module, Program

#: steps (statements and comprehension iterations) one call may take; their crash firm's longest
#: call in a year of days takes about 2,400
MAX_STEPS = 500_000


class CodeError(SourceError):
    """The publisher's code does something the interpreter does not run, or fails itself."""


class Raised(Exception):
    """An exception the interpreted code raised (caught by its own ``except``)."""

    @classmethod
    def like(cls, exc: Exception, text: str) -> "Raised":
        """A ``Raised`` that is also of ``exc``'s class, so that their ``except (ValueError,
        TypeError)`` catches what Python would (a ``float(None)`` in a parse with a fallback)."""
        kind = _RAISED.get(type(exc))
        if kind is None:
            kind = _RAISED[type(exc)] = type(f"Raised{type(exc).__name__}", (cls, type(exc)), {})
        return kind(text)


_RAISED: dict[type, type] = {}


class Budget:
    """The evaluation steps of the call under way in one greenlet (``Program.budget``)."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = 0


class Frame:
    """One function's locals, on which its compiled statements (``pystmts``) and expressions
    run."""

    __slots__ = ("p", "mod", "names", "budget")

    def __init__(self, program: Program, mod: Module, names: dict[str, Any]):
        self.p, self.mod, self.names = program, mod, names
        self.budget = program.budget()

    def fail(self, node: ast.AST, what: str) -> CodeError:
        return CodeError(self.mod.path, what, getattr(node, "lineno", None))

    def tick(self, node: ast.AST) -> None:
        self.budget.steps += 1
        if self.budget.steps > MAX_STEPS:
            raise self.fail(node, f"more than {MAX_STEPS:,} steps: not a prompt builder")

    def catches(self, type_node: ast.expr, exc: BaseException) -> bool:
        """Whether an ``except <type_node>`` of theirs catches ``exc``."""
        kinds = self.eval(type_node)
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        return any(k is Exception or (isinstance(k, type) and isinstance(exc, k)) for k in kinds)

    def store(self, target: ast.expr, value: Any) -> None:
        """``value`` assigned to ``target`` (its closure: :func:`storer`)."""
        (target.__dict__.get("_store") or storer(target))(self, value)

    # -- expressions ------------------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        """``node``'s value: its closure (:func:`compiled`, made the first time it is met) run
        on this frame."""
        fast = node.__dict__.get("_fast")
        return (fast or compiled(node))(self)

    def _e_FormattedValue(self, node: ast.FormattedValue) -> str:
        value = self.eval(node.value)
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion == ord("s"):
            value = str(value)
        elif node.conversion == ord("a"):
            value = ascii(value)
        spec = "" if node.format_spec is None else self.eval(node.format_spec)
        try:
            return format(value, spec)
        except (TypeError, ValueError) as exc:
            raise Raised(f"format at line {node.lineno}: {exc}") from None

    def _e_Name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in self.p.host:
            return self.p.host[node.id]
        if (
            node.id in self.mod.assigns
            or node.id in self.mod.classes
            or node.id in self.mod.imports
        ):
            return self.p.constant(self.mod, node.id, node.lineno)
        if node.id in BUILTINS:
            return BUILTINS[node.id]
        raise self.fail(node, f"name {node.id} is not defined (or not interpreted)")

    def attribute(self, node: ast.AST, obj: Any, attr: str) -> Any:
        if isinstance(obj, Obj):
            if attr in obj.attrs:
                return obj.attrs[attr]
            found = self.p.method(obj.cls, attr)
            if found is not None:
                if any(
                    isinstance(d, ast.Name) and d.id == "property" for d in found[1].decorator_list
                ):
                    return self.p.bound(obj, attr)()  # a property: read, not bound
                return self.p.bound(obj, attr)
            raise Raised(f"{obj.cls} has no attribute {attr} (line {getattr(node, 'lineno', '?')})")
        if isinstance(obj, Ns):
            if attr in obj.attrs:
                return obj.attrs[attr]
            raise Raised(f"no attribute {attr} (line {getattr(node, 'lineno', '?')})")
        allowed = METHODS.get(type(obj)) or next(
            (METHODS[t] for t in type(obj).__mro__ if t in METHODS), frozenset()
        )
        if attr in allowed:
            return getattr(obj, attr)
        raise self.fail(node, f"attribute {attr} of a {type(obj).__name__} is not interpreted")

    def _e_Slice(self, node: ast.Slice) -> slice:
        return slice(
            *(None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step))
        )

    def _op(self, node: ast.AST, op: Callable, a: Any, b: Any) -> Any:
        if op is operator.mul and any(isinstance(x, (str, list, tuple)) for x in (a, b)):
            n = b if isinstance(a, (str, list, tuple)) else a
            if isinstance(n, int) and n > 100_000:
                raise self.fail(node, "a repetition of over 100,000")
        if op is pow and isinstance(b, (int, float)) and abs(b) > 1000:
            raise self.fail(node, "a power over 1,000")
        try:
            return op(a, b)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
            where = getattr(node, "lineno", "?")
            raise Raised.like(exc, f"{type(exc).__name__} at line {where}") from None

    def _e_Set(self, node: ast.Set) -> set:
        return {self.eval(e) for e in node.elts}

    def _comprehension(self, node: Any, emit: Callable[[], None]) -> None:
        saved = dict(self.names)

        def level(i: int) -> None:
            if i == len(node.generators):
                emit()
                return
            gen = node.generators[i]
            for item in self.eval(gen.iter):
                self.tick(gen)
                self.store(gen.target, item)
                if all(self.eval(c) for c in gen.ifs):
                    level(i + 1)

        try:
            level(0)
        finally:
            self.names = saved

    def _e_ListComp(self, node: ast.ListComp) -> list:
        out: list = []
        self._comprehension(node, lambda: out.append(self.eval(node.elt)))
        return out

    # a generator expression is evaluated whole (the builders pass them to sum, any, next)
    _e_GeneratorExp = _e_ListComp

    def _e_SetComp(self, node: ast.SetComp) -> set:
        out: set = set()
        self._comprehension(node, lambda: out.add(self.eval(node.elt)))
        return out

    def _e_DictComp(self, node: ast.DictComp) -> dict:
        out: dict = {}
        self._comprehension(
            node, lambda: out.__setitem__(self.eval(node.key), self.eval(node.value))
        )
        return out

    def _e_Lambda(self, node: ast.Lambda) -> Callable[..., Any]:
        """A function of positional arguments evaluating its one expression with the names of
        the frame that made it (as a closure sees them when called); its steps count against
        the call under way where it is called (a ``defaultdict``'s factory made at a seat's
        start is called in later calls, each paused in a greenlet of its own)."""
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults:
            raise self.fail(node, "a lambda with defaults, * or ** is not interpreted")
        params = [p.arg for p in a.posonlyargs + a.args]

        def fn(*args: Any) -> Any:
            if len(args) != len(params):
                raise Raised(f"lambda at line {node.lineno} given {len(args)} arguments")
            names = {**self.names, **dict(zip(params, args))}
            return Frame(self.p, self.mod, names).eval(node.body)

        return fn

    def invoke(self, node: ast.Call, fn: Any, args: list, kwargs: dict) -> Any:
        """A call their code makes of ``fn`` (compiled calls, :func:`compiled`): only what is
        callable and not a class of ours to construct; Python's errors are theirs."""
        if not callable(fn):
            raise self.fail(node, f"calls a {type(fn).__name__}")
        if isinstance(fn, type) and fn not in BUILTINS.values() and fn not in self.p.host.values():
            raise self.fail(node, f"constructs a {fn.__name__}")
        try:
            return fn(*args, **kwargs)
        except (CodeError, Raised):
            raise
        except (
            TypeError,
            ValueError,
            KeyError,
            IndexError,
            AttributeError,
            ZeroDivisionError,
            OverflowError,
            json.JSONDecodeError,
        ) as exc:
            raise Raised.like(exc, f"{type(exc).__name__} at line {node.lineno}: {exc}") from None

    def _getattr(self, node: ast.Call, which: str, args: list) -> Any:
        obj, name = args[0], args[1]
        try:
            value = self.attribute(node, obj, name)
        except Raised:
            if which == "hasattr":
                return False
            if len(args) > 2:
                return args[2]
            raise
        return True if which == "hasattr" else value


def compiled(node: ast.expr) -> Callable[[Frame], Any]:
    """``node`` as a closure of a frame, kept on the node. The commonest kinds are written out
    (their children compiled too); the others run their ``Frame._e_<kind>`` method; a kind with
    none is refused when evaluated."""
    kind = type(node)
    make = _MAKERS.get(kind)
    if make is not None:
        fast = make(node)
    else:
        method = getattr(Frame, f"_e_{kind.__name__}", None)

        def fast(f: Frame) -> Any:
            if method is None:
                raise f.fail(node, f"expression {kind.__name__} is not interpreted")
            return method(f, node)

    node._fast = fast  # type: ignore[attr-defined]
    return fast


def _constant(node: ast.Constant) -> Callable[[Frame], Any]:
    value = node.value
    return lambda f: value


def _name(node: ast.Name) -> Callable[[Frame], Any]:
    """A local, else what the name means in its module (the program's host, a module-level
    name, a builtin): the same at every evaluation of this node, resolved once."""
    ident, resolved = node.id, []

    def fast(f: Frame) -> Any:
        names = f.names
        if ident in names:
            return names[ident]
        if resolved:
            return resolved[0]
        value = f._e_Name(node)
        resolved.append(value)
        return value

    return fast


def _attribute(node: ast.Attribute) -> Callable[[Frame], Any]:
    value, attr = compiled(node.value), node.attr

    def fast(f: Frame) -> Any:
        obj = value(f)
        if type(obj) is Obj and attr in obj.attrs:
            return obj.attrs[attr]
        return f.attribute(node, obj, attr)

    return fast


def _subscript(node: ast.Subscript) -> Callable[[Frame], Any]:
    value, key = compiled(node.value), compiled(node.slice)

    def fast(f: Frame) -> Any:
        container, k = value(f), key(f)
        if not isinstance(container, (list, tuple, dict, str)):
            raise f.fail(node, f"cannot index a {type(container).__name__}")
        try:
            return container[k]
        except (KeyError, IndexError, TypeError) as exc:
            raise Raised.like(exc, f"{type(exc).__name__} at line {node.lineno}") from None

    return fast


def _binop(node: ast.BinOp) -> Callable[[Frame], Any]:
    op = BINOPS.get(type(node.op))
    left, right = compiled(node.left), compiled(node.right)

    def fast(f: Frame) -> Any:
        if op is None:
            raise f.fail(node, f"operator {type(node.op).__name__} is not interpreted")
        return f._op(node, op, left(f), right(f))

    return fast


def _unaryop(node: ast.UnaryOp) -> Callable[[Frame], Any]:
    operand, op = compiled(node.operand), type(node.op)
    unary = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}.get(op)

    def fast(f: Frame) -> Any:
        if unary is None:
            raise f.fail(node, f"operator {op.__name__} is not interpreted")
        return unary(operand(f))

    return fast


def _boolop(node: ast.BoolOp) -> Callable[[Frame], Any]:
    values, conj = [compiled(v) for v in node.values], isinstance(node.op, ast.And)

    def fast(f: Frame) -> Any:
        value = None
        for v in values:
            value = v(f)
            if (not value) if conj else value:
                return value
        return value

    return fast


def _compare(node: ast.Compare) -> Callable[[Frame], Any]:
    left = compiled(node.left)
    pairs = [(CMPOPS[type(op)], compiled(r)) for op, r in zip(node.ops, node.comparators)]

    def fast(f: Frame) -> bool:
        a = left(f)
        for op, right in pairs:
            b = right(f)
            try:
                ok = op(a, b)
            except TypeError as exc:
                raise Raised(f"TypeError at line {node.lineno}: {exc}") from None
            if not ok:
                return False
            a = b
        return True

    return fast


def _ifexp(node: ast.IfExp) -> Callable[[Frame], Any]:
    test, body, orelse = compiled(node.test), compiled(node.body), compiled(node.orelse)
    return lambda f: body(f) if test(f) else orelse(f)


def _list(node: ast.List) -> Callable[[Frame], Any]:
    elts = [compiled(e) for e in node.elts]
    return lambda f: [e(f) for e in elts]


def _tuple(node: ast.Tuple) -> Callable[[Frame], Any]:
    elts = [compiled(e) for e in node.elts]
    return lambda f: tuple([e(f) for e in elts])


def _dict(node: ast.Dict) -> Callable[[Frame], Any]:
    items = [
        (None if k is None else compiled(k), compiled(v)) for k, v in zip(node.keys, node.values)
    ]

    def fast(f: Frame) -> dict:
        out: dict = {}
        for k, v in items:
            if k is None:
                out.update(v(f))
            else:
                out[k(f)] = v(f)
        return out

    return fast


def _joined(node: ast.JoinedStr) -> Callable[[Frame], Any]:
    parts = [compiled(v) if isinstance(v, ast.FormattedValue) else v.value for v in node.values]
    return lambda f: "".join([p if isinstance(p, str) else p(f) for p in parts])


def _call(node: ast.Call) -> Callable[[Frame], Any]:
    args = [
        (True, compiled(a.value)) if isinstance(a, ast.Starred) else (False, compiled(a))
        for a in node.args
    ]
    keywords = [(k.arg, compiled(k.value)) for k in node.keywords]
    name = node.func.id if isinstance(node.func, ast.Name) else None
    special = name if name in ("getattr", "hasattr", "next") else None
    func = None if special else compiled(node.func)

    def fast(f: Frame) -> Any:
        values: list = []
        for star, arg in args:
            if star:
                values.extend(arg(f))
            else:
                values.append(arg(f))
        kwargs: dict = {}
        for key, value in keywords:
            if key is None:
                kwargs.update(value(f))
            else:
                kwargs[key] = value(f)
        if special == "next":
            items = list(values[0])
            if not items and len(values) < 2:
                raise Raised(f"StopIteration at line {node.lineno}")
            return items[0] if items else values[1]
        if special:
            return f._getattr(node, special, values)
        return f.invoke(node, func(f), values, kwargs)

    return fast


_MAKERS: dict[type, Callable[[Any], Callable[[Frame], Any]]] = {
    ast.Call: _call,
    ast.Constant: _constant,
    ast.Name: _name,
    ast.Attribute: _attribute,
    ast.Subscript: _subscript,
    ast.BinOp: _binop,
    ast.UnaryOp: _unaryop,
    ast.BoolOp: _boolop,
    ast.Compare: _compare,
    ast.IfExp: _ifexp,
    ast.List: _list,
    ast.Tuple: _tuple,
    ast.Dict: _dict,
    ast.JoinedStr: _joined,
}


def storer(target: ast.expr) -> Callable[[Frame, Any], None]:
    """An assignment to ``target`` as a closure of a frame and the value, kept on the node: a
    name, an attribute of our objects, an item of a list or dict, or a tuple or list of these
    unpacked; anything else is refused when assigned."""
    if isinstance(target, ast.Name):
        ident = target.id

        def store(f: Frame, value: Any) -> None:
            f.names[ident] = value

    elif isinstance(target, ast.Attribute):
        obj_of, attr = compiled(target.value), target.attr

        def store(f: Frame, value: Any) -> None:
            obj = obj_of(f)
            if not isinstance(obj, (Obj, Ns)):
                raise f.fail(target, f"cannot set .{attr} of a {type(obj).__name__}")
            obj.attrs[attr] = value

    elif isinstance(target, ast.Subscript):
        container_of, key = compiled(target.value), compiled(target.slice)

        def store(f: Frame, value: Any) -> None:
            container = container_of(f)
            if not isinstance(container, (list, dict)):
                raise f.fail(target, f"cannot set an item of a {type(container).__name__}")
            container[key(f)] = value

    elif isinstance(target, (ast.Tuple, ast.List)):
        parts = [storer(t) for t in target.elts]

        def store(f: Frame, value: Any) -> None:
            values = list(value)
            if len(values) != len(parts):
                raise Raised(f"cannot unpack {len(values)} values at line {target.lineno}")
            for part, v in zip(parts, values):
                part(f, v)

    else:

        def store(f: Frame, value: Any) -> None:
            raise f.fail(target, f"assignment to {type(target).__name__} is not interpreted")

    target._store = store  # type: ignore[attr-defined]
    return store
