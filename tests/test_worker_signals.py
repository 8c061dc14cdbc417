"""A stop signal reaches the worker as a stop, wherever in its set-up or training it lands."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from helpers.commands import write_spec
from mjsweep.engine.sweep import prepare

# Runs the real worker with one import hooked: the moment gymnasium's `try: import mujoco / except
# ImportError` asks for mujoco, SIGTERM arrives inside code that turns any exception into ImportError,
# as pybind11 module initialisation does (mujoco is such a module). A handler that raised there would
# make the stop a "MuJoCo is not installed" error: exit 1, a deterministic failure never retried.
HOOKED_WORKER = textwrap.dedent("""
    import importlib.abc, os, signal, sys, time
    from mjsweep.worker import main as worker

    class SignalInsideALibrary(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != "mujoco":
                return None
            sys.meta_path.remove(self)
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)  # the handler runs here, inside the library
            except BaseException as exc:
                raise ImportError("initialization failed") from exc
            return None

    sys.meta_path.insert(0, SignalInsideALibrary())
    sys.exit(worker.main([sys.argv[1]]))
""")


def test_a_stop_signal_inside_library_code_stops_the_worker(tmp_path, tiny_spec):
    plan = prepare(write_spec(tmp_path, tiny_spec))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text(json.dumps(plan.runs[0].model_dump(mode="json")))
    done = subprocess.run([sys.executable, "-c", HOOKED_WORKER, str(run_dir)], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == 130, output
    assert "mjsweep.worker: stopped by a signal" in output and "Traceback" not in output, output
    assert not (run_dir / "result.json").exists() and not (run_dir / "checkpoints").exists()
