"""Cross-evaluation's processes through engine/scheduler (crosseval/evaljobs.py), with a stand-in for the
evaluation worker in real processes: what a job says, a killed job retried, a failure reported."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from helpers.fake_sweep import run_spec
from mjsweep.crosseval.evaljobs import JOB_JSON, run_jobs
from mjsweep.crosseval.pairs import PolicyJob, Target

STANDIN = Path(__file__).parent / "helpers" / "cross_standin.py"


def standin(run_dir: Path) -> list[str]:
    return [sys.executable, str(STANDIN), str(run_dir / JOB_JSON)]


def policy_job(sweep: Path, name: str, behaviour: str, variants: tuple[str, ...] = ("a", "b")) -> PolicyJob:
    """A trained run `name` (a folder holding the stand-in's behaviour) to evaluate on `variants`."""
    trained = sweep / name
    trained.mkdir(parents=True)
    (trained / "behaviour.txt").write_text(behaviour)
    # Trained on a GPU: its evaluation still runs on the CPU, in one slot.
    run = run_spec(name, 0, run_id=name, device="cuda", cpus=2)
    targets = [Target(v, "HalfCheetah-v5", "/nonexistent.xml", {}, None, sweep / "cross" / name / f"{v}.json")
               for v in variants]
    return PolicyJob(run, trained, targets)


def results(sweep: Path) -> dict[str, dict]:
    return {p.relative_to(sweep / "cross").as_posix(): json.loads(p.read_text())
            for p in sorted((sweep / "cross").glob("*/*.json"))}


def attempts(sweep: Path, name: str) -> int:
    return len((sweep / name / "attempts.txt").read_text())


def test_every_job_runs_and_says_its_pairs(tmp_path):
    said: list[str] = []
    todo = [policy_job(tmp_path, "p1", "ok"), policy_job(tmp_path, "p2", "ok", ("a",))]
    assert run_jobs(todo, episodes=3, deterministic=True, workers=2, say=said.append, command=standin) == []
    assert set(results(tmp_path)) == {"p1/a.json", "p1/b.json", "p2/a.json"}
    assert all(r["episodes"] == 3 for r in results(tmp_path).values())
    assert sorted(said) == ["cross: p1 on a: mean return 1.00", "cross: p1 on b: mean return 1.00",
                            "cross: p2 on a: mean return 1.00"]


def test_a_killed_evaluation_is_retried_and_said_once(tmp_path):
    said: list[str] = []
    todo = [policy_job(tmp_path, "p1", "die-once")]
    assert run_jobs(todo, episodes=1, deterministic=True, workers=1, say=said.append, command=standin) == []
    assert attempts(tmp_path, "p1") == 2
    assert set(results(tmp_path)) == {"p1/a.json", "p1/b.json"}
    retried = [line for line in said if "evaluating it again" in line]
    assert len(retried) == 1 and retried[0].startswith("cross: p1: killed")
    assert said.count("cross: p1 on a: mean return 1.00") == 1


def test_a_failed_evaluation_is_reported_with_its_last_line_and_not_retried(tmp_path):
    todo = [policy_job(tmp_path, "bad", "fail"), policy_job(tmp_path, "good", "ok")]
    failed = run_jobs(todo, episodes=1, deterministic=True, workers=2, say=lambda line: None, command=standin)
    assert failed == ["bad: boom"]
    assert attempts(tmp_path, "bad") == 1
    assert set(results(tmp_path)) == {"good/a.json", "good/b.json"}


def test_an_evaluation_that_exits_0_without_its_results_failed(tmp_path):
    failed = run_jobs([policy_job(tmp_path, "p1", "forget")], episodes=1, deterministic=True, workers=1,
                      say=lambda line: None, command=standin)
    assert failed == ["p1: attempt 1"]
    assert not (tmp_path / "cross").exists()


@pytest.mark.slow
def test_a_stop_interrupts_then_kills_the_evaluations_and_raises_keyboard_interrupt(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_crosseval_jobs import policy_job, standin
        from mjsweep.crosseval.evaljobs import run_jobs
        try:
            run_jobs([policy_job(Path({str(tmp_path)!r}), "p1", "stubborn")], 1, True, 1, print, command=standin)
        except KeyboardInterrupt:
            print("stopped", flush=True)
            sys.exit(130)
    """)
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    waiting = tmp_path / "p1" / "waiting"
    while not waiting.is_file() or not waiting.read_text():
        assert launcher.poll() is None, launcher.stdout.read() if launcher.stdout else ""
        time.sleep(0.02)
    evaluation = psutil.Process(int(waiting.read_text()))
    launcher.send_signal(signal.SIGINT)
    out, _ = launcher.communicate()
    assert launcher.returncode == 130 and out.splitlines()[-1] == "stopped"
    assert not evaluation.is_running() or evaluation.status() == psutil.STATUS_ZOMBIE


def test_the_matrix_gives_an_interval_from_two_seeds_and_none_for_one(tmp_path):
    from mjsweep.crosseval.pairs import matrix, to_csv
    from mjsweep.sweepdir.files import SweepDir, write_model
    from mjsweep.sweepdir.models import CrossResult

    sweep = SweepDir(tmp_path)
    solo, pair = [run_spec("a", 0)], [run_spec("b", 0), run_spec("b", 1)]
    for run, mean in zip([*solo, *pair], (3.0, 1.0, 3.0), strict=True):
        path = sweep.cross_result(run.run_id, "a")
        path.parent.mkdir(parents=True)
        write_model(path, CrossResult(episodes=1, mean=mean))
    one, two = matrix(sweep, [*solo, *pair])
    assert (one.train, one.seeds, one.mean, one.ci_low, one.ci_high) == ("a", 1, 3.0, None, None)
    assert (two.train, two.seeds, two.mean) == ("b", 2, 2.0) and two.ci_low < 2.0 < two.ci_high
    assert to_csv([one]).splitlines()[1] == "a,a,1,3,,,"  # no interval: empty cells
