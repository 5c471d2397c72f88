"""A fake ``sambaflow`` package that records calls (tests only; see fake_recorder)."""
