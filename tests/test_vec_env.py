"""A run with subprocess environments: its children live in its process group and die with it."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from helpers.commands import run_dirs, start_sweep, status_of, wait_for, write_spec
from mjsweep.plan import runs as planlib
from mjsweep.spec.loading import parse
from mjsweep.spec.locator import SpecLocator

WAIT = 240.0  # generous: a bound on hanging, never on speed


def group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            pass
    return members


def test_subproc_runs_take_one_slot_per_env():
    data = {"name": "s", "env": "E", "variants": [{"name": "a", "xml": "a.xml"}], "total_timesteps": 10,
            "n_envs": 3, "vec_env": "subproc"}
    spec = parse(data, SpecLocator(None, None))
    assert planlib.cpus_per_run(spec, "ppo") == 3
    assert planlib.cpus_per_run(parse({**data, "vec_env": "dummy"}, SpecLocator(None, None)), "ppo") == 1
    assert planlib.cpus_per_run(parse({**data, "cpus_per_run": 2}, SpecLocator(None, None)), "ppo") == 2


@pytest.mark.slow
def test_killing_a_worker_takes_its_env_processes_with_it(tmp_path, tiny_spec):
    tiny_spec.update({"n_envs": 2, "vec_env": "subproc", "total_timesteps": 8192, "checkpoint_every": 512,
                      "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}})
    spec = write_spec(tmp_path, tiny_spec)
    launcher = start_sweep(spec, "--workers", "2")
    sweep_dir = tmp_path / "runs" / "tiny"
    [run_dir] = wait_for(lambda: [d for d in run_dirs(sweep_dir) if status_of(d).get("state") == "running"
                                  and (d / "progress.csv").exists()] or None, what="a training run")
    pid = status_of(run_dir)["pid"]
    members = wait_for(lambda: m if len(m := group_members(pid)) >= 3 else None, what="env subprocesses")
    assert pid in {m.pid for m in members}
    os.kill(pid, signal.SIGKILL)  # only the worker: its env processes must not outlive it
    gone, alive = psutil.wait_procs([m for m in members if m.pid != pid], timeout=15)
    assert not alive, [p.cmdline() for p in alive]
    assert launcher.wait(timeout=WAIT) == 0
    result = json.loads((run_dir / "result.json").read_text())
    assert result["timesteps"] == 8192 and status_of(run_dir)["attempts"] == 2
    assert not group_members(status_of(run_dir)["pid"])
