"""Imports a module's header can show: few function-local imports of dabench's own modules, and
the cheap entry points load none of the heavy libraries (docs/architecture.md, "Layering")."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "mlflow", "optuna", "matplotlib", "scipy")
#: function-local imports of dabench's own modules allowed in all (the heavy boundaries)
MAX_LOCAL = 80

PROBE = """
import atexit, sys
heavy = {heavy!r}
atexit.register(lambda: print("LOADED", sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))))
{body}
"""


def local_imports(root: Path) -> list[str]:
    """``path:line`` of every ``import dabench...`` / ``from dabench... import`` inside a function."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                names = []
                if isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                if any(n == "dabench" or n.startswith("dabench.") for n in names):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return sorted(set(found))


def _loaded(body: str) -> str:
    code = PROBE.format(heavy=HEAVY, body=body)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    return next(line for line in out.stdout.splitlines() if line.startswith("LOADED"))


def test_few_function_local_imports_of_dabench():
    found = local_imports(REPO / "dabench") + local_imports(REPO / "hydra_plugins")
    assert len(found) <= MAX_LOCAL, f"{len(found)} function-local dabench imports (at most {MAX_LOCAL}): {found}"


def test_the_counter_sees_a_local_import(tmp_path):
    (tmp_path / "m.py").write_text("import os\n\ndef f():\n    from dabench.core import status\n    return os\n")
    global REPO
    saved, REPO = REPO, tmp_path
    try:
        assert local_imports(tmp_path) == ["m.py:4"]
    finally:
        REPO = saved


def test_the_api_and_help_load_no_heavy_library():
    assert _loaded("import dabench.api") == "LOADED []"
    body = "import runpy; sys.argv = ['dabench', '--help']; runpy.run_module('dabench', run_name='__main__')"
    assert _loaded(body) == "LOADED []"
