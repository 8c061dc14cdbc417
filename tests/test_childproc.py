"""childproc: the one way mjsweep owns a child process, with real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from mjsweep.childproc import THREAD_VARS, Child, cap_threads, child_env, stop_all


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def wait_for_file(path: Path, child: Child | subprocess.Popen) -> str:
    """The file's text once the child wrote it; fails if the child ended first."""
    while not path.is_file() or not path.read_text():
        assert child.poll() is None, f"the child ended ({child.poll()}) before writing {path}"
        time.sleep(0.02)
    return path.read_text()


def gone(pid: int) -> bool:
    """Whether `pid` no longer runs (a zombie waiting for its reaper runs no more)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pid: int) -> None:
    while not gone(pid):
        time.sleep(0.02)


def test_kill_ends_the_child_and_its_grandchild(tmp_path):
    pids = tmp_path / "pids"
    child = Child.start(python(f"""
        import os, subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open({str(pids)!r} + ".tmp", "w") as fh:
            fh.write(f"{{os.getpid()}} {{grandchild.pid}}")
        os.replace({str(pids)!r} + ".tmp", {str(pids)!r})
        time.sleep(600)
    """))
    own, grandchild = map(int, wait_for_file(pids, child).split())
    assert own == child.pid and os.getsid(child.pid) == child.pid, "the child leads a session of its own"
    assert os.getpgid(grandchild) == child.pid, "the grandchild is in the child's group"
    child.kill()
    assert child.wait() == -signal.SIGKILL
    wait_gone(grandchild)
    assert gone(grandchild)


def test_stop_interrupts_and_a_child_that_obeys_ends_in_the_grace_period(tmp_path):
    ready, said = tmp_path / "ready", tmp_path / "said"
    child = Child.start(python(f"""
        import pathlib, signal, sys, time
        def stop(*_):
            time.sleep(0.3)  # a checkpoint being saved
            pathlib.Path({str(said)!r}).write_text("interrupted")
            sys.exit(130)
        signal.signal(signal.SIGINT, stop)
        pathlib.Path({str(ready)!r}).write_text("ready")
        time.sleep(600)
    """))
    wait_for_file(ready, child)
    assert child.stop(grace_s=300) == 130
    assert said.read_text() == "interrupted"


def test_stop_kills_a_child_that_ignores_the_interrupt_once_the_grace_period_ends(tmp_path):
    ready, said = tmp_path / "ready", tmp_path / "said"
    child = Child.start(python(f"""
        import pathlib, signal, time
        signal.signal(signal.SIGINT, lambda *_: pathlib.Path({str(said)!r}).write_text("seen"))
        pathlib.Path({str(ready)!r}).write_text("ready")
        while True:
            time.sleep(0.01)
    """))
    wait_for_file(ready, child)
    # A grace period long enough for the handler to run on a loaded machine: it ignores the interrupt anyway.
    assert child.stop(grace_s=3) == -signal.SIGKILL
    assert said.read_text() == "seen", "it was interrupted before it was killed"


def test_stop_all_stops_every_child_and_leaves_the_codes_of_those_that_ended(tmp_path):
    done = Child.start(python("import sys; sys.exit(3)"))
    done.wait()
    sleeping = []
    for k in range(2):
        ready = tmp_path / f"ready{k}"
        sleeping.append(Child.start(python(f"import pathlib, time; pathlib.Path({str(ready)!r}).write_text('1'); "
                                           "time.sleep(600)")))
        wait_for_file(ready, sleeping[-1])
    codes = stop_all([done, *sleeping], grace_s=300)
    # A default SIGINT handler raises KeyboardInterrupt: Python then ends itself with SIGINT.
    assert codes == [3, -signal.SIGINT, -signal.SIGINT]


def test_a_child_dies_with_its_parent(tmp_path):
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen(python(f"""
        import os, pathlib, time
        from mjsweep.childproc import Child
        child = Child.start([{sys.executable!r}, "-c", "import time; time.sleep(600)"])
        pathlib.Path({str(pid_file)!r} + ".tmp").write_text(str(child.pid))
        os.replace({str(pid_file)!r} + ".tmp", {str(pid_file)!r})
        time.sleep(600)
    """))
    try:
        child_pid = int(wait_for_file(pid_file, parent))
        assert not gone(child_pid)
        parent.kill()  # SIGKILL: the parent has no chance to stop its child itself
        parent.wait()
        wait_gone(child_pid)  # PDEATHSIG: the kernel kills it
        assert gone(child_pid)
    finally:
        parent.kill()
        parent.wait()


def test_a_child_gets_one_thread_pools_unblocked_signals_and_its_niceness(tmp_path):
    out = tmp_path / "out.json"
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # as Ray runs actor methods
    try:
        child = Child.start(python(f"""
            import json, os
            blocked = next(int(line.split()[1], 16) for line in open("/proc/self/status")
                           if line.startswith("SigBlk:"))
            json.dump({{"env": dict(os.environ), "blocked": blocked, "nice": os.nice(0)}}, open({str(out)!r}, "w"))
        """), env=child_env({"PATH": os.environ.get("PATH", ""), "OMP_NUM_THREADS": "8"}), niceness=5)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    assert child.wait() == 0
    seen = json.loads(out.read_text())
    assert {var: seen["env"].get(var) for var in THREAD_VARS} == dict.fromkeys(THREAD_VARS, "1")
    assert seen["env"]["PYTHONUNBUFFERED"] == "1"
    assert seen["blocked"] == 0
    assert seen["nice"] == os.nice(0) + 5


def test_a_child_output_goes_to_its_log(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("before\n")
    child = Child.start(python("import sys; print('out'); print('err', file=sys.stderr)"), log=log, cwd=tmp_path)
    assert child.wait() == 0
    assert log.read_text().splitlines() == ["before", "out", "err"]


def test_cap_threads_sets_every_variable_in_place():
    env = {"MKL_NUM_THREADS": "16", "HOME": "/home/x"}
    cap_threads(env)
    assert env == {"HOME": "/home/x", **dict.fromkeys(THREAD_VARS, "1")}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_signalling_a_child_that_ended_and_was_reaped_is_harmless(sig):
    child = Child.start(python("pass"))
    assert child.wait() == 0
    child.signal(sig)
    assert child.poll() == 0


def test_a_child_of_a_launcher_that_ignores_sigint_gets_it_back(tmp_path):
    # A shell script's `sweep run ... &` starts the launcher with SIGINT ignored, which exec would pass on:
    # the child must see SIGINT (bit 2 of SigIgn in /proc) as a fresh process does.
    out = tmp_path / "status.txt"
    launcher = subprocess.run(python(f"""
        import signal, sys
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from mjsweep.childproc import Child
        with open({str(out)!r}, "w") as status:
            child = Child.start(["grep", "SigIgn", "/proc/self/status"], stdout=status)
            sys.exit(child.wait(60))
    """), capture_output=True, text=True, timeout=120)
    assert launcher.returncode == 0, launcher.stderr
    ignored = int(out.read_text().split()[1], 16)
    assert not ignored & (1 << (signal.SIGINT - 1)), hex(ignored)
