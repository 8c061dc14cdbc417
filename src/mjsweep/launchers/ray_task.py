"""The node side of the Ray backend: one actor per run attempt, placed by Ray where the run's CPUs
(and GPU share) are free, holding them until the run ends.

The actor recreates the run dir in a temp folder of its node (the node need not see the launcher's
filesystem), starts the worker as the local launcher does (spawn.py, childproc.py: thread caps, own process
group, killed by the kernel if the actor dies), and hands back what the worker wrote, a little at a time.
"""

from __future__ import annotations

import shutil
import signal
import socket
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import ray

from ..childproc import Child, child_env
from ..sweepdir.files import IN_RUN, RunDir
from .filesync import ChangeTracker, ModelFiles, Shipment, local_run_dir
from .oomkill import OomWatch
from .spawn import spawn_worker, worker_command

SYNC_WAIT_S = 1.0
"""How long sync() waits for the worker to end before answering: it paces the launcher's polling."""
LAUNCHER_OWNED = frozenset({IN_RUN.spec_json.as_posix(), IN_RUN.status_json.as_posix()})


def node_label() -> str:
    """This node, as status.json's host shows it: host name, IP and the start of Ray's node id."""
    node_id = ray.get_runtime_context().get_node_id()
    return f"{socket.gethostname()} {ray.util.get_node_ip_address()} node {node_id[:8]}"


@ray.remote(max_restarts=0, max_task_retries=0)
class RunAttempt:
    """One attempt at one run. The scheduler on the launcher does the retrying, from the checkpoint
    that came back, so Ray itself never restarts this actor."""

    def __init__(self, spec: dict, files: dict[str, bytes], model: ModelFiles, cuda: bool):
        self.tmp = Path(tempfile.mkdtemp(prefix="mjsweep-ray-"))
        self.run_path = local_run_dir(self.tmp, spec, files, model)
        self.tracker = ChangeTracker(self.run_path, LAUNCHER_OWNED)
        self.tracker.mark_sent()
        self.cuda = cuda
        self.proc: Child | None = None
        self.oom: OomWatch | None = None

    def start(self) -> str:
        """Start the worker; return this node's label."""
        env = child_env()
        env["MJSWEEP_NODE"] = ray.get_runtime_context().get_node_id()
        if not self.cuda:
            env["CUDA_VISIBLE_DEVICES"] = ""  # for cuda runs Ray has set it to this actor's GPU
        self.proc = spawn_worker(worker_command(self.run_path), self.run_path, RunDir(self.run_path).log, env)
        self.oom = OomWatch(self.proc.pid)  # the node's OOM killer, told apart from a kill -9 here
        return node_label()

    def sync(self) -> Shipment:
        """What changed since the last call; with the exit code once the worker has ended."""
        assert self.proc is not None, "start() first"
        deadline = time.monotonic() + SYNC_WAIT_S
        while self.proc.poll() is None and time.monotonic() < deadline:
            if self.oom is not None:
                self.oom.refresh()
            time.sleep(0.05)
        code = self.proc.poll()
        if code is None:
            return self.tracker.changes()
        self._signal(signal.SIGKILL)  # whatever the worker started dies with it
        shipment = self.tracker.changes(exit_code=code)
        if code == -signal.SIGKILL and self.oom is not None:
            shipment = replace(shipment, oom=self.oom.verdict())
        shutil.rmtree(self.tmp, ignore_errors=True)
        return shipment

    def interrupt(self) -> None:
        self._signal(signal.SIGINT)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        if self.proc is not None:  # None: start() failed, nothing to signal
            self.proc.signal(sig)
