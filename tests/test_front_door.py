"""The one front door (api/running.py `launch`): `mjsweep.run` and `sweep run` take the same options
(RunOptions), defaults, refusals and backends; a spec given as a mapping writes nothing where it is run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import mjsweep
from helpers.models import TINY_XML
from mjsweep.bench import recommend
from mjsweep.engine import sweep as enginesweep


def test_run_options_take_the_choices_as_words_and_refuse_a_bad_one_by_name(monkeypatch):
    options = mjsweep.RunOptions(backend="ray", order="variant", start="exec", trust=["/x"], report_every_s=0)
    assert options.backend is mjsweep.Backend.RAY and options.order is mjsweep.Order.VARIANT
    assert options.start is mjsweep.StartWith.EXEC and options.trust == (Path("/x"),)
    assert options.report_every_s is None  # 0: never, as --report-every 0
    assert mjsweep.RunOptions().report_every_s is None  # MJSWEEP_REPORT_EVERY=off (conftest), as --report-every
    monkeypatch.setenv("MJSWEEP_REPORT_EVERY", "5m")
    assert mjsweep.RunOptions().report_every_s == 300.0
    monkeypatch.delenv("MJSWEEP_REPORT_EVERY")
    defaults = mjsweep.RunOptions()
    assert (defaults.backend, defaults.retries, defaults.grace_s, defaults.report_every_s) == ("local", 1, 10.0, 60.0)
    monkeypatch.setenv("MJSWEEP_REPORT_EVERY", "soon")
    with pytest.raises(mjsweep.InputError, match="MJSWEEP_REPORT_EVERY 'soon': not a duration like 90m"):
        mjsweep.RunOptions()
    monkeypatch.delenv("MJSWEEP_REPORT_EVERY")
    with pytest.raises(mjsweep.InputError, match=r"^RunOptions backend 'kubernetes': expected one of local, ray, "
                                                 r"slurm$"):
        mjsweep.RunOptions(backend="kubernetes")
    with pytest.raises(mjsweep.InputError, match="RunOptions workers 0: expected a whole number of at least 1"):
        mjsweep.RunOptions(workers=0)
    with pytest.raises(mjsweep.InputError, match="RunOptions timeout_s -5"):
        mjsweep.RunOptions(timeout_s=-5)


def test_a_spec_mapping_is_read_without_a_file_its_paths_from_the_current_folder(tmp_path, tiny_spec, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    shutil.copy(TINY_XML, here / "walker.xml")
    monkeypatch.chdir(here)
    seen: list[list[str]] = []
    load = enginesweep.loading.load

    def watched_load(*args, **kwargs):
        seen.append(sorted(os.listdir(here)))  # what the folder holds while the spec is read
        return load(*args, **kwargs)

    monkeypatch.setattr(enginesweep.loading, "load", watched_load)
    plan = mjsweep.validate({**tiny_spec, "variants": [{"name": "walker", "xml": "walker.xml"}]},
                            runs_dir=tmp_path / "runs")
    assert plan.variants == ["walker"] and plan.to_run == 1
    assert seen == [["walker.xml"]] and sorted(os.listdir(here)) == ["walker.xml"]
    with pytest.raises(mjsweep.SpecError, match=r"^<spec mapping>:\d+: seedz"):
        mjsweep.validate({**tiny_spec, "seedz": 3})


@pytest.mark.slow
def test_python_runs_with_the_machine_profiles_workers_and_keeps_report_html_as_sweep_run_does(
        tmp_path, tiny_spec, monkeypatch):
    monkeypatch.delenv("MJSWEEP_REPORT_EVERY")  # the default: report.html kept
    # What `sweep bench` kept for this machine: one run at a time (this test's private cache, conftest).
    recommend.save(1, len(os.sched_getaffinity(0)), "HalfCheetah-v5", 100.0)
    sweep = mjsweep.run({**tiny_spec, "seeds": 2, "total_timesteps": 128}, runs_dir=tmp_path / "runs")
    assert [r.state for r in sweep] == ["succeeded", "succeeded"]
    first, second = sorted(sweep, key=lambda r: r.started_at or "")
    assert first.ended_at is not None and second.started_at is not None
    assert second.started_at >= first.ended_at  # one at a time, as the profile says
    assert (sweep.path / "report.html").is_file()  # the live report, as `sweep run` keeps it


def test_every_backend_is_reached_from_python(tmp_path, tiny_spec, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no sbatch here
    runs = tmp_path / "runs"
    with pytest.raises(mjsweep.InputError, match="--backend slurm needs sbatch"):
        mjsweep.run(tiny_spec, runs_dir=runs, options=mjsweep.RunOptions(backend="slurm"))
    assert not (runs / "tiny").exists()  # refused before anything was written


def test_python_and_the_command_line_refuse_a_search_on_slurm_alike(tmp_path, tiny_spec):
    from helpers.commands import run_sweep, write_spec

    del tiny_spec["seeds"]
    spec = {**tiny_spec, "search": {"method": "random", "trials": 2, "seeds_per_trial": 1,
                                    "space": {"ppo.learning_rate": {"log_uniform": [1e-4, 1e-3]}}}}
    with pytest.raises(mjsweep.InputError, match="a search makes its runs as slots free up") as raised:
        mjsweep.run(spec, runs_dir=tmp_path / "py", options=mjsweep.RunOptions(backend="slurm"))
    done = run_sweep("run", str(write_spec(tmp_path, spec)), "--runs-dir", str(tmp_path / "cli"), "--backend", "slurm")
    assert done.returncode == 2 and done.stderr.strip() == f"error: {raised.value}"
