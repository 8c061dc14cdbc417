"""eval.every: evaluations.csv, best_model.zip, result.json's best evaluation; training unchanged by it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import torch

from helpers.commands import run_sweep, write_spec
from mjsweep.engine.sweep import prepare


def policy_params(model_zip: Path) -> dict:
    with zipfile.ZipFile(model_zip) as zf, zf.open("policy.pth") as fh:
        return torch.load(fh, map_location="cpu")


def train(folder: Path, spec_data: dict) -> Path:
    spec = write_spec(folder, {**spec_data, "runs_dir": str(folder / "runs")})
    proc = run_sweep("run", str(spec), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [run] = prepare(spec, check_envs=False).runs
    return folder / "runs" / "tiny" / run.run_id


def test_periodic_evaluations_leave_training_as_it_was(tmp_path, tiny_spec):
    tiny_spec.update({"total_timesteps": 768, "eval": {"episodes": 2, "deterministic": False}})
    plain_dir = train(tmp_path / "plain", tiny_spec)
    run_dir = train(tmp_path / "evaluated", {**tiny_spec, "eval": {**tiny_spec["eval"], "every": 256}})
    assert run_dir.name == plain_dir.name  # eval.every is not part of the run id

    lines = (run_dir / "evaluations.csv").read_text().splitlines()
    assert lines[0] == "timesteps,mean_return,std_return,returns,lengths,wall_s"
    rows = [line.split(",") for line in lines[1:]]
    assert [int(r[0]) for r in rows] == [256, 512, 768]
    for row in rows:
        returns = [float(x) for x in row[3].split()]
        assert len(returns) == 2 and [int(x) for x in row[4].split()] == [100, 100]
        assert abs(sum(returns) / 2 - float(row[1])) < 1e-9
    result = json.loads((run_dir / "result.json").read_text())
    best = max(rows, key=lambda r: float(r[1]))
    assert result["best_eval_mean_return"] == float(best[1]) and result["best_eval_timesteps"] == int(best[0])
    assert result["evaluations"] == 3 and result["periodic_eval_s"] > 0
    assert zipfile.is_zipfile(run_dir / "best_model.zip")
    assert not (plain_dir / "evaluations.csv").exists()
    assert json.loads((plain_dir / "result.json").read_text())["best_eval_mean_return"] is None

    # Sampled evaluations draw from a forked generator: the trained weights are the same bits.
    plain, evaluated = policy_params(plain_dir / "model.zip"), policy_params(run_dir / "model.zip")
    assert plain.keys() == evaluated.keys()
    assert all(torch.equal(plain[k], evaluated[k]) for k in plain)
