"""The disk a sweep needs at its peak (plan/disk.py) and `sweep run`'s check of it: each file's estimate against
the file stable-baselines3 really writes (a replay buffer to the byte but for its pickle's header, model zips
within 2%: measured under 0.7% for PPO, A2C, SAC and TD3 on the tiny walker and Ant-v5), the sweep's arithmetic
by hand, and the real command on a real tmpfs too small for its runs (refused, nothing written), on one just
large enough (warned, and the runs finish within it) and on one filled while its runs run (each says so, a rerun
completes them)."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym
import pytest
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.save_util import save_to_pkl

from helpers.commands import run_dirs, run_sweep, status_of, sweep_exe, wait_for, write_spec
from helpers.fake_sweep import run_spec
from helpers.models import ANYMAL_XML, TINY_XML
from mjsweep.api.planning import check_disk
from mjsweep.engine.sweep import prepare
from mjsweep.plan.disk import Verdict, estimate, judge, model_bytes, population_estimate, replay_buffer_bytes, run_disk
from mjsweep.robots.envs import EnvProbe, probe_env
from mjsweep.spec.algos import ALGOS, algorithm_class
from mjsweep.sweepdir.files import RunDir

ANT = EnvProbe((105,), (8,), episode_steps=1000.0)  # Ant-v5's spaces


@pytest.fixture(scope="module")
def tiny_probe() -> EnvProbe:
    return probe_env("HalfCheetah-v5", TINY_XML, {}, 100)


def tiny_env() -> gym.Env:
    return gym.make("HalfCheetah-v5", xml_file=str(TINY_XML), max_episode_steps=100)


@pytest.mark.parametrize(("buffer_size", "n_envs", "optimize"), [(500, 1, False), (500, 3, False), (500, 2, True)])
def test_a_replay_buffer_is_estimated_as_sb3_pickles_it(tmp_path, tiny_probe, buffer_size, n_envs, optimize):
    assert (tiny_probe.obs_shape, tiny_probe.act_shape, tiny_probe.obs_itemsize) == ((9,), (2,), 8)
    env = tiny_env()
    buffer = ReplayBuffer(buffer_size, env.observation_space, env.action_space, device="cpu", n_envs=n_envs,
                          optimize_memory_usage=optimize, handle_timeout_termination=not optimize)
    save_to_pkl(tmp_path / "buffer.pkl", buffer)
    run = run_spec("walker", 0, algo="sac", n_envs=n_envs,
                   ppo={"buffer_size": buffer_size, "optimize_memory_usage": optimize})
    estimated = replay_buffer_bytes(run, 9, 2, tiny_probe.obs_itemsize)
    arrays = [buffer.observations, buffer.actions, buffer.rewards, buffer.dones, buffer.timeouts]
    arrays += [] if optimize else [buffer.next_observations]
    header = estimated - sum(a.nbytes for a in arrays)  # the arrays to the byte: 500 // 3 * 3 = 498 rows
    assert 0 < header < 2_500
    assert abs(estimated - (tmp_path / "buffer.pkl").stat().st_size) < 1_000


def test_a_replay_buffer_file_holds_every_row_it_allocated_however_few_it_filled():
    short = run_spec("walker", 0, algo="sac", total=10_000, ppo={})
    assert replay_buffer_bytes(short, 105, 8, 8) // 1_000_000 == 1724  # SB3's default 1e6 rows of Ant: 1.7 GB


@pytest.mark.parametrize(("env", "algo", "policy_kwargs"), [
    ("tiny", "ppo", {}), ("tiny", "a2c", {}), ("tiny", "sac", {}), ("tiny", "td3", {}),
    ("tiny", "ppo", {"net_arch": {"pi": [32], "vf": [128, 128]}}), ("tiny", "sac", {"net_arch": [64], "n_critics": 3}),
    ("Ant-v5", "ppo", {}), ("Ant-v5", "sac", {}),
    ("tiny", "tqc", {}), ("tiny", "crossq", {}), ("tiny", "trpo", {}), ("tiny", "recurrent_ppo", {}),
    ("Ant-v5", "tqc", {}), ("Ant-v5", "crossq", {}), ("Ant-v5", "recurrent_ppo", {}),
])
def test_a_model_zip_is_estimated_within_2_percent(tmp_path, env, algo, policy_kwargs):
    venv = tiny_env() if env == "tiny" else gym.make(env)
    settings = {"n_steps": 64, "batch_size": 64, "n_epochs": 1} if algo in ("ppo", "recurrent_ppo") else \
        {"n_steps": 64, "batch_size": 64} if algo == "trpo" else \
        {"buffer_size": 100, "learning_starts": 0, "batch_size": 8} if ALGOS[algo].off_policy else {}
    policy = "MlpLstmPolicy" if algo == "recurrent_ppo" else "MlpPolicy"
    model = algorithm_class(algo)(policy, venv, policy_kwargs=policy_kwargs, seed=0, device="cpu", **settings)
    model.learn(64)  # the optimizer's state exists once it has stepped
    model.save(tmp_path / "model.zip")
    obs, act = math.prod(venv.observation_space.shape), math.prod(venv.action_space.shape)
    real = (tmp_path / "model.zip").stat().st_size
    assert abs(model_bytes(algo, {"policy_kwargs": policy_kwargs}, obs, act) - real) < 0.02 * real


def test_the_peak_is_every_run_finished_but_the_largest_at_once_at_theirs():
    sac = [run_spec("ant", seed, algo="sac", total=1_000_000, ppo={}) for seed in range(20)]
    one = run_disk(sac[0], ANT, 2)
    assert one.buffer == 1_000_000 * (2 * 105 * 8 + 8 * 4 + 3 * 4) + 2_000 + 20 * 105
    peak = estimate(sac, {"ant": ANT}, 2, 4).peak
    # a succeeded run keeps its final checkpoint; the 4 at once hold 2 and write a third before the oldest goes.
    assert peak.buffers == (20 * 1 + 4 * 2) * one.buffer
    assert estimate(sac, {"ant": ANT}, 2, 4).bytes - estimate(sac, {"ant": ANT}, 2, 1).bytes == \
        3 * (one.peak.total - one.kept.total)
    assert estimate(sac, {"ant": ANT}, 1, 4).peak.buffers == (20 + 4) * one.buffer
    ppo = run_spec("ant", 0, total=1_000_000)
    assert run_disk(ppo, ANT, 2).peak.buffers == 0
    # monitor.csv: a row per episode of 1000 steps; progress.csv: one per PPO iteration of 2048 steps.
    assert run_disk(ppo, ANT, 2).kept.logs == 1000 * 32 + 489 * 64 + 48_000
    assert estimate([], {}, 2, 4).bytes == 0


def test_a_population_holds_the_checkpoints_of_its_last_two_generations():
    generations = [[run_spec("ant", member, algo="sac", total=(g + 1) * 10_000, ppo={}) for member in range(4)]
                   for g in range(3)]
    one = run_disk(generations[0][0], ANT, 2)
    held = population_estimate(generations, {"ant": ANT}, 2, 4)
    # the 4 segments of the generation before hold their final checkpoint, the 4 of the last hold 2 and write a third
    assert held.peak.buffers == (4 * 1 + 4 * 3) * one.buffer
    assert held.runs == 12 and held.held == ("2 checkpoints held by each running segment, the final one by each "
                                             "segment the next generation resumes from")
    # Every segment keeps its logs, which run from step 0 along its lineage.
    assert held.peak.logs == sum(run_disk(run, ANT, 2).kept.logs for g in generations for run in g)
    assert population_estimate(generations[:1], {"ant": ANT}, 2, 4).peak.buffers == (4 * 2 + 4) * one.buffer


def test_more_than_the_free_space_is_refused_and_over_80_percent_warned():
    assert judge(101, 100) is Verdict.SHORT
    assert judge(81, 100) is Verdict.TIGHT
    assert judge(80, 100) is Verdict.FITS


def _unshare() -> list[str]:
    """The command that runs another in a mount namespace of its own (skips where there is none)."""
    base = ["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    if subprocess.run([*base, "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace here (unshare --mount)")
    return base


def _in_tmpfs(size: int, folder: Path, script: str) -> str:
    """`script` run by sh with a tmpfs of `size` bytes mounted on `folder`, in a mount namespace of its own (the
    mount ends with it): its output, stderr included."""
    base = _unshare()
    folder.mkdir(parents=True, exist_ok=True)
    mount = f"mount -t tmpfs -o size={size} tmpfs {folder}"
    done = subprocess.run([*base, "sh", "-c", f"{mount} && {script}"], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=600)
    assert "mount:" not in done.stderr, done.stderr
    return done.stdout + done.stderr


@contextmanager
def _held_tmpfs(size: int, folder: Path) -> Iterator[tuple[list[str], Path]]:
    """A tmpfs of `size` bytes on `folder` in a mount namespace that a sleeping process holds while the block
    runs: yields the command prefix that runs a command in it, and the folder as this process sees it."""
    folder.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([*_unshare(), "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs {folder} && "
                               "echo mounted && exec sleep 3600"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "mounted\n"
        user = [] if os.geteuid() == 0 else ["--user", "--preserve-credentials"]
        # No --wd: nsenter opens it before it enters, so relative paths would miss the mount. Paths are absolute.
        yield ["nsenter", f"--target={holder.pid}", "--mount", *user], Path(f"/proc/{holder.pid}/root{folder}")
    finally:
        holder.kill()
        holder.wait()


def _fill(path: Path) -> None:
    """Zeros into `path` until its disk has no room left."""
    with pytest.raises(OSError, match="No space left on device"), open(path, "wb", buffering=0) as out:
        while True:
            out.write(bytes(1 << 16))


def test_a_sweep_too_big_for_its_disk_is_refused_before_anything_is_written(tmp_path, tiny_spec):
    tiny_spec.update({"algo": "sac", "ppo": {}, "sac": {"buffer_size": 1_000_000}, "seeds": 2})
    spec = write_spec(tmp_path, tiny_spec)
    runs = tmp_path / "small"
    out = _in_tmpfs(4_000_000, runs, f"{sweep_exe()} run {spec} -w 2 --runs-dir {runs}; echo rc=$?; "
                    f"{sweep_exe()} validate {spec} --runs-dir {runs}; echo rc=$?; "
                    f"{sweep_exe()} run {spec} --dry-run -w 2 --runs-dir {runs}; echo rc=$?; "
                    f"find {runs} -mindepth 1 | sed 's/^/written: /'")
    # 2 SAC runs of the tiny walker: SB3's buffer of 1e6 rows of 164 bytes, 3 at a time while a checkpoint is written.
    refusal = (f"error: {runs}/tiny: needs about 1.0 GB at peak (2 SAC runs, 2 at once, 2 checkpoints kept each: "
               "984 MB replay buffers at 164 MB each, ")
    assert out.count(refusal) == 2, out
    assert re.search(r"logs and run files\), 4\.0 MB free on tmpfs: free space, a --runs-dir on a larger disk, "
                     r"lower buffer_size or fewer --workers\n", out), out
    assert out.count("rc=2") == 2, out  # run and validate
    assert "disk: about 1.0 GB at peak" in out and "warning: sweep run would refuse: " in out and "rc=0" in out
    assert "written:" not in out  # no lock, no sweep.yaml, no run folder


def test_python_refuses_a_sweep_too_big_for_its_disk_with_the_command_lines_words(tmp_path, tiny_spec):
    tiny_spec.update({"algo": "sac", "ppo": {}, "sac": {"buffer_size": 1_000_000}, "seeds": 2})
    spec = write_spec(tmp_path, tiny_spec)
    runs = tmp_path / "small"
    code = ("import mjsweep\ntry:\n"
            f"    mjsweep.run({str(spec)!r}, runs_dir={str(runs)!r}, workers=2)\n"
            "except mjsweep.InputError as exc:\n    print('python:', exc)\n")
    out = _in_tmpfs(4_000_000, runs, f"{sweep_exe()} run {spec} -w 2 --runs-dir {runs}; "
                    f"{sys.executable} -c {shlex.quote(code)}; find {runs} -mindepth 1 | sed 's/^/written: /'")
    said = re.search(r"^error: (.*)$", out, re.M)
    assert said is not None and "needs about 1.0 GB at peak" in said.group(1), out
    assert f"python: {said.group(1)}\n" in out, out  # the same refusal, word for word
    assert "written:" not in out


def test_a_sweep_that_fits_its_disk_but_tightly_is_warned_and_finishes_within_the_estimate(tmp_path, tiny_spec):
    tiny_spec.update({"grid": {"algo": ["ppo", "sac"]}, "total_timesteps": 400, "checkpoint_every": 200,
                      "sac": {"buffer_size": 2000, "learning_starts": 100, "batch_size": 32},
                      "eval": {"episodes": 1, "every": 200}})
    spec = write_spec(tmp_path, tiny_spec)
    runs = tmp_path / "tight"
    plan = prepare(spec, runs)
    needed = estimate(plan.runs, {c.variant.name: c.probe for c in plan.checks}, plan.spec.checkpoints_kept, 2).bytes
    size = math.ceil(needed / 0.9 / 4096) * 4096  # the estimate is 90% of the disk
    out = _in_tmpfs(size, runs, f"{sweep_exe()} run {spec} -w 2 -q --report-every 0 --runs-dir {runs}; echo rc=$?; "
                    f"du -sb {runs}/tiny; ls {runs}/tiny/*/checkpoints; cat {runs}/tiny/*/checkpoints/checkpoint.json")
    assert re.search(rf"warning: {runs}/tiny: needs about .* over 80% of the .* free on tmpfs", out), out
    assert "2 succeeded, 0 failed" in out and "rc=0" in out, out  # the runs' real peak fit in the disk
    written = int(re.search(rf"(\d+)\s+{runs}/tiny", out).group(1))
    assert written <= needed  # what the finished runs keep (one checkpoint each today) is under the estimate
    # each succeeded run kept its final checkpoint alone (PPO's at its last iteration's end: 4 x 128 steps)
    assert sorted(line for line in out.splitlines() if line.startswith("model_")) == ["model_400.zip",
                                                                                      "model_512.zip"], out
    assert out.count('"earlier": []') == 2, out


def test_the_estimate_counts_the_checkpoints_the_spec_keeps(tmp_path, tiny_spec):
    del tiny_spec["ppo"]
    tiny_spec.update(algo="sac", checkpoints_kept=1, runs_dir=str(tmp_path / "runs"))
    one = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), "--dry-run")
    tiny_spec.update(checkpoints_kept=3)
    three = run_sweep("run", str(write_spec(tmp_path, tiny_spec)), "--dry-run")
    assert one.returncode == three.returncode == 0, one.stderr + three.stderr
    assert "1 checkpoints kept each" in one.stdout and "3 checkpoints kept each" in three.stdout


@pytest.mark.slow
def test_a_disk_that_fills_while_runs_run_fails_them_clearly_and_a_rerun_completes(tmp_path, tiny_spec):
    tiny_spec.update({"seeds": 4, "total_timesteps": 4096, "checkpoint_every": 256})
    spec = write_spec(tmp_path, tiny_spec)
    runs = tmp_path / "filling"
    plan = prepare(spec, runs)
    needed = estimate(plan.runs, {c.variant.name: c.probe for c in plan.checks}, plan.spec.checkpoints_kept, 2).bytes
    sweep = [sweep_exe(), "run", str(spec), "-w", "2", "--runs-dir", str(runs)]
    with _held_tmpfs(2 * needed, runs) as (enter, seen):  # room for the runs, until the test fills it
        with open(tmp_path / "first.out", "wb") as out:
            first = subprocess.Popen([*enter, *sweep], stdout=out, stderr=subprocess.STDOUT,
                                     env={**os.environ, "NO_COLOR": "1"})
        done = wait_for(lambda: [d for d in run_dirs(seen / "tiny") if status_of(d).get("state") == "succeeded"],
                        what="a finished run")
        kept = {p: p.read_bytes() for d in done for p in d.rglob("*") if p.is_file()}
        _fill(seen / "filler")
        assert first.wait(timeout=600) == 1
        out = (tmp_path / "first.out").read_text()
        succeeded = int(re.search(r"sweep tiny: (\d) succeeded", out).group(1))
        failed = re.findall(r"failed +(\w+): ", out)
        assert "Traceback" not in out and succeeded + len(failed) == 4, out
        for run_id in failed:  # the launcher could not record its end: it says why
            assert f"{run_id}: cannot write {runs}/tiny/{run_id}/status.json: No space left on device (ENOSPC)" \
                in out, out
        # A run can end well after the disk filled, its status.json then unwritten: only the runs whose
        # status.json says they succeeded are taken as done by a rerun; nothing half-written counts.
        recorded = [d for d in run_dirs(seen / "tiny") if status_of(d).get("state") == "succeeded"]
        assert done[0] in recorded and len(recorded) <= succeeded
        (seen / "filler").unlink()
        rerun = subprocess.run([*enter, *sweep], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
        assert f"{4 - len(recorded)} to run, {len(recorded)} already succeeded" in rerun.stdout, \
            rerun.stdout + rerun.stderr
        assert rerun.returncode == 0 and "4 succeeded, 0 failed" in rerun.stdout, rerun.stdout + rerun.stderr
        assert {p: p.read_bytes() for p in kept} == kept
        assert [json.loads((d / "result.json").read_text())["timesteps"] for d in run_dirs(seen / "tiny")] == [4096] * 4


def files_now(folder: Path) -> dict[Path, tuple[int, int]]:
    """Every file under `folder`: its inode and size (a file may go while we look)."""
    found = {}
    for path in folder.rglob("*"):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        if not path.is_dir():
            found[path] = (st.st_ino, st.st_size)
    return found


def peak_while(folder: Path, sweep: subprocess.Popen) -> int:
    """The most the files under `folder` held while `sweep` ran, hard links once: polled every 10 ms, and where
    checkpoint files went between two polls, added back to the second, since a checkpoint writes all its files
    before the older checkpoint's go (the moment of the most files, which a poll may miss)."""
    peak, before = 0, {}
    while True:
        ended = sweep.poll() is not None
        now = files_now(folder)
        sizes = dict(now.values())
        gone = sum(size for path, (inode, size) in before.items()
                   if path not in now and path.parent.name == "checkpoints" and inode not in sizes)
        peak = max(peak, sum(sizes.values()) + gone)
        before = now
        if ended:
            return peak
        time.sleep(0.01)


def estimate_against_the_real_peak(tmp_path: Path, data: dict) -> tuple[int, int]:
    """The estimate `sweep run` makes for the spec's one run (the robot's snapshot included), and the sweep
    folder's real peak as it ran."""
    spec = write_spec(tmp_path, data)
    plan = prepare(spec)
    needed = check_disk(plan, plan.runs, 1).needed
    assert needed.snapshot > 0
    sweep = subprocess.Popen([sweep_exe(), "run", str(spec), "--report-every", "0", "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    peak = peak_while(tmp_path / "runs" / data["name"], sweep)
    out = sweep.communicate()[0].decode()
    assert sweep.returncode == 0 and "1 succeeded" in out, out
    [run] = run_dirs(tmp_path / "runs" / data["name"])
    # What a succeeded run keeps: its final checkpoint, as estimated
    assert [c.timesteps for c in RunDir(run).read_checkpoint().kept()] == [data["total_timesteps"]]
    kept = sum(dict(files_now(run).values()).values())
    assert abs(run_disk(plan.runs[0], plan.checks[0].probe, plan.spec.checkpoints_kept).kept.total - kept) \
        <= 0.2 * kept
    return needed.bytes, peak


def within_a_fifth(tmp_path: Path, data: dict) -> None:
    data.update({"total_timesteps": 1536, "checkpoint_every": 256, "normalize": True,
                 "ppo": {"n_steps": 256, "batch_size": 64, "n_epochs": 1}, "eval": {"episodes": 1, "every": 512}})
    needed, peak = estimate_against_the_real_peak(tmp_path, data)
    assert abs(needed - peak) <= 0.2 * peak, (needed, peak)


@pytest.mark.slow
def test_the_estimate_is_within_a_fifth_of_the_tiny_walkers_real_peak(tmp_path, tiny_spec):
    within_a_fifth(tmp_path, tiny_spec)


@pytest.mark.slow
@pytest.mark.skipif(not ANYMAL_XML.exists(), reason=f"needs ANYmal C at {ANYMAL_XML}")
def test_the_estimate_is_within_a_fifth_of_anymal_cs_real_peak(tmp_path, tiny_spec):
    """A real robot, whose exact state the probe sizes from its compiled model."""
    tiny_spec.update({"env": "mjsweep/Locomotion-v0", "variants": [{"name": "anymal", "xml": str(ANYMAL_XML)}]})
    within_a_fifth(tmp_path, tiny_spec)
