"""The evaluator behind ``core/pycode.py``: the values it hands around (our objects, their
``Enum`` members), its errors, the builtins and methods interpreted code may call, and
:class:`Frame`, one function's locals running its statements (``pycode``'s docstring says what is
run and what is refused)."""

from __future__ import annotations

import ast
import json
import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from marketarena.core.sources import SourceError

if TYPE_CHECKING:  # the program a frame runs in (``pycode``, which builds frames)
    from marketarena.core.pycode import Module, Program

#: evaluation steps one call may take (their prompt builders take a few thousand)
MAX_STEPS = 2_000_000


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


class _Return(BaseException):
    def __init__(self, value: Any):
        self.value = value


class _Break(BaseException):
    pass


class _Continue(BaseException):
    pass


@dataclass(frozen=True)
class Member:
    """An ``Enum`` member of the publisher's code (compared by class and name)."""

    cls: str
    name: str


class Obj:
    """An instance of a class of the parsed code: its attributes are ours to set and read."""

    def __init__(self, cls: str, **attrs: Any):
        self.cls = cls
        self.attrs = dict(attrs)

    def __repr__(self) -> str:
        return f"<{self.cls}>"


class Ns:
    """A plain object with attributes (a listing, their ``args``); reading a missing attribute
    raises, as Python's would (``getattr(x, name, default)`` then gives the default)."""

    def __init__(self, **attrs: Any):
        self.attrs = dict(attrs)


BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: pow,
}
CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _dumps(obj: Any, **kw: Any) -> str:
    allowed = {"indent", "ensure_ascii", "sort_keys", "separators", "default"}
    bad = set(kw) - allowed
    if bad:
        raise TypeError(f"json.dumps: unsupported argument(s) {sorted(bad)}")
    if "default" in kw and not callable(kw["default"]):
        raise TypeError("json.dumps: default must be a function")
    return json.dumps(obj, **kw)


def _sum(items: Any, start: Any = 0) -> Any:
    """``sum`` as Python 3.12 and later compute it: floats added with Neumaier's compensation
    (their runs' Python; 3.11's plain running sum differs in the last bit, and a prompt shows
    it: Agent Bazaar's buyers' mean quality, 0.25 not 0.24999999999999997)."""
    items = list(items)
    if not any(isinstance(x, float) for x in [start, *items]):
        return sum(items, start)
    total, comp = float(start), 0.0
    for x in items:
        if not isinstance(x, (int, float)):
            raise TypeError(f"unsupported operand type for sum: {type(x).__name__}")
        x = float(x)
        t = total + x
        comp += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + comp if comp and math.isfinite(comp) else total


#: the builtins interpreted code may call
BUILTINS: dict[str, Any] = {
    f.__name__: f
    for f in (len, min, max, abs, round, str, int, float, bool, list, dict, tuple, set)
    + (sorted, enumerate, zip, range, any, all, isinstance, next, reversed, repr)
}
BUILTINS["sum"] = _sum
BUILTINS.update(
    {"None": None, "True": True, "False": False, "Exception": Exception, "ValueError": ValueError}
)
BUILTINS.update({"TypeError": TypeError, "KeyError": KeyError, "IndexError": IndexError})
#: the modules interpreted code may use, by the name it imports them under
MODULES = {
    "json": Ns(dumps=_dumps, JSONDecodeError=json.JSONDecodeError),
    # numpy's own function, so that a value it returns prints as theirs did (``np.float64``)
    "numpy": Ns(clip=np.clip),
    # their log lines go nowhere
    "logging": Ns(
        getLogger=lambda *_: Ns(**dict.fromkeys(("info", "warning"), lambda *_, **__: None))
    ),
}
#: the methods of plain values interpreted code may call
METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        [
            "lower",
            "upper",
            "strip",
            "lstrip",
            "rstrip",
            "startswith",
            "endswith",
            "split",
            "join",
            "replace",
            "title",
            "capitalize",
            "find",
            "count",
            "isdigit",
            "splitlines",
        ]
    ),
    list: frozenset(["append", "extend", "index", "count", "copy", "pop", "insert"]),
    dict: frozenset(["get", "items", "keys", "values", "setdefault", "copy", "update", "pop"]),
    tuple: frozenset(["index", "count"]),
    set: frozenset(["add", "copy"]),
}


#: what a ``for`` may run over: finite values (a dict's views among them)
ITERABLES = (list, tuple, dict, str, range, enumerate, zip, reversed, set)
ITERABLES += (type({}.items()), type({}.keys()), type({}.values()))


class Budget:
    """The evaluation steps of the call under way in one thread (``Program.budget``)."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = 0


class Frame:
    """One function's locals, evaluating its statements."""

    def __init__(self, program: Program, mod: Module, names: dict[str, Any]):
        self.p, self.mod, self.names = program, mod, names
        self.budget = program.budget()

    def fail(self, node: ast.AST, what: str) -> CodeError:
        return CodeError(self.mod.path, what, getattr(node, "lineno", None))

    def tick(self, node: ast.AST) -> None:
        self.budget.steps += 1
        if self.budget.steps > MAX_STEPS:
            raise self.fail(node, f"more than {MAX_STEPS:,} steps: not a prompt builder")

    # -- statements -------------------------------------------------------------------------------
    def exec(self, node: ast.stmt) -> None:
        self.tick(node)
        if isinstance(node, ast.Expr):
            self.eval(node.value)
        elif isinstance(node, ast.Assign):
            value = self.eval(node.value)
            for target in node.targets:
                self.store(target, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.store(node.target, self.eval(node.value))
        elif isinstance(node, ast.AugAssign):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise self.fail(node, f"operator {type(node.op).__name__} is not interpreted")
            self.store(
                node.target, self._op(node, op, self.eval(node.target), self.eval(node.value))
            )
        elif isinstance(node, ast.If):
            for stmt in node.body if self.eval(node.test) else node.orelse:
                self.exec(stmt)
        elif isinstance(node, ast.For):
            self._for(node)
        elif isinstance(node, ast.Return):
            raise _Return(None if node.value is None else self.eval(node.value))
        elif isinstance(node, ast.Assert):
            if not self.eval(node.test):
                raise Raised(f"assertion failed at line {node.lineno}")
        elif isinstance(node, ast.Try):
            self._try(node)
        elif isinstance(node, ast.Raise):
            raise Raised(f"raised at line {node.lineno}")
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.Break):
            raise _Break()
        elif isinstance(node, ast.Continue):
            raise _Continue()
        else:
            raise self.fail(node, f"statement {type(node).__name__} is not interpreted")

    def _for(self, node: ast.For) -> None:
        items = self.eval(node.iter)
        if not isinstance(items, ITERABLES):
            raise self.fail(node, f"for over {type(items).__name__} is not interpreted")
        for item in items:
            self.store(node.target, item)
            try:
                for stmt in node.body:
                    self.exec(stmt)
            except _Break:
                return
            except _Continue:
                continue
        for stmt in node.orelse:
            self.exec(stmt)

    def _try(self, node: ast.Try) -> None:
        try:
            for stmt in node.body:
                self.exec(stmt)
        except (Raised, Exception) as exc:
            if isinstance(exc, CodeError):  # ours: the code cannot be run, not an error of theirs
                raise
            for handler in node.handlers:
                if handler.type is None or self._catches(handler.type, exc):
                    if handler.name:
                        self.names[handler.name] = exc
                    for stmt in handler.body:
                        self.exec(stmt)
                    break
            else:
                raise
        else:
            for stmt in node.orelse:
                self.exec(stmt)
        finally:
            for stmt in node.finalbody:
                self.exec(stmt)

    def _catches(self, type_node: ast.expr, exc: BaseException) -> bool:
        kinds = self.eval(type_node)
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        return any(k is Exception or (isinstance(k, type) and isinstance(exc, k)) for k in kinds)

    def store(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Attribute):
            obj = self.eval(target.value)
            if not isinstance(obj, (Obj, Ns)):
                raise self.fail(target, f"cannot set .{target.attr} of a {type(obj).__name__}")
            obj.attrs[target.attr] = value
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value)
            if not isinstance(container, (list, dict)):
                raise self.fail(target, f"cannot set an item of a {type(container).__name__}")
            container[self.eval(target.slice)] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = list(value)
            if len(values) != len(target.elts):
                raise Raised(f"cannot unpack {len(values)} values at line {target.lineno}")
            for t, v in zip(target.elts, values):
                self.store(t, v)
        else:
            raise self.fail(target, f"assignment to {type(target).__name__} is not interpreted")

    # -- expressions ------------------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        self.budget.steps += 1
        if self.budget.steps > MAX_STEPS:
            self.tick(node)
        method = _EVAL.get(type(node))
        if method is None:
            method = _EVAL[type(node)] = getattr(Frame, f"_e_{type(node).__name__}", None)
            if method is None:
                raise self.fail(node, f"expression {type(node).__name__} is not interpreted")
        return method(self, node)

    def _e_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _e_JoinedStr(self, node: ast.JoinedStr) -> str:
        return "".join(
            self.eval(v) if isinstance(v, ast.FormattedValue) else v.value for v in node.values
        )

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

    def _e_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.eval(node.value)
        return self.attribute(node, obj, node.attr)

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

    def _e_Subscript(self, node: ast.Subscript) -> Any:
        container = self.eval(node.value)
        key = self.eval(node.slice)
        if not isinstance(container, (list, tuple, dict, str)):
            raise self.fail(node, f"cannot index a {type(container).__name__}")
        try:
            return container[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise Raised.like(exc, f"{type(exc).__name__} at line {node.lineno}") from None

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

    def _e_BinOp(self, node: ast.BinOp) -> Any:
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.fail(node, f"operator {type(node.op).__name__} is not interpreted")
        return self._op(node, op, self.eval(node.left), self.eval(node.right))

    def _e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        raise self.fail(node, f"operator {type(node.op).__name__} is not interpreted")

    def _e_BoolOp(self, node: ast.BoolOp) -> Any:
        value = None
        for v in node.values:
            value = self.eval(v)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _e_Compare(self, node: ast.Compare) -> bool:
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            try:
                ok = CMPOPS[type(op)](left, right)
            except TypeError as exc:
                raise Raised(f"TypeError at line {node.lineno}: {exc}") from None
            if not ok:
                return False
            left = right
        return True

    def _e_IfExp(self, node: ast.IfExp) -> Any:
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def _e_List(self, node: ast.List) -> list:
        return [self.eval(e) for e in node.elts]

    def _e_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.eval(e) for e in node.elts)

    def _e_Set(self, node: ast.Set) -> set:
        return {self.eval(e) for e in node.elts}

    def _e_Dict(self, node: ast.Dict) -> dict:
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

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
        the frame that made it (as a closure sees them when called)."""
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults:
            raise self.fail(node, "a lambda with defaults, * or ** is not interpreted")
        params = [p.arg for p in a.posonlyargs + a.args]

        def fn(*args: Any) -> Any:
            if len(args) != len(params):
                raise Raised(f"lambda at line {node.lineno} given {len(args)} arguments")
            return Frame(self.p, self.mod, {**self.names, **dict(zip(params, args))}).eval(
                node.body
            )

        return fn

    def _e_Call(self, node: ast.Call) -> Any:
        args: list = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.eval(a.value))
            else:
                args.append(self.eval(a))
        kwargs: dict = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(self.eval(k.value))
            else:
                kwargs[k.arg] = self.eval(k.value)
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            return self._getattr(node, node.func.id, args)
        if isinstance(node.func, ast.Name) and node.func.id == "next":
            items = list(args[0])
            if not items and len(args) < 2:
                raise Raised(f"StopIteration at line {node.lineno}")
            return items[0] if items else args[1]
        fn = self.eval(node.func)
        if not callable(fn):
            raise self.fail(node, f"calls a {type(fn).__name__}")
        if isinstance(fn, type) and fn not in BUILTINS.values() and fn not in self.p.host.values():
            raise self.fail(node, f"constructs a {fn.__name__}")
        try:
            return fn(*args, **kwargs)
        except (_Return, _Break, _Continue, CodeError, Raised):
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


#: expression node type -> its ``Frame._e_*`` method, filled as they are met
_EVAL: dict[type, Callable[..., Any]] = {}
