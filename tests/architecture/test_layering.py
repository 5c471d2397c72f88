"""Imports go one way (docs/architecture.md, "Layering").

Every module under dabench/ is parsed with ``ast``; every ``import``/``from ... import`` counts,
at module level *and inside functions* (a lazy import is still a dependency: it only moves when
the cost is paid). ``hydra_plugins/`` (Hydra's glue) is parsed too, as the entry layer.
``if TYPE_CHECKING:`` blocks are left out of the layering (they never run) but count as cycles:
a type-only import back is still two modules that each need the other.

The rules:

1. Each top-level part of dabench (a module like ``dabench/config/build.py`` or a package like
   ``dabench/backends/``) sits in one layer of :data:`LAYERS`, lowest first. A part may import
   from its own group and from any lower layer, never from a higher layer. Groups in the same
   layer are siblings and may not import each other (``backends | perfmodel``: the measure side
   and the predict side meet only in the runner). A command-line entry (``__main__`` of a
   package) belongs to the top layer.
2. No import cycle between modules, and none between top-level parts (packages).
3. A platform folder (``dabench/platforms/<family>/``) may import the shared packages; nothing
   shared imports one, except the registry (:data:`REGISTRY_EDGE`: it finds the folders on first
   use, so it is left out of both rules) and the folder's own entry points named in YAML (sweep hooks).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "dabench"
PACKAGES = ("dabench", "hydra_plugins")  #: parsed trees; hydra_plugins is part of the entry layer

#: lowest first; each layer is a list of sibling groups; each group a set of top-level parts
LAYERS: list[tuple[str, list[set[str]]]] = [
    ("vocabulary", [{"core"}]),
    ("config", [{"config"}]),
    ("process", [{"runtime"}]),
    ("machine", [{"host"}]),
    ("workload", [{"workload"}]),
    ("metrics", [{"metrics"}]),
    ("ingest", [{"ingest"}]),
    ("engines", [{"vendors"}]),
    ("execution", [{"backends"}, {"perfmodel"}]),
    ("prediction", [{"predictor"}]),
    ("fitting", [{"fit"}]),
    ("findings", [{"findings"}]),
    ("parallel", [{"distributed"}]),
    ("tracking", [{"tracking"}]),
    ("report", [{"report"}]),
    ("pipeline", [{"pipeline"}]),
    ("studies", [{"tune"}]),
    ("advice", [{"advise"}]),
    ("platforms", [{"platforms"}]),
    ("commands", [{"cli"}]),
    ("entry", [{"api", "__main__", "__init__", "hydra_plugins"}]),
]

#: upward imports not fixed yet: (importing module, imported part) -> why it remains. The test
#: fails when one is fixed and still listed, so this list can only shrink.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}

#: the one import of the platform folders from below: the registry loading them on first use
REGISTRY_EDGE = ("dabench.core.platforms", "dabench.platforms")


def _part_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "hydra_plugins":
        return "hydra_plugins"
    if parts[-1] == "__main__" and len(parts) > 2:
        return "__main__"  # a package's command line is an entry point
    return parts[1] if len(parts) > 1 else "__init__"


def _position() -> dict[str, tuple[int, int]]:
    where = {}
    for layer, (_, groups) in enumerate(LAYERS):
        for g, group in enumerate(groups):
            for part in group:
                where[part] = (layer, g)
    return where


def _modules() -> dict[str, Path]:
    out = {}
    for path in (p for package in PACKAGES for p in (REPO / package).rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _skip_type_checking(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    skipped.add(id(sub))
    return skipped


def imports(modules: dict[str, Path], type_only: bool = False) -> dict[str, set[str]]:
    """module -> parsed modules it imports (``from pkg import name`` counts ``pkg.name`` when
    that is a module, else ``pkg``); ``type_only``: with the ``if TYPE_CHECKING:`` imports."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        skipped = set() if type_only else _skip_type_checking(tree)
        targets: set[str] = set()
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in modules]
                targets.update(subs or [name])
        graph[module] = {t for t in targets if t.split(".")[0] in PACKAGES and t != module}
        graph[module] -= {REGISTRY_EDGE[1]} if module == REGISTRY_EDGE[0] else set()
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _resolve(graph: dict[str, set[str]], modules: dict[str, Path]) -> dict[str, set[str]]:
    """Edges to real modules only (``dabench.x.name`` where name is a function -> ``dabench.x``)."""
    out = {}
    for module, targets in graph.items():
        out[module] = set()
        for t in targets:
            while t not in modules and "." in t:
                t = t.rsplit(".", 1)[0]
            if t in modules and t != module:
                out[module].add(t)
    return out


def test_every_part_has_a_layer():
    where = _position()
    missing = sorted({_part_of(m) for m in _modules()} - set(where))
    assert not missing, (
        f"add these to LAYERS in tests/architecture/test_layering.py and docs/architecture.md: {missing}"
    )


def test_no_upward_or_sideways_import():
    modules = _modules()
    graph = _resolve(imports(modules), modules)
    where = _position()
    bad = {}
    for module, targets in graph.items():
        src = where[_part_of(module)]
        for target in targets:
            if target in PACKAGES:
                continue  # the package itself (``from dabench import status``): resolved by name
            dst = where[_part_of(target)]
            upward = dst[0] > src[0]
            sideways = dst[0] == src[0] and dst[1] != src[1]
            if upward or sideways:
                bad[(module, _part_of(target))] = f"{module} -> {target} ({'upward' if upward else 'sibling'})"
    new = {k: v for k, v in bad.items() if k not in KNOWN_UPWARD}
    fixed = [k for k in KNOWN_UPWARD if k not in bad]
    assert not new, "imports against the layering:\n" + "\n".join(sorted(new.values()))
    assert not fixed, f"fixed, remove from KNOWN_UPWARD: {fixed}"


def test_no_import_cycle_between_modules():
    modules = _modules()
    graph = _resolve(imports(modules, type_only=True), modules)
    # a package's __init__ re-exporting its own submodules is containment, not a cycle
    for module in graph:
        graph[module] = {t for t in graph[module] if not (module.startswith(t + ".") and t in modules)}
    cycles = _cycles(graph)
    assert not cycles, "import cycles between modules:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycle_between_packages():
    modules = _modules()
    graph = _resolve(imports(modules, type_only=True), modules)
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        src = _part_of(module)
        parts.setdefault(src, set()).update(_part_of(t) for t in targets if t not in PACKAGES and _part_of(t) != src)
    cycles = _cycles(parts)
    assert not cycles, "import cycles between dabench's packages:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checker_sees_lazy_imports(tmp_path):
    """The rules are only as good as the parser: an import inside a function is found."""
    fake = {"dabench.a": tmp_path / "a.py", "dabench.b": tmp_path / "b.py"}
    fake["dabench.a"].write_text("def f():\n    from dabench.b import g\n")
    fake["dabench.b"].write_text("from dabench import a\nimport dabench.a\n")
    graph = _resolve(imports(fake), fake)
    assert graph["dabench.a"] == {"dabench.b"} and graph["dabench.b"] == {"dabench.a"}
    assert _cycles(graph) == [["dabench.a", "dabench.b"]]


def test_nothing_but_a_platform_folder_imports_one():
    """Above the platforms layer too (cli/, hydra_plugins/): a platform is asked for through the registry."""
    modules = _modules()
    graph = _resolve(imports(modules), modules)
    found = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if _part_of(module) != "platforms"
        for target in targets
        if _part_of(target) == "platforms"
    )
    assert not found, "ask dabench.core.platforms instead:\n" + "\n".join(found)
