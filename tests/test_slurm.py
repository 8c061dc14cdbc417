"""The slurm backend: the array script it builds and how it reads scontrol (fast, no cluster), then
the real thing on the two-node cluster of scripts/slurm_local.sh (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from helpers.commands import run_sweep, sweep_exe, wait_for, write_spec
from helpers.models import REPO, TINY_LONG_XML, TINY_XML
from mjsweep.engine.causes import cause_of
from mjsweep.engine.failures import classify
from mjsweep.engine.sweep import prepare
from mjsweep.errors import LauncherConfigError, LaunchError
from mjsweep.launchers.base import RETURNCODE_LOST, ExitKind
from mjsweep.launchers.slurm import SlurmLauncher, build_submission, finished_exit
from mjsweep.robots.modelfiles import model_sha256
from mjsweep.spec.sweepspec import SlurmSpec
from mjsweep.sweepdir.files import RunDir, SweepDir

WAIT_S = 600  # generous: the cluster shares two cores with whatever else runs here


# -- the array script, without a cluster ----------------------------------------------------------

def planned_runs(tmp_path: Path, tiny_spec: dict, **changes):
    tiny_spec.update({"seeds": 2, "runs_dir": str(tmp_path / "runs with 'quote' and space"), **changes})
    plan = prepare(write_spec(tmp_path, tiny_spec), check_envs=False)
    return plan.runs, plan.sweep_dir


def test_submission_options_come_from_the_spec_and_the_throttle(tmp_path, tiny_spec):
    runs, sweep_dir = planned_runs(tmp_path, tiny_spec)
    slurm = SlurmSpec(partition="gpu", time="1:00:00", mem="4G", cpus_per_task=3, gres="gpu:1",
                      extra=["--account=rl", "--qos=low"])
    sub = build_submission(runs, sweep_dir, slurm, throttle=1, stamp="S")
    directives = [line for line in sub.script.splitlines() if line.startswith("#SBATCH ")]
    assert directives == ["#SBATCH " + opt for opt in (
        "--job-name=mjsweep-tiny", "--array=0-1%1", "--cpus-per-task=3", "--requeue", "--open-mode=append",
        "--partition=gpu", "--time=1:00:00", "--mem=4G", "--gres=gpu:1", "--account=rl", "--qos=low")]
    folder = sweep_dir.path.resolve() / "slurm"
    assert sub.script_path == folder / "array-S.sh" and sub.run_list_path == folder / "array-S.runs"
    assert sub.command == ["sbatch", "--parsable", f"--output={folder}/%A_%a.out", str(sub.script_path)]
    # Task i is line i+1: the runs in plan order.
    assert sub.run_list.splitlines() == [str(sweep_dir.run(r.run_id).path.resolve()) for r in runs]


def test_unset_resources_are_left_to_the_cluster_and_cpus_follow_the_run(tmp_path, tiny_spec):
    runs, sweep_dir = planned_runs(tmp_path, tiny_spec, cpus_per_run=2)
    sub = build_submission(runs, sweep_dir, SlurmSpec(), throttle=None)
    assert "#SBATCH --array=0-1\n" in sub.script and "#SBATCH --cpus-per-task=2\n" in sub.script
    assert not any(f"--{key}=" in sub.script for key in ("partition", "time", "mem", "gres"))


def fake_python(tmp_path: Path) -> Path:
    """Stands in for the worker's Python: prints where and how it was started."""
    exe = tmp_path / "bin" / "python"
    exe.parent.mkdir()
    exe.write_text('#!/bin/sh\nprintf "%s\\n" "$PWD" "$@" "OMP=$OMP_NUM_THREADS" "NODE=$MJSWEEP_NODE" '
                   '"CUDA=${CUDA_VISIBLE_DEVICES-unset}"\n')
    exe.chmod(0o755)
    return exe


# A cuda run keeps the GPUs SLURM gave the task (gres); a cpu run sees none, as locally.
@pytest.mark.parametrize("device, cuda", [("cpu", "CUDA="), ("cuda", "CUDA=0")])
def test_array_task_runs_the_worker_in_its_run_dir(tmp_path, tiny_spec, monkeypatch, device, cuda):
    runs, sweep_dir = planned_runs(tmp_path, tiny_spec, device=device)
    monkeypatch.setattr(sys, "executable", str(fake_python(tmp_path)))
    sub = build_submission(runs, sweep_dir, SlurmSpec(), throttle=None)
    sub.script_path.parent.mkdir(parents=True)
    sub.script_path.write_text(sub.script)
    sub.run_list_path.write_text(sub.run_list)
    run_dir = sweep_dir.run(runs[1].run_id).path.resolve()
    run_dir.mkdir()
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "1", "SLURMD_NODENAME": "n7", "CUDA_VISIBLE_DEVICES": "0"}
    proc = subprocess.run(["bash", str(sub.script_path)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (run_dir / "log.txt").read_text().splitlines() == [
        str(run_dir), "-m", "mjsweep.worker", str(run_dir), "OMP=1", "NODE=n7", cuda]


def fake_scontrol(tmp_path: Path, monkeypatch, reply: str, code: int = 0) -> None:
    """An scontrol on PATH that answers `show job` with `reply`."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "scontrol"
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' {json.dumps(reply)}\nexit {code}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def job_line(state: str, exit_code: str) -> str:
    return (f"JobId=12 ArrayJobId=11 ArrayTaskId=1 JobName=mjsweep-tiny JobState={state} Reason=None "
            f"Requeue=1 Restarts=0 BatchFlag=1 ExitCode={exit_code} NodeList=n1")


@pytest.mark.parametrize("state, exit_code, kind, expected", [
    ("COMPLETED", "0:0", ExitKind.EXITED, 0),
    ("FAILED", "1:0", ExitKind.EXITED, 1),
    ("FAILED", "130:0", ExitKind.EXITED, 130),              # the worker stopped on SIGINT after its checkpoint
    ("FAILED", "0:9", ExitKind.KILLED, -signal.SIGKILL),
    ("CANCELLED", "0:9", ExitKind.CANCELLED, -signal.SIGKILL),
    ("CANCELLED", "0:0", ExitKind.EXITED, 0),               # cancelled before it ran
    ("TIMEOUT", "0:0", ExitKind.TIME_LIMIT, -signal.SIGTERM),  # SLURM's time limit
    ("OUT_OF_MEMORY", "0:125", ExitKind.OUT_OF_MEMORY, -signal.SIGKILL),
    ("NODE_FAIL", "0:0", ExitKind.LOST, RETURNCODE_LOST),
    ("PREEMPTED", "0:15", ExitKind.LOST, RETURNCODE_LOST),
    ("PENDING", "0:0", None, None),             # squeue's view was older than the task
    ("REQUEUED", "0:0", None, None),
    ("RUNNING", "0:0", None, None),
])
def test_finished_exit_reads_scontrol(tmp_path, monkeypatch, state, exit_code, kind, expected):
    fake_scontrol(tmp_path, monkeypatch, job_line(state, exit_code))
    end = finished_exit("11_1", RunDir(tmp_path))
    assert (end and end.kind, end and end.returncode) == (kind, expected)


@pytest.mark.parametrize("has_result, kind, expected", [(True, ExitKind.EXITED, 0),
                                                        (False, ExitKind.LOST, RETURNCODE_LOST)])
def test_a_task_slurm_forgot_ends_by_its_result(tmp_path, monkeypatch, has_result, kind, expected):
    fake_scontrol(tmp_path, monkeypatch, "slurm_load_jobs error: Invalid job id specified", code=1)
    if has_result:
        (tmp_path / "result.json").write_text("{}")
    end = finished_exit("11_1", RunDir(tmp_path))
    assert (end.kind, end.returncode) == (kind, expected)


def fake_sacct(tmp_path: Path, reply: str) -> None:
    """An sacct beside the fake scontrol that answers with `reply` (State|ExitCode)."""
    exe = tmp_path / "fakebin" / "sacct"
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' {json.dumps(reply)}\n")
    exe.chmod(0o755)


@pytest.mark.parametrize("reply, kind, expected", [
    ("OUT_OF_MEMORY|0:125", ExitKind.OUT_OF_MEMORY, -signal.SIGKILL),
    ("CANCELLED by 1000|0:15", ExitKind.CANCELLED, -signal.SIGTERM),
    ("COMPLETED|0:0", ExitKind.EXITED, 0),
    ("", ExitKind.LOST, RETURNCODE_LOST),  # accounting does not know it either, and no result
])
def test_a_task_slurmctld_forgot_ends_as_saccts_accounting_says(tmp_path, monkeypatch, reply, kind, expected):
    fake_scontrol(tmp_path, monkeypatch, "slurm_load_jobs error: Invalid job id specified", code=1)
    fake_sacct(tmp_path, reply)
    end = finished_exit("11_1", RunDir(tmp_path))
    assert (end.kind, end.returncode) == (kind, expected)


@pytest.mark.parametrize("reply", ["scontrol", "sacct"])
def test_slurms_out_of_memory_is_named_as_one(tmp_path, monkeypatch, reply):
    if reply == "scontrol":
        fake_scontrol(tmp_path, monkeypatch, job_line("OUT_OF_MEMORY", "0:125"))
    else:
        fake_scontrol(tmp_path, monkeypatch, "slurm_load_jobs error: Invalid job id specified", code=1)
        fake_sacct(tmp_path, "OUT_OF_MEMORY|0:125")
    end = finished_exit("11_1", RunDir(tmp_path))
    failure = classify(end, stopped=False, timed_out=False, succeeded=False)
    assert failure.value == "out-of-memory"
    assert cause_of(end, failure, "some last line\n", peak_mb=1900.0) == (
        "killed by SLURM's memory enforcement (job state OUT_OF_MEMORY: the task went over its --mem): "
        "its peak RSS 1,900 MiB")


def test_dry_run_prints_the_sbatch_script_and_submits_nothing(tmp_path, tiny_spec):
    bin_dir = tmp_path / "fakebin"  # an sbatch that leaves a trace if anything calls it
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ntouch {tmp_path / 'SUBMITTED'}\necho 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    tiny_spec.update({"seeds": 2, "slurm": {"partition": "debug", "time": "0:30:00", "mem": "2G",
                                            "cpus_per_task": 1, "extra": ["--comment=dry run"]}})
    spec_path = write_spec(tmp_path, tiny_spec)
    proc = run_sweep("run", str(spec_path), "--backend", "slurm", "--dry-run", "--workers", "1",
                     env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    for line in ("#!/bin/bash", "#SBATCH --array=0-1%1", "#SBATCH --partition=debug", "#SBATCH --time=0:30:00",
                 "#SBATCH --mem=2G", "#SBATCH --cpus-per-task=1", "#SBATCH --comment=dry run",
                 "#SBATCH --requeue"):
        assert line in proc.stdout.splitlines(), line
    assert "slurm: would submit 2 array tasks with: sbatch --parsable" in proc.stdout
    assert "-m mjsweep.worker" in proc.stdout
    assert not (tmp_path / "SUBMITTED").exists() and not (tmp_path / "runs").exists()


# -- the real cluster (scripts/slurm_local.sh start) ----------------------------------------------

def slurm_spec(tmp_path: Path, name: str, **changes) -> Path:
    """configs/smoke.yaml, its XMLs by absolute path, its runs under tmp_path."""
    spec = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())
    spec["variants"] = [{"name": "walker", "xml": str(TINY_XML)}, {"name": "walker-long", "xml": str(TINY_LONG_XML)}]
    spec.update({"name": name, "runs_dir": str(tmp_path / "runs"), "slurm": {"time": "20:00", "mem": "1G"},
                 **changes})
    return write_spec(tmp_path, spec)


def queued(name: str) -> dict[str, tuple[str, str]]:
    """This sweep's tasks in squeue: task id -> (state, reason)."""
    out = subprocess.run(["squeue", "--noheader", "--array", f"--name=mjsweep-{name}", "--format=%i|%T|%r"],
                         capture_output=True, text=True, check=True)
    return {t: (s, r) for t, s, r in (line.split("|") for line in out.stdout.split())}


def read(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.slow
def test_smoke_sweep_is_one_array_over_both_nodes(tmp_path, slurm_cluster):
    proc = run_sweep("run", str(slurm_spec(tmp_path, "slurm-smoke")), "--backend", "slurm", timeout=WAIT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 succeeded, 0 failed" in proc.stdout
    sweep_dir = tmp_path / "runs" / "slurm-smoke"
    scripts = list((sweep_dir / "slurm").glob("array-*.sh"))
    assert len(scripts) == 1 and "#SBATCH --array=0-3\n" in scripts[0].read_text()
    assert "#SBATCH --mem=1G\n" in scripts[0].read_text()
    outputs = sorted(p.name for p in (sweep_dir / "slurm").glob("*.out"))
    job = outputs[0].split("_")[0]
    assert outputs == [f"{job}_{i}.out" for i in range(4)]  # one job, four array tasks

    nodes = set()
    for run_dir in SweepDir(sweep_dir).run_dirs():
        status, result = read(run_dir.status_json), read(run_dir.result_json)
        assert status["state"] == "succeeded" and status["attempts"] == 1, status
        assert status["host"].startswith(f"slurm task {job}_")
        assert result["timesteps"] == 2048 and result["torch_threads"] == 1
        assert (run_dir.path / "model.zip").exists() and "done, eval return" in run_dir.log.read_text()
        nodes.add(result["node"])
    assert nodes == {"n1", "n2"}

    report = run_sweep("report", str(sweep_dir), "--format", "json")
    assert report.returncode == 0, report.stderr
    groups = json.loads(report.stdout)["groups"]
    assert sorted((g["variant"], g["succeeded"], g["failed"]) for g in groups) == [
        ("walker", 2, 0), ("walker-long", 2, 0)]
    assert all(g["mean_return"] is not None for g in groups)


@pytest.mark.slow
def test_an_xml_edited_after_planning_changes_nothing_for_the_tasks(tmp_path, slurm_cluster):
    """The XML gains a joint once the array is in the queue: three seeds on two one-CPU nodes, so at least one task
    starts after the edit. Every task trains the planned robot from the sweep's snapshot (9 observations, not 11;
    result.json's hash of the files the worker loaded is the planned one)."""
    (tmp_path / "robot").mkdir()
    xml = tmp_path / "robot" / "walker.xml"
    xml.write_text(TINY_XML.read_text())
    planned = model_sha256(xml)
    spec = slurm_spec(tmp_path, "slurm-edit", seeds=3, variants=[{"name": "walker", "xml": str(xml)}])
    sweep = subprocess.Popen([sweep_exe(), "run", str(spec), "--backend", "slurm", "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    sweep_dir = tmp_path / "runs" / "slurm-edit"
    try:
        wait_for(lambda: queued("slurm-edit"), "the array in the queue")
        anchor = '<joint name="front_hip" class="hip"/>\n'
        xml.write_text(xml.read_text().replace(anchor, anchor + '        <joint name="front_knee" class="hip"/>\n'))
        # No task has ended, so the third one (each takes a node's one CPU) has not started.
        assert not any(r.result_json.exists() for r in SweepDir(sweep_dir).run_dirs())
        out, _ = sweep.communicate(timeout=WAIT_S)
    finally:
        sweep.kill()
    assert sweep.returncode == 0, out
    assert model_sha256(xml) != planned
    runs = SweepDir(sweep_dir).run_dirs()
    assert len(runs) == 3
    for run_dir in runs:
        assert Path(read(run_dir.spec_json)["xml"]).is_relative_to(sweep_dir / "snapshots")
        assert read(run_dir.result_json)["xml_sha256"] == planned
        with zipfile.ZipFile(run_dir.model_zip) as archive:
            assert json.loads(archive.read("data"))["observation_space"]["_shape"] == [9], run_dir.path.name


@pytest.mark.slow
def test_requeued_task_resumes_from_its_checkpoint(tmp_path, slurm_cluster):
    total = 40_000  # long enough to still be training when it is requeued
    spec = slurm_spec(tmp_path, "slurm-requeue", seeds=1, total_timesteps=total, checkpoint_every=1024,
                      variants=[{"name": "walker", "xml": str(TINY_XML)}])
    sweep = subprocess.Popen([sweep_exe(), "run", str(spec), "--backend", "slurm", "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    try:
        run_dir = RunDir(next(iter(wait_for(lambda: list((tmp_path / "runs" / "slurm-requeue").glob("*/spec.json")),
                                            "the run dir"))).parent)
        wait_for(run_dir.checkpoint_json.exists, "the first checkpoint")
        (task,) = queued("slurm-requeue")
        subprocess.run(["scontrol", "requeue", task], check=True)
        # SLURM holds a requeued job back ~2 min (Reason=BeginTime); let it start again now.
        wait_for(lambda: queued("slurm-requeue").get(task, ("",))[0] == "PENDING", "the task back in the queue")
        subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"], check=True)
        out, _ = sweep.communicate(timeout=WAIT_S)
    finally:
        sweep.kill()
    assert sweep.returncode == 0, out
    assert "Restarts=1" in subprocess.run(["scontrol", "show", "job", task], capture_output=True, text=True).stdout
    result, status = read(run_dir.result_json), read(run_dir.status_json)
    assert result["resumed_from"] >= 1024 and result["timesteps"] >= total
    assert status["state"] == "succeeded" and status["attempts"] == 1  # the launcher saw one task throughout
    log = run_dir.log.read_text()
    assert "stopped by a signal" in log and f"from {result['resumed_from']} timesteps" in log


@pytest.mark.slow
def test_ctrl_c_stops_running_tasks_with_a_checkpoint_and_cancels_queued_ones(tmp_path, slurm_cluster):
    spec = slurm_spec(tmp_path, "slurm-ctrlc", seeds=3, total_timesteps=200_000, checkpoint_every=1024,
                      variants=[{"name": "walker", "xml": str(TINY_XML)}])
    sweep = subprocess.Popen([sweep_exe(), "run", str(spec), "--backend", "slurm", "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    sweep_dir = SweepDir(tmp_path / "runs" / "slurm-ctrlc")
    try:
        wait_for(lambda: sum(r.checkpoint_json.exists() for r in sweep_dir.run_dirs()) >= 2, "two checkpoints")
        assert sorted(s for s, _ in queued("slurm-ctrlc").values()) == ["PENDING", "RUNNING", "RUNNING"]
        sweep.send_signal(signal.SIGINT)
        out, _ = sweep.communicate(timeout=WAIT_S)
    finally:
        sweep.kill()
    assert sweep.returncode == 130, out
    assert "0 succeeded, 0 failed, 3 interrupted" in out
    wait_for(lambda: not queued("slurm-ctrlc"), "the array to leave the queue")
    statuses = [read(r.status_json) for r in sweep_dir.run_dirs()]
    assert [s["state"] for s in statuses] == ["interrupted"] * 3
    started = [r for r in sweep_dir.run_dirs() if r.log.exists()]  # the queued one never started
    assert len(started) == 2 and all(r.checkpoint_json.exists() for r in started)
    assert all("stopped by a signal" in r.log.read_text() for r in started)


@pytest.mark.slow
def test_tasks_left_by_a_dead_launcher_are_cancelled_before_the_sweep_runs_again(tmp_path, slurm_cluster):
    spec = slurm_spec(tmp_path, "slurm-orphan", seeds=1, total_timesteps=40_000, checkpoint_every=1024,
                      variants=[{"name": "walker", "xml": str(TINY_XML)}])
    sweep_dir = SweepDir(tmp_path / "runs" / "slurm-orphan")
    first = subprocess.Popen([sweep_exe(), "run", str(spec), "--backend", "slurm", "-q"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: any(r.checkpoint_json.exists() for r in sweep_dir.run_dirs()), "the first checkpoint")
    finally:
        first.kill()  # no chance to cancel anything
        first.wait()
    (orphan,) = queued("slurm-orphan")
    again = run_sweep("run", str(spec), "--backend", "slurm", timeout=WAIT_S)
    assert again.returncode == 0, again.stdout + again.stderr
    assert orphan not in queued("slurm-orphan")
    job = orphan.split("_")[0]
    assert "CANCELLED" in (sweep_dir.path / "slurm" / f"{job}_0.out").read_text()
    (run_dir,) = sweep_dir.run_dirs()
    result = read(run_dir.result_json)
    assert result["resumed_from"] >= 1024 and result["timesteps"] >= 40_000
    log = run_dir.log.read_text()
    # The orphan stopped (and saved) before the new task began: never two workers in one run dir.
    assert log.index("stopped by a signal") < log.index("resuming")


def refusing_sbatch(tmp_path: Path, monkeypatch) -> None:
    """SLURM's commands on PATH, with an sbatch that refuses every array."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in (("sbatch", "echo 'invalid partition specified' >&2; exit 1"), ("squeue", "exit 0"),
                       ("scontrol", "exit 0"), ("scancel", "exit 0")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_refused_array_is_bad_input_but_a_refused_retry_fails_only_its_run(tmp_path, tiny_spec, monkeypatch):
    runs, sweep_dir = planned_runs(tmp_path, tiny_spec)
    refusing_sbatch(tmp_path, monkeypatch)
    launcher = SlurmLauncher(SlurmSpec())
    with pytest.raises(LauncherConfigError, match="sbatch refused the array .*invalid partition"):
        launcher.submit(runs, sweep_dir)  # before any run: the sweep stops with exit 2
    with pytest.raises(LaunchError, match="sbatch refused the array .*invalid partition"):
        launcher.start(runs[0], sweep_dir.run(runs[0].run_id))  # a retry, while others run
