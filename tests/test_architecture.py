"""The shape of the code base (docs/architecture.md): no import cycles between marketarena's
modules, imports inside functions counted; the core knows nothing above it; a market's rules never
reach into its analysis or its sources; no module over 600 lines; and docstrings that point at
files that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "marketarena"
#: the longest a module may grow (lines of its file)
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts}


def imports(path: Path, inside_functions: bool = True) -> set[str]:
    """marketarena modules imported when ``path`` is imported or any of its functions runs
    (``inside_functions=False``: module-level statements only), but ``if TYPE_CHECKING`` blocks
    (annotations, never run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1]
                        + ([base] if base else [])
                    )
                subs = {f"{base}.{a.name}" for a in node.names} & set(MODULES)
                found.update(subs)  # `from pkg import submodule` imports the submodule
                if len(subs) < len(node.names):
                    found.add(base)
            elif (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                and not inside_functions
            ):
                continue
            visit(list(ast.iter_child_nodes(node)))

    visit(tree.body)
    return {m for m in found if m in MODULES and m != me}


GRAPH = {m: imports(p) for m, p in MODULES.items()}


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n) :] + [n]
            if n not in state:
                found = dfs(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = dfs(m)
            if found:
                return found
    return None


def test_no_import_cycles_counting_imports_inside_functions():
    cycle = cycle_in(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_sees_an_import_inside_a_function():
    """The check is not blind where the last one was: an import inside a function is an edge,
    and a cycle of two edges is found."""
    graph = {"x.a": {"x.b"}, "x.b": {"x.a"}}
    assert cycle_in(graph) == ["x.a", "x.b", "x.a"]
    inner = imports(LIB / "pipeline.py")  # pipeline imports importing inside run_simulate only
    assert "marketarena.simulate.importing" in inner
    assert "marketarena.simulate.importing" not in imports(
        LIB / "pipeline.py", inside_functions=False
    )


def test_the_core_knows_nothing_above_it():
    """``core`` imports only ``core``, the package's own ``__init__`` and the markets package's
    (the registry discovers market folders): no agents, LLM layer, ratings, pipeline or market."""
    allowed = ("marketarena.core", "marketarena.core.")
    for m in (m for m in GRAPH if m.startswith("marketarena.core")):
        above = {
            n
            for n in GRAPH[m]
            if not n.startswith(allowed) and n not in ("marketarena", "marketarena.markets")
        }
        assert not above, f"{m} imports {sorted(above)}"


def part_of(module: str) -> str | None:
    """The part of a market a module of ``markets/`` belongs to: ``rules`` (the top of a market's
    folder, and of ``_shared``), ``analysis`` or ``sources``; None outside ``markets/<folder>/``."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "markets":
        return None
    return parts[3] if len(parts) > 3 and parts[3] in ("analysis", "sources") else "rules"


def test_a_markets_rules_never_import_an_analysis_or_sources():
    """The rules of a market (the modules at the top of its folder, and of ``_shared``) never
    import any market's ``analysis`` or ``sources``: episodes are fingerprinted on the rules alone
    (``simulate/planning.py``), so an edit to a figure re-plays nothing; an analysis never imports
    the sources."""
    allowed = {
        "rules": {"rules"},
        "analysis": {"rules", "analysis"},
        "sources": {"rules", "analysis", "sources"},
    }
    for m, deps in GRAPH.items():
        mine = part_of(m)
        if mine is None:
            continue
        wrong = {n for n in deps if part_of(n) not in (None, *allowed[mine])}
        assert not wrong, f"{m} ({mine}) imports {sorted(wrong)}"


def test_no_module_over_600_lines():
    long = {
        str(p.relative_to(LIB)): n
        for p in MODULES.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


PATH_IN_DOCS = re.compile(r"``((?:[\w.]+/)*[\w.]+\.(?:py|j2|yaml|csv))``")


def test_docstrings_point_at_files_that_exist():
    """Every ``some/file.py`` a docstring names exists, relative to the module's folder, the
    package root, or the project root (after ``lib/marketarena``)."""
    missing = []
    for path in MODULES.values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = [
            ast.get_docstring(n)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        for doc in filter(None, docs):
            for ref in PATH_IN_DOCS.findall(doc):
                if ref.startswith(("data/", "reports/")):  # pipeline outputs
                    continue
                candidates = [
                    path.parent / ref,
                    path.parent / "templates" / ref,
                    LIB / ref,
                    LIB.parent.parent / ref,
                    LIB / "markets" / ref,
                ]
                if "<" in ref or not any(c.exists() for c in candidates):
                    missing.append(f"{path.relative_to(LIB)}: {ref}")
    assert not missing, "docstrings name files that do not exist:\n" + "\n".join(missing)
