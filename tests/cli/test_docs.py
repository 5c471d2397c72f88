"""``dabench docs``: every generated docs block is its generator's output, and the command says
when one is not."""

from dabench.cli import docs
from dabench.config import schema
from tests.conftest import ROOT


def test_every_generated_block_is_current():
    for name, generate in docs.GENERATORS.items():
        text = (ROOT / "docs" / name).read_text()
        assert docs.render(text, generate(), name) == text, f"docs/{name} is stale: run python -m dabench docs --write"


def test_every_field_is_documented_with_a_doc_line():
    text = (ROOT / "docs" / "config.md").read_text()
    for path, spec in schema.fields().items():
        assert spec.doc, f"{path} has no doc line (field_(doc=...))"
        assert f"`{path}`" in text, f"{path} missing from docs/config.md"


def test_check_exits_1_on_a_stale_block_and_write_repairs_it(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    stale = (ROOT / "docs" / "config.md").read_text().replace("| `run.seed` |", "| `run.seedling` |")
    (tmp_path / "docs" / "config.md").write_text(stale)
    monkeypatch.setattr(docs, "require_checkout", lambda what: tmp_path)
    monkeypatch.setattr(docs, "GENERATORS", {"config.md": docs.GENERATORS["config.md"]})
    assert docs.main(["--check"]) == 1
    assert (tmp_path / "docs" / "config.md").read_text() == stale
    assert docs.main(["--write"]) == 0 and docs.main(["--check"]) == 0
    assert (tmp_path / "docs" / "config.md").read_text() == (ROOT / "docs" / "config.md").read_text()


def test_the_command_refuses_a_bad_flag(run_cli):
    result = run_cli("docs", "--nope", code=2)
    assert "--nope" in result.stderr
