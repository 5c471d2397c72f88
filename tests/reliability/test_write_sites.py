"""Every write in dabench/ and hydra_plugins/ goes through the sink registry (dabench/runtime/sinks.py),
or is listed in ``NOT_SINKS`` with its reason: a new write that is neither fails here, naming it.

What counts as a write (found in the syntax tree, not by a text search): ``open`` with a mode that
writes (w, a, x, +) or a mode that is not a literal; ``.write_text``, ``.write_bytes``, ``.mkdir``,
``.touch``, ``.savefig``, ``Path.replace``/``rename`` (one argument); ``.to_csv``/``.to_json``/
``.to_parquet`` with a target; ``os.replace``, ``os.rename``, ``os.makedirs``, ``os.mkdir``,
``os.open`` with write flags; ``shutil.copy*``, ``shutil.move``; ``json.dump``/``yaml.dump``/
``yaml.safe_dump`` into a stream; ``tempfile.mkdtemp``/``mkstemp``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("dabench", "hydra_plugins")
REGISTRY = "dabench/runtime/sinks.py"

METHODS = {"write_text", "write_bytes", "mkdir", "touch", "savefig", "symlink_to", "hardlink_to"}
TARGETED = {"to_csv", "to_json", "to_parquet", "to_pickle"}  # a write only when given a target
FUNCTIONS = {
    ("os", "replace"),
    ("os", "rename"),
    ("os", "makedirs"),
    ("os", "mkdir"),
    ("shutil", "copy"),
    ("shutil", "copy2"),
    ("shutil", "copyfile"),
    ("shutil", "copytree"),
    ("shutil", "move"),
    ("tempfile", "mkdtemp"),
    ("tempfile", "mkstemp"),
}
#: writes that are no sink: (file under the repository, text on the line) -> why
NOT_SINKS: dict[tuple[str, str], str] = {
    ("dabench/runtime/faults.py", 'open(ready, "a")'): "the test barrier file of the fault hooks",
    ("dabench/pipeline/preflight.py", 'open(absolute, "ab")'): "pre-flight's probe of a file: appends nothing",
    ("dabench/runtime/isolation.py", "tempfile.mkdtemp"): "a private scratch folder, removed at exit",
    ("dabench/tracking/store.py", "tempfile.mkdtemp"): "MLflow makes its schema in a scratch folder, removed",
    ("dabench/runtime/isolation.py", "symlink_to(REPO_ROOT"): "a link inside that private scratch folder",
    ("dabench/runtime/isolation.py", "workdir.mkdir"): "the vendor runner's scratch folder (request file)",
    ("dabench/runtime/isolation.py", "request_path.write_text"): "the request handed to the vendor runner",
    ("dabench/runtime/supervisor.py", 'open(log_path, "wb")'): "a child's output, in the caller's scratch folder",
    ("dabench/vendors/child.py", 'open(tmp, "w")'): "runs under the vendor's interpreter: its reply file",
    ("dabench/vendors/child.py", "json.dump(data, handle"): "runs under the vendor's interpreter: its reply file",
    ("dabench/vendors/child.py", "os.replace(tmp, path)"): "runs under the vendor's interpreter: its reply file",
    ("dabench/platforms/ipu/export.py", 'open(out_json, "w")'): "runs under the vendor's interpreter (PopVision)",
    ("dabench/platforms/ipu/export.py", "json.dump(summary, handle"): "runs under the vendor's interpreter",
    ("dabench/distributed/worker.py", "partial.write_text"): "a rank's partial result in the launcher's scratch",
    ("dabench/distributed/worker.py", "partial.replace(path)"): "a rank's partial result in the launcher's scratch",
    ("dabench/distributed/launcher.py", "spec_path.write_text"): "the ranks' spec in a private scratch folder",
    ("dabench/cli/ui.py", 'open(log, "w")'): "the UI server's log in a private temporary file",
    ("dabench/cli/ui.py", "tempfile.mkstemp("): "the UI server's log in a private temporary file",
    ("dabench/cli/fit/from_mlflow.py", "(Path(tmp) / path.name).write_text"): "a scratch copy in a temporary folder",
    ("dabench/cli/ingest.py", '(folder / "profile.json").write_text'): "scratch copy, then logged (artifacts sink)",
    ("dabench/cli/ingest.py", "target.parent.mkdir"): "scratch copy, then logged as artifacts",
    ("dabench/cli/ingest.py", "shutil.copyfile(source, target)"): "scratch copy, then logged as artifacts",
    ("dabench/ingest/safety.py", "target.parent.mkdir"): "the checked copy of an untrusted folder (scratch)",
    ("dabench/ingest/safety.py", "target.write_bytes"): "the checked copy of an untrusted folder (scratch)",
    ("dabench/report/advice.py", 'fig.savefig(svg, format="svg")'): "into memory (an in-page SVG)",
    ("dabench/report/html.py", 'fig.savefig(svg, format="svg")'): "into memory, then written through the sink",
    ("dabench/report/html.py", 'fig.savefig(png, format="png", dpi=110)'): "into memory, then through the sink",
    ("dabench/tune/plots.py", 'fig.savefig(buffer, format="png", dpi=100)'): "into memory, then through the sink",
}
DUMPS = {("json", "dump"), ("yaml", "dump"), ("yaml", "safe_dump")}  # with a stream argument


def _writes_mode(call: ast.Call, index: int = 1) -> bool:
    mode = (
        call.args[index] if len(call.args) > index else next((k.value for k in call.keywords if k.arg == "mode"), None)
    )
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True


def _is_write(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "open" and _writes_mode(call)
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if (owner, func.attr) in FUNCTIONS:
        return True
    if (owner, func.attr) == ("os", "open"):  # only with flags that create or write
        flags = (
            {n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)} if len(call.args) > 1 else set()
        )
        return bool(flags & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}) or not flags
    if (owner, func.attr) in DUMPS:
        return len(call.args) > 1 or any(k.arg == "stream" for k in call.keywords)
    if func.attr in ("replace", "rename") and len(call.args) == 1 and not call.keywords:
        return True  # Path.replace/rename(target); str.replace takes two arguments
    if func.attr in TARGETED:
        return bool(call.args) or any(k.arg in ("path_or_buf", "path") for k in call.keywords)
    if func.attr == "open" and owner not in ("os", "tarfile", "zipfile", "gzip", "webbrowser"):
        return _writes_mode(call, 0)  # Path.open(mode)
    return func.attr in METHODS


def write_sites() -> list[tuple[str, int, str]]:
    """(file, line, source line) of every write outside the registry module."""
    found = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == REGISTRY:
                continue
            text = path.read_text()
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call) and _is_write(node):
                    found.append((rel, node.lineno, lines[node.lineno - 1].strip()))
    return found


def _exempt(rel: str, line: str) -> tuple[str, str] | None:
    return next((key for key in NOT_SINKS if key[0] == rel and key[1] in line), None)


def test_every_write_goes_through_the_sink_registry():
    stray = [f"{rel}:{n}: {line}" for rel, n, line in write_sites() if _exempt(rel, line) is None]
    assert not stray, (
        "writes outside dabench/runtime/sinks.py: route them through a registered sink (write_text, "
        "write_bytes, make_dir, copy_file, open_stream, ...) or list them in NOT_SINKS with the reason:\n"
        + "\n".join(stray)
    )


def test_no_stale_exemptions():
    used = {_exempt(rel, line) for rel, _, line in write_sites()}
    stale = [f"{rel}: {snippet}" for rel, snippet in NOT_SINKS if (rel, snippet) not in used]
    assert not stale, "NOT_SINKS entries that match no write any more:\n" + "\n".join(stale)


def test_the_scanner_finds_writes():
    """The scanner itself: each kind of write it claims to find is found; reads are not."""
    sample = ast.parse(
        "open(p, 'w')\nopen(p)\nopen(p, mode)\np.write_text('x')\nframe.to_csv(p)\nframe.to_csv()\n"
        "os.replace(a, b)\nshutil.copytree(a, b)\njson.dump(d, h)\njson.dumps(d)\np.open('a')\np.read_text()\n"
        "tmp.replace(path)\ntext.replace('a', 'b')"
    )
    calls = [n for n in ast.walk(sample) if isinstance(n, ast.Call)]
    flagged = sorted(c.lineno for c in calls if _is_write(c))
    assert flagged == [1, 3, 4, 5, 7, 8, 9, 11, 13]
