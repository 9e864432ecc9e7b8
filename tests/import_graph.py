"""The import graph of a package, read from its source, and the circles in it (for the
architecture tests of `controlplane/` and `dashboard/`).

An arrow A -> B is any `import B` / `from B import x` / `from . import B` in module A, at module
level or inside a function or class (a late import still ties the two modules), and
`importlib.import_module("B")` with a literal name. Imports under `if TYPE_CHECKING:` are left
out unless asked for: they never run. `from P import x` is an arrow to the module `P.x` when that is a module of
the package, else to `P`. Only arrows between modules of the package are kept.
"""

from __future__ import annotations

import ast
import pathlib

Graph = dict[str, set[str]]


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    """`root/pkg/sub/mod.py` -> `pkg.sub.mod`; a package's `__init__.py` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_in(path: pathlib.Path, root: pathlib.Path, *, type_checking: bool = False) -> list[tuple[str, list[str]]]:
    """What the module at `path` (under `root`, the directory that holds its top package)
    imports: (absolute module, the names taken from it; [] for `import module` and
    `import_module("module")`), relative imports resolved. `type_checking` keeps the imports
    under `if TYPE_CHECKING:` too."""
    name = module_name(path, root)
    found = _Imports(name if path.name == "__init__.py" else name.rpartition(".")[0], type_checking)
    found.visit(ast.parse(path.read_text(), filename=str(path)))
    return found.imports


def import_graph(package: pathlib.Path, *, type_checking: bool = False) -> Graph:
    """Module name -> the modules of `package` (a directory) it imports."""
    root = package.parent
    paths = {module_name(p, root): p for p in sorted(package.rglob("*.py"))}
    graph: Graph = {}
    for name, path in paths.items():
        targets: set[str] = set()
        for module, names in imports_in(path, root, type_checking=type_checking):
            subs = {f"{module}.{n}" for n in names} & paths.keys()
            targets |= subs
            if (not names or len(subs) < len(names)) and module in paths:
                targets.add(module)
        graph[name] = targets - {name}
    return graph


class _Imports(ast.NodeVisitor):
    def __init__(self, package: str, type_checking: bool) -> None:
        self.package = package
        self.type_checking = type_checking
        self.imports: list[tuple[str, list[str]]] = []  # (module, names taken from it)

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if not self.type_checking and (
            (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
        ):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.imports += [(alias.name, []) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        self.imports.append((module, [alias.name for alias in node.names]))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.imports.append((arg.value, []))
        self.generic_visit(node)


def circles(graph: Graph) -> list[list[str]]:
    """One circle (a path that ends where it starts: [a, b, a]) through each group of modules
    that import one another, in a stable order; [] when the graph has none."""
    found = []
    for group in _strongly_connected(graph):
        if len(group) > 1:
            found.append(_circle_in(graph, group))
    return found


def _strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a package can be deeper than the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    groups.append(sorted(group))
    return sorted(groups)


def _circle_in(graph: Graph, group: list[str]) -> list[str]:
    """The shortest way from the group's first module back to itself, inside the group."""
    members = set(group)
    start = group[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node] & members):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if succ not in came_from:
                    came_from[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no circle in {group}")  # a strongly connected group always has one
