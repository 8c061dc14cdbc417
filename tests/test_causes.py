"""Every way a run dies, named where the user looks: real processes ended by a real OOM killer in a real memory
cgroup, by a signal from outside, by --timeout, by exiting without a result or with an error. Each cause is the
live line, status.json's failure, cause and error tail's last line, `sweep status`'s line and the report's."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cgroups import limited_cgroup
from helpers.commands import run_sweep
from helpers.fake_sweep import make_run, run_spec
from mjsweep.engine.scheduler import Event, EventKind, Scheduler, SchedulerOptions
from mjsweep.launchers.local import LocalLauncher
from mjsweep.launchers.oomkill import MemoryCgroup, OomWatch, memory_cgroup
from mjsweep.results.rows import collect
from mjsweep.sweepdir.files import SweepDir
from mjsweep.ui.html_report import build

HOG = "x = []\nwhile True:\n    x.append(bytearray(8 * 2**20))  # resident: zero-filled\n"
FAT = ("import json, time\nheld = bytearray(150 * 2**20)  # resident: zero-filled\ntime.sleep(2)\n"
       "open('result.json', 'w').write(json.dumps({'eval_mean_return': 1.0}))\n")
"""A run that needs 150 MiB for 2 s: two fit in the test's cgroup one at a time, not together."""
BEHAVIOURS = {
    # exit 1 after a traceback, then a line that has nothing to do with it
    "error": "import sys; print('training', flush=True)\ntry:\n    raise ValueError('n_steps must be positive')\n"
             "except ValueError:\n    import traceback; traceback.print_exc()\nprint('wandb: synced', flush=True)\n"
             "sys.exit(1)",
    "noresult": "print('done, eval return 1.00', flush=True)",  # exit 0, result.json never written
    "sigterm": "import os, signal; print('training', flush=True); os.kill(os.getpid(), signal.SIGTERM)",
    "sigkill": "import os, signal; print('training', flush=True); os.kill(os.getpid(), signal.SIGKILL)",
    "hung": "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)",
}


def worker(run_dir: Path) -> list[str]:
    """The command of each run, by its name."""
    name = run_dir.name.split("_")[0]
    return [sys.executable, "-c", HOG if name == "oom" else BEHAVIOURS[name]]


def run_all(tmp_path: Path, names: list[str], **options) -> tuple[SweepDir, list]:
    sweep = SweepDir(tmp_path / "sweep")
    runs = [run_spec(name, 0) for name in names]
    for run in runs:
        make_run(sweep.path, run)
    events: list = []
    opts = SchedulerOptions(max_workers=len(runs), poll_s=0.05, retries=0, memory_guard=False, **options)
    Scheduler(LocalLauncher(command=worker), sweep, opts, on_event=events.append).run(runs)
    return sweep, events


# The launcher and its runs in a memory cgroup, as SLURM and containers place them: a launcher of its own,
# moved into the cgroup before it starts, its workers in it from their fork.
LAUNCHER_IN_CGROUP = """
import json, sys
from pathlib import Path
from mjsweep.engine.scheduler import Scheduler, SchedulerOptions
from mjsweep.launchers.local import LocalLauncher
from mjsweep.sweepdir.files import SweepDir
from mjsweep.sweepdir.models import RunSpec

sweep = SweepDir(Path(sys.argv[1]))
runs = [RunSpec.model_validate_json((sweep.path / name / "spec.json").read_text()) for name in sys.argv[2:]]
scripts = {{"oom": {hog!r}, "fat": {fat!r}}}
command = lambda run_dir: [sys.executable, "-c", scripts[run_dir.name.split("_")[0].rstrip("0123456789")]]
events = []
options = SchedulerOptions(max_workers=len(runs), poll_s=0.05, retries={retries}, memory_guard=False)
outcome = Scheduler(LocalLauncher(command=command), sweep, options, on_event=events.append).run(runs)
print(json.dumps([[e.kind.value, e.run_id, e.message] for e in events]))
"""


def run_in_cgroup(tmp_path: Path, cgroup: Path, names: list[str], retries: int = 0) -> tuple[SweepDir, list]:
    sweep = SweepDir(tmp_path / "sweep")
    for name in names:
        make_run(sweep.path, run_spec(name, 0))
    script = tmp_path / "launcher.py"  # a run named fatN runs FAT
    script.write_text(LAUNCHER_IN_CGROUP.format(hog=HOG, fat=FAT, retries=retries))
    done = subprocess.run(["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", sys.executable,
                           str(script), str(sweep.path), *(f"{name}_s0" for name in names)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    events = [Event(EventKind(kind), run_id, message) for kind, run_id, message in json.loads(done.stdout)]
    return sweep, events


def failed_lines(events) -> dict[str, str]:
    return {e.run_id.split("_")[0]: e.message for e in events if e.kind is EventKind.FAILED}


def test_each_death_is_named_where_the_user_looks(tmp_path):
    names = ["error", "noresult", "sigterm", "sigkill", "hung"]
    sweep, events = run_all(tmp_path, names, timeout_s=1.0, grace_s=0.5)
    causes = {
        "error": "exited with code 1: ValueError: n_steps must be positive",
        "noresult": "exited 0 without writing result.json",
        "sigterm": "killed by SIGTERM from outside the sweep",
        "hung": "timed out: ran past --timeout of 1s, stopped by SIGINT, then SIGKILL when it did not stop within "
                "--grace",
    }
    lines = failed_lines(events)
    classes = {"error": "error", "noresult": "error", "sigterm": "killed", "sigkill": "killed", "hung": "timeout"}
    for name in names:
        status = json.loads((sweep.path / f"{name}_s0" / "status.json").read_text())
        cause = causes.get(name) or status["cause"]
        assert status["failure"] == classes[name] and status["cause"] == cause
        assert status["error_tail"].splitlines()[-1] == cause  # what older readers of the tail show
        assert lines[name] == f"{classes[name]}: {cause}"  # the live line
    # This machine may or may not count OOM kills; either way a kill -9 is not called one.
    assert lines["sigkill"].startswith("killed: killed by SIGKILL from outside the sweep (")
    assert "training" not in json.dumps(lines) and "wandb" not in json.dumps(lines)

    shown = run_sweep("status", str(sweep.path))
    assert shown.returncode == 0, shown.stderr
    for name, cause in causes.items():
        assert f"{name}_s0: failed: {cause}" in " ".join(shown.stdout.split()), shown.stdout
    report = run_sweep("report", str(sweep.path))
    assert report.returncode == 0, report.stderr
    for name, cause in causes.items():
        assert f"failed: {name}_s0: {cause}" in report.stdout, report.stdout
    assert f"- `error_s0`: {causes['error']}" in (sweep.path / "report.md").read_text()
    page = build(sweep, [], collect(sweep), [])
    assert f'<p class="failed">failed: noresult_s0: {causes["noresult"]}</p>' in page


def test_a_run_killed_by_the_oom_killer_in_its_memory_cgroup_is_named_as_one(tmp_path):
    with limited_cgroup(256 * 2**20) as cgroup:
        sweep, events = run_in_cgroup(tmp_path, cgroup, ["oom"])
    status = json.loads((sweep.path / "oom_s0" / "status.json").read_text())
    assert (status["state"], status["failure"], status["returncode"]) == ("failed", "out-of-memory", -signal.SIGKILL)
    where = f"/{cgroup.name}" if memory_cgroup() and memory_cgroup().version == 1 else cgroup.name
    assert status["cause"].startswith(f"killed by the kernel's OOM killer (memory cgroup {where}"), status["cause"]
    assert "counted the kill): its peak RSS" in status["cause"] and "limit 256 MiB" in status["cause"]
    assert failed_lines(events)["oom"] == f"out-of-memory: {status['cause']}"
    shown = run_sweep("status", str(sweep.path))
    assert "oom_s0: failed: killed by the kernel's OOM killer" in " ".join(shown.stdout.split()), shown.stdout


def test_a_run_oom_killed_beside_another_is_retried_alone_and_fits(tmp_path):
    with limited_cgroup(320 * 2**20) as cgroup:
        sweep, events = run_in_cgroup(tmp_path, cgroup, ["fat", "fat2"], retries=1)
    kinds = [(e.kind, e.run_id) for e in events]
    [(_, killed)] = [k for k in kinds if k[0] is EventKind.RETRYING]
    assert sorted(e.run_id for e in events if e.kind is EventKind.SUCCEEDED) == ["fat2_s0", "fat_s0"]
    [warning] = [e.message for e in events if e.kind is EventKind.WARNING]
    assert warning == "a run was killed for its memory with 2 runs at once: at most 1 at once from now on"
    [retry] = [e.message for e in events if e.kind is EventKind.RETRYING]
    assert retry.startswith("out-of-memory: killed by the kernel's OOM killer (memory cgroup ")
    assert "2 runs were running at once; it would fit with fewer --workers" in retry
    assert json.loads((sweep.path / killed / "status.json").read_text())["attempts"] == 2


def test_the_memory_guard_sees_the_limit_of_its_memory_cgroup(tmp_path):
    """The host's available memory (GiBs here) is not what a launcher in a 320 MiB cgroup can use."""
    probe = "from mjsweep.engine.scheduler import _available_here; print(_available_here()())"
    with limited_cgroup(320 * 2**20) as cgroup:
        done = subprocess.run(["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", sys.executable,
                               "-c", probe], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert 0 < float(done.stdout) < 320


def test_cgroup_files_of_both_versions_are_read(tmp_path):
    """The files as the kernel lays them out, for the version this machine does not mount."""
    v2 = tmp_path / "v2"
    (v2 / "job" / "step").mkdir(parents=True)
    (v2 / "job" / "memory.max").write_text("536870912\n")
    (v2 / "job" / "step" / "memory.max").write_text("max\n")
    (v2 / "job" / "step" / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n")
    (v2 / "job" / "step" / "memory.peak").write_text("536866816\n")
    cgroup = MemoryCgroup(v2 / "job" / "step", 2, v2)
    assert (cgroup.oom_kills(), cgroup.limit_bytes(), cgroup.peak_bytes()) == (1, 512 * 2**20, 536866816)
    assert str(cgroup) == "/job/step"
    v1 = tmp_path / "v1" / "slurm"
    v1.mkdir(parents=True)
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # none
    assert (MemoryCgroup(v1, 1, v1.parent).oom_kills(), MemoryCgroup(v1, 1, v1.parent).limit_bytes()) == (3, None)


def test_a_process_in_a_container_finds_its_cgroup_through_mountinfo(tmp_path):
    """/proc/PID/cgroup names the path within the hierarchy; mountinfo says where, and from which root, it is
    mounted (a container sees its own cgroup as /)."""
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "self").mkdir()
    (proc / "42" / "cgroup").write_text("0::/kubepods/pod1/ctr\n")
    mount = tmp_path / "sys" / "fs" / "cgroup"
    (mount / "sub").mkdir(parents=True)
    (mount / "sub" / "memory.events").write_text("oom_kill 0\n")
    (proc / "self" / "mountinfo").write_text(
        f"31 23 0:28 /kubepods/pod1 {mount} rw,nosuid - cgroup2 cgroup2 rw\n")
    (proc / "42" / "cgroup").write_text("0::/kubepods/pod1/sub\n")
    found = memory_cgroup(42, proc)
    assert found is not None and (found.path, found.version) == (mount / "sub", 2)
    (proc / "43").mkdir()
    (proc / "43" / "cgroup").write_text("0::/kubepods/pod10/sub\n")  # a cgroup outside what is mounted here
    (mount / "0" / "sub").mkdir(parents=True)  # where a plain prefix match would look
    (mount / "0" / "sub" / "memory.events").write_text("oom_kill 0\n")
    assert memory_cgroup(43, proc) is None
    (proc / "vmstat").write_text("pgfault 10\noom_kill 0\n")
    watch = OomWatch(42, proc)
    (mount / "sub" / "memory.events").write_text("oom_kill 1\n")
    facts = watch.verdict()
    assert facts is not None and facts.by == "the kernel's OOM killer (memory cgroup /sub, v2, counted the kill)"


def test_without_a_memory_cgroup_the_kernels_oom_count_tells(tmp_path):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text("")
    (proc / "vmstat").write_text("oom_kill 4\n")
    watch = OomWatch(42, proc)
    assert watch.can_tell() and watch.verdict() is None  # a kill -9
    (proc / "vmstat").write_text("oom_kill 5\n")
    facts = watch.verdict()
    assert facts is not None and "/proc/vmstat" in facts.by
    (proc / "vmstat").write_text("")
    assert not OomWatch(42, proc).can_tell()


@pytest.fixture(autouse=True)
def _no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
