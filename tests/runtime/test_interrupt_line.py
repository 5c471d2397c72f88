"""dabench/runtime/interrupts.py in-process: the exit status, the one line, the closers, SIGTERM."""

from __future__ import annotations

import signal

import pytest

from dabench.runtime import interrupts


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(interrupts, "_progress", interrupts.Progress())
    monkeypatch.setattr(interrupts, "_closers", [])
    monkeypatch.setattr(interrupts, "_notes", [])
    monkeypatch.setattr("sys.argv", ["/x/dabench/__main__.py", "run.batch_size=1,2", "-m"])
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_exits_130_with_one_line_after_closing(capsys):
    closed = []
    interrupts.on_interrupt(lambda: closed.append(1) or "parent run p closed KILLED (3 ok)")
    forgotten = interrupts.on_interrupt(lambda: closed.append(2) or "never")
    forgotten()  # unregistered: closed normally
    interrupts.progress(done=3, total=8)
    with pytest.raises(SystemExit) as exit_:
        with interrupts.guard():
            raise KeyboardInterrupt
    assert exit_.value.code == 130 and closed == [1]
    assert capsys.readouterr().err == (
        "dabench: interrupted after 3 of 8 runs; parent run p closed KILLED (3 ok); "
        "run again with: python -m dabench run.batch_size=1,2 -m\n"
    )


def test_sigterm_unwinds_like_ctrl_c_and_exits_143(capsys):
    interrupts.progress(done=2, total=4, unit="trials", resume="python -m dabench +sweeps=x -m")
    interrupts.note("run r recorded interrupted (KILLED)")
    failing = interrupts.on_interrupt(lambda: 1 / 0)
    with pytest.raises(SystemExit) as exit_:
        with interrupts.guard():
            signal.raise_signal(signal.SIGTERM)  # the handler raises Terminated in this thread
            raise AssertionError("SIGTERM did not interrupt")
    assert exit_.value.code == 143
    assert capsys.readouterr().err == (
        "dabench: terminated (SIGTERM) after 2 of 4 trials; run r recorded interrupted "
        "(KILLED); could not close a record (ZeroDivisionError: division by zero); "
        "resume with: python -m dabench +sweeps=x -m\n"
    )
    failing()


def test_a_single_run_has_no_counts(capsys):
    with pytest.raises(SystemExit):
        with interrupts.guard():
            raise KeyboardInterrupt
    assert capsys.readouterr().err == "dabench: interrupted\n"


def test_a_signal_inside_a_store_write_takes_effect_as_the_write_ends(tmp_path):
    """A SIGTERM that lands inside a store write (``interrupts.deferred``) lets the write finish
    whole, then unwinds; outside one it unwinds at once."""
    import os
    import sqlite3

    from dabench.tracking.store import RetryingClient

    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    db.execute("create table t (x)")

    class Store:  # a client whose write is two statements in one transaction, the signal between them
        def log_batch(self) -> None:
            db.execute("begin")
            db.execute("insert into t values (1)")
            os.kill(os.getpid(), signal.SIGTERM)
            db.execute("insert into t values (2)")
            db.execute("commit")

    interrupts.install()
    with pytest.raises(interrupts.Terminated):
        RetryingClient(Store()).log_batch()
    assert db.execute("select count(*) from t").fetchone() == (2,) and not db.in_transaction
    interrupts.install()
    with pytest.raises(interrupts.Terminated):  # the same write outside a client: cut in half
        Store().log_batch()
    assert db.in_transaction
