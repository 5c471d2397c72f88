"""The fake-SDK environment fixture for the vendor tests."""

from __future__ import annotations

import json
import sys

import pytest
from vendor_helpers import FAKES


@pytest.fixture
def fake_sdk(tmp_path, monkeypatch):
    """Fake poptorch / sambaflow / pva importable in runner children; returns a reader of the
    recorded calls. Children run under this interpreter (hardware.python=sys.executable)."""
    log = tmp_path / "sdk_calls.jsonl"
    monkeypatch.setenv("PYTHONPATH", str(FAKES))
    monkeypatch.setenv("FAKE_SDK_LOG", str(log))
    monkeypatch.delenv("FAKE_SDK_BEHAVIOUR", raising=False)
    monkeypatch.delenv("FAKE_SDK_BEHAVIOUR_BATCH", raising=False)
    monkeypatch.chdir(tmp_path)

    def calls(name: str | None = None) -> list[dict]:
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        return [e for e in entries if name is None or e["call"] == name]

    calls.python = sys.executable
    return calls
