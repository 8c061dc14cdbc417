"""Running a render process with a GL backend that works here: EGL (a GPU driver) first, then OSMesa
(software, on the CPU). The process reports a backend that cannot start with GL_UNAVAILABLE, and the
next one is tried; a MUJOCO_GL the user set is the only one tried."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence

from ..childproc import child_env

GL_UNAVAILABLE = 3
"""The render process's exit code when its GL backend cannot start."""
BACKENDS = ("egl", "osmesa")
INSTALL_HINT = ("on a machine without a GPU, install OSMesa (Debian/Ubuntu: apt-get install libosmesa6) "
                "and the Python side (pip install 'mjsweep[render]')")


class RenderUnavailable(Exception):
    """No GL backend works on this machine; str() says what to install, on one line."""


class RenderFailed(Exception):
    """The render process failed for another reason; str() is its last error line."""


def run_render_process(module: str, args: Sequence[str]) -> str:
    """Run `python -m MODULE ARGS` with the first GL backend that starts; return the backend used.
    Its progress lines (stderr) go to this process's stderr as they come."""
    chosen = os.environ.get("MUJOCO_GL")
    reasons = []
    for backend in (chosen,) if chosen else BACKENDS:
        env = child_env({**os.environ, "MUJOCO_GL": backend})
        env.pop("PYOPENGL_PLATFORM", None)  # mujoco sets the one that matches MUJOCO_GL
        proc = subprocess.run([sys.executable, "-m", module, *args], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, text=True)
        if proc.returncode == 0:
            return backend
        last = (proc.stdout.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        if proc.returncode != GL_UNAVAILABLE:
            raise RenderFailed(last)
        reasons.append(f"{backend}: {last}")
    raise RenderUnavailable(f"cannot render here ({'; '.join(reasons)}); {INSTALL_HINT}")


def run_job(main: Callable[[str], None]) -> None:
    """A render process's entry point: main(JOB.json path); any failure is one line on stdout for the
    launcher (a traceback would hide it) and exit code 1."""
    try:
        main(sys.argv[1])
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the launcher shows this line
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())}", flush=True)
        sys.exit(1)


def open_gl_or_exit(width: int, height: int):
    """In the render process: import MuJoCo and prove the backend can draw (a context of that size),
    or print why not and exit with GL_UNAVAILABLE. Returns the mujoco module."""
    try:
        import mujoco

        context = mujoco.GLContext(width, height)
        context.make_current()
        context.free()
    except Exception as exc:  # noqa: BLE001 - any failure here means this backend cannot draw
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())}", flush=True)
        sys.exit(GL_UNAVAILABLE)
    return mujoco
