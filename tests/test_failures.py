"""The failure classification table and the retry policy: every way a run can end, with and without the
sweep having asked it to stop or timed it out."""

from __future__ import annotations

import itertools
import signal

import pytest

from mjsweep.engine.failures import RETRYABLE, classify, should_retry
from mjsweep.launchers.base import RETURNCODE_LOST, ExitKind, RunExit
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
    "out of memory": (FailureClass.KILLED, FailureClass.KILLED),
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
    assert should_retry(failure, attempt=0, retries=1, stopping=False) is (failure in RETRYABLE)
    assert RETRYABLE == {FailureClass.KILLED, FailureClass.TIMEOUT, FailureClass.LOST}


def test_retries_are_a_budget_of_extra_attempts_and_a_stopping_sweep_retries_nothing():
    assert [should_retry(FailureClass.KILLED, attempt, retries=2, stopping=False) for attempt in range(4)] == [
        True, True, False, False]
    assert not should_retry(FailureClass.LOST, attempt=0, retries=0, stopping=False)
    assert not should_retry(FailureClass.LOST, attempt=0, retries=5, stopping=True)
