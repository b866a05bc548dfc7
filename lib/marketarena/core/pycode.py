"""Text a publisher's Python program builds, rendered from its source without running it (issue 53).

Some publishers' prompts are not template files but Python code: Agent Bazaar's buyer prompt is
put together by f-strings and ``json.dumps`` across agents/buyer.py and
``agents/llm_agent.py``. A seat that must see the very prompt the published models saw reads that
code at run time from the user's copy of the repository (never copied into ours) and runs the
methods that build the prompt in the small interpreter here, over objects we supply (the seat's
state) and with hooks we supply where the program would call a model (:class:`Host`).

**What it runs.** The statements and expressions string-building code is made of: literals and
f-strings (conversions and format specs), names, attributes of the objects we pass, subscripts
and slices, arithmetic, comparisons, ``and``/``or``/``not``, conditional expressions, list, dict,
set and tuple displays, comprehensions and generator expressions, a ``lambda`` of positional arguments (a sort key, a
``defaultdict``'s factory), properties of their classes; ``if``, ``for`` (over a finite
sequence), assignment (names, attributes of our objects, subscripts, tuple unpacking), augmented
and annotated assignment, ``return``, ``assert``, ``pass``, ``break``, ``continue`` and
``try``/``except`` (their ``except Exception`` catches errors of the interpreted code, never ours);
calls of the methods of the classes parsed (resolved through their base classes, across the files
given), of a few builtins (:data:`BUILTINS`), of the methods of plain values (:data:`METHODS`)
and of whatever host functions the caller binds. A name imported by ``from <module> import
<name>`` is the module-level constant of that module's file in the same repository (an ``Enum``
member is a :class:`Member`); ``import json`` gives ``json.dumps``, ``import numpy as np`` gives ``np.clip`` (numpy's own).

**What it refuses.** Anything else: ``while``, ``import`` inside a function, ``with``,
``global``, calls of anything not listed above, attributes starting with ``_`` of values that are
not our objects, more than :data:`MAX_STEPS` steps a call (statements and comprehension
iterations). Each is a :class:`CodeError`, ``<file>:<line>: <what>``, so a version of their code
the interpreter cannot read fails on its first prompt with the line to look at, never by running
something else. Files are read as every foreign file is (``core.sources.read_bytes``: regular
files inside the repository, bounded).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Callable

from greenlet import getcurrent

from marketarena.core.pyframe import Budget, CodeError, Frame, Raised
from marketarena.core.pystmts import run_body
from marketarena.core.pyvalues import MODULES, Member, Ns, Obj
from marketarena.core.sources import read_bytes

__all__ = ["CodeError", "Member", "Module", "Ns", "Obj", "Program", "Raised"]

#: a source file is code, not data
MAX_SOURCE_BYTES = 2_000_000


class Module:
    """One parsed file: its classes and its module-level assignments and imports."""

    def __init__(self, repo: Path, relpath: str):
        self.repo, self.relpath = repo, relpath
        self.path = repo / relpath
        try:
            text = read_bytes(self.path, MAX_SOURCE_BYTES, root=repo).decode("utf-8")
        except UnicodeDecodeError:
            raise CodeError(self.path, "is not UTF-8 text") from None
        try:
            self.tree = ast.parse(text, filename=str(self.path))
        except SyntaxError as exc:
            raise CodeError(
                self.path, f"is not Python this interpreter reads ({exc.msg})", exc.lineno
            ) from None
        self.classes: dict[str, ast.ClassDef] = {}
        self.assigns: dict[str, ast.expr] = {}
        self.imports: dict[str, tuple[str, str]] = {}  # name -> (module, name)
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                if isinstance(node.targets[0], ast.Name):
                    self.assigns[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self.assigns[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (alias.name, "")


class Program:
    """The files of a publisher's repository that one prompt needs, interpreted on demand.

    ``repo``: the repository's root (module ``a.b.c`` is a/b/c.py or a/b/c/__init__.py
    there); ``files``: the files whose classes are looked up by name (relative to ``repo``);
    ``host``: names that stand for ours wherever their code uses them (a module such as
    ``random``, a class it would construct), before the names their files define."""

    def __init__(self, repo: str | Path, files: list[str], host: dict[str, Any] | None = None):
        self.repo = Path(repo)
        self.host = dict(host or {})
        self.modules: dict[str, Module] = {}
        self.files = [self.module(f) for f in files]
        self._constants: dict[tuple[str, str], Any] = {}
        self._methods: dict[tuple[str, str], tuple[Module, ast.FunctionDef] | None] = {}

    # -- reading ----------------------------------------------------------------------------------
    def module(self, relpath: str) -> Module:
        if relpath not in self.modules:
            self.modules[relpath] = Module(self.repo, relpath)
        return self.modules[relpath]

    def _module_named(self, dotted: str, where: Module, line: int) -> Module:
        base = dotted.replace(".", "/")
        for rel in (f"{base}.py", f"{base}/__init__.py"):
            if (self.repo / rel).is_file():
                return self.module(rel)
        raise CodeError(where.path, f"imports {dotted}, which is not in {self.repo}", line)

    def find_class(self, name: str) -> tuple[Module, ast.ClassDef]:
        for mod in self.files:
            if name in mod.classes:
                return mod, mod.classes[name]
        raise CodeError(self.files[0].path, f"no class {name} in {[m.relpath for m in self.files]}")

    def method(self, cls: str, name: str) -> tuple[Module, ast.FunctionDef] | None:
        """``cls.name`` through its bases (by name, across the program's files), looked up once."""
        key = (cls, name)
        if key not in self._methods:
            self._methods[key] = self._find_method(cls, name)
        return self._methods[key]

    def _find_method(self, cls: str, name: str) -> tuple[Module, ast.FunctionDef] | None:
        seen: set[str] = set()
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c in seen:
                continue
            seen.add(c)
            try:
                mod, node = self.find_class(c)
            except CodeError:
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return mod, item
            todo += [b.id for b in node.bases if isinstance(b, ast.Name)]
        return None

    def constant(self, mod: Module, name: str, line: int = 0) -> Any:
        """A module-level name of ``mod``: its assignment evaluated, or what it imports."""
        key = (mod.relpath, name)
        if key in self._constants:
            return self._constants[key]
        if name in mod.assigns:
            value = Frame(self, mod, {}).eval(mod.assigns[name])
        elif name in mod.classes:
            value = self._enum(mod, mod.classes[name])
        elif name in mod.imports:
            module, attr = mod.imports[name]
            if not attr:
                if module not in MODULES:
                    raise CodeError(
                        mod.path, f"uses module {module}, which is not interpreted", line
                    )
                value = MODULES[module]
            elif module in MODULES:
                value = MODULES[module].attrs[attr]
            else:
                value = self.constant(self._module_named(module, mod, line), attr, line)
        else:
            raise CodeError(mod.path, f"uses {name}, which is not defined at module level", line)
        self._constants[key] = value
        return value

    def _enum(self, mod: Module, node: ast.ClassDef) -> Ns:
        """A class used as a namespace of constants (an ``Enum``): each class-level name a
        :class:`Member`."""
        names = [
            t.id
            for item in node.body
            if isinstance(item, ast.Assign)
            for t in item.targets
            if isinstance(t, ast.Name)
        ]
        return Ns(**{n: Member(node.name, n) for n in names})

    # -- running ----------------------------------------------------------------------------------
    def budget(self) -> Budget:
        """The count of evaluation steps (``MAX_STEPS`` a call) of the call under way in this
        greenlet (each thread has one; a call paused at its model call has its own:
        ``markets/_shared/their_agents.Call``)."""
        current = getcurrent()
        budget = getattr(current, "marketarena_budget", None)
        if budget is None:
            budget = current.marketarena_budget = Budget()
        return budget

    def assigned(self, obj: Obj, method: str, attr: str, names: dict[str, Any]) -> Any:
        """The value their ``method`` (``__init__``) assigns to ``self.<attr>``, evaluated with
        ``names`` as its other locals: an attribute built as they build it (a ``defaultdict``
        with their factory) without running the rest of the method."""
        found = self.method(obj.cls, method)
        if found is None:
            raise CodeError(self.files[0].path, f"class {obj.cls} has no method {method}")
        mod, fn = found
        for node in ast.walk(fn):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign) and node.value is not None
                else []
            )
            if any(
                isinstance(t, ast.Attribute)
                and t.attr == attr
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                for t in targets
            ):
                self.budget().steps = 0
                return Frame(self, mod, {"self": obj, **names}).eval(node.value)
        raise CodeError(mod.path, f"{obj.cls}.{method} assigns no self.{attr}", fn.lineno)

    def call(self, obj: Obj, name: str, *args: Any, **kwargs: Any) -> Any:
        """``obj.name(*args, **kwargs)``, interpreted."""
        self.budget().steps = 0
        return self.bound(obj, name)(*args, **kwargs)

    def bound(self, obj: Obj, name: str) -> Callable[..., Any]:
        found = self.method(obj.cls, name)
        if found is None:
            raise CodeError(self.files[0].path, f"class {obj.cls} has no method {name}")
        mod, fn = found
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)

        def run(*args: Any, **kwargs: Any) -> Any:
            return self.run_function(mod, fn, args if static else (obj, *args), kwargs)

        return run

    def run_function(self, mod: Module, fn: ast.FunctionDef, args: tuple, kwargs: dict) -> Any:
        return run_body(fn, Frame(self, mod, self._bind(mod, fn, args, kwargs)))

    def _bind(self, mod: Module, fn: ast.FunctionDef, args: tuple, kwargs: dict) -> dict:
        """``fn``'s locals for a call with ``args`` and ``kwargs``, as Python binds them."""
        sig = fn.__dict__.get("_signature") or _signature(fn)
        params, defaults, kwonly, vararg, kwarg = sig
        if len(args) > len(params) and vararg is None:
            raise CodeError(mod.path, f"{fn.name}() given {len(args)} arguments", fn.lineno)
        names: dict[str, Any] = dict(zip(params, args))
        if vararg is not None:
            names[vararg] = tuple(args[len(params) :])
        extra = {}
        for key, value in kwargs.items():
            if key in params or key in kwonly:
                names[key] = value
            elif kwarg is not None:
                extra[key] = value
            else:
                raise CodeError(mod.path, f"{fn.name}() has no argument {key}", fn.lineno)
        if kwarg is not None:
            names[kwarg] = extra
        if len(names) < len(params) + len(kwonly) + (vararg is not None) + (kwarg is not None):
            frame = Frame(self, mod, {})
            for p in (*params, *kwonly):
                if p not in names:
                    if defaults.get(p) is None:
                        raise CodeError(mod.path, f"{fn.name}() needs {p}", fn.lineno)
                    names[p] = frame.eval(defaults[p])
        return names


def _signature(fn: ast.FunctionDef) -> tuple:
    """``fn``'s parameters, kept on its node: (positional names, name -> default expression for
    those that have one, keyword-only names, the ``*`` name or None, the ``**`` name or None)."""
    a = fn.args
    params = tuple(p.arg for p in a.posonlyargs + a.args)
    defaults = dict(zip(params[len(params) - len(a.defaults) :], a.defaults))
    defaults.update({k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    kwonly = tuple(k.arg for k in a.kwonlyargs)
    vararg, kwarg = (a.vararg and a.vararg.arg), (a.kwarg and a.kwarg.arg)
    fn._signature = sig = (params, defaults, kwonly, vararg or None, kwarg or None)  # type: ignore[attr-defined]
    return sig
