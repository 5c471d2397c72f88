"""``python -m dabench --help`` prints the page Hydra's own help prints (no patch of Hydra in between)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARDWARE = sorted(p.stem for p in (ROOT / "conf" / "hardware").glob("*.yaml"))
HYDRAS_OWN = "import sys; sys.argv = ['dabench', *sys.argv[1:]]; from dabench.cli.run import run_job; run_job()"


def _page(command: list[str], tmp_path: Path) -> str:
    done = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_help_page_is_hydras(tmp_path):
    for extra in ([], ["hardware=ipu", "model=gpt2_test"]):
        ours = _page([sys.executable, "-m", "dabench", *extra, "--help"], tmp_path)
        hydras = _page([sys.executable, "-c", HYDRAS_OWN, *extra, "--help"], tmp_path)
        assert "== Configuration groups ==" in ours and f"hardware: {', '.join(HARDWARE)}" in ours
        assert ours == hydras


def test_help_page_lists_every_command(tmp_path):
    from dabench.cli.main import COMMANDS

    page = _page([sys.executable, "-m", "dabench", "--help"], tmp_path)
    assert f"Commands (python -m dabench <command> --help): {', '.join(COMMANDS)}" in page
