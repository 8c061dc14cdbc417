"""What a child forked by the template process does: become what `childproc.Child.start` would have started (its
own session and process group, killed with its parent, its output in the run's log, default signal
handling, the run's environment and folder), then run the same command line inside this interpreter."""

from __future__ import annotations

import atexit
import os
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path


def become_worker(log_fd: int, cwd: str, env: dict[str, str], die_with_template: Callable[[], None],
                  ready_fd: int) -> None:
    """The set-up a fresh exec gets from childproc.Child.start. Closes ready_fd once the child leads its own
    process group, so that the template answers with a pid that can already be signalled as a group.
    die_with_template: childproc.dying_with(the template's pid), which itself dies with the launcher."""
    os.setsid()
    die_with_template()
    os.close(ready_fd)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh interpreter has it
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(null)
    os.close(log_fd)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


def run_command(argv: list[str]) -> int:
    """argv as `python ARGV...` would run it (`-m module args`, `-c code args` or `script args`), and its
    exit code."""
    try:
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""  # what -c puts first on the path
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        elif argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()  # what -m puts first on the path
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:  # an interpreter ends itself with SIGINT then, and so does this child
        traceback.print_exc()
        _interpreter_exit(1)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 1
    except BaseException:  # noqa: BLE001 - the interpreter would print it and exit 1
        traceback.print_exc()
        code = 1
    return _interpreter_exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _interpreter_exit(code: int) -> int:
    """What the interpreter does on its way out before the process ends: join the threads it waits for,
    run the atexit handlers, flush the standard streams."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code
