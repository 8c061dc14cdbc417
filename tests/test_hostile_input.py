"""Hostile and careless input through the real `sweep` command: every spec is accepted or refused within the
child's memory and CPU limits (helpers/bounded.py), refused with one error line naming file, line and key,
and nothing outside the folders a command owns changes (checksums before and after). docs/reliability.md,
"Hostile input"."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from helpers.bounded import bounded_sweep, one_error_line, tree_digest
from helpers.commands import write_spec
from helpers.fake_sweep import make_run, result, run_spec
from helpers.images import not_blank
from helpers.models import TINY_XML
from mjsweep.sweepdir.models import RunState


def _alias_bomb(levels: int = 9) -> str:
    """Nine lists of nine aliases of the list before: 9**9 leaves once expanded, 400 bytes written."""
    lines = ["  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _spec_text(tiny_spec: dict, **changes) -> str:
    return yaml.safe_dump({**tiny_spec, **changes}, sort_keys=False)


def test_a_yaml_alias_bomb_is_refused_before_anything_expands_it(tmp_path, tiny_spec):
    """Under env kwargs (hashed into run ids, dumped to spec.json) and where a number belongs (printed in the
    error line): refused at the key that holds it, within the limits."""
    nested = _alias_bomb().replace("\n", "\n  ")
    text = _spec_text(tiny_spec).replace("env: HalfCheetah-v5\n", "env: HalfCheetah-v5\nenv_kwargs:\n"
                                         f"  default_camera_config:\n  {nested}\n")
    (tmp_path / "kwargs.yaml").write_text(text)
    number = _spec_text(tiny_spec).replace("total_timesteps: 512", "total_timesteps: *a8")
    number = number.replace("env: HalfCheetah-v5\n", f"env: HalfCheetah-v5\nenv_kwargs:\n{_alias_bomb()}\n")
    (tmp_path / "number.yaml").write_text(number)
    before = tree_digest(tmp_path)
    for name, key in (("kwargs.yaml", "env_kwargs"), ("number.yaml", "env_kwargs")):
        for command in (("validate",), ("run", "--dry-run")):
            line = one_error_line(bounded_sweep(*command, str(tmp_path / name)))
            line_no = (tmp_path / name).read_text().splitlines().index(f"{key}:") + 1
            assert f"{name}:{line_no}: {key}: the spec holds over 4,194,304 characters" in line and "aliases" in line
    assert tree_digest(tmp_path) == before


def test_a_spec_file_is_read_no_further_than_its_limit(tmp_path, tiny_spec):
    """A spec padded past 256 KiB, and /dev/zero named as the spec: refused after reading the limit."""
    padded = write_spec(tmp_path, tiny_spec)
    padded.write_text(padded.read_text() + "# " + "x" * (300 << 10) + "\n")
    for path in (str(padded), "/dev/zero"):
        line = one_error_line(bounded_sweep("validate", path))
        assert f"{path}: the spec is over 262,144 bytes" in line, line


def test_a_long_value_is_cut_in_the_error_line(tmp_path, tiny_spec):
    """A list of 2,000 numbers (within the size limit) where a count belongs: the line shows its start."""
    path = write_spec(tmp_path, {**tiny_spec, "total_timesteps": [123456789] * 2000})
    line = one_error_line(bounded_sweep("validate", str(path)))
    assert "total_timesteps" in line and "123456789" in line and len(line) < 400


@pytest.mark.parametrize("changes, key, words", [
    ({"seeds": 1_000_000_000}, "seeds", "1,000,000,000 runs"),
    ({"grid": {f"env_kwargs.ctrl_cost_weight{'.x' * i}": list(range(100)) for i in range(6)}},
     "grid.env_kwargs.ctrl_cost_weight", "1,000,000,000,000 runs"),
    ({"variants": [{"name": "w", "base": "TINY", "edits": [{"mass": {"body": "torso", "factor": "${f}"}}],
                    "edit_grid": {"f": list(range(1, 10_002))}}]}, "variants[0].edit_grid", "10,001 runs"),
])
def test_a_plan_over_the_run_limit_is_refused_naming_its_count_and_key(tmp_path, tiny_spec, changes, key, words):
    spec = {**tiny_spec, **changes}
    if "variants" in changes:
        spec["variants"][0]["base"] = tiny_spec["variants"][0]["xml"]
    path = write_spec(tmp_path, spec)
    for command in (("validate",), ("run", "--dry-run")):
        line = one_error_line(bounded_sweep(*command, str(path)))
        assert f": {key}" in line and words in line and "over the limit of 10,000" in line, line


def test_an_xml_glob_is_counted_before_any_match_is_read(tmp_path, tiny_spec):
    """3,000 matches x 4 seeds: refused at xml_glob before the 3,000 files (none of them a model) are read."""
    models = tmp_path / "models"
    models.mkdir()
    for i in range(3000):
        (models / f"m{i}.xml").write_text("not a model\n")
    path = write_spec(tmp_path, {**tiny_spec, "variants": [], "xml_glob": "models/*.xml", "seeds": 4})
    line = one_error_line(bounded_sweep("validate", str(path), "--max-runs", "11999"))
    assert ": xml_glob: the spec plans 12,000 runs (variants 3,000 x grid points 1 x seeds 4), over the limit of " \
           "11,999" in line, line


def test_the_run_limit_is_the_specs_or_the_flags(tmp_path, tiny_spec):
    path = write_spec(tmp_path, {**tiny_spec, "seeds": 3, "max_runs": 2})
    assert "seeds 3), over the limit of 2" in one_error_line(bounded_sweep("validate", str(path)))
    assert bounded_sweep("validate", str(path), "--max-runs", "3").returncode == 0
    assert "over the limit of 1" in one_error_line(bounded_sweep("validate", write_spec(
        tmp_path, {**tiny_spec, "seeds": 2}, "two.yaml").as_posix(), "--max-runs", "1"))


@pytest.mark.parametrize("changes, where", [
    ({"n_envs": 1_000_000}, "n_envs: Input should be less than or equal to 1024"),
    ({"n_envs": 1000}, "n_envs: 1,000 envs for 512 timesteps"),
    ({"total_timesteps": "1e30"}, "total_timesteps: Input should be less than or equal to 1000000000000"),
    ({"ppo": {"n_steps": 100_000_000}}, "ppo.n_steps: one rollout of n_steps 100,000,000 * n_envs 1"),
    ({"ppo": {"n_epochs": 10**12}}, "ppo.n_epochs: must be at most 2**31 - 1"),
    ({"name": "a" * 300}, "name: a name is at most 200 characters"),
    ({"cpus_per_run": 10**30}, "cpus_per_run: is beyond a 64-bit integer"),
    ({"env_kwargs": {"frame_skip": 10**20}}, "env_kwargs.frame_skip: is beyond a 64-bit integer"),
    ({"checkpoints_kept": 10**6}, "checkpoints_kept: Input should be less than or equal to 1000"),
    ({"eval": {"episodes": 10**10}}, "eval.episodes: Input should be less than or equal to 2147483647"),
    ({"env_kwargs": {"default_camera_config": _nested(70)}}, "env_kwargs: the spec nests mappings and lists over"),
])
def test_sizes_beyond_what_a_run_can_take_are_refused_at_their_key(tmp_path, tiny_spec, changes, where):
    path = write_spec(tmp_path, {**tiny_spec, **changes})
    line = one_error_line(bounded_sweep("run", "--dry-run", str(path)))
    assert where in line and "disk" not in line, line


@pytest.mark.parametrize("text, where", [
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1, learning_rate: .inf}", "ppo.learning_rate"),
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1, learning_rate: lin_1.0e999}", "ppo.learning_rate"),
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1, ent_coef: .inf}", "ppo.ent_coef"),
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1, vf_coef: .nan}", "ppo.vf_coef"),
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1}\ngrid: {ppo.gamma: [0.99, .inf]}", "grid.ppo.gamma[1]"),
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1}\nenv_kwargs: {ctrl_cost_weight: -.inf}",
     "env_kwargs.ctrl_cost_weight"),
    ("ppo: {n_steps: 128, batch_size: 64, n_epochs: 1}\nnormalize: {clip_obs: .inf}", "normalize.clip_obs"),
])
def test_a_non_finite_number_is_refused_before_launch(tmp_path, tiny_spec, text, where):
    spec = _spec_text({k: v for k, v in tiny_spec.items() if k != "ppo"}) + text + "\n"
    (tmp_path / "spec.yaml").write_text(spec)
    line = one_error_line(bounded_sweep("run", "--dry-run", str(tmp_path / "spec.yaml")))
    assert f": {where}:" in line and ("finite" in line or "schedule" in line), line


@pytest.mark.parametrize("seeds", [[2**32], {"min": 2, "max": 2**32 + 1}])
def test_a_seed_beyond_numpys_range_is_refused(tmp_path, tiny_spec, seeds):
    path = write_spec(tmp_path, {**tiny_spec, "seeds": seeds})
    line = one_error_line(bounded_sweep("validate", str(path), "--max-runs", str(2**40)))
    assert ": seeds: " in line and "2**32 - 1" in line, line


def test_a_model_with_60_mb_of_inline_data_is_read_in_linear_time(tmp_path, tiny_spec):
    """One long comment, as inline mesh or height field data make: reading its includes took 27 s of CPU
    (quadratic in the token); MuJoCo itself reads it in about a second. Validated within 20 CPU seconds."""
    xml = TINY_XML.read_text()
    start = xml.index(">", xml.index("<mujoco")) + 1
    model = tmp_path / "inline.xml"
    model.write_text(f"{xml[:start]}\n<!-- include {'0 1 ' * (15 << 20)} -->\n{xml[start:]}")
    path = write_spec(tmp_path, {**tiny_spec, "variants": [{"name": "walker", "xml": str(model)}]})
    result = bounded_sweep("validate", str(path), cpu_s=20)
    assert result.returncode == 0, result.stderr[-2000:]


# -- files and links: the launcher writes only inside the sweep folder, never through a link it did not make


def _victim(tmp_path) -> tuple[Path, dict[str, str]]:
    """A folder of the user's outside the sweep, and its checksums."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "thesis.txt").write_text("months of work\n")
    (outside / "report.md").write_text("# my own report\n")
    return outside, tree_digest(outside)


def _first_run_id(spec_path: Path) -> str:
    from mjsweep.engine.sweep import prepare

    return prepare(spec_path, check_envs=False).runs[0].run_id


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_lock_file_that_is_a_link_is_refused_and_its_target_untouched(tmp_path, tiny_spec, link):
    outside, before = _victim(tmp_path)
    path = write_spec(tmp_path, tiny_spec)
    sweep = tmp_path / "runs" / "tiny"
    sweep.mkdir(parents=True)
    (os.symlink if link == "symlink" else os.link)(outside / "thesis.txt", sweep / "sweep.lock")
    line = one_error_line(bounded_sweep("run", str(path), "--start", "exec"))
    assert "sweep.lock" in line and ("symbolic link" in line or "hard link" in line), line
    assert tree_digest(outside) == before
    assert sorted(p.name for p in sweep.iterdir()) == ["sweep.lock"]


def test_a_run_folder_that_is_a_link_out_of_the_sweep_is_refused(tmp_path, tiny_spec):
    outside, before = _victim(tmp_path)
    path = write_spec(tmp_path, tiny_spec)
    sweep = tmp_path / "runs" / "tiny"
    sweep.mkdir(parents=True)
    (sweep / _first_run_id(path)).symlink_to(outside)
    for command in (("validate",), ("run", "--dry-run"), ("run", "--start", "exec")):
        line = one_error_line(bounded_sweep(*command, str(path)))
        assert "run folder is a symbolic link" in line and str(outside) in line, line
    assert tree_digest(outside) == before
    assert len(list(sweep.iterdir())) == 1


@pytest.mark.parametrize("where", ["index.jsonl", "RUN/progress.csv"])
def test_a_link_among_the_files_of_the_sweep_is_refused(tmp_path, tiny_spec, where):
    """Files the launcher appends to or truncates on resume: a link there would carry its writes out."""
    outside, before = _victim(tmp_path)
    path = write_spec(tmp_path, tiny_spec)
    sweep = tmp_path / "runs" / "tiny"
    link = sweep / where.replace("RUN", _first_run_id(path))
    link.parent.mkdir(parents=True)
    link.symlink_to(outside / "thesis.txt")
    inside = tree_digest(sweep)
    for command in (("validate",), ("run", "--start", "exec")):
        line = one_error_line(bounded_sweep(*command, str(path)))
        assert f"{link} is a symbolic link" in line, line
    assert tree_digest(outside) == before and tree_digest(sweep) == inside


def test_a_runs_dir_that_is_a_file_or_holds_a_nul_byte_is_named_as_such(tmp_path, tiny_spec):
    (tmp_path / "afile").write_text("not a folder\n")
    before = tree_digest(tmp_path)
    path = write_spec(tmp_path, {**tiny_spec, "runs_dir": "afile"})
    before = tree_digest(tmp_path)
    line = one_error_line(bounded_sweep("run", str(path), "--start", "exec"))
    assert ": runs_dir: " in line and "afile is not a folder" in line, line
    line = one_error_line(bounded_sweep("validate", str(path), "--runs-dir", str(tmp_path / "afile" / "deeper")))
    assert line.startswith("error: --runs-dir ") and "afile is not a folder" in line, line
    (tmp_path / "nul.yaml").write_text(_spec_text(tiny_spec).replace("runs_dir: runs", 'runs_dir: "ru\\0ns"'))
    line = one_error_line(bounded_sweep("run", str(tmp_path / "nul.yaml"), "--start", "exec"))
    assert ": runs_dir: holds a NUL byte" in line, line
    assert tree_digest(tmp_path) == {**before, "nul.yaml": tree_digest(tmp_path)["nul.yaml"]}


def test_read_only_commands_write_nothing_into_a_folder_that_is_not_a_sweep(tmp_path):
    """A user's folder that happens to hold a spec.json (of another tool) below it: report, video and evaluate
    refuse it, and its own report.md is untouched."""
    folder, _ = _victim(tmp_path)
    (folder / "experiment").mkdir()
    (folder / "experiment" / "spec.json").write_text('{"lr": 0.1}\n')
    before = tree_digest(folder)
    for command in (("report",), ("report", "--format", "html"), ("evaluate", "--cross"), ("video",)):
        line = one_error_line(bounded_sweep(*command[:1], str(folder), *command[1:]))
        assert "not a sweep folder" in line, line
    assert tree_digest(folder) == before


def test_a_robot_name_resolves_inside_its_root_only(tmp_path, tiny_spec):
    """Without the mujoco-menagerie package, MENAGERIE_ROOT's folders (with it, its registry's names): neither a
    path in the name nor a robot folder that links outside reaches a model elsewhere."""
    root = tmp_path / "a" / "robots"
    (root / "walker").mkdir(parents=True)
    shutil.copy(TINY_XML, root / "walker" / "scene.xml")
    shutil.copy(TINY_XML, tmp_path / "x.xml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(TINY_XML, elsewhere / "scene.xml")
    (root / "linked").symlink_to(elsewhere)
    hidden = tmp_path / "hidden"  # a module that fails to import stands for the package's absence
    hidden.mkdir()
    (hidden / "mujoco_menagerie.py").write_text("raise ImportError('not installed')\n")
    env = {"MENAGERIE_ROOT": str(root), "PYTHONPATH": str(hidden)}
    good = write_spec(tmp_path, {**tiny_spec, "variants": [{"name": "w", "xml": "menagerie:walker"}]}, "good.yaml")
    assert bounded_sweep("validate", str(good), env=env).returncode == 0
    for name, words in (("../../x", "never a path"), ("walker/../../../x", "never a path"),
                        ("linked", "leads outside MENAGERIE_ROOT")):
        path = write_spec(tmp_path, {**tiny_spec, "variants": [{"name": "w", "xml": f"menagerie:{name}"}]})
        line = one_error_line(bounded_sweep("run", "--dry-run", str(path), env=env))
        assert words in line and "variants[0]" in line, line


# -- user text in figures and reports


def test_a_latex_label_as_a_grid_value_is_drawn_as_text(tmp_path):
    """A grid value written as a paper's label, which matplotlib's mathtext would parse: `sweep plot` draws
    it as the characters written, and report.html (its SVG figures too) escapes it."""
    sweep = tmp_path / "sweep"
    label = r"$\textbf{baseline}$ <b>&"
    for seed in (0, 1):
        for value in (label, r"$x^{2"):
            name = f"w_{'a' if value == label else 'b'}_s{seed}"
            make_run(sweep, run_spec("w", seed, {"env_kwargs.label": value}, run_id=name), RunState.SUCCEEDED,
                     result(10.0 + seed), progress=[(100, 500.0, 1.0 + seed), (200, 500.0, 3.0 + seed)])
    report = bounded_sweep("report", str(sweep), "--format", "html", "--compare")
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr[-3000:]
    html = (sweep / "report.html").read_text()
    assert r"$\textbf{baseline}$ &lt;b&gt;&amp;" in html and "<b>&" not in html
    plot = bounded_sweep("plot", str(sweep), "-o", str(tmp_path / "figs" / "curves.svg"))
    assert plot.returncode == 0 and "Traceback" not in plot.stderr, plot.stderr[-3000:]
    not_blank(tmp_path / "figs" / "curves.svg")


# -- a refused spec changes nothing in an existing sweep folder


def _finished_sweep(folder: Path, tiny_spec: dict) -> None:
    """The files a finished sweep of the tiny spec holds: sweep.yaml, index.jsonl, a lock and a succeeded run."""
    folder.mkdir(parents=True)
    (folder / "sweep.yaml").write_text(yaml.safe_dump(tiny_spec, sort_keys=False))
    (folder / "sweep.lock").write_text("4242\n")
    run = make_run(folder, run_spec("walker", 0, run_id="walker_s0_0123abcd"), RunState.SUCCEEDED, result(5.0),
                   progress=[(512, 900.0, 5.0)])
    (folder / "index.jsonl").write_text(json.dumps({"run_id": run.path.name, "state": "succeeded"}) + "\n")


@pytest.mark.parametrize("changes", [
    {"grid": {"ppo.learning_rate": [3e-4, float("inf")]}},
    {"grid": {"env_kwargs.ctrl_cost_weight": [0.1, float("nan")]}},
    {"seeds": [0, 2**32]},
    {"seeds": 20_000},
    {"ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1, "policy_kwargs": {"net_arch": {"pi": [8], "vf": [-1]}}}},
    {"variants": [{"name": "walker", "xml": "broken.xml"}]},
])
def test_a_refused_spec_changes_nothing_in_an_existing_sweep(tmp_path, tiny_spec, changes):
    """`sweep run` of a spec refused by any check (the spec's own, the run limit, SB3's model check, a model
    that does not compile), aimed at a finished sweep: exit 2 and every byte of the folder as it was."""
    (tmp_path / "broken.xml").write_text("<mujoco><worldbody><geom type='nonsense'/></worldbody></mujoco>\n")
    _finished_sweep(tmp_path / "runs" / "tiny", tiny_spec)
    path = write_spec(tmp_path, {**tiny_spec, **changes})
    before = tree_digest(tmp_path)
    one_error_line(bounded_sweep("run", str(path), "--start", "exec"))
    assert tree_digest(tmp_path) == before
