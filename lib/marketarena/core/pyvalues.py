"""The values ``core/pycode.py``'s interpreter hands around (our objects, their ``Enum``
members) and what interpreted code may call: the operators, the builtins, the modules and the
methods of plain values (``pycode``'s docstring says what is run and what is refused)."""

from __future__ import annotations

import ast
import json
import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np


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
BUILTINS.update({"ZeroDivisionError": ZeroDivisionError, "AttributeError": AttributeError})
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
