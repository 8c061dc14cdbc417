"""A sweep folder on a real read-only filesystem (a tmpfs and an ext4 image on a loop device, remounted
read-only in a mount namespace of their own) or one the launcher may not write, and one that turns read-only
while a run finishes: one `error:` line naming the path and the errno's words, exit 2, no traceback; a run whose
end could not be recorded is never reported as succeeded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers.commands import sweep_exe, write_spec
from helpers.models import REPO
from helpers.mounts import in_mounted


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("kind", ["tmpfs", pytest.param("ext4", marks=pytest.mark.slow)])  # one path: tmpfs is enough
def test_a_sweep_folder_on_a_read_only_disk_is_one_error_line(tmp_path, tiny_spec, kind):
    spec = write_spec(tmp_path, tiny_spec)
    runs = tmp_path / "disk"
    # The folder of an earlier launch (its lock file there), then the disk remounted read-only, as a failing
    # disk is; on the tmpfs also a runs dir whose sweep folder was never made.
    new = f"{sweep_exe()} run {spec} -w 1 --runs-dir {runs}/new 2>&1 >/dev/null; echo rc=$?" if kind == "tmpfs" \
        else "true"
    done = in_mounted(kind, runs, f"mkdir -p {runs}/tiny && echo 1 > {runs}/tiny/sweep.lock && "
                      f"mount -o remount,ro {runs} && "
                      f"{sweep_exe()} run {spec} -w 1 --runs-dir {runs} 2>&1 >/dev/null; echo rc=$?; {new}")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Traceback" not in out, out
    expected = [f"error: cannot take the sweep's lock {runs}/tiny/sweep.lock: Read-only file system (EROFS)", "rc=2"]
    if kind == "tmpfs":
        expected += [f"error: cannot write {runs}/new: Read-only file system (EROFS)", "rc=2"]
    assert error_lines(out) == expected, out


def test_a_sweep_folder_the_launcher_may_not_write_is_one_error_line(tmp_path, tiny_spec):
    """Permission denied for real: root without the capabilities that let it write anywhere."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to drop CAP_DAC_OVERRIDE")
    spec = write_spec(tmp_path, tiny_spec)
    folder = tmp_path / "runs" / "tiny"
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    done = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", sweep_exe(), "run",
                           str(spec), "-w", "1", "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=600)
    if "setpriv:" in done.stderr:
        pytest.skip(f"setpriv refused: {done.stderr.strip()}")
    assert done.returncode == 2 and error_lines(done.stderr) == [
        f"error: cannot take the sweep's lock {folder}/sweep.lock: Permission denied (EACCES)"], done.stderr
    assert list(folder.iterdir()) == []


LAUNCHER = """
import json, sys
from pathlib import Path
from helpers.fake_sweep import make_run, run_spec
from mjsweep.engine.scheduler import Scheduler, SchedulerOptions
from mjsweep.launchers.local import LocalLauncher
from mjsweep.sweepdir.files import SweepDir

disk = sys.argv[1]
sweep = SweepDir(Path(disk) / "sweep")
run = run_spec("walker", 0)
make_run(sweep.path, run)
# The worker writes its result, then the disk goes read-only under the launcher, as a failing disk does. A
# remount fails (EBUSY, exit 32) while a file on the disk is open for writing, as the launcher's status file
# is for an instant: it is tried again until it takes.
finish = ("echo '{\\"eval_mean_return\\": 1.0}' > result.json && exec >/dev/null 2>&1 && "
          f"for i in $(seq 100); do mount -o remount,ro {disk} && exit 0; sleep 0.05; done; exit 32")
events = []
options = SchedulerOptions(max_workers=1, poll_s=0.05, memory_guard=False)
outcome = Scheduler(LocalLauncher(command=lambda run_dir: ["sh", "-c", finish]), sweep, options,
                    on_event=events.append).run([run])
status = sweep.run(run.run_id).read_status()
print(json.dumps({"events": [[e.kind.value, e.message] for e in events], "succeeded": outcome.succeeded,
                  "failed": outcome.failed, "exit": outcome.exit_code,
                  "state": status.state.value if status else None}))
"""


def test_a_run_whose_status_cannot_be_written_is_not_reported_as_succeeded(tmp_path):
    script = tmp_path / "launcher.py"
    script.write_text(LAUNCHER)
    disk = tmp_path / "disk"
    path = os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])
    done = in_mounted("tmpfs", disk, f"PYTHONPATH={path} {sys.executable} {script} {disk}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["succeeded"], seen["failed"], seen["exit"]) == ([], ["walker_s0"], 1)
    kinds = [kind for kind, _ in seen["events"]]
    assert "succeeded" not in kinds and kinds[-2:] == ["warning", "failed"], seen
    said = dict(seen["events"][-2:])
    status_json = f"{disk}/sweep/walker_s0/status.json"
    assert said["warning"] == f"cannot write {status_json}: Read-only file system (EROFS)", said
    assert said["failed"] == f"error: it finished, but its end is not on record (cannot write {status_json}: " \
        "Read-only file system (EROFS)); the next `sweep run` runs it again", said
    # What the disk holds, the status of its start or none (the disk may have turned before that was written):
    # the next `sweep run` runs it again.
    assert seen["state"] in ("running", None), seen
