"""The failure classification table, the line that names each end's cause, and the retry policy: every way a
run can end, with and without the sweep having asked it to stop or timed it out."""

from __future__ import annotations

import itertools
import signal

import pytest

from mjsweep.engine.causes import cause_of, error_line
from mjsweep.engine.failures import RETRYABLE, classify, should_retry
from mjsweep.launchers.base import RETURNCODE_LOST, ExitKind, OomFacts, RunExit
from mjsweep.sweepdir.models import FailureClass

EXITS = {
    "exit 0": RunExit.exited(0),
    "exit 1": RunExit.exited(1),
    "exit 130": RunExit.exited(130),
    "SIGKILL": RunExit.killed(signal.SIGKILL),
    "SIGTERM": RunExit.killed(signal.SIGTERM),
    "lost": RunExit.lost(),
    "out of memory": RunExit.out_of_memory(),
    "cancelled": RunExit.cancelled(signal.SIGKILL),
    "time limit": RunExit.time_limit(),
}

# When the sweep asked nothing of the run: its class, without and with a result.json that says it succeeded.
UNASKED = {
    "exit 0": (FailureClass.ERROR, None),
    "exit 1": (FailureClass.ERROR, FailureClass.ERROR),
    "exit 130": (FailureClass.KILLED, FailureClass.KILLED),  # a stop signal nobody in the sweep sent
    "SIGKILL": (FailureClass.KILLED, FailureClass.KILLED),
    "SIGTERM": (FailureClass.KILLED, FailureClass.KILLED),
    "lost": (FailureClass.LOST, FailureClass.LOST),
    "out of memory": (FailureClass.OUT_OF_MEMORY, FailureClass.OUT_OF_MEMORY),
    "cancelled": (FailureClass.KILLED, FailureClass.KILLED),
    "time limit": (FailureClass.KILLED, FailureClass.KILLED),
}


def test_the_table_covers_every_exit_kind():
    assert {end.kind for end in EXITS.values()} == set(ExitKind)
    assert set(UNASKED) == set(EXITS)


@pytest.mark.parametrize("name, succeeded", list(itertools.product(EXITS, (False, True))))
def test_an_end_the_sweep_did_not_ask_for(name, succeeded):
    assert classify(EXITS[name], stopped=False, timed_out=False, succeeded=succeeded) is UNASKED[name][succeeded]


@pytest.mark.parametrize("name, succeeded, timed_out", list(itertools.product(EXITS, (False, True), (False, True))))
def test_a_run_the_sweep_stopped_is_interrupted_unless_it_finished_cleanly(name, succeeded, timed_out):
    expected = None if name == "exit 0" and succeeded else FailureClass.INTERRUPTED
    assert classify(EXITS[name], stopped=True, timed_out=timed_out, succeeded=succeeded) is expected


@pytest.mark.parametrize("name, succeeded", list(itertools.product(EXITS, (False, True))))
def test_a_run_stopped_by_its_timeout_is_a_timeout_unless_it_finished_cleanly(name, succeeded):
    expected = None if name == "exit 0" and succeeded else FailureClass.TIMEOUT
    assert classify(EXITS[name], stopped=False, timed_out=True, succeeded=succeeded) is expected


def test_status_json_keeps_the_returncode_it_always_had():
    codes = {name: end.returncode for name, end in EXITS.items()}
    assert codes == {"exit 0": 0, "exit 1": 1, "exit 130": 130, "SIGKILL": -9, "SIGTERM": -15,
                     "lost": RETURNCODE_LOST, "out of memory": -9, "cancelled": -9, "time limit": -15}
    assert RunExit.from_returncode(-9) == EXITS["SIGKILL"] and RunExit.from_returncode(1) == EXITS["exit 1"]


@pytest.mark.parametrize("failure", list(FailureClass))
def test_only_ends_the_run_did_not_cause_are_retried(failure):
    assert should_retry(failure, attempt=0, retries=1, stopping=False, shared_with=1) is (failure in RETRYABLE)
    assert RETRYABLE == {FailureClass.KILLED, FailureClass.TIMEOUT, FailureClass.LOST, FailureClass.OUT_OF_MEMORY}


def test_retries_are_a_budget_of_extra_attempts_and_a_stopping_sweep_retries_nothing():
    assert [should_retry(FailureClass.KILLED, attempt, retries=2, stopping=False) for attempt in range(4)] == [
        True, True, False, False]
    assert not should_retry(FailureClass.LOST, attempt=0, retries=0, stopping=False)
    assert not should_retry(FailureClass.LOST, attempt=0, retries=5, stopping=True)


TRACEBACK_TAIL = """training
Traceback (most recent call last):
  File "/x/main.py", line 3, in <module>
    train()
ValueError: n_steps must be positive
"""

# What each unasked end says, whatever the log's last line: the launcher's own knowledge first.
CAUSES = {
    "exit 0": "exited 0 without writing result.json",
    "exit 1": "exited with code 1: ValueError: n_steps must be positive",
    "exit 130": "stopped by a SIGINT or SIGTERM from outside the sweep (exit 130, with a checkpoint)",
    "SIGKILL": "killed by SIGKILL from outside the sweep (kill -9, or the OOM killer: nothing here counts its kills)",
    "SIGTERM": "killed by SIGTERM from outside the sweep",
    "lost": "lost: its node, actor or task vanished (a node that died, SLURM's NODE_FAIL or preemption)",
    "out of memory": "killed by the OOM killer",
    "cancelled": "cancelled by SLURM with SIGKILL (scancel, from outside the sweep)",
    "time limit": "killed by SLURM at the job's time limit (TIMEOUT): raise slurm.time, or checkpoint more often",
}


@pytest.mark.parametrize("name", EXITS)
def test_each_end_is_named_by_its_cause_not_by_the_logs_last_line(name):
    failure = classify(EXITS[name], stopped=False, timed_out=False, succeeded=False)
    assert cause_of(EXITS[name], failure, TRACEBACK_TAIL) == CAUSES[name]


def test_an_oom_kill_names_the_killer_the_runs_peak_and_the_limit():
    end = RunExit.out_of_memory(OomFacts("the kernel's OOM killer (memory cgroup /job, v2, counted the kill)",
                                         limit_mb=512.0, peak_mb=511.6))
    assert cause_of(end, FailureClass.OUT_OF_MEMORY, "", peak_mb=498.2) == (
        "killed by the kernel's OOM killer (memory cgroup /job, v2, counted the kill): its peak RSS 498 MiB, "
        "limit 512 MiB, the cgroup's peak 512 MiB")


def test_a_timeout_and_a_stop_say_so():
    assert cause_of(RunExit.exited(130), FailureClass.TIMEOUT, "", timeout_s=5400) == \
        "timed out: ran past --timeout of 90m, stopped by SIGINT"
    assert cause_of(RunExit.killed(9), FailureClass.TIMEOUT, "", timeout_s=45) == \
        "timed out: ran past --timeout of 45s, stopped by SIGINT, then SIGKILL when it did not stop within --grace"
    assert cause_of(RunExit.exited(130), FailureClass.INTERRUPTED, "").startswith("stopped by the sweep")


@pytest.mark.parametrize(("tail", "line"), [
    (TRACEBACK_TAIL + "wandb: syncing\n", "ValueError: n_steps must be positive"),  # printed after the error
    # The worker repeats a non-finite value's message without the module path: that one is the line.
    ("Traceback (most recent call last):\n  File x\nmjsweep.worker.nonfinite.NonFiniteError: non-finite reward"
     " = nan from the env at step 3 (episode 1)\nnon-finite reward = nan from the env at step 3 (episode 1)\n",
     "non-finite reward = nan from the env at step 3 (episode 1)"),
    # A chained exception: the last traceback's.
    ("Traceback (most recent call last):\nKeyError: 'x'\n\nDuring handling of the above exception, another "
     "exception occurred:\n\nTraceback (most recent call last):\n  File y\nOSError: [Errno 28] No space left "
     "on device\n", "OSError: [Errno 28] No space left on device"),
    ("loading\nnumpy.linalg.LinAlgError: Singular matrix\nbye\n", "numpy.linalg.LinAlgError: Singular matrix"),
    ("just some output\n", None),
])
def test_the_error_line_is_the_exception_not_the_last_line(tail, line):
    assert error_line(tail) == line


def test_an_error_without_an_exception_says_so_and_quotes_the_last_line():
    assert cause_of(RunExit.exited(3), FailureClass.ERROR, "step 10\nbye\n") == \
        "exited with code 3, naming no error (log.txt ends: bye)"


def test_a_run_killed_for_its_memory_is_retried_only_where_fewer_runs_at_once_may_let_it_fit():
    oom = FailureClass.OUT_OF_MEMORY
    assert should_retry(oom, attempt=0, retries=1, stopping=False, shared_with=2)
    assert not should_retry(oom, attempt=0, retries=1, stopping=False, shared_with=0)  # alone: it would die again
    assert not should_retry(oom, attempt=1, retries=1, stopping=False, shared_with=2)
    assert not should_retry(oom, attempt=0, retries=1, stopping=True, shared_with=2)


def test_the_advice_names_the_setting_that_would_fit():
    from helpers.fake_sweep import run_spec
    from mjsweep.engine.failures import oom_advice

    cgroup = RunExit.out_of_memory(OomFacts("the kernel's OOM killer", limit_mb=4096.0))
    sac = run_spec("ant", 0, algo="sac", ppo={"buffer_size": 1_000_000})
    assert oom_advice(sac, cgroup, 3, 1500.0) == (
        "3 runs were running at once; it would fit with fewer --workers (about 2 fit in 4,096 MiB at its peak), "
        "or a smaller sac.buffer_size (now 1,000,000 transitions), or more memory for the sweep")
    ppo = run_spec("ant", 0)
    assert oom_advice(ppo, cgroup, 1, 900.0) == "it ran alone; it would fit with more memory for the sweep"
    slurm = RunExit.out_of_memory(OomFacts("SLURM", shared=False))
    assert oom_advice(run_spec("ant", 0, algo="td3", ppo={}), slurm, 4, None) == (
        "4 runs were running at once; it would fit with a smaller td3.buffer_size (now 1,000,000 transitions), "
        "or a larger slurm.mem")


def test_the_worker_s_own_line_is_found_past_a_deep_chained_traceback():
    frames = "".join(f'  File "/sb3/x.py", line {i}, in f\n    f()\n' for i in range(30))
    tail = (f"Traceback (most recent call last):\n{frames}ValueError: found nan\n\nThe above exception was the "
            f"direct cause of the following exception:\n\nTraceback (most recent call last):\n{frames}"
            "mjsweep.worker.nonfinite.NonFiniteError: non-finite reward = nan from the env at step 621 (episode 7)\n"
            "non-finite reward = nan from the env at step 621 (episode 7)\n")
    assert error_line(tail) == "non-finite reward = nan from the env at step 621 (episode 7)"
    # Only the last 20 lines: no traceback header left, the same line still.
    line = "non-finite reward = nan from the env at step 621 (episode 7)"
    assert error_line("\n".join(tail.splitlines()[-20:])) == line
