"""Real robots (MuJoCo Menagerie's ANYmal C and Unitree H1, in ../shared/robots): by path and by name,
compile errors that name the XML file, and short trainings through `sweep run` (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.commands import run_sweep, write_spec
from mjsweep.engine.sweep import BrokenVariantsError, prepare
from mjsweep.errors import SpecError
from mjsweep.robots import menagerie
from mjsweep.robots.envs import probe_env
from mjsweep.robots.locomotion import ENV_ID

ROBOTS = Path(__file__).resolve().parents[2] / "shared" / "robots"
ANYMAL = ROBOTS / "anybotics_anymal_c" / "scene.xml"
H1 = ROBOTS / "unitree_h1" / "scene.xml"

pytestmark = pytest.mark.skipif(not ROBOTS.is_dir(), reason=f"{ROBOTS} is not there")


@pytest.fixture
def local_menagerie(monkeypatch):
    monkeypatch.setenv("MENAGERIE_ROOT", str(ROBOTS))


@pytest.fixture(autouse=True)
def _mujoco_log_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def spec_of(variants: list[dict], **more) -> dict:
    return {"name": "robots", "env": ENV_ID, "variants": variants, "seeds": 1, "total_timesteps": 256,
            "ppo": {"n_steps": 128, "batch_size": 64}, "runs_dir": "runs", **more}


# --- by name -----------------------------------------------------------------------------------

def test_a_robot_by_name_is_the_same_model_as_by_path(tmp_path, local_menagerie):
    by_name = spec_of([{"name": "anymal", "xml": "menagerie:anybotics_anymal_c"},
                       {"name": "h1", "xml": "menagerie:unitree_h1/scene"}])
    by_path = spec_of([{"name": "anymal", "xml": str(ANYMAL)}, {"name": "h1", "xml": str(H1)}])
    named = prepare(write_spec(tmp_path / "a", by_name), check_envs=False)
    pathed = prepare(write_spec(tmp_path / "b", by_path), check_envs=False)
    assert [c.variant.xml for c in named.checks] == [ANYMAL.resolve(), H1.resolve()]
    assert [c.variant.sha256 for c in named.checks] == [c.variant.sha256 for c in pathed.checks]
    assert [r.run_id for r in named.runs] == [r.run_id for r in pathed.runs]


def test_an_unknown_robot_name_is_a_spec_error_with_close_names(tmp_path, local_menagerie):
    path = write_spec(tmp_path, spec_of([{"name": "a", "xml": "menagerie:anymal_c"}]))
    with pytest.raises(SpecError, match=r"spec.yaml:\d+: variants\[0\].xml: no Menagerie robot named 'anymal_c'; "
                       r"close names: anybotics_anymal_c"):
        prepare(path)
    path = write_spec(tmp_path, spec_of([{"name": "a", "base": "menagerie:unitree_h1/stage"}]))
    with pytest.raises(SpecError, match=r"variants\[0\].base: .*no entry 'stage' \(it has: .*scene"):
        prepare(path)


def test_without_the_package_the_root_folder_alone_resolves_names(monkeypatch, local_menagerie):
    monkeypatch.setitem(__import__("sys").modules, "mujoco_menagerie", None)  # import fails
    assert menagerie.resolve("menagerie:unitree_h1") == H1.resolve()
    assert menagerie.resolve("menagerie:anybotics_anymal_c/anymal_c") == ANYMAL.with_name("anymal_c.xml").resolve()
    with pytest.raises(menagerie.MenagerieLookupError, match="close names: unitree_h1"):
        menagerie.resolve("menagerie:unitree_h2")
    monkeypatch.delenv("MENAGERIE_ROOT")
    with pytest.raises(menagerie.MenagerieLookupError, match=r"mjsweep\[menagerie\]"):
        menagerie.resolve("menagerie:unitree_h1")


def test_the_real_robot_example_config_validates(local_menagerie):
    config = Path(__file__).resolve().parents[1] / "configs" / "anymal_servos.yaml"
    plan = prepare(config)
    assert len(plan.checks) == 4 and all(c.problem is None for c in plan.checks)
    assert all(c.variant.xml == ANYMAL.resolve() and c.variant.xml_text for c in plan.checks)


# --- errors name the XML file ------------------------------------------------------------------

def test_a_compile_error_names_the_xml_file_and_line_also_inside_an_include(tmp_path):
    (tmp_path / "legs.xml").write_text("<mujoco>\n<worldbody>\n\n<geom size='0.1' sise='2'/>\n"
                                       "</worldbody>\n</mujoco>\n")
    (tmp_path / "robot.xml").write_text("<mujoco>\n  <include file='legs.xml'/>\n</mujoco>\n")
    (tmp_path / "plain.xml").write_text("<mujoco>\n<worldbody>\n<geom size='0.1' type='mesh' mesh='none'/>\n"
                                        "</worldbody>\n</mujoco>\n")
    path = write_spec(tmp_path, spec_of([{"name": "inc", "xml": "robot.xml"}, {"name": "plain", "xml": "plain.xml"}]))
    with pytest.raises(BrokenVariantsError) as info:
        prepare(path)
    message = str(info.value)
    assert f"unrecognized attribute: 'sise' Element 'geom', line 0 (in {tmp_path / 'legs.xml'}, line 4)" in message
    assert f"(in {tmp_path / 'plain.xml'}, line 3)" in message


# --- the robots as they are --------------------------------------------------------------------

def test_anymal_faces_minus_x_and_passes_the_probe():
    from mjsweep.robots.envs import make_env

    env = make_env(ENV_ID, ANYMAL, {"forward_axis": "root"}).unwrapped
    assert env._heading == pytest.approx([-1.0, 0.0, 0.0])
    assert probe_env(ENV_ID, ANYMAL, {"forward_axis": "root"}).act_shape == (12,)


def test_h1_starts_from_its_home_keyframe():
    probe = probe_env(ENV_ID, H1, {})
    assert probe.keyframe == "home" and probe.act_shape == (19,)


def test_validate_names_the_qpos0_start_of_a_robot_without_a_home_keyframe(tmp_path):
    """ANYmal C's scene has no `home` keyframe: episodes start from qpos0, and the variants' table says so."""
    spec = spec_of([{"name": "anymal", "xml": str(ANYMAL), "env_kwargs": {"forward_axis": "root"}}])
    done = run_sweep("validate", str(write_spec(tmp_path, spec)), env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "start: qpos0, absolute reset noise 0.1" in " ".join(done.stdout.split())


@pytest.mark.slow
def test_both_robots_train_by_name_from_another_folder(tmp_path):
    """`sweep run` from a folder that is neither the project nor the spec's, robots by name."""
    spec = spec_of([{"name": "anymal", "xml": "menagerie:anybotics_anymal_c", "env_kwargs": {"forward_axis": "root"}},
                    {"name": "h1", "xml": "menagerie:unitree_h1"}],
                   total_timesteps=2048, max_episode_steps=200,
                   ppo={"n_steps": 512, "batch_size": 64, "n_epochs": 2}, eval={"episodes": 2})
    path = write_spec(tmp_path / "spec", spec)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_sweep("run", str(path), "-w", "2", cwd=elsewhere, env={"MENAGERIE_ROOT": str(ROBOTS)})
    assert done.returncode == 0, done.stdout + done.stderr
    for result_file in (tmp_path / "spec" / "runs" / "robots").glob("*/result.json"):
        result = json.loads(result_file.read_text())
        assert result["timesteps"] >= 2048 and np.isfinite(result["eval_mean_return"])
        lengths = _episode_lengths(result_file.parent / "monitor.csv")
        assert len(lengths) >= 5 and np.mean(lengths) > 20, (result_file.parent.name, lengths[:20])
    assert len(list((tmp_path / "spec" / "runs" / "robots").glob("*/result.json"))) == 2


def _episode_lengths(monitor_csv: Path) -> list[int]:
    """The `l` column of SB3's monitor.csv (a '#' JSON line, then a header r,l,t)."""
    lines = monitor_csv.read_text().splitlines()[2:]
    return [int(line.split(",")[1]) for line in lines if line]


def test_the_randomized_real_robot_example_config_validates(local_menagerie):
    config = Path(__file__).resolve().parents[1] / "configs" / "anymal_randomized.yaml"
    plan = prepare(config)
    assert [c.variant.name for c in plan.checks] == ["nominal", "randomized"]
    assert all(c.problem is None for c in plan.checks)
    nominal, randomized = plan.runs[0], plan.runs[3]
    assert nominal.randomize == [] and len(randomized.randomize) == 3
    assert nominal.experiment != randomized.experiment
