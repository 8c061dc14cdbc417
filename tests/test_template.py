"""Runs forked from the template process keep every guarantee of a fresh exec: the same exits for the same
endings, their own session and process group, their own log, death with the template (which dies with
the launcher), a template started again after it died, and the same training for the same seed."""

from __future__ import annotations

import csv
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from helpers.commands import write_spec
from mjsweep import launchers
from mjsweep.engine.sweep import prepare
from mjsweep.launchers.base import RunExit
from mjsweep.launchers.local import LocalHandle, LocalLauncher
from mjsweep.launchers.template_client import TemplateChild
from mjsweep.sweepdir.files import RunDir, write_json_atomic

STUB = Path(__file__).parent / "helpers" / "stub_worker.py"
WAIT_S = 300.0  # a bound on hanging, never on speed


class Cpu:
    device = "cpu"


def run_dir_with(tmp_path: Path, name: str, spec: dict) -> RunDir:
    run_dir = RunDir(tmp_path / name)
    run_dir.path.mkdir(parents=True)
    write_json_atomic(run_dir.spec_json, spec)
    return run_dir


def wait_end(handle: LocalHandle) -> RunExit:
    deadline = time.monotonic() + WAIT_S
    while (end := handle.poll()) is None:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.02)
    return end


def wait_file(path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


ENDINGS = {
    "exit code": ("import sys; print('bye'); sys.exit(3)", RunExit.exited(3)),
    "exception": ("print('bye'); raise ValueError('boom')", RunExit.exited(1)),
    "exit message": ("print('bye'); raise SystemExit('a message')", RunExit.exited(1)),
    "uncaught Ctrl-C": ("print('bye'); raise KeyboardInterrupt", RunExit.killed(signal.SIGINT)),
    "default SIGTERM": ("import os, signal; print('bye', flush=True); os.kill(os.getpid(), signal.SIGTERM)",
                        RunExit.killed(signal.SIGTERM)),
    "thread joined at exit": ("import threading, time; print('bye')\n"
                              "threading.Thread(target=lambda: (time.sleep(0.2), print('joined'))).start()",
                              RunExit.exited(0)),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_forked_run_ends_as_the_same_exec_would(tmp_path, ending):
    code, expected = ENDINGS[ending]
    logs = {}
    for start_with in ("exec", "template"):
        with LocalLauncher(command=lambda p: [sys.executable, "-c", code, str(p)], start_with=start_with) as launcher:
            run_dir = run_dir_with(tmp_path, start_with, {})
            handle = launcher.start(Cpu(), run_dir)
            assert isinstance(handle.proc, TemplateChild) is (start_with == "template")
            assert wait_end(handle) == expected, start_with
            logs[start_with] = run_dir.log.read_text()
    assert "bye" in logs["template"]
    for line in ("Traceback", "boom", "a message", "joined"):
        assert (line in logs["exec"]) == (line in logs["template"]), line


def test_a_forked_run_leads_its_own_session_in_its_run_dir_and_sees_the_run_env(tmp_path):
    probe = textwrap.dedent("""
        import json, os, sys, threading
        json.dump({"pgid": os.getpgid(0), "sid": os.getsid(0), "cwd": os.getcwd(), "argv": sys.argv,
                   "threads": threading.active_count(), "omp": os.environ.get("OMP_NUM_THREADS"),
                   "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": os.environ.get("MJSWEEP_START"),
                   "stdin": sys.stdin.read()}, open("probe.json", "w"))
    """)
    with LocalLauncher(command=lambda p: [sys.executable, "-c", probe, str(p)], start_with="template") as launcher:
        run_dir = run_dir_with(tmp_path, "run", {})
        handle = launcher.start(Cpu(), run_dir)
        assert wait_end(handle) == RunExit.exited(0), run_dir.log.read_text()
        template_pid = launcher._template.proc.pid
    seen = json.loads((run_dir.path / "probe.json").read_text())
    assert seen["pgid"] == seen["sid"] == handle.pid != template_pid
    assert seen["cwd"] == str(run_dir.path) and seen["argv"] == ["-c", str(run_dir.path)]
    assert seen["threads"] == 1 and seen["omp"] == "1" and seen["cuda"] == "" and seen["start"] == "template"
    assert seen["stdin"] == ""


def test_the_template_holds_one_thread_and_its_runs_die_with_it_and_it_is_started_again(tmp_path):
    with LocalLauncher(command=lambda p: [sys.executable, str(STUB), str(p)], start_with="template") as launcher:
        first = run_dir_with(tmp_path, "first", {"total_timesteps": 400_000})
        handle = launcher.start(Cpu(), first)
        template = psutil.Process(launcher._template.proc.pid)
        assert template.num_threads() == 1
        assert psutil.Process(handle.pid).ppid() == template.pid
        wait_file(first.progress_csv)
        template.kill()
        assert wait_end(handle) == RunExit.killed(signal.SIGKILL)  # PDEATHSIG: nothing outlives the template
        assert not psutil.pid_exists(handle.pid) or psutil.Process(handle.pid).status() == psutil.STATUS_ZOMBIE

        second = run_dir_with(tmp_path, "second", {"total_timesteps": 500})
        again = launcher.start(Cpu(), second)
        assert isinstance(again.proc, TemplateChild) and launcher._template.proc.pid != template.pid
        assert wait_end(again) == RunExit.exited(0)
        assert second.result_json.exists()


def test_the_template_socket_turns_readable_when_a_forked_run_ends(tmp_path):
    waits_for_go = "import os, time\nwhile not os.path.exists('go'): time.sleep(0.01)"
    with LocalLauncher(command=lambda p: [sys.executable, "-c", waits_for_go, str(p)],
                       start_with="template") as launcher:
        launcher.submit([Cpu()], None)
        assert launcher.news_fd() is None  # no run: nothing it could say is news
        run_dir = run_dir_with(tmp_path, "run", {})
        handle = launcher.start(Cpu(), run_dir)
        fd = launcher.news_fd()
        assert fd is not None and select.select([fd], [], [], 0)[0] == []  # running: no news yet
        (run_dir.path / "go").touch()
        assert select.select([fd], [], [], WAIT_S)[0] == [fd]
        assert handle.poll() == RunExit.exited(0)  # the news was its end, already there to read
        assert launcher.news_fd() is None


@pytest.mark.parametrize("args, starts", [
    (["spec.yaml", "--workers", "2"], True),
    (["spec.yaml", "--start", "template", "-q"], True),
    (["spec.yaml", "--start", "exec"], False),
    (["spec.yaml", "--start=exec"], False),
    (["spec.yaml", "--backend", "ray"], False),
    (["spec.yaml", "--backend=slurm"], False),
    (["spec.yaml", "--dry-run"], False),
    (["spec.yaml", "--help"], False),
    (["spec.yaml", "--start"], False),  # the parser refuses it, in its own words
])
def test_sweep_run_starts_its_template_before_parsing_when_its_options_want_one(args, starts):
    launchers.prestart_template(args)
    prestarted = launchers._prestarted
    try:
        assert (prestarted is not None) is starts
    finally:
        if prestarted is not None:
            prestarted.close()
        launchers._prestarted = None


def test_the_parsed_options_adopt_the_prestarted_template_or_end_it():
    launchers.prestart_template(["spec.yaml"])
    prestarted = launchers._prestarted
    adopted = launchers.early_template("local", "auto")
    try:
        assert prestarted is not None and adopted is prestarted and launchers._prestarted is None
    finally:
        adopted.close()
    launchers.prestart_template(["spec.yaml"])
    stray = launchers._prestarted
    assert launchers.early_template("local", "exec") is None  # the parser read what the guess missed
    assert stray is not None and stray.proc.poll() is not None  # ended, not left to run


def test_a_forked_run_knows_the_processor_without_running_uname(tmp_path):
    # SB3 records platform.platform() in every saved model; the template asked once for all its runs
    probe = ("import platform, subprocess\n"
             "def refuse(*a, **k): raise AssertionError('a subprocess ran')\n"
             "subprocess.check_output = subprocess.run = subprocess.Popen = refuse\n"
             "print('processor:', platform.processor(), platform.platform())")
    with LocalLauncher(command=lambda p: [sys.executable, "-c", probe, str(p)], start_with="template") as launcher:
        run_dir = run_dir_with(tmp_path, "run", {})
        assert wait_end(launcher.start(Cpu(), run_dir)) == RunExit.exited(0), run_dir.log.read_text()
    assert "processor:" in run_dir.log.read_text()


def test_a_run_whose_log_cannot_be_opened_fails_to_start(tmp_path):
    with LocalLauncher(command=lambda p: [sys.executable, str(STUB), str(p)], start_with="template") as launcher:
        run_dir = RunDir(tmp_path / "missing")  # no folder: neither the log nor the cwd exists
        with pytest.raises(OSError, match="cannot open"):
            launcher.start(Cpu(), run_dir)


LAUNCHER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from mjsweep.launchers.local import LocalLauncher
    from mjsweep.sweepdir.files import RunDir

    class Cpu:
        device = "cpu"

    launcher = LocalLauncher(command=lambda p: [sys.executable, sys.argv[1], str(p)], start_with="template")
    handle = launcher.start(Cpu(), RunDir(Path(sys.argv[2])))
    print(launcher._template.proc.pid, handle.pid, flush=True)
    time.sleep(3600)
""")


def test_kill_9_of_the_launcher_leaves_neither_template_nor_run(tmp_path):
    run_dir = run_dir_with(tmp_path, "run", {"total_timesteps": 400_000})
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(STUB), str(run_dir.path)],
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
    pids = [int(pid) for pid in launcher.stdout.readline().split()]
    processes = [psutil.Process(pid) for pid in pids]
    wait_file(run_dir.progress_csv)
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    gone, alive = psutil.wait_procs(processes, timeout=WAIT_S)
    assert len(pids) == 2 and not alive, f"orphans: {[p.pid for p in alive]}"


def episodes(run_dir: Path) -> list[tuple[str, str]]:
    lines = [line for line in run_dir.joinpath("monitor.csv").open() if not line.startswith("#")]
    return [(row["r"], row["l"]) for row in csv.DictReader(lines)]


@pytest.mark.slow
def test_the_same_seed_trains_the_same_through_exec_and_the_template(tmp_path, tiny_spec):
    tiny_spec.update(total_timesteps=1024, runs_dir=str(tmp_path / "runs"))
    (run,) = prepare(write_spec(tmp_path, tiny_spec), check_envs=False).runs
    results = {}
    for start_with in ("exec", "template"):
        with LocalLauncher(start_with=start_with) as launcher:
            run_dir = run_dir_with(tmp_path, start_with, run.model_dump(mode="json"))
            handle = launcher.start(run, run_dir)
            assert wait_end(handle) == RunExit.exited(0), run_dir.log.read_text()
        results[start_with] = (json.loads(run_dir.result_json.read_text()), episodes(run_dir.path))
    (exec_result, exec_episodes), (template_result, template_episodes) = results["exec"], results["template"]
    assert template_episodes == exec_episodes and len(exec_episodes) >= 5
    assert template_result["eval_mean_return"] == exec_result["eval_mean_return"]
    assert (exec_result["started_by"], template_result["started_by"]) == ("exec", "template")
    for result in (exec_result, template_result):  # thread caps, verified from inside the worker
        assert result["torch_threads"] == 1 and result["torch_interop_threads"] == 1


UNSAFE_TEMPLATES = {
    "a second thread": ("import threading, time\n"
                        "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n",
                        "2 threads after its imports"),
    "dead at start": ("import os\nos._exit(3)\n", "it died"),
}


@pytest.mark.parametrize("case", list(UNSAFE_TEMPLATES))
def test_a_template_that_cannot_serve_is_refused_and_runs_are_execd(tmp_path, monkeypatch, capsys, case):
    code, why = UNSAFE_TEMPLATES[case]
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nif 'mjsweep.launchers.template' in sys.orig_argv:\n"
                                           + textwrap.indent(code, "    "))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    with LocalLauncher(command=lambda p: [sys.executable, str(STUB), str(p)], start_with="template") as launcher:
        run_dir = run_dir_with(tmp_path, "run", {"total_timesteps": 500})
        launcher.submit([Cpu()], None)
        handle = launcher.start(Cpu(), run_dir)
        assert not isinstance(handle.proc, TemplateChild) and launcher.start_with == "exec"
        assert wait_end(handle) == RunExit.exited(0)
    err = capsys.readouterr().err
    assert why in err and "starting runs by exec from now on" in err


def test_a_gpu_run_is_execd_with_its_gpu_and_the_template_never_sees_one(tmp_path):
    probe = "import json, os; json.dump(os.environ.get('CUDA_VISIBLE_DEVICES'), open('gpu.json', 'w'))"

    class Cuda:
        device = "cuda"

    with LocalLauncher(command=lambda p: [sys.executable, "-c", probe, str(p)], gpus=["0"],
                       start_with="template") as launcher:
        launcher.submit([Cpu(), Cuda()], None)
        run_dir = run_dir_with(tmp_path, "gpu", {})
        handle = launcher.start(Cuda(), run_dir)
        assert not isinstance(handle.proc, TemplateChild)
        assert wait_end(handle) == RunExit.exited(0)
        template_env = psutil.Process(launcher._template.proc.pid).environ()
    assert json.loads((run_dir.path / "gpu.json").read_text()) == "0"
    assert template_env["CUDA_VISIBLE_DEVICES"] == "" and template_env["OMP_NUM_THREADS"] == "1"


PRELOAD_PROBE = textwrap.dedent("""
    import json, sys
    from mjsweep.launchers.template import preload
    preload()
    before = set(sys.modules)
    from mjsweep.worker import main as worker
    code = worker.main([sys.argv[1]])
    print(json.dumps({"code": code, "new": sorted(set(sys.modules) - before)}))
""")
HEAVY = ("torch", "stable_baselines3", "gymnasium", "mujoco", "numpy", "scipy", "matplotlib", "mjsweep")


def test_a_run_imports_no_heavy_module_the_template_did_not(tmp_path, tiny_spec):
    # A module the template did not import is imported again by every forked run: its cost is paid per run.
    plan = prepare(write_spec(tmp_path, {**tiny_spec, "normalize": True, "eval": {"episodes": 1, "every": 256}}))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "spec.json").write_text(json.dumps(plan.runs[0].model_dump(mode="json")))
    done = subprocess.run([sys.executable, "-c", PRELOAD_PROBE, str(run_dir)], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe["code"] == 0 and (run_dir / "result.json").exists()
    assert [m for m in probe["new"] if m.split(".")[0] in HEAVY] == []
