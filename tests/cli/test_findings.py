"""``dabench findings``: the table and the counts line, exit 0 whatever the counts, ``--check`` exits 1
on a stale table and ``--write`` repairs it."""

import re

from dabench.cli import findings
from dabench.findings import table
from tests.conftest import ROOT


def test_prints_the_table_and_ends_with_the_counts(run_cli):
    out = run_cli("findings").stdout.strip().splitlines()
    assert table.BEGIN in out and table.END in out
    counts = re.fullmatch(r"findings predicted=(\d+) fitted=(\d+) not_reproduced=(\d+)", out[-1])
    assert counts, out[-1]
    rows = [line for line in out if line.startswith("| `")]
    assert sum(map(int, counts.groups())) == len(rows) == 20


def test_check_exits_1_on_a_stale_table_and_write_repairs_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "docs").mkdir()
    stale = (ROOT / "docs" / "perfmodel.md").read_text().replace("| **predicted** |", "| **fitted** |", 1)
    (tmp_path / "docs" / "perfmodel.md").write_text(stale)
    monkeypatch.setattr(table, "require_checkout", lambda what: tmp_path)
    assert findings.main(["--check"]) == 1
    assert (tmp_path / "docs" / "perfmodel.md").read_text() == stale
    assert findings.main(["--write"]) == 0 and findings.main(["--check"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("findings predicted=")


def test_write_and_check_together_are_refused_with_exit_2(run_cli):
    for command in ("findings", "docs"):
        done = run_cli(command, "--write", "--check", code=2)
        assert "--write and --check" in done.stderr and "exclude each other" in done.stderr
