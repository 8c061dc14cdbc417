"""The Ray backend against a real Ray cluster of two 1-CPU nodes on loopback: the smoke sweep spread over
both nodes, Ctrl-C once and twice, a node killed mid-run; and the two ways `--backend ray` refuses to start."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import psutil
import pytest
import yaml
from typer.testing import CliRunner

from helpers.clusters import RAY_ENV
from helpers.commands import launcher_output, run_dirs, run_sweep, start_sweep, wait_for, write_spec
from helpers.models import REPO, TINY_XML
from mjsweep.robots.modelfiles import model_sha256
from mjsweep.ui.cli import app

WAIT = 300.0  # generous: a bound on hanging, never on speed
RUN_FILES = ("result.json", "model.zip", "monitor.csv", "progress.csv", "log.txt")


def smoke_spec(folder: Path, name: str, **changes) -> Path:
    """configs/smoke.yaml with absolute XML paths, its runs under `folder`, and `changes` applied."""
    spec = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())
    for variant in spec["variants"]:
        variant["xml"] = str((REPO / "configs" / variant["xml"]).resolve())
    spec.update(name=name, runs_dir=str(folder / "runs"), **changes)
    return write_spec(folder, spec)


def one_variant_spec(folder: Path, name: str, total: int) -> Path:
    """Two seeds of the tiny walker, long enough to be stopped mid-run, checkpointing often."""
    return smoke_spec(folder, name, variants=[{"name": "walker", "xml": str(TINY_XML)}], total_timesteps=total,
                      checkpoint_every=512)


def start_ray_sweep(spec: Path, address: str, *args: str) -> subprocess.Popen:
    return start_sweep(spec, "--backend", "ray", "--address", address, *args)


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):  # not there yet, or caught mid-write
        return {}


def workers_of(run_ids: list[str]) -> list[psutil.Process]:
    """Training processes of these runs, on any node of the cluster (all on this machine)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if "mjsweep.worker" in cmd and any(run_id in cmd for run_id in run_ids):
            found.append(proc)
    return found


def gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def finish(proc: subprocess.Popen, spec: Path) -> str:
    """Wait for the launcher; its output. Kill it (and fail) if it hangs."""
    try:
        proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError(f"sweep did not end:\n{launcher_output(spec)}") from None
    return launcher_output(spec)


@pytest.mark.slow
def test_smoke_sweep_runs_on_both_nodes_and_files_come_back(cluster, tmp_path):
    spec = smoke_spec(tmp_path, "ray-smoke")
    done = run_sweep("run", str(spec), "--backend", "ray", "--address", cluster.address, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "ray-smoke"
    runs = run_dirs(sweep_dir)
    assert len(runs) == 4
    node_ids = {n.node_id for n in cluster.list_all_nodes()}
    used = set()
    for run in runs:
        for name in RUN_FILES:
            assert (run / name).is_file() and (run / name).stat().st_size > 0, f"{run.name}: {name}"
        status, result = read_json(run / "status.json"), read_json(run / "result.json")
        assert status["state"] == "succeeded" and status["attempts"] == 1
        assert result["node"] in node_ids
        assert result["node"][:8] in status["host"]  # status.json names the node the run went to
        assert "eval_mean_return" in result
        used.add(result["node"])
    assert len(used) == 2, used
    report = run_sweep("report", str(sweep_dir), "--format", "json")
    assert report.returncode == 0, report.stderr
    groups = json.loads(report.stdout)["groups"]
    assert sum(g["succeeded"] for g in groups) == 4 and all(g["mean_return"] is not None for g in groups)
    assert (sweep_dir / "report.csv").is_file()


@pytest.mark.slow
def test_python_runs_a_sweep_on_the_cluster_through_the_same_front_door(cluster, tmp_path):
    import mjsweep

    spec = one_variant_spec(tmp_path, "ray-python", 512)
    options = mjsweep.RunOptions(backend="ray", address=cluster.address, report_every_s=None)
    sweep = mjsweep.run(spec, options=options)
    assert [r.state for r in sweep] == ["succeeded", "succeeded"]
    node_ids = {n.node_id for n in cluster.list_all_nodes()}
    for run in sweep:
        assert read_json(run.path / "result.json")["node"] in node_ids  # trained on a node, its files back
        assert (run.path / "model.zip").is_file()


@pytest.mark.slow
def test_a_search_runs_its_trials_on_the_cluster(cluster, tmp_path):
    """The launcher asks and tells; the cluster's nodes only train. 2 trials x 2 seeds, one run per node."""
    from mjsweep.search.journal import replay
    from mjsweep.sweepdir.models import TrialState

    spec = one_variant_spec(tmp_path, "ray-search", total=512)
    data = yaml.safe_load(spec.read_text())
    del data["seeds"]
    data["search"] = {"method": "random", "trials": 2, "seeds_per_trial": 2, "seed": 1,
                      "space": {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-3]}}}
    spec = write_spec(tmp_path, data)
    done = run_sweep("run", str(spec), "--backend", "ray", "--address", cluster.address, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "ray-search"
    records = replay(sweep_dir / "trials.jsonl")
    assert [(r.number, r.state, r.seeds_ok) for r in records] == [(0, TrialState.COMPLETE, 2),
                                                                    (1, TrialState.COMPLETE, 2)]
    node_ids = {n.node_id for n in cluster.list_all_nodes()}
    for record in records:
        results = [read_json(sweep_dir / run_id / "result.json") for run_id in record.runs]
        assert all(r["node"] in node_ids for r in results)
        assert record.value is not None and min(r["eval_mean_return"] for r in results) <= record.value \
            <= max(r["eval_mean_return"] for r in results)


@pytest.mark.slow
def test_adaptive_seeds_add_their_rounds_on_the_cluster(cluster, tmp_path):
    """The launcher decides each round from the results the nodes sent back: the tiny walker under two names
    trains the same returns seed by seed, so every round adds a seed to both, up to max."""
    spec = one_variant_spec(tmp_path, "ray-adaptive", total=512)
    data = yaml.safe_load(spec.read_text())
    data["variants"].append({"name": "twin", "xml": str(TINY_XML)})
    data["seeds"] = {"min": 2, "max": 3, "until": "separated"}
    spec = write_spec(tmp_path, data)
    done = run_sweep("run", str(spec), "--backend", "ray", "--address", cluster.address, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "ray-adaptive"
    rounds = [json.loads(line) for line in (sweep_dir / "seeds.jsonl").read_text().splitlines()]
    assert [[(g["seeds"], g["verdict"], g["add"]) for g in r["groups"]] for r in rounds] == [
        [(2, "best", True), (2, "open", True)], [(3, "best", False), (3, "at max", False)]]
    node_ids = {n.node_id for n in cluster.list_all_nodes()}
    results = [read_json(run / "result.json") for run in run_dirs(sweep_dir)]
    assert len(results) == 6 and all(r["node"] in node_ids for r in results)


@pytest.mark.slow
def test_a_pbt_population_trains_on_the_cluster_from_copied_checkpoints(cluster, tmp_path):
    """Each segment's folder, with the checkpoint the launcher copied into it, travels to a node and resumes
    there; the launcher ranks the results the nodes sent back. 2 members x 2 generations."""
    spec = one_variant_spec(tmp_path, "ray-pbt", total=1024)
    data = yaml.safe_load(spec.read_text())
    del data["seeds"]
    data["pbt"] = {"population": 2, "interval": 512, "seed": 0,
                   "space": {"ppo.learning_rate": {"log_uniform": [1.0e-4, 1.0e-3]}}}
    spec = write_spec(tmp_path, data)
    done = run_sweep("run", str(spec), "--backend", "ray", "--address", cluster.address, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    sweep_dir = tmp_path / "runs" / "ray-pbt"
    lines = [json.loads(line) for line in (sweep_dir / "pbt.jsonl").read_text().splitlines()]
    assert [(line["generation"], line["member"]) for line in lines] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    copy = next(line for line in lines if line["copied_from"] is not None)
    assert copy["parent"] == lines[copy["copied_from"]]["run"]
    node_ids = {n.node_id for n in cluster.list_all_nodes()}
    for line in lines[2:]:
        assert read_json(sweep_dir / line["run"] / "result.json")["node"] in node_ids
        assert "resuming" in (sweep_dir / line["run"] / "log.txt").read_text()
        assert read_json(sweep_dir / line["run"] / "result.json")["resumed_from"] == 512


@pytest.mark.slow
def test_warm_runs_start_on_the_nodes_from_their_sources_shipped_files(cluster, tmp_path):
    """A node that shares no filesystem cannot read a warm start's source: its files travel with the run."""
    source_spec = one_variant_spec(tmp_path / "source", "ray-source", total=512)
    done = run_sweep("run", str(source_spec), "--workers", "2", timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    [source, _] = run_dirs(tmp_path / "source" / "runs" / "ray-source")
    spec = one_variant_spec(tmp_path, "ray-warm", total=512)
    spec = write_spec(tmp_path, {**yaml.safe_load(spec.read_text()), "warm_start": {"from": str(source)}})
    done = run_sweep("run", str(spec), "--backend", "ray", "--address", cluster.address, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    for run in run_dirs(tmp_path / "runs" / "ray-warm"):
        assert f"warm start from {source.name} (512 timesteps), its files shipped with the run" in \
            (run / "log.txt").read_text()
        assert read_json(run / "result.json")["warm_start"]["run_dir"] == str(source)  # the source, not the copy
        assert not (run / "warm_source").exists()  # the copy stays on the node


@pytest.mark.slow
def test_runs_on_the_nodes_train_from_the_sweeps_snapshot(cluster, tmp_path):
    """The robot's XML gains a joint and its folder then goes away once the first of three seeds has started
    (one slot): every seed trains the planned robot on its node, from the sweep's snapshot of it."""
    robot = tmp_path / "robot"
    robot.mkdir()
    xml = robot / "walker.xml"
    shutil.copyfile(TINY_XML, xml)
    planned = model_sha256(xml)
    spec = smoke_spec(tmp_path, "ray-snapshot", variants=[{"name": "walker", "xml": str(xml)}], seeds=3)
    sweep_dir = tmp_path / "runs" / "ray-snapshot"
    launcher = start_ray_sweep(spec, cluster.address, "--workers", "1")
    wait_for(lambda: any(read_json(r / "status.json").get("state") == "running" for r in run_dirs(sweep_dir)),
             what="the first seed to start", timeout=WAIT)
    hip = '<joint name="front_hip" class="hip"/>'
    xml.write_text(xml.read_text().replace(hip, hip + '\n        <joint name="front_knee" class="hip"/>'))
    assert model_sha256(xml) != planned
    os.unlink(xml)
    robot.rmdir()
    output = finish(launcher, spec)
    assert launcher.returncode == 0, output
    runs = run_dirs(sweep_dir)
    assert len(runs) == 3
    node_ids = {n.node_id for n in cluster.list_all_nodes()}
    for run in runs:
        result = read_json(run / "result.json")
        assert result["xml_sha256"] == planned and result["node"] in node_ids, run.name
        assert read_json(run / "spec.json")["xml"].startswith(str(sweep_dir / "snapshots"))
        with zipfile.ZipFile(run / "model.zip") as archive:
            assert json.loads(archive.read("data"))["observation_space"]["_shape"] == [9], run.name


def wait_until_both_train(sweep_dir: Path) -> tuple[list[str], list[Path]]:
    """Both runs training on their nodes: their ids and the nodes' copies of their run dirs."""
    wait_for(lambda: len(run_dirs(sweep_dir)) == 2 and all(
        read_json(r / "status.json").get("state") == "running" and (r / "progress.csv").exists()
        for r in run_dirs(sweep_dir)), what="both runs training")
    run_ids = [r.name for r in run_dirs(sweep_dir)]
    workers = wait_for(lambda: [w for w in [workers_of(run_ids)] if len(w) == 2], what="2 workers")[0]
    return run_ids, [Path(w.cmdline()[-1]) for w in workers]


@pytest.mark.slow
def test_ctrl_c_cancels_the_tasks_and_their_processes(cluster, tmp_path):
    spec = one_variant_spec(tmp_path, "ray-ctrl-c", total=200_000)
    sweep_dir = tmp_path / "runs" / "ray-ctrl-c"
    proc = start_ray_sweep(spec, cluster.address, "--grace", "120")
    try:
        run_ids, node_copies = wait_until_both_train(sweep_dir)
        # Live progress of runs on other nodes: `sweep status` reads what came back.
        wait_for(lambda: all(len((r / "progress.csv").read_text().splitlines()) > 1 for r in run_dirs(sweep_dir)),
                 what="progress rows")
        view = run_sweep("status", str(sweep_dir), "--json")
        assert view.returncode == 0, view.stderr
        runs = json.loads(view.stdout)["runs"]
        assert [r["state"] for r in runs] == ["running"] * 2 and all(r["timesteps"] > 0 for r in runs)
        proc.send_signal(signal.SIGINT)
        out = finish(proc, spec)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, out
    for run in run_dirs(sweep_dir):
        status = read_json(run / "status.json")
        assert status["state"] == "interrupted", out
        assert status["returncode"] == 130, out  # the worker saw the SIGINT, saved and exited by itself
        assert "stopped by a signal" in (run / "log.txt").read_text()  # its log came back to the end
        assert (run / "checkpoints" / "checkpoint.json").exists()
    wait_for(lambda: not [p for p in workers_of(run_ids) if not gone(p)], what="no worker left")
    assert not [p for p in node_copies if p.exists()]  # each node removed its copy


@pytest.mark.slow
def test_second_ctrl_c_kills_at_once_and_leaves_nothing_on_the_nodes(cluster, tmp_path):
    spec = one_variant_spec(tmp_path, "ray-ctrl-c-twice", total=200_000)
    sweep_dir = tmp_path / "runs" / "ray-ctrl-c-twice"
    proc = start_ray_sweep(spec, cluster.address, "--grace", "120")
    try:
        run_ids, node_copies = wait_until_both_train(sweep_dir)
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: "stopping" in launcher_output(spec), what="the first stop")
        proc.send_signal(signal.SIGINT)
        out = finish(proc, spec)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, out
    assert [read_json(r / "status.json")["state"] for r in run_dirs(sweep_dir)] == ["interrupted"] * 2, out
    wait_for(lambda: not [p for p in workers_of(run_ids) if not gone(p)], what="no worker left")
    wait_for(lambda: not [p for p in node_copies if p.exists()], what="the nodes' copies removed")


@pytest.mark.slow
def test_node_killed_mid_run_is_retried_from_its_checkpoint(cluster, tmp_path):
    # Long enough that the victim cannot finish in the moment between its first checkpoint coming back
    # and the node's death (8192 steps took ~3 s on a quiet machine, and the test raced it).
    spec = one_variant_spec(tmp_path, "ray-node-loss", total=40_960)
    sweep_dir = tmp_path / "runs" / "ray-node-loss"
    # The head node cannot be removed: the victim is the run on the other node.
    victim_node = next(n for n in cluster.list_all_nodes() if n is not cluster.head_node)
    proc = start_ray_sweep(spec, cluster.address)
    try:
        victim = wait_for(lambda: next((r for r in run_dirs(sweep_dir) if _running_with_checkpoint(
            r, victim_node.node_id)), None), what="a checkpointed run on the worker node")
        worker = wait_for(lambda: workers_of([victim.name]), what="the victim's worker process")[0]
        node_copy = Path(worker.cmdline()[-1])  # the run dir the dead node trained in
        cluster.remove_node(victim_node, allow_graceful=False)
        wait_for(lambda: gone(worker), what="the dead node's worker to end")
        # Ended by the node's death, not by finishing its training unwatched.
        assert not (node_copy / "result.json").exists()
        cluster.add_node(num_cpus=1)  # a fresh node for the retry, and for any later test
        out = finish(proc, spec)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    status, result = read_json(victim / "status.json"), read_json(victim / "result.json")
    assert status["state"] == "succeeded" and status["attempts"] >= 2, out
    assert result["resumed_from"] and result["resumed_from"] > 0
    assert result["node"] != victim_node.node_id
    assert "resuming" in (victim / "log.txt").read_text()
    for run in run_dirs(sweep_dir):
        assert read_json(run / "status.json")["state"] == "succeeded"
    run_ids = [r.name for r in run_dirs(sweep_dir)]
    wait_for(lambda: not [p for p in workers_of(run_ids) if not gone(p)], what="no worker left")
    shutil.rmtree(node_copy.parent, ignore_errors=True)  # nobody is left on that node to clean it up


def _running_with_checkpoint(run: Path, node_id: str) -> bool:
    status = read_json(run / "status.json")
    return (status.get("state") == "running" and node_id[:8] in (status.get("host") or "")
            and (run / "checkpoints" / "checkpoint.json").exists())


def test_unreachable_address_is_one_error_line(tmp_path, tiny_spec):
    spec = write_spec(tmp_path, {**tiny_spec, "runs_dir": str(tmp_path / "runs")})
    done = run_sweep("run", str(spec), "--backend", "ray", "--address", "127.0.0.1:9", timeout=WAIT,
                     env=RAY_ENV)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "127.0.0.1:9" in lines[0], done.stderr
    assert not (tmp_path / "runs").exists()  # nothing was written


def test_rays_oom_killer_is_named_as_one_and_another_death_is_lost():
    pytest.importorskip("ray")
    from ray.exceptions import ActorDiedError, OutOfMemoryError, RayActorError

    from mjsweep.engine.causes import cause_of
    from mjsweep.engine.failures import classify
    from mjsweep.launchers.ray import end_of_actor

    # A task's OutOfMemoryError, and an actor's death with the raylet's words for its memory monitor's kill.
    raylet = ("The actor is dead because its worker process has died. Worker exit type: USER_ERROR Worker exit "
              "detail: Task was killed due to the node running low on memory.")
    for exc in (OutOfMemoryError("Task was killed due to the node running low on memory."),
                RayActorError("abc", raylet)):
        end = end_of_actor(exc)
        failure = classify(end, stopped=False, timed_out=False, succeeded=False)
        assert failure.value == "out-of-memory"
        assert cause_of(end, failure, "").startswith("killed by Ray's OOM killer")
    assert end_of_actor(ActorDiedError()).kind.value == "lost"
    cuda = "The actor died because of an error raised in its creation task: torch.OutOfMemoryError: CUDA out of memory"
    assert end_of_actor(RayActorError("abc", cuda)).kind.value == "lost"


def test_a_worker_the_nodes_oom_killer_ended_is_named_as_one():
    pytest.importorskip("ray")
    from mjsweep.launchers.base import ExitKind, OomFacts
    from mjsweep.launchers.filesync import Shipment
    from mjsweep.launchers.ray import end_of_shipment

    facts = OomFacts("the kernel's OOM killer (memory cgroup /ray/worker, v2, counted the kill)", limit_mb=2048.0)
    assert end_of_shipment(Shipment(exit_code=-9, oom=facts)).oom == facts
    assert end_of_shipment(Shipment(exit_code=-9, oom=facts)).kind is ExitKind.OUT_OF_MEMORY
    assert end_of_shipment(Shipment(exit_code=-9)).kind is ExitKind.KILLED
    assert end_of_shipment(Shipment(exit_code=0)).kind is ExitKind.EXITED


def test_without_ray_the_error_says_how_to_install_it(tmp_path, tiny_spec, monkeypatch):
    spec = write_spec(tmp_path, {**tiny_spec, "runs_dir": str(tmp_path / "runs")})
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    for module in ("mjsweep.launchers.ray", "mjsweep.launchers.ray_task"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    done = CliRunner().invoke(app, ["run", str(spec), "--backend", "ray"])
    assert done.exit_code == 2
    assert "pip install 'mjsweep[ray]'" in done.output
