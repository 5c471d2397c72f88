"""docs/config.md's reference is generated from the field specs and must not be stale."""

from dabench.config import docs, schema
from tests.conftest import ROOT


def test_the_generated_reference_is_current():
    text = (ROOT / "docs" / "config.md").read_text()
    assert docs.render(text) == text, "docs/config.md is stale: run python -m dabench.config.docs"


def test_every_field_is_documented_with_a_doc_line():
    text = (ROOT / "docs" / "config.md").read_text()
    for path, spec in schema.fields().items():
        assert spec.doc, f"{path} has no doc line (field_(doc=...))"
        assert f"`{path}`" in text, f"{path} missing from docs/config.md"
