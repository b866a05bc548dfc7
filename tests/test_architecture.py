"""The shape of the code base: no import cycles between marketarena's modules, and docstrings that
point at files that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "marketarena"


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts}


def top_level_imports(path: Path) -> set[str]:
    """marketarena modules imported when ``path`` is imported (module-level statements only, not
    ``if TYPE_CHECKING`` blocks or imports inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                    + ([base] if base else []))
                subs = {f"{base}.{a.name}" for a in node.names} & set(MODULES)
                found.update(subs)  # `from pkg import submodule` imports the submodule
                if len(subs) < len(node.names):
                    found.add(base)

    visit(tree.body)
    return {m for m in found if m in MODULES and m != me}


def test_no_import_cycles():
    graph = {m: top_level_imports(p) for m, p in MODULES.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                dfs(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m)


PATH_IN_DOCS = re.compile(r"``((?:[\w.]+/)*[\w.]+\.(?:py|j2|yaml|csv))``")


def test_docstrings_point_at_files_that_exist():
    """Every ``some/file.py`` a docstring names exists, relative to the module's folder, the
    package root, or the project root (after ``lib/marketarena``)."""
    missing = []
    for path in MODULES.values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = [ast.get_docstring(n) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
        for doc in filter(None, docs):
            for ref in PATH_IN_DOCS.findall(doc):
                if ref.startswith(("data/", "reports/")):  # pipeline outputs
                    continue
                candidates = [path.parent / ref, path.parent / "templates" / ref, LIB / ref,
                              LIB.parent.parent / ref, LIB / "markets" / ref]
                if "<" in ref or not any(c.exists() for c in candidates):
                    missing.append(f"{path.relative_to(LIB)}: {ref}")
    assert not missing, "docstrings name files that do not exist:\n" + "\n".join(missing)
