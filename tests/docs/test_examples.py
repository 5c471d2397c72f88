"""Every example in README.md, docs/*.md and the package's docstrings ends ok.

- Commands: the lines of ```bash blocks that start with ``python -m dabench``,
  ``.venv/bin/python -m dabench`` or ``dabench `` (backslash continuations joined, the trailing
  ``# comment`` dropped), run as ``sys.executable -m dabench ...`` and expected to exit 0. The same
  command in two files runs once.
- Python: the ``>>>`` snippets of docstrings under dabench/ and of the docs' ```python blocks
  (and plain ```python blocks that call ``predict``/``run``), executed with every ``predict`` /
  ``run`` result collected; each must have status ok.

Commands are run as written, with five documented adjustments (:func:`adapt`): a command that
would measure on this CPU for minutes gets ``hardware.mode=predict``; any other command that
measures here gets the fewest steps that still run every step kind (:data:`SHORT_STEPS`); an Optuna study gets
``hydra.sweeper.n_trials=2`` and ``dabench advise`` ``trials=2`` where they set none (the searches
themselves are tests/tune's and tests/advise's; here: they compose and run); the
placeholders of the report/compare examples (``<run id>``, ``RUN_ID``, a sweep's id) become runs
of a small store built once (:func:`store`). :data:`SKIP` names what cannot run here, with why.
Only the cheapest cases are fast; every command run is marked slow.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import forkserver

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PREFIX = re.compile(r"^(?:\.venv/bin/)?python -m dabench\b|^dabench(?:\s|$)")

#: commands that cannot end ok on this machine, by a substring of the command: why
SKIP = {
    "hardware.backend=cstorch_cpu": "needs the cerebras-pytorch venv (scripts/setup_cerebras_venv.sh); without it the "
    "run ends unsupported by design (tests/backends cover that)",
    "ingest path/to/": "a placeholder for the user's own vendor artifact (tests/ingest parses the shared fixtures)",
    "+sweeps=my_ipu": "the user's own sweep file shown beside it (tests/hydra_plugins/test_user_sweeps.py runs one "
    "from the launch folder and from hydra.searchpath)",
}
#: commands that need more CPU cores than ranks they start (the pre-flight refuses oversubscription)
CORES = {"parallel.replicas=2": 4}
#: measured CPU commands that take minutes on 2 cores: run as predictions instead (same composition)
MEASURES_FOR_MINUTES = ("model=gpt2_small", "+sweeps=cpu_deploy", "-m model.n_layers=1,2,4")
#: appended to the other commands that measure on this CPU: every step kind still runs
SHORT_STEPS = ["run.warmup_steps=1", "run.timed_steps=2"]
#: commands another slow test runs as written, with the short steps, and checks further (its
#: records, metrics and artifacts): "argv after dabench" -> "test file::test name"; run once there
#: (test_examples_run_elsewhere_are_run_there keeps the two in step)
RUN_ELSEWHERE = {
    "": "tests/cli/test_run.py::test_default_run_records_one_ok_measured_run_with_metrics_tags_and_artifacts",
    "parallel=pp parallel.degree=2 parallel.layers_per_stage=[1,1] model.n_layers=2": (
        "tests/distributed/test_cli_parallel.py::test_pp_acceptance_command_records_one_ok_measured_run_with_tier2_metrics"
    ),
    "parallel=dp parallel.degree=2 hardware.mode=validate": (
        "tests/distributed/test_cli_parallel.py::test_validate_mode_prices_the_measured_collectives_with_the_link_model"
    ),
}
#: commands that need no run at all (the fast tier)
FAST = ("--cfg job",)
#: placeholders of the report / compare examples -> keys of the store fixture
PLACEHOLDERS = {
    "<parent run id>": "sweep",
    "62cda43c6af947c1bdaf95d6e00c807b": "sweep",
    "<run id> <run id>": "two_runs",
    "RUN_ID RUN_ID": "two_runs",
}
NEEDS_STORE = ("report", "compare", "study")


@dataclass(frozen=True)
class Example:
    where: str  # file:line (the first place the command appears)
    text: str  # the command as written (continuations joined, comment dropped)


def _strip_comment(line: str) -> str:
    """``line`` without a trailing shell comment (a # outside quotes, after whitespace)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _blocks(path: Path, languages: tuple[str, ...]):
    """(first line number, lines) of each fenced block in ``languages``."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if fence:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            if fence.group(1) in languages:
                yield start + 1, body
        i += 1


def commands() -> list[Example]:
    seen: dict[str, Example] = {}
    for path in DOCS:
        for first, body in _blocks(path, ("bash", "sh", "shell")):
            j = 0
            while j < len(body):
                line, number = body[j].strip(), first + j
                if PREFIX.match(line):
                    while line.endswith("\\") and j + 1 < len(body):
                        j += 1
                        line = line[:-1].rstrip() + " " + body[j].strip()
                    text = _strip_comment(line)
                    key = PREFIX.sub("dabench", text)
                    seen.setdefault(key, Example(f"{path.relative_to(ROOT)}:{number}", text))
                j += 1
    return list(seen.values())


def python_snippets() -> list[Example]:
    """Docstring ``>>>`` examples under dabench/ and the docs' python blocks that call predict/run."""
    found: list[Example] = []
    for path in sorted((ROOT / "dabench").rglob("*.py")):
        lines = path.read_text().splitlines()
        code, start = [], None
        for number, raw in enumerate(lines + [""], 1):
            line = raw.strip()
            if line.startswith(">>> ") or (code and line.startswith("... ")):
                start = start or number
                code.append(line[4:])
            elif code:
                text = "\n".join(code)
                if re.search(r"\b(predict|run)\(", text):
                    found.append(Example(f"{path.relative_to(ROOT)}:{start}", text))
                code, start = [], None
    for path in DOCS:
        for first, body in _blocks(path, ("python", "pycon")):
            prompted = [b.strip() for b in body if b.strip().startswith((">>> ", "... "))]
            text = "\n".join(b[4:] for b in prompted) if prompted else "\n".join(body)
            if re.search(r"\b(predict|run)\(", text):
                found.append(Example(f"{path.relative_to(ROOT)}:{first}", text))
    return found


def adapt(example: Example, store: dict[str, object] | None = None) -> list[str]:
    """The argv after ``python -m dabench`` that the test runs (see module doc)."""
    text = PREFIX.sub("", example.text).strip()
    for placeholder, key in PLACEHOLDERS.items():
        if placeholder in text:
            assert store is not None, example
            value = store[key]
            text = text.replace(placeholder, " ".join(value) if isinstance(value, list) else str(value))
    argv = shlex.split(text)
    multirun = [a for a in argv if a in ("-m", "--multirun")]
    argv = [a for a in argv if a not in multirun]  # Hydra's parser takes overrides before -m, not after
    if any(marker in example.text for marker in MEASURES_FOR_MINUTES):
        argv.append("hardware.mode=predict")
    elif _measures_here(argv):  # the same measured path, with the fewest steps that exercise it
        argv += SHORT_STEPS
    if multirun and any(a.startswith("+sweeps=") for a in argv):
        argv.append("hydra.sweeper.n_trials=2")
    if argv[:1] == ["advise"] and not any(a.startswith("trials=") for a in argv):
        argv.append("trials=2")
    return argv + multirun


def _measures_here(argv: list[str]) -> bool:
    """A Hydra-task command that runs on this machine's CPU (no other hardware, not predict-only)."""
    if not argv or "=" not in " ".join(argv) and argv[0].isidentifier() and not argv[0].startswith("-"):
        return not argv  # `dabench` alone measures; a bare subcommand does not
    if argv[0].isidentifier() and "=" not in argv[0]:
        return False  # a subcommand (grid, report, ...)
    hardware = [a.split("=", 1)[1] for a in argv if a.startswith("hardware=")]
    return (not hardware or hardware[-1] in ("cpu",)) and "hardware.mode=predict" not in argv and "--cfg" not in argv


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "DABENCH_PARENT_RUN_ID")}
    env["PYTHONUNBUFFERED"] = "1"
    return env  # runs record into <cwd>/mlruns/, the default a user gets


def _dabench(argv: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    done = forkserver.run(argv, cwd, _env(), timeout)  # a fork of a warm interpreter where that runs the same
    assert done.returncode == 0, (
        f"dabench {shlex.join(argv)} (in {cwd}): exit {done.returncode}\n"
        + done.stdout[-2500:]
        + "\n"
        + done.stderr[-3500:]
    )
    return done


def _argv_text(example: Example) -> str:
    return " ".join(shlex.split(PREFIX.sub("", example.text).strip()))


def _skip_reason(example: Example) -> str | None:
    if _argv_text(example) in RUN_ELSEWHERE:
        return f"runs as written, with the short steps, in {RUN_ELSEWHERE[_argv_text(example)]}"
    for marker, cores in CORES.items():
        if marker in example.text and (os.cpu_count() or 1) < cores:
            return f"starts {cores} ranks; this machine has {os.cpu_count()} CPU cores (the pre-flight refuses it)"
    return next((why for marker, why in SKIP.items() if marker in example.text), None)


COMMANDS = commands()
SNIPPETS = python_snippets()


def test_examples_are_found():
    """The extraction sees the documented entry points (a changed fence or prefix would hide them)."""
    texts = " | ".join(e.text for e in COMMANDS)
    for expected in ("+sweeps=ipu_deploy", " report ", " compare ", " study ", "parallel=pp", "--cfg job"):
        assert expected in texts, expected
    assert any(e.where.startswith("dabench/api.py") for e in SNIPPETS)
    assert any(e.where.startswith("README.md") for e in SNIPPETS)
    advise = [e for e in COMMANDS if PREFIX.sub("", e.text).split()[:1] == ["advise"]]
    assert advise and all("trials=2" in adapt(e) for e in advise)
    for example in COMMANDS:  # every command parses and adapts (placeholders filled by a stand-in store)
        adapt(example, {"sweep": "0" * 32, "two_runs": ["1" * 32, "2" * 32]})


def test_examples_run_elsewhere_are_run_there():
    """Each command left to another test is still documented, and that test passes its words as
    written (each argument a literal in the test's source) with :data:`SHORT_STEPS`-sized runs."""
    import importlib
    import inspect

    documented = {_argv_text(e) for e in COMMANDS}
    for argv, where in RUN_ELSEWHERE.items():
        assert argv in documented, f"{argv!r} is no longer documented: drop it from RUN_ELSEWHERE"
        path, name = where.split("::")
        module = importlib.import_module(path[: -len(".py")].replace("/", "."))
        source = inspect.getsource(getattr(module, name))
        for word in shlex.split(argv):
            assert repr(word) in source or f'"{word}"' in source, (where, word)
        assert "run_cli(" in source and "timed_steps" in inspect.getsource(module), where


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict[str, object]:
    """A launch folder whose ./mlruns holds an Optuna study (ipu_deploy-gpt2_test, 2 predicted
    trials under a parent run) and a predicted rdu run: what the report, compare and study
    examples select."""
    folder = tmp_path_factory.mktemp("store")
    _dabench(["+sweeps=ipu_deploy", "hydra.sweeper.n_trials=2", "hydra.sweeper.seed=0", "-m"], folder)
    _dabench(["hardware=rdu"], folder)
    with sqlite3.connect(folder / "mlruns" / "mlflow.db") as db:
        parent = db.execute("SELECT run_uuid FROM runs WHERE name = 'study ipu_deploy-gpt2_test'").fetchone()[0]
        children = [
            r[0]
            for r in db.execute(
                "SELECT r.run_uuid FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                "WHERE t.key = 'mlflow.parentRunId' AND t.value = ? ORDER BY r.start_time",
                (parent,),
            )
        ]
    assert len(children) == 2, children
    return {"folder": folder, "sweep": parent, "two_runs": children}


def _command_params():
    for example in COMMANDS:
        marks = [] if any(f in example.text for f in FAST) else [pytest.mark.slow]
        first = example.text.split("dabench", 1)[1].split()
        if first and first[0] in NEEDS_STORE:  # one worker builds the store (pytest-xdist)
            marks.append(pytest.mark.xdist_group("docs_store"))
        why = _skip_reason(example)
        if why:
            marks.append(pytest.mark.skip(reason=why))
        yield pytest.param(example, marks=marks, id=example.where)


@pytest.mark.parametrize("example", list(_command_params()))
def test_command_ends_ok(example, request, tmp_path):
    first = example.text.split("dabench", 1)[1].split()
    if first and first[0] in NEEDS_STORE:
        values = request.getfixturevalue("store")
        _dabench(adapt(example, values), Path(values["folder"]))
    else:
        _dabench(adapt(example), tmp_path)


def _snippet_params():
    for example in SNIPPETS:
        measures = re.search(r"\brun\(", example.text) is not None  # run() honours hardware.mode: measures here
        yield pytest.param(example, marks=[pytest.mark.slow] if measures else [], id=example.where)


@pytest.mark.parametrize("example", list(_snippet_params()))
def test_python_snippet_ends_ok(example, tmp_path, monkeypatch):
    import dabench

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    results = []

    def collecting(function):
        def call(*args, **kwargs):
            result = function(*args, **kwargs)
            results.append((args, result))
            return result

        return call

    namespace = {"__name__": "__example__", "predict": collecting(dabench.predict), "run": collecting(dabench.run)}
    tree = ast.parse(example.text)
    for node in tree.body:  # imports of predict/run are re-pointed at the collecting wrappers
        code = compile(ast.Module([node], type_ignores=[]), example.where, "exec")
        exec(code, namespace)
        if isinstance(node, ast.ImportFrom) and node.module == "dabench":
            namespace.update({n: collecting(getattr(dabench, n)) for n in ("predict", "run") if n in namespace})
    assert results, f"{example.where}: no predict()/run() call ran"
    for args, result in results:
        assert result.status.value == "ok", (example.where, args, result.status.value, result.reason)
