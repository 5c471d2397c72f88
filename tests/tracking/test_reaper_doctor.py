"""The reaper (runs of dead processes ended KILLED) and ``python -m dabench doctor``.

A dead owner is a real process that ended: a child started and waited for, so its pid is
gone (or, at worst, reused by a process with another start time, which the reaper tells apart).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from dabench.cli import doctor
from dabench.tracking import reaper
from dabench.tracking.lifecycle import open_run
from dabench.tracking.writes import write_batch
from dabench.tune.parent_run import PARENT_ATTR, PARENT_OWNER_ATTR, PARENT_URI_ATTR

optuna.logging.set_verbosity(optuna.logging.WARNING)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlruns").mkdir()
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("DABENCH_PARENT_RUN_ID", raising=False)
    reaper._reaped.add(uri)  # these tests call the reaper themselves
    return uri


def run_owned_by(uri: str, name: str, **owner: str) -> str:
    run = open_run(experiment="reaper", uri=uri, run_name=name, parent_id="")
    if owner:
        write_batch(run.client, run.run_id, tags=owner)
    return run.run_id


def states(uri: str) -> dict[str, tuple[str, str | None]]:
    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    return {r.info.run_name: (r.info.status, r.data.tags.get("dabench.status")) for r in runs}


def test_owner_tags_and_liveness():
    tags = reaper.owner_tags()
    assert tags["dabench.pid"] == str(os.getpid()) and tags["dabench.host"] == os.uname().nodename
    assert reaper.process_alive(os.getpid(), tags["dabench.process_key"])
    assert not reaper.process_alive(dead_pid(), None)
    # a live pid whose start time differs is a reused pid, not the owner
    boot, _, ticks = tags["dabench.process_key"].rpartition(":")
    assert not reaper.process_alive(os.getpid(), f"{boot}:{int(ticks) + 1}")


def test_reap_ends_only_this_hosts_dead_runs(store):
    gone = dead_pid()
    run_owned_by(store, "mine-alive")
    run_owned_by(store, "mine-dead", **{"dabench.pid": str(gone)})
    run_owned_by(store, "other-host", **{"dabench.host": "elsewhere", "dabench.pid": str(gone)})
    client = MlflowClient(store)
    client.create_run(client.get_experiment_by_name("reaper").experiment_id, run_name="no-owner")  # another tool's
    found = reaper.reap(client)
    assert [f.run_name for f in found] == ["mine-dead"]
    assert f"process {gone} on {os.uname().nodename}" in found[0].reason
    assert states(store) == {
        "mine-alive": ("RUNNING", None),
        "mine-dead": ("KILLED", "killed"),
        "other-host": ("RUNNING", None),
        "no-owner": ("RUNNING", None),
    }
    assert reaper.reap(client) == []  # nothing left to do
    found = reaper.reap(client, all_hosts=True)  # the user says those processes are gone
    assert sorted(f.run_name for f in found) == ["no-owner", "other-host"]
    assert states(store) == {
        "mine-alive": ("RUNNING", None),
        "mine-dead": ("KILLED", "killed"),
        "other-host": ("KILLED", "killed"),
        "no-owner": ("KILLED", "killed"),
    }


def test_reap_once_searches_once_per_process_and_store(store, monkeypatch):
    calls = []
    monkeypatch.setattr(reaper, "reap", lambda client, **kw: calls.append(client) or [])
    fresh = store + "?x=1"
    assert reaper.reap_once("client", fresh) == [] and reaper.reap_once("client", fresh) == []
    assert calls == ["client"]


def make_study(tmp_path: Path, owner_pid: int) -> tuple[str, str]:
    storage = f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}"
    study = optuna.create_study(study_name="s", storage=storage)
    done = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    study.tell(done, 1.0)
    stale = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    stale.set_user_attr("dabench.owner", {"host": os.uname().nodename, "pid": owner_pid, "start": None})
    return storage, stale.params["x"]


def test_doctor_fixes_dead_runs_and_stale_trials(store, tmp_path, capsys):
    gone = dead_pid()
    run_owned_by(store, "dead", **{"dabench.pid": str(gone)})
    run_owned_by(store, "elsewhere", **{"dabench.host": "other-machine"})
    storage, x = make_study(tmp_path, gone)

    assert doctor.main(["--dry-run"]) == 0
    assert states(store)["dead"] == ("RUNNING", None)
    assert "would fix: run" in capsys.readouterr().out

    assert doctor.main([]) == 0
    out = capsys.readouterr().out
    assert "integrity ok" in out and "MLflow opens it" in out
    assert "fixed: run " in out and f"process {gone}" in out
    assert "fixed: study s: trials [1]" in out and "left alone: 1 RUNNING runs" in out
    assert out.strip().splitlines()[-1] == "doctor: healthy"
    assert states(store) == {"dead": ("KILLED", "killed"), "elsewhere": ("RUNNING", None)}
    study = optuna.load_study(study_name="s", storage=storage)
    assert study.trials[1].state == TrialState.FAIL and study.trials[1].user_attrs["dabench.status"] == "interrupted"
    assert [t.system_attrs.get("fixed_params") for t in study.trials if t.state == TrialState.WAITING] == [{"x": x}]

    assert doctor.main(["--all-hosts"]) == 0
    assert states(store)["elsewhere"] == ("KILLED", "killed")


def test_doctor_ends_the_parent_run_of_a_gone_sweep(store, tmp_path, capsys):
    parent = run_owned_by(store, "parent")  # no owner tags: the reaper leaves it alone
    study = optuna.create_study(study_name="p", storage=f"sqlite:///{tmp_path / 'mlruns' / 'optuna.db'}")
    owner = f"{socket.gethostname()}:{dead_pid()}"
    for key, value in ((PARENT_ATTR, parent), (PARENT_URI_ATTR, store), (PARENT_OWNER_ATTR, owner)):
        study.set_user_attr(key, value)
    assert doctor.main(["--dry-run"]) == 0 and states(store)["parent"][0] == "RUNNING"
    assert doctor.main([]) == 0
    assert (
        f"fixed: study p: parent run {parent} RUNNING with its sweep ({owner}) gone -> KILLED"
        in capsys.readouterr().out
    )
    assert states(store)["parent"][0] == "KILLED"


@pytest.mark.parametrize("which", ["mlflow.db", "optuna.db"])
def test_doctor_names_a_corrupt_store(store, tmp_path, capsys, which):
    run_owned_by(store, "r")
    make_study(tmp_path, os.getpid())
    path = tmp_path / "mlruns" / which
    data = bytearray(path.read_bytes())
    data[100 : 4096 * 3] = b"\xff" * (4096 * 3 - 100)  # header and first pages overwritten
    path.write_bytes(bytes(data))
    assert doctor.main([]) == 1
    out = capsys.readouterr().out
    assert f"{path}: CORRUPT" in out and "move it aside" in out
    assert out.strip().splitlines()[-1] == "doctor: problems found (see above)"


@pytest.mark.slow
def test_doctor_runs_as_a_subcommand(store, run_cli):
    done = run_cli("doctor", "--uri", store, timeout=120)
    assert "doctor: healthy" in done.stdout and "Traceback" not in done.stderr
