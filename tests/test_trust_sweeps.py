"""A sweep folder someone else wrote runs none of their code until the user trusts it (sweepdir/trust.py): a
finished tiny-walker sweep with `normalize: true`, its pickles replaced by ones that create a marker file when
unpickled, handed to another user (nobody) as a colleague's folder on a shared drive would be. Every path that
would unpickle refuses it first (the marker never appears); trusted, it is unpickled (the marker appears); what
reads JSON and CSV (report, status, mjsweep.load's tables and curves) works on it without trust."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import pwd
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import mjsweep
from helpers.commands import run_sweep, write_spec
from helpers.models import TINY_SPEC
from mjsweep.sweepdir import trust

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="handing a folder to another user (chown) needs root")

SPEC = {**yaml.safe_load(yaml.safe_dump(TINY_SPEC)), "normalize": True, "checkpoint_every": 256}


class _CreatesFile:
    """Unpickled, it creates `path`: the marker that code of the pickle's author ran."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


@pytest.fixture(scope="module")
def doctored(tmp_path_factory) -> tuple[Path, Path]:
    """(a finished sweep folder whose every pickle creates the marker, the marker's path), trained once."""
    base = tmp_path_factory.mktemp("doctored")
    spec = write_spec(base / "train", SPEC)
    trained = run_sweep("run", str(spec), "-q", env={trust.ENV: "", "MJSWEEP_REPORT_EVERY": "off"})
    assert trained.returncode == 0, trained.stdout + trained.stderr
    marker = base / "marker"
    payload = pickle.dumps(_CreatesFile(marker))
    sweep = base / "train" / "runs" / SPEC["name"]
    for path in sweep.rglob("*"):
        if path.suffix == ".pkl":
            path.write_bytes(payload)
        elif path.suffix == ".zip":
            _doctor_model(path, payload)
    for record in sweep.glob("*/checkpoints/checkpoint.json"):  # as a doctor who knows the format would
        record.write_text(json.dumps(_rehashed(json.loads(record.read_text()), record.parent)))
    return sweep, marker


def _rehashed(checkpoint: dict, folder: Path) -> dict:
    """checkpoint.json with the sha256 of its files as they are now, so that a resume verifies them."""
    return {**checkpoint, "earlier": [_rehashed(c, folder) for c in checkpoint["earlier"]],
            "sha256": {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in checkpoint["sha256"]}}


def _doctor_model(path: Path, payload: bytes) -> None:
    """The model zip's observation space (a pickle SB3 keeps as a `:serialized:` field) replaced by `payload`."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data["observation_space"][":serialized:"] = base64.b64encode(payload).decode()
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)


@pytest.fixture
def colleagues(doctored, tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(a copy of the doctored sweep folder in tmp_path/runs, owned by nobody; the marker, not there yet). No
    folder is trusted by this test's environment or the user's config."""
    sweep, marker = doctored
    monkeypatch.delenv(trust.ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    marker.unlink(missing_ok=True)
    copy = tmp_path / "runs" / sweep.name
    shutil.copytree(sweep, copy)
    nobody = pwd.getpwnam("nobody")
    for folder, _, names in os.walk(copy):
        for path in (folder, *(os.path.join(folder, name) for name in names)):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    return copy, marker


def _refused(done: subprocess.CompletedProcess, sweep: Path) -> str:
    """The one error line of a command refused for the untrusted folder, exit 2."""
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {sweep}") and "not unpickled, as that can run code" in line, line
    assert "owned by nobody" in line and f"--trust {sweep}" in line, line
    return line


def test_reading_a_folder_unpickles_nothing_and_needs_no_trust(colleagues, monkeypatch):
    sweep, marker = colleagues

    def refuse(*args, **kwargs):
        raise AssertionError("unpickled")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    loaded = mjsweep.load(sweep)
    assert [r.final_return is not None for r in loaded.runs] == [True]
    assert loaded.best().run_id == loaded.runs[0].run_id
    assert len(loaded.report()) == 1 and len(loaded.to_dataframe()) == 1
    assert {p.metric for p in loaded.curve_points()} == {"ep_rew_mean"} and not loaded.curves().empty
    # The commands, in a process whose pickle refuses to load anything.
    code = ("import pickle, sys\n"
            "def refuse(*a, **k): raise AssertionError('unpickled')\n"
            "pickle.load = pickle.loads = pickle.Unpickler = refuse\n"
            "from mjsweep.ui.cli import main\n"
            "sys.argv = ['sweep', *sys.argv[1:]]\n"
            "main()\n")
    for args in (["report", str(sweep)], ["report", str(sweep), "--format", "json"], ["status", str(sweep)]):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
        assert done.returncode == 0, done.stdout + done.stderr
        assert "walker" in done.stdout, done.stdout
    assert not marker.exists()


def test_policy_refuses_an_untrusted_folder_and_loads_a_trusted_one(colleagues, monkeypatch):
    sweep, marker = colleagues
    run = mjsweep.load(sweep).best()
    with pytest.raises(mjsweep.UntrustedFolderError, match="owned by nobody") as refused:
        run.policy()
    assert isinstance(refused.value, mjsweep.InputError)
    assert not marker.exists()

    for trusted in (lambda: mjsweep.load(sweep, trust=[sweep]).best().policy(),
                    lambda: run.policy(trust=[sweep.parent])):
        with pytest.raises(Exception) as loaded:  # what the doctored pickle breaks after it ran
            trusted()
        assert not isinstance(loaded.value, mjsweep.UntrustedFolderError)
        assert marker.exists()
        marker.unlink()
    monkeypatch.setenv(trust.ENV, str(sweep))
    with pytest.raises(Exception) as loaded:
        run.policy()
    assert not isinstance(loaded.value, mjsweep.UntrustedFolderError) and marker.exists()


def test_a_folder_others_can_write_is_refused_though_it_is_the_users(colleagues):
    sweep, marker = colleagues
    for folder, _, names in os.walk(sweep):
        for path in (folder, *(os.path.join(folder, name) for name in names)):
            os.chown(path, os.geteuid(), os.getegid())
    sweep.chmod(0o777)
    with pytest.raises(mjsweep.UntrustedFolderError, match=f"its folder {sweep} is writable by every user"):
        mjsweep.load(sweep).best().policy()
    assert not marker.exists()


@pytest.mark.parametrize("command", [["video"], ["evaluate", "--cross"], ["verify"]])
def test_the_commands_that_unpickle_refuse_an_untrusted_folder(colleagues, command):
    sweep, marker = colleagues
    before = sorted(p.name for p in sweep.iterdir())
    _refused(run_sweep(*command, str(sweep)), sweep)
    assert not marker.exists()
    assert sorted(p.name for p in sweep.iterdir()) == before  # no videos/, no cross/


@pytest.mark.slow
def test_cross_evaluation_trusted_with_the_option_unpickles_in_its_processes(colleagues):
    sweep, marker = colleagues
    done = run_sweep("evaluate", "--cross", str(sweep), "--trust", str(sweep), "--workers", "1")
    # Past the command's check, the evaluation process (checking again, with the trust it was handed) loads
    # the doctored model, which then fails.
    assert marker.exists(), done.stdout + done.stderr
    assert done.returncode == 1 and "not unpickled" not in done.stderr


def test_a_process_started_on_an_untrusted_folder_refuses_by_itself(colleagues, tmp_path):
    sweep, marker = colleagues
    [run] = [p for p in sweep.iterdir() if (p / "model.zip").exists()]
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": str(run / "model.zip"), "vecnormalize": str(run / "vecnormalize.pkl"),
                               "algo": "ppo", "seed": 0, "episodes": 1, "deterministic": True, "targets": []}))
    done = subprocess.run([sys.executable, "-m", "mjsweep.crosseval.evaluator", str(job)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "UntrustedFolderError" in done.stderr, done.stderr
    assert f"{run / 'model.zip'}: not unpickled" in done.stderr
    assert not marker.exists()


def _make_resumable(sweep: Path) -> None:
    """The run as if interrupted after its last checkpoint: `sweep run` resumes it."""
    [run] = [p for p in sweep.iterdir() if (p / "checkpoints").is_dir()]
    status = json.loads((run / "status.json").read_text())
    (run / "status.json").write_text(json.dumps({**status, "state": "interrupted", "returncode": 130}))
    (run / "result.json").unlink()


def test_sweep_run_refuses_to_resume_an_untrusted_folder(colleagues, tmp_path):
    sweep, marker = colleagues
    _make_resumable(sweep)
    spec = write_spec(tmp_path, SPEC)
    _refused(run_sweep("run", str(spec), "-q"), sweep)
    with pytest.raises(mjsweep.UntrustedFolderError, match="owned by nobody"):
        mjsweep.run(spec)
    assert not marker.exists()
    assert json.loads((next(sweep.glob("*/status.json"))).read_text())["state"] == "interrupted"


@pytest.mark.slow
def test_sweep_run_resumes_a_folder_trusted_in_the_environment(colleagues, tmp_path):
    sweep, marker = colleagues
    _make_resumable(sweep)
    spec = write_spec(tmp_path, SPEC)
    done = run_sweep("run", str(spec), "-q", env={trust.ENV: str(sweep)})
    # The worker resumed from the doctored checkpoint: it unpickled it (the marker), and then failed on it.
    assert marker.exists(), done.stdout + done.stderr
    assert "not unpickled" not in done.stderr


def _warm_spec(tmp_path: Path, sweep: Path) -> Path:
    return write_spec(tmp_path / "warm", {**SPEC, "name": "warm",
                                          "warm_start": {"sweep": str(sweep), "variant": "walker", "best": True}})


def test_a_warm_start_from_an_untrusted_folder_is_refused(colleagues, tmp_path):
    sweep, marker = colleagues
    [run] = [p for p in sweep.iterdir() if (p / "model.zip").exists()]
    done = run_sweep("run", str(_warm_spec(tmp_path, sweep)), "-q")
    assert done.returncode == 2 and f"--trust {run}" in done.stderr, done.stderr
    assert "owned by nobody" in done.stderr
    assert not marker.exists() and not (tmp_path / "warm" / "runs").exists()


@pytest.mark.slow
def test_a_warm_start_from_a_folder_trusted_with_the_option_loads_it_in_the_worker(colleagues, tmp_path):
    sweep, marker = colleagues
    done = run_sweep("run", str(_warm_spec(tmp_path, sweep)), "-q", "--trust", str(sweep))
    assert marker.exists(), done.stdout + done.stderr  # the warm run's worker loaded the source
    assert done.returncode == 1 and "not unpickled" not in done.stderr


@pytest.mark.slow
def test_a_worker_started_on_an_untrusted_run_refuses_to_resume_it_by_itself(colleagues):
    sweep, marker = colleagues
    _make_resumable(sweep)
    [run] = [p for p in sweep.iterdir() if (p / "checkpoints").is_dir()]
    done = subprocess.run([sys.executable, "-m", "mjsweep.worker", str(run)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "UntrustedFolderError" in done.stderr, done.stdout + done.stderr
    assert "checkpoints/model_512.zip: not unpickled" in done.stderr
    assert not marker.exists()
