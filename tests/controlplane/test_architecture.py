"""The rules that hold the architecture together (docs/architecture.md)."""

import ast
import pathlib
import re

from tests.import_graph import circles, import_graph, imports_in

CONTROLPLANE = pathlib.Path(__file__).resolve().parents[2] / "controlplane"
FORBIDDEN_IMPORTS = {"django", "channels", "daphne", "asyncio", "time", "random", "threading"}
FORBIDDEN_CALLS = {("datetime", "now"), ("datetime", "utcnow"), ("date", "today")}
# The host of a user's asyncio operator (controlplane/operators/) is an asyncio loop, and its
# determinism shims replace `time`, `random`, `uuid` and `os.urandom` during the operator's
# steps: it imports what it replaces. It never reads the wall clock itself (the call check below
# holds for it too), and its tests run an operator under two hash seeds for byte-identical traces.
OPERATOR_HOST = "operators/"
OPERATOR_HOST_IMPORTS = {"asyncio", "time", "random", "threading"}


def _modules():
    return sorted(CONTROLPLANE.rglob("*.py"))


def test_controlplane_has_modules_to_check():
    assert len(_modules()) > 5


def test_controlplane_never_imports_the_web_stack_the_wall_clock_or_unseeded_random():
    offenders = []
    for path in _modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                allowed = path.name == "kernel.py" and top == "random"  # kernel owns the seeded Random
                in_host = str(path.relative_to(CONTROLPLANE)).startswith(OPERATOR_HOST)
                allowed = allowed or (in_host and top in OPERATOR_HOST_IMPORTS)
                if top in FORBIDDEN_IMPORTS and not allowed:
                    offenders.append(f"{path.relative_to(CONTROLPLANE)}: import {name}")
    assert offenders == []


def test_only_the_kernel_constructs_a_random_generator_from_the_seed():
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "random":
                assert path.name == "kernel.py", path
                assert [a.name for a in node.names] == ["Random"]


def test_controlplane_never_reads_the_wall_clock():
    offenders = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                value = node.func.value
                if isinstance(value, ast.Name) and (value.id, node.func.attr) in FORBIDDEN_CALLS:
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


# -- the web layer reaches the core through the session service -----------------------------------
DASHBOARD = CONTROLPLANE.parent / "dashboard"
FACADE = "controlplane.simulation"  # the session service, its value types and vocabulary (its docstring)
# What a simulation holds that only the core may reach: a web module reads a world through the
# session service's methods and view models (controlplane.session.views), never through these.
WORLD_INTERNALS = {"kernel", "server", "controllers"}


def _dashboard_modules():
    return sorted(DASHBOARD.rglob("*.py"))


def test_the_dashboard_imports_nothing_of_the_core_but_the_facade():
    offenders = []
    for path in _dashboard_modules():
        rel = path.relative_to(DASHBOARD.parent)
        for module, _ in imports_in(path, DASHBOARD.parent, type_checking=True):
            if module.split(".")[0] == "controlplane" and module != FACADE:
                offenders.append(f"{rel}: {module}")
    assert offenders == []


def test_the_dashboard_never_reaches_into_a_world():
    # No `.kernel`, `.server` or `.controllers` anywhere under dashboard/: not on a session's
    # simulation (`hosted.sim.server`), not on a replay's, not on anything.
    offenders = []
    for path in _dashboard_modules():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Attribute) and node.attr in WORLD_INTERNALS:
                offenders.append(f"{path.relative_to(DASHBOARD.parent)}:{node.lineno}: .{node.attr}")
    assert offenders == []


def test_the_dashboard_has_no_import_circle():
    found = circles(import_graph(DASHBOARD))
    assert found == [], "import circles in dashboard/: " + "; ".join(" -> ".join(c) for c in found)


# -- the core: the facade is for outside users, and the arrows run one way -----------------------


def test_nothing_in_the_core_imports_the_facade():
    # controlplane.simulation re-exports the core for the dashboard, tests, scripts and notebooks;
    # the core's modules import the module that defines a name (the world is controlplane.world).
    graph = import_graph(CONTROLPLANE, type_checking=True)
    importers = sorted(name for name, targets in graph.items() if "controlplane.simulation" in targets)
    assert importers == []


def test_the_core_never_imports_the_dashboard():
    offenders = []
    for path in _modules():
        for module, _ in imports_in(path, CONTROLPLANE.parent, type_checking=True):
            if module.split(".")[0] == "dashboard":
                offenders.append(f"{path.relative_to(CONTROLPLANE)}: {module}")
    assert offenders == []


def test_the_core_has_no_import_circle():
    # Late imports inside functions count: they tie two modules as surely as one at the top.
    found = circles(import_graph(CONTROLPLANE))
    assert found == [], "import circles in controlplane/: " + "; ".join(" -> ".join(c) for c in found)


# -- the controller registry names every controller; nothing else lists them by literal ------------

REPO = CONTROLPLANE.parent
LITERAL_SCAN = ("controlplane", "dashboard", "templates", "static")
# Where a registered controller's name, kind, resource, queue name or component may be spelled.
# Every entry says why; an entry no longer needed fails `test_the_literal_allow_list_is_needed`.
LITERAL_ALLOWED = {
    # The registry itself: the one place that declares the controllers.
    "controlplane/controllers/": "the controller registry",
    # The API server's served-resource tables (resources, decoding, strategy, validation, field
    # selectors): what the server serves is its own table, not the registry's (docs/architecture.md).
    "controlplane/apiserver/": "the API server's served-resource tables",
    # Upstream's getFresh error names the ReplicaSet when the object carries no kind: type-specific text.
    "controlplane/controller_ref_manager.py": "upstream's error text for an object without a kind",
}


def _controller_words():
    from controlplane.controllers.registry import CONTROLLERS

    return {
        word for spec in CONTROLLERS for word in (spec.name, spec.kind, spec.resource, spec.queue_name, spec.component)
    }


def _literals(path, words):
    """(line, word) of each literal in `path` equal to one of `words`: a Python string constant,
    or in html/js a quoted string or an element's whole text (`<option>replicaset</option>`)."""
    if path.suffix == ".py":
        tree = ast.parse(path.read_text(), filename=str(path))
        return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in words]
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    pattern = re.compile(rf"""(["'`])({alternatives})\1|>\s*({alternatives})\s*<""")
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found += [(number, m.group(2) or m.group(3)) for m in pattern.finditer(line)]
    return found


def _scanned_files():
    for top in LITERAL_SCAN:
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix in (".py", ".html", ".js") and path.is_file():
                yield path, path.relative_to(REPO).as_posix()


def _allowed(rel):
    return next(
        (entry for entry in LITERAL_ALLOWED if rel == entry or (entry.endswith("/") and rel.startswith(entry))), None
    )


def test_nothing_outside_the_registry_lists_the_controllers_by_literal():
    # A new controller is declared once (controlplane/controllers/registry.py); every other module
    # reads the registry, so nothing else has to be found by grep (docs/architecture.md, "How to
    # add a controller").
    words = _controller_words()
    offenders = [
        f"{rel}:{line}: {word!r}"
        for path, rel in _scanned_files()
        if _allowed(rel) is None
        for line, word in _literals(path, words)
    ]
    assert offenders == []


def test_the_literal_allow_list_is_needed():
    words = _controller_words()
    used = {_allowed(rel) for path, rel in _scanned_files() if _literals(path, words)}
    assert sorted(set(LITERAL_ALLOWED) - used) == []
