"""Runs on a Ray cluster: each run attempt is an actor (ray_task.RunAttempt) that reserves the run's
CPU slots, and its GPU share for device: cuda, on whichever node Ray picks.

The launcher's run dir stays the source of truth: the node's copy is shipped back every second or so
(logs, progress, checkpoints; model.zip and result.json at the end), so `sweep status`, live progress
and resume work as with local runs. A lost node is RunExit.lost(); the scheduler retries the run,
which starts again from the last checkpoint that came back.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import time
from pathlib import Path

import ray
from ray.exceptions import ActorUnavailableError, OutOfMemoryError, RayError

from ..errors import LauncherConfigError, LaunchError
from ..sweepdir.files import RunDir, read_or_none
from ..sweepdir.models import RunSpec
from .base import Launcher, OomFacts, RunExit
from .filesync import Shipment, apply, pack_model, pack_warm_source, run_files
from .ray_task import LAUNCHER_OWNED, RunAttempt

CONNECT_TIMEOUT_S = 10.0
"""For the reachability check before ray.init, which would retry a dead address for minutes."""
KILL_WAIT_S = 5.0
"""How long kill() lets the actor end the worker and remove its folder before the actor is killed too."""
UNAVAILABLE_LIMIT_S = 120.0
"""An actor unreachable this long (its node partitioned away, not yet declared dead) counts as lost."""


class RayHandle:
    def __init__(self, actor, run_dir: RunDir, started_ref):
        self.actor, self.run_dir = actor, run_dir
        self.pid = None  # the worker's pid is on another machine
        self.host = "ray (waiting for a node)"
        self._started: ray.ObjectRef | None = started_ref  # answers with the node's label once placed
        self._pending = actor.sync.remote()
        self._exit: RunExit | None = None
        self._kill_deadline: float | None = None
        self._unavailable_since: float | None = None

    def poll(self) -> RunExit | None:
        if self._started is not None and ray.wait([self._started], timeout=0)[0]:
            self.host = self._get(self._started) or self.host
            self._started = None
        while self._exit is None and ray.wait([self._pending], timeout=0)[0]:
            try:
                shipment: Shipment = ray.get(self._pending)
            except ActorUnavailableError:
                self._unavailable(time.monotonic())
                continue
            except RayError as exc:  # the actor, its worker process or its node died
                self._end(RunExit.killed(signal.SIGKILL) if self._kill_deadline else end_of_actor(exc))
                break
            self._unavailable_since = None
            apply(self.run_dir.path, shipment)
            if shipment.exit_code is not None:
                self._end(end_of_shipment(shipment))
            else:
                self._pending = self.actor.sync.remote()
        if self._exit is None and self._kill_deadline and time.monotonic() > self._kill_deadline:
            self._end(RunExit.killed(signal.SIGKILL))  # the actor did not answer: ending it ends the worker too
        return self._exit

    def interrupt(self) -> None:
        self.actor.interrupt.remote()

    def kill(self) -> None:
        # The actor kills the worker's group; its next sync() reports the end and removes the node's
        # copy of the run dir, which killing the actor at once would leave behind.
        if self._kill_deadline is None:
            self._kill_deadline = time.monotonic() + KILL_WAIT_S
            self.actor.kill.remote()

    def peak_rss_mb(self) -> float | None:
        result = read_or_none(self.run_dir.read_result)
        return result.peak_rss_mb if result else None

    def peak_uss_mb(self) -> float | None:
        return None  # the worker measures its own RSS only; the admission goes by that

    def _unavailable(self, now: float) -> None:
        self._unavailable_since = self._unavailable_since or now
        if now - self._unavailable_since > UNAVAILABLE_LIMIT_S:
            self._end(RunExit.lost())
        else:
            self._pending = self.actor.sync.remote()

    def _end(self, end: RunExit) -> None:
        self._exit = end
        ray.kill(self.actor, no_restart=True)  # frees the run's CPUs at once

    @staticmethod
    def _get(ref) -> str | None:
        try:
            return ray.get(ref)
        except RayError:
            return None  # poll() will see the actor's end and report it


class RayLauncher(Launcher):
    """Connects to the cluster at `address` (or RAY_ADDRESS); with neither, starts a local Ray. Ray
    queues each run's actor until a node has its CPUs and GPU share, so can_start() is always true."""

    def __init__(self, address: str | None = None, runs_per_gpu: int = 1):
        address = address or os.environ.get("RAY_ADDRESS") or "local"
        unreachable = _unreachable(address)
        if unreachable:
            raise LauncherConfigError(f"cannot reach Ray at {address}: {unreachable} "
                                      "(is `ray start --head` running there?)")
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR, configure_logging=True)
        except (ConnectionError, RuntimeError, ValueError, RayError) as exc:
            # Something answers, but not as this client's Ray expects: most often token auth on one side only.
            hint = "" if address == "local" else (" (same Ray version there? RAY_AUTH_MODE and the auth token "
                                                   "as the cluster's? see docs/cluster.md)")
            raise LauncherConfigError(f"cannot connect to Ray at {address}: {_one_line(exc)}{hint}") from None
        self.runs_per_gpu = runs_per_gpu

    def slots(self, requested: int | None, default: int) -> int:
        """CPU slots for the scheduler: --workers, else every CPU of the cluster."""
        return requested or max(1, int(ray.cluster_resources().get("CPU", 1)))

    def start(self, run: RunSpec, run_dir: RunDir) -> RayHandle:
        spec = json.loads(run_dir.spec_json.read_text(encoding="utf-8"))
        files = {rel: path.read_bytes() for rel, path in run_files(run_dir.path, LAUNCHER_OWNED)}
        if run.warm_start is not None:  # the node may not see the source's folder: its files travel along
            files.update(pack_warm_source(run.warm_start))
        cuda = run.device == "cuda"
        try:
            options = {"num_cpus": run.cpus, "num_gpus": (1 / self.runs_per_gpu) if cuda else 0}
            actor = RunAttempt.options(**options).remote(  # type: ignore[attr-defined]  # added by @ray.remote
                spec, files, pack_model(Path(spec["xml"])), cuda)
            return RayHandle(actor, run_dir, actor.start.remote())
        except RayError as exc:  # the cluster refused the actor: this run fails, the sweep goes on
            raise LaunchError(f"Ray could not start the run: {_one_line(exc)}") from None

    def close(self) -> None:
        ray.shutdown()


RAY_OOM_WORDS = ("running low on memory", "memory monitor")
"""What Ray says of an actor its memory monitor (Ray's OOM killer) killed: ActorDiedError carries the raylet's
words, not a type of its own (a task gets OutOfMemoryError). Not "out of memory" alone: an actor whose own
code raised torch's CUDA OutOfMemoryError was not killed by Ray."""


def end_of_shipment(shipment: Shipment) -> RunExit:
    """A worker's end as its node saw it: its exit code, or the node's OOM killer where a count there says so."""
    assert shipment.exit_code is not None, "the last shipment carries the exit code"
    if shipment.oom is not None:
        return RunExit.out_of_memory(shipment.oom)
    return RunExit.from_returncode(shipment.exit_code)


def end_of_actor(exc: RayError) -> RunExit:
    """A run attempt whose actor died unasked: killed for its memory where Ray says so, else lost."""
    text = str(exc)
    if isinstance(exc, OutOfMemoryError) or any(words.lower() in text.lower() for words in RAY_OOM_WORDS):
        return RunExit.out_of_memory(OomFacts("Ray's OOM killer (its memory monitor: the node ran low on memory)"))
    return RunExit.lost()


def _unreachable(address: str) -> str | None:
    """Why nothing answers at a host:port (or ray://host:port) address; None when something does, or
    for "local" and "auto", which ray.init resolves itself."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
