"""The template process: `python -m mjsweep.launchers.template FD LAUNCHER_PID`, started by the local
launcher with the same one-thread caps as a worker. It imports what every worker imports (torch,
stable-baselines3, gymnasium, mujoco, numpy, the worker's own modules) once, then forks a child per run
request on the socket FD, so that a run skips those seconds of imports.

Forking is only safe from a process with one thread and no GPU context: the template never touches a GPU
(the launcher starts it with CUDA_VISIBLE_DEVICES empty and gives GPU runs a fresh exec) and reports its
thread count after the imports; the launcher refuses a template with more than one. It dies with the
launcher (PDEATHSIG, and at the end of the socket's stream) and its children die with it.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import traceback

from ..childproc import dying_with
from .template_child import become_worker, run_command
from .template_wire import Reader, send

PRELOADED = ("numpy", "torch", "torch._dynamo", "gymnasium", "gymnasium.envs.mujoco.mujoco_env", "mujoco",
             "stable_baselines3", "mjsweep.robots.envs", "mjsweep.robots.modelfiles", "mjsweep.plan.runs",
             "mjsweep.sweepdir.files", "mjsweep.sweepdir.csvfiles", "mjsweep.sweepdir.models",
             "mjsweep.worker.tracking", "mjsweep.worker.checkpoints", "mjsweep.worker.train_envs",
             "mjsweep.worker.evaluation", "mjsweep.worker.model", "mjsweep.worker.iterations", "mjsweep.worker.main",
             "mjsweep.worker.resume", "mjsweep.worker.reevaluation", "mjsweep.worker.physics_eval",
             "torch.utils.serialization",
             "torch.profiler._cupti_monitor")
"""What the worker imports in a run. torch._dynamo is the largest: torch imports it lazily when the first
optimizer is built; torch.save and torch.load import the last two. tests/test_template.py checks that a
run imports nothing of torch, SB3, gymnasium, MuJoCo, numpy or mjsweep beyond these."""


def main(argv: list[str]) -> int:
    fd, launcher_pid = int(argv[0]), int(argv[1])
    dying_with(launcher_pid)()
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the launcher stops runs; a stray Ctrl-C must not stop this
    preload()
    send(sock, {"ready": True, "threads": thread_count()})
    serve(sock)
    return 0


def preload() -> None:
    import importlib
    import pkgutil

    for name in PRELOADED:
        importlib.import_module(name)
    import gymnasium.envs.mujoco as gym_mujoco

    for module in pkgutil.iter_modules(gym_mujoco.__path__):
        if module.name.endswith("_v5"):  # the robots a sweep starts from (HalfCheetah-v5, Ant-v5, ...)
            importlib.import_module(f"{gym_mujoco.__name__}.{module.name}")
    import platform

    import torch

    platform.processor()  # cached for the children: SB3 records it in every saved model, by running `uname -p`
    torch.set_num_threads(1)  # the interop pool is left for the worker to size: torch allows that once


def thread_count() -> int:
    """This process's threads as the kernel counts them (native threads included)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))


def serve(sock: socket.socket) -> None:
    """Fork a child per request and report every child's end, until the launcher's end of the socket closes."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that SIGCHLD writes to the wakeup pipe
    reader = Reader(sock)
    while not reader.closed:
        readable, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        if sock.fileno() in readable:
            for request in reader.read():
                send(sock, fork_child(request, sock, [wake_r, wake_w]))
        report_ended(sock)


def fork_child(request: dict, sock: socket.socket, inherited: list[int]) -> dict:
    """Fork the child of one request; {"pid"} once it leads its own process group, or {"error"}."""
    try:
        log_fd = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        return {"error": f"cannot open {request['log']}: {exc}"}
    ready_r, ready_w = os.pipe()
    die_with_template = dying_with(os.getpid())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.set_wakeup_fd(-1)  # before its pipe is closed: a signal must not write to a stale fd
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            sock.close()  # through its object, which would otherwise close the fd number again when collected
            for fd in (*inherited, ready_r):
                os.close(fd)
            become_worker(log_fd, request["cwd"], request["env"], die_with_template, ready_w)
            code = run_command(request["argv"])
        except BaseException:  # noqa: BLE001 - a set-up that failed: its traceback goes to the run's log
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(log_fd)
    os.close(ready_w)
    os.read(ready_r, 1)  # end of file once the child has its own session, or has died
    os.close(ready_r)
    return {"pid": pid}


def report_ended(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        send(sock, {"exited": pid, "status": status})


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(code)  # the interpreter's teardown of torch and the rest takes seconds and saves nothing
