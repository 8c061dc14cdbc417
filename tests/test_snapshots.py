"""A sweep's snapshot of its models (robots/snapshot.py): runs train the model their ids name even when the XML, or a
file it includes, is edited while the sweep runs; each distinct file is stored once, however many runs read it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from helpers.commands import run_dirs, run_sweep, start_sweep, status_of, wait_for, write_spec
from helpers.fake_sweep import make_run, result, run_spec
from helpers.models import TINY_XML, XML_DIR
from mjsweep.errors import InputError
from mjsweep.robots.modelfiles import loaded_sha256, model_files, model_sha256, portable_xmls
from mjsweep.robots.snapshot import FILES, missing_bytes, store
from mjsweep.robots.variants import Variant
from mjsweep.sweepdir.models import RunState

ROBOTS = Path(__file__).resolve().parents[2] / "shared" / "robots"
ANYMAL = ROBOTS / "anybotics_anymal_c" / "scene.xml"

FRONT_LEG = """<mujoco>
  <body name="front_leg" pos="0.25 0 0">
    <joint name="front_hip" class="hip"/>
    <geom name="front_leg_geom" fromto="0 0 0 0 0 -0.25" size="0.035"/>
  </body>
</mujoco>
"""
KNEE = '<joint name="front_knee" class="hip"/>\n'
"""A second hinge on the front leg: HalfCheetah-v5 then observes 11 numbers, not 9."""


def _robot(folder: Path, included: bool) -> Path:
    """The tiny walker in `folder`; with `included`, its front leg in a file of its own that the XML includes."""
    folder.mkdir(parents=True)
    text = TINY_XML.read_text()
    if included:
        start = text.index('      <body name="front_leg"')
        end = text.index("</body>", start) + len("</body>\n")
        text = text[:start] + '      <include file="front_leg.xml"/>\n' + text[end:]
        (folder / "front_leg.xml").write_text(FRONT_LEG)
    (folder / "walker.xml").write_text(text)
    return folder / "walker.xml"


def _robot_reading_absolute_paths(folder: Path, parts: Path) -> Path:
    """The tiny walker in `folder` that reads every other file by an absolute path into `parts`: it includes its
    front leg (parts/front_leg.xml), its meshdir is parts/, where a mesh on the torso lies, and a height field
    beside the floor is parts/ground.bin."""
    xml = _robot(folder, included=True)
    parts.mkdir(parents=True)
    (xml.parent / "front_leg.xml").rename(parts / "front_leg.xml")
    (parts / "bump.obj").write_text(_tetrahedron(0.04))
    (parts / "ground.bin").write_bytes(struct.pack("<2i4f", 2, 2, 0.0, 0.1, 0.2, 0.3))
    text = xml.read_text().replace('<include file="front_leg.xml"/>', f'<include file="{parts / "front_leg.xml"}"/>')
    compiler = '<compiler angle="degree" autolimits="true"/>\n'
    assert compiler in text and "</worldbody>" in text
    text = text.replace(compiler, f"""<compiler angle="degree" autolimits="true" meshdir="{parts}/"/>
  <asset>
    <mesh name="bump" file="bump.obj"/>
    <hfield name="ground" file="{parts / 'ground.bin'}" size="1 1 0.1 0.05"/>
  </asset>
""")
    text = text.replace('<geom name="torso_geom"', '<geom name="bump" type="mesh" mesh="bump" contype="0" '
                        'conaffinity="0"/>\n      <geom name="torso_geom"')
    text = text.replace("</worldbody>", '  <geom name="ground" type="hfield" hfield="ground" pos="0 3 0"/>\n'
                        "  </worldbody>")
    xml.write_text(text)
    return xml


TAIL = """<mujoco model="tail">
  <compiler meshdir="{meshdir}"/>
  <asset>
    <mesh name="fin" file="fin.obj"/>
  </asset>
  <worldbody>
    <body name="tail" pos="-0.3 0 0">
      <geom name="fin" type="mesh" mesh="fin" contype="0" conaffinity="0"/>
      <include file="tip.xml"/>
    </body>
  </worldbody>
</mujoco>
"""
"""A sub-model with a mesh of its own, from its own meshdir, and an include beside it; no joint, so the walker's
observations stay 9 numbers."""
TIP = '<mujoco><geom name="tip" size="0.02" contype="0" conaffinity="0"/></mujoco>\n'
ATTACH = '<attach model="tail" body="tail" prefix="tail_"/>\n      <body name="back_leg"'


def _tail(parts: Path, absolute: bool) -> Path:
    """The sub-model TAIL in `parts`: tail.xml, tip.xml beside it, meshes/fin.obj; with `absolute`, its meshdir is
    given as an absolute path."""
    (parts / "meshes").mkdir(parents=True)
    (parts / "meshes" / "fin.obj").write_text(_tetrahedron(0.05))
    (parts / "tip.xml").write_text(TIP)
    (parts / "tail.xml").write_text(TAIL.format(meshdir=f"{parts / 'meshes'}/" if absolute else "meshes/"))
    return parts / "tail.xml"


def _robot_attaching_a_tail(folder: Path, parts: Path, absolute: bool) -> Path:
    """The tiny walker in `folder` with a tail attached to its torso from the sub-model in `parts` (_tail), which it
    names by its path relative to `folder` or, with `absolute`, by its absolute path."""
    xml = _robot(folder, included=False)
    tail = _tail(parts, absolute)
    name = str(tail) if absolute else os.path.relpath(tail, folder)
    text = xml.read_text()
    assert text.count("  <worldbody>") == 1 and text.count('<body name="back_leg"') == 1
    text = text.replace("  <worldbody>", f'  <asset>\n    <model name="tail" file="{name}"/>\n  </asset>\n\n'
                        "  <worldbody>")
    xml.write_text(text.replace('<body name="back_leg"', ATTACH))
    return xml


def _tetrahedron(size: float) -> str:
    """A closed tetrahedron mesh in OBJ format."""
    return (f"v 0 0 0\nv {size} 0 0\nv 0 {size} 0\nv 0 0 {size}\n"
            "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")


def _add_knee(xml: Path, included: bool) -> None:
    _add_knee_to(xml.parent / "front_leg.xml" if included else xml)


def _add_knee_to(edited: Path) -> None:
    text = edited.read_text()
    anchor = '<joint name="front_hip" class="hip"/>\n'
    assert anchor in text
    edited.write_text(text.replace(anchor, anchor + "        " + KNEE))


def _observed(run_dir: Path) -> int:
    """The observation size model.zip was trained with."""
    with zipfile.ZipFile(run_dir / "model.zip") as archive:
        [size] = json.loads(archive.read("data"))["observation_space"]["_shape"]
    return size


def _result(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())


def _run_editing_once_started(spec: Path, sweep_dir: Path, slots: int, edit) -> None:
    """`sweep run` of `spec` on `slots` at once, `edit()` called once the first seed is running; it must end
    with exit 0."""
    launcher = start_sweep(spec, "--workers", str(slots), "--start", "exec")
    try:
        wait_for(lambda: any(status_of(d).get("state") == "running" for d in run_dirs(sweep_dir)),
                 "the first seed to start")
        edit()
        assert launcher.wait(timeout=600) == 0
    finally:
        if launcher.poll() is None:
            launcher.kill()


@pytest.mark.slow
@pytest.mark.parametrize(("included", "slots"), [(False, 1), (True, 1), (False, 2)],
                         ids=["xml-1-slot", "include-1-slot", "xml-2-slots"])
def test_an_edit_while_the_sweep_runs_changes_nothing_for_the_runs_planned(tmp_path, tiny_spec, included, slots):
    """The XML (or the file it includes) gains a joint once the first seed has started: every planned seed still
    trains the planned robot (9 observations; result.json's hash of the files the worker loaded is the planned
    one), and the next `sweep run` plans the edited robot as a new experiment and says so."""
    xml = _robot(tmp_path / "robot", included)
    planned = model_sha256(xml)
    tiny_spec.update(seeds=3, variants=[{"name": "walker", "xml": str(xml)}])
    spec = write_spec(tmp_path, tiny_spec)
    sweep_dir = tmp_path / "runs" / "tiny"
    _run_editing_once_started(spec, sweep_dir, slots, lambda: _add_knee(xml, included))
    edited = model_sha256(xml)
    assert edited != planned
    first = run_dirs(sweep_dir)
    assert len(first) == 3
    for run_dir in first:
        assert _observed(run_dir) == 9, run_dir.name
        assert _result(run_dir)["xml_sha256"] == planned
        assert Path(json.loads((run_dir / "spec.json").read_text())["xml"]).is_relative_to(sweep_dir / "snapshots")

    again = run_sweep("run", str(spec), "--workers", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "this folder holds 3 runs of an earlier spec" in again.stdout and "XML content" in again.stdout
    second = [d for d in run_dirs(sweep_dir) if d not in first]
    assert len(second) == 3
    for run_dir in second:
        assert _observed(run_dir) == 11, run_dir.name
        assert _result(run_dir)["xml_sha256"] == edited


@pytest.mark.slow
@pytest.mark.parametrize("edited", ["include", "mesh"])
def test_an_edit_to_a_file_named_by_an_absolute_path_changes_nothing_for_the_runs_planned(tmp_path, tiny_spec,
                                                                                          edited):
    """The walker reads its front leg, a mesh (through its meshdir) and a height field by absolute paths; the leg
    gains a joint, or the mesh grows, once the first of three seeds has started on one slot: every planned seed
    trains the planned robot from the snapshot (9 observations; result.json's hash of the files the worker loaded
    is the planned one), and the next `sweep run` plans the edited robot as a new experiment and says so."""
    parts = tmp_path / "parts"
    xml = _robot_reading_absolute_paths(tmp_path / "robot", parts)
    planned = model_sha256(xml)
    mesh = (parts / "bump.obj").read_bytes()
    tiny_spec.update(seeds=3, variants=[{"name": "walker", "xml": str(xml)}])
    spec = write_spec(tmp_path, tiny_spec)
    sweep_dir = tmp_path / "runs" / "tiny"
    def edit() -> None:
        if edited == "include":
            _add_knee_to(parts / "front_leg.xml")
        else:
            (parts / "bump.obj").write_text(_tetrahedron(0.08))

    _run_editing_once_started(spec, sweep_dir, 1, edit)
    edited_sha256 = model_sha256(xml)
    assert edited_sha256 != planned
    first = run_dirs(sweep_dir)
    assert len(first) == 3
    for run_dir in first:
        assert _observed(run_dir) == 9, run_dir.name
        assert _result(run_dir)["xml_sha256"] == planned
        stored = Path(json.loads((run_dir / "spec.json").read_text())["xml"])
        assert stored.is_relative_to(sweep_dir / "snapshots")
        assert {p.name: p.read_bytes() for p in model_files(stored)}["bump.obj"] == mesh
        assert "hashes as" not in (run_dir / "log.txt").read_text()

    again = run_sweep("run", str(spec), "--workers", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "this folder holds 3 runs of an earlier spec" in again.stdout and "XML content" in again.stdout
    second = [d for d in run_dirs(sweep_dir) if d not in first]
    assert len(second) == 3
    for run_dir in second:
        assert _observed(run_dir) == (11 if edited == "include" else 9), run_dir.name
        assert _result(run_dir)["xml_sha256"] == edited_sha256


def test_a_model_edited_after_it_was_planned_is_refused_before_anything_is_stored(tmp_path):
    xml = _robot(tmp_path / "robot", included=True)
    variant = Variant("walker", xml, model_sha256(xml))
    _add_knee(xml, included=True)
    with pytest.raises(InputError, match="the model's files changed while the sweep was planned"):
        store(tmp_path / "snapshots", variant)
    assert not (tmp_path / "snapshots").exists()


def test_the_snapshot_tree_loads_as_the_users_files_and_hashes_the_same(tmp_path):
    xml = _robot(tmp_path / "robot", included=True)
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    assert stored.is_relative_to(tmp_path / "snapshots" / "models" / variant.sha256)
    assert sorted(p.name for p in model_files(stored)) == ["front_leg.xml", "walker.xml"]
    assert model_sha256(stored) == variant.sha256
    _add_knee(xml, included=True)  # the user's files change; the stored ones do not
    assert model_sha256(stored) == variant.sha256
    assert not stored.stat().st_mode & 0o222  # read-only: nobody edits a stored file in place


def test_a_model_reading_files_by_absolute_paths_is_stored_whole_and_reads_only_the_snapshot(tmp_path):
    """An include, a meshdir and a height field given as absolute paths: the snapshot's XML files give them as
    relative paths into its own tree, the tree hashes as the variant, and it compiles to the same model once
    every file of the user's is gone."""
    import mujoco

    xml = _robot_reading_absolute_paths(tmp_path / "robot", tmp_path / "parts")
    before = mujoco.MjModel.from_xml_path(str(xml))
    assert (before.nmesh, before.nhfield, before.njnt) == (1, 1, 5)
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "sweep" / "snapshots", variant)
    tree = tmp_path / "sweep" / "snapshots" / "models" / variant.sha256
    files = model_files(stored)
    assert sorted(p.name for p in files) == ["bump.obj", "front_leg.xml", "ground.bin", "walker.xml"]
    assert all(p.is_relative_to(tree) for p in files)
    assert str(tmp_path) not in stored.read_text() and 'meshdir="../parts/"' in stored.read_text()
    assert portable_xmls(stored) == {}  # nothing left to rewrite: the tree's files are what the hash covers
    assert model_sha256(stored) == variant.sha256
    shutil.rmtree(tmp_path / "parts")
    shutil.rmtree(tmp_path / "robot")
    after = mujoco.MjModel.from_xml_path(str(stored))
    assert (after.nmesh, after.nhfield, after.njnt) == (1, 1, 5)
    assert after.hfield_data.tolist() == before.hfield_data.tolist()
    assert after.mesh_vert.tolist() == before.mesh_vert.tolist()


def test_the_model_ray_ships_to_a_node_of_a_model_reading_absolute_paths_compiles_there_alone(tmp_path):
    """A Ray node that cannot see the sweep folder gets the snapshot's files (launchers/filesync.py): written
    under the node's folder, they compile to the planned model and hash as it, with the user's files gone."""
    import mujoco

    from mjsweep.launchers.filesync import local_run_dir, pack_model

    xml = _robot_reading_absolute_paths(tmp_path / "robot", tmp_path / "parts")
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "sweep" / "snapshots", variant)
    shipped = pack_model(stored)
    assert len(shipped.files) == 4 and all(str(tmp_path) not in k for k in shipped.files)
    spec = {"run_id": "walker_s0", "xml": str(tmp_path / "elsewhere" / "walker.xml"), "xml_sha256": variant.sha256}
    for folder in ("sweep", "robot", "parts"):
        shutil.rmtree(tmp_path / folder)
    node = local_run_dir(tmp_path / "node", spec, {}, shipped)
    on_node = Path(json.loads((node / "spec.json").read_text())["xml"])
    assert on_node.is_relative_to(tmp_path / "node") and model_sha256(on_node) == variant.sha256
    model = mujoco.MjModel.from_xml_path(str(on_node))
    assert (model.nmesh, model.nhfield, model.njnt) == (1, 1, 5)


def _png(path: Path, rgb: tuple[int, int, int]) -> None:
    """A 2 x 2 PNG of one colour."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + bytes(rgb) * 2 for _ in range(2))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_textures_named_by_absolute_paths_are_stored_whole(tmp_path):
    """An absolute texturedir and a cube face's absolute file (fileright): both relative in the snapshot."""
    import mujoco

    textures = tmp_path / "textures"
    textures.mkdir()
    _png(textures / "red.png", (255, 0, 0))
    _png(textures / "blue.png", (0, 0, 255))
    faces = " ".join(f'file{side}="red.png"' for side in ("left", "up", "down", "front", "back"))
    (tmp_path / "robot").mkdir()
    xml = tmp_path / "robot" / "ball.xml"
    xml.write_text(f"""<mujoco><compiler texturedir="{textures}"/>
  <asset><texture name="flat" type="2d" file="red.png"/>
    <texture name="sky" type="cube" fileright="{textures / 'blue.png'}" {faces}/>
    <material name="red" texture="flat"/></asset>
  <worldbody><geom size="0.1" material="red"/></worldbody>
</mujoco>
""")
    before = mujoco.MjModel.from_xml_path(str(xml))
    variant = Variant("ball", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    assert str(tmp_path) not in stored.read_text()
    shutil.rmtree(textures)
    after = mujoco.MjModel.from_xml_path(str(stored))
    assert after.ntex == 2 and after.tex_data.tolist() == before.tex_data.tolist()
    assert model_sha256(stored) == variant.sha256


def test_an_edit_to_an_absolutely_referenced_file_gives_new_run_ids_and_leaves_the_stored_model(tmp_path):
    xml = _robot_reading_absolute_paths(tmp_path / "robot", tmp_path / "parts")
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    hashes = {variant.sha256}
    for edit in (lambda: _add_knee_to(tmp_path / "parts" / "front_leg.xml"),
                 lambda: (tmp_path / "parts" / "bump.obj").write_text(_tetrahedron(0.06)),
                 lambda: (tmp_path / "parts" / "ground.bin").write_bytes(struct.pack("<2i4f", 2, 2, 0, 0, 0, 1))):
        edit()
        hashes.add(model_sha256(xml))
        assert model_sha256(stored) == variant.sha256
    assert len(hashes) == 4


def _same_model(before, after) -> None:
    """Two compiled models are the same robot: sizes, names and the arrays a sub-model's bodies, geoms and mesh
    make."""
    assert (after.nbody, after.ngeom, after.nmesh, after.nq) == (before.nbody, before.ngeom, before.nmesh, before.nq)
    assert after.names == before.names
    for field in ("body_pos", "body_mass", "geom_type", "geom_size", "geom_pos", "mesh_vert", "mesh_face"):
        assert getattr(after, field).tolist() == getattr(before, field).tolist(), field


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_a_sub_model_is_stored_with_its_files_and_compiles_from_the_snapshot_alone(tmp_path, absolute):
    """A sub-model the walker attaches (<asset><model file=...>), its include and its mesh from its own meshdir are
    in the model's files and its snapshot; named by absolute paths, they are stored with those paths made relative;
    with every file of the user's gone, the snapshot compiles to the same model."""
    import mujoco

    xml = _robot_attaching_a_tail(tmp_path / "robot", tmp_path / "parts", absolute)
    before = mujoco.MjModel.from_xml_path(str(xml))
    assert (before.nbody, before.nmesh) == (5, 1) and before.geom("tail_tip").size[0] == pytest.approx(0.02)
    assert sorted(p.name for p in model_files(xml)) == ["fin.obj", "tail.xml", "tip.xml", "walker.xml"]
    assert (portable_xmls(xml) != {}) == absolute
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "sweep" / "snapshots", variant)
    tree = tmp_path / "sweep" / "snapshots" / "models" / variant.sha256
    files = model_files(stored)
    assert sorted(p.name for p in files) == ["fin.obj", "tail.xml", "tip.xml", "walker.xml"]
    assert all(p.is_relative_to(tree) for p in files)
    assert not any(str(tmp_path) in p.read_text() for p in files if p.suffix == ".xml")
    assert portable_xmls(stored) == {} and model_sha256(stored) == variant.sha256
    shutil.rmtree(tmp_path / "parts")
    shutil.rmtree(tmp_path / "robot")
    _same_model(before, mujoco.MjModel.from_xml_path(str(stored)))


def test_an_edit_to_a_sub_model_its_include_or_its_mesh_changes_the_hash_and_leaves_the_stored_model(tmp_path):
    xml = _robot_attaching_a_tail(tmp_path / "robot", tmp_path / "parts", absolute=True)
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    tail = tmp_path / "parts" / "tail.xml"
    hashes = {variant.sha256}
    for edit in (lambda: tail.write_text(tail.read_text().replace('pos="-0.3 0 0"', 'pos="-0.35 0 0"')),
                 lambda: (tmp_path / "parts" / "tip.xml").write_text(TIP.replace("0.02", "0.03")),
                 lambda: (tmp_path / "parts" / "meshes" / "fin.obj").write_text(_tetrahedron(0.06))):
        edit()
        hashes.add(model_sha256(xml))
        assert model_sha256(stored) == variant.sha256
    assert len(hashes) == 4


def test_a_run_planned_before_sub_models_were_hashed_still_loads_as_planned(tmp_path):
    """An earlier release hashed a model without its sub-models' files: a run it planned loads as planned while the
    files are unchanged, and the model hashes anew (new run ids) by today's recipe."""
    xml = _robot_attaching_a_tail(tmp_path / "robot", tmp_path / "parts", absolute=False)
    planned_then = model_sha256(xml, portable=False)
    assert planned_then == hashlib.sha256(xml.read_bytes()).hexdigest() != model_sha256(xml)
    assert loaded_sha256(xml, planned_then) == planned_then


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_a_generated_variant_of_a_model_attaching_a_sub_model_keeps_its_mesh(tmp_path, absolute):
    """The edited XML holds the sub-model's assets but not its folder: its mesh is named by a path from the base's
    folder, covered by the variant's hash and stored, so the snapshot compiles with the user's files gone."""
    import mujoco

    from mjsweep.robots.edits import generate
    from mjsweep.spec.editspec import EditSpec

    xml = _robot_attaching_a_tail(tmp_path / "robot", tmp_path / "parts", absolute)
    edits = [EditSpec.model_validate({"scale_body": {"body": "front_leg", "factor": 1.2}})]
    generated = generate(xml, edits, {})
    assert str(tmp_path) not in generated.portable
    edited = mujoco.MjModel.from_xml_string(generated.text)
    variant = Variant("walker_long", xml, generated.sha256, xml_text=generated.text, portable_text=generated.portable)
    stored = store(tmp_path / "snapshots", variant)
    assert loaded_sha256(stored, generated.sha256) == generated.sha256  # the worker's hash of what it loads
    (tmp_path / "parts" / "meshes" / "fin.obj").write_text(_tetrahedron(0.06))
    assert generate(xml, edits, {}).sha256 != generated.sha256
    shutil.rmtree(tmp_path / "parts")
    shutil.rmtree(tmp_path / "robot")
    _same_model(edited, mujoco.MjModel.from_xml_path(str(stored)))


def test_a_sub_model_is_found_next_to_the_file_that_names_it_and_reads_its_files_from_its_own_folder(tmp_path):
    """MuJoCo's rule, checked against MuJoCo: a <model file=...> in an include is found next to that include (not
    in the main XML's folder), and the sub-model's include next to the sub-model. Decoys where the main XML's
    folder would put them are neither read by MuJoCo nor listed."""
    import mujoco

    robot = tmp_path / "robot"
    xml = _robot(robot, included=False)
    _tail(robot / "parts" / "tail", absolute=False)
    (robot / "parts" / "tail_asset.xml").write_text('<mujoco><asset><model name="tail" file="tail/tail.xml"/>'
                                                     "</asset></mujoco>\n")
    (robot / "tail").mkdir()
    (robot / "tail" / "tail.xml").write_text("not a model\n")
    (robot / "tip.xml").write_text(TIP.replace('name="tip"', 'name="decoy"'))
    text = xml.read_text().replace("  <worldbody>", '  <include file="parts/tail_asset.xml"/>\n\n  <worldbody>')
    xml.write_text(text.replace('<body name="back_leg"', ATTACH))
    model = mujoco.MjModel.from_xml_path(str(xml))
    assert model.geom("tail_tip").size[0] == pytest.approx(0.02)
    parts = robot / "parts"
    assert model_files(xml) == [xml, parts / "tail_asset.xml", parts / "tail" / "tail.xml", parts / "tail" / "tip.xml",
                                parts / "tail" / "meshes" / "fin.obj"]


def test_a_model_with_relative_paths_only_hashes_as_before(tmp_path):
    """Nothing to rewrite: run ids planned before absolute paths were made relative stay what they were."""
    xml = _robot(tmp_path / "robot", included=True)
    assert portable_xmls(xml) == {}
    assert model_sha256(xml) == model_sha256(xml, portable=False)
    walker = XML_DIR / "planar_walker.xml"
    assert model_sha256(walker) == hashlib.sha256(walker.read_bytes()).hexdigest()


def test_a_run_planned_before_absolute_paths_were_made_relative_still_loads_as_planned(tmp_path):
    """An older folder's run names the user's XML (or a tree that gives the absolute paths as they were) and the
    hash of those files as they are: the worker's hash of what it loads matches it while they are unchanged."""
    xml = _robot_reading_absolute_paths(tmp_path / "robot", tmp_path / "parts")
    planned_then = model_sha256(xml, portable=False)
    assert planned_then != model_sha256(xml)
    assert loaded_sha256(xml, planned_then) == planned_then
    _add_knee_to(tmp_path / "parts" / "front_leg.xml")
    assert loaded_sha256(xml, planned_then) != planned_then


def test_a_generated_variant_of_a_model_reading_absolute_paths_is_stored_whole(tmp_path):
    import mujoco

    from mjsweep.robots.edits import generate
    from mjsweep.spec.editspec import EditSpec

    xml = _robot_reading_absolute_paths(tmp_path / "robot", tmp_path / "parts")
    generated = generate(xml, [EditSpec.model_validate({"scale_body": {"body": "front_leg", "factor": 1.2}})], {})
    assert str(tmp_path) not in generated.portable
    variant = Variant("walker_long", xml, generated.sha256, xml_text=generated.text, portable_text=generated.portable)
    stored = store(tmp_path / "snapshots", variant)
    shutil.rmtree(tmp_path / "parts")
    model = mujoco.MjModel.from_xml_path(str(stored))
    assert (model.nmesh, model.nhfield, model.njnt) == (1, 1, 5)


def test_where_the_filesystem_makes_no_hard_link_the_tree_holds_read_only_copies(tmp_path, monkeypatch):
    def refused(source, target):
        raise PermissionError(1, "Operation not permitted", str(target))

    monkeypatch.setattr(os, "link", refused)
    xml = _robot(tmp_path / "robot", included=True)
    variant = Variant("walker", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    assert model_sha256(stored) == variant.sha256
    for path in (stored, stored.parent / "front_leg.xml"):
        assert path.stat().st_nlink == 1 and not path.stat().st_mode & 0o222


def test_a_link_planted_in_the_snapshot_is_refused_and_its_target_untouched(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    snapshots = tmp_path / "sweep" / "snapshots"
    snapshots.mkdir(parents=True)
    (snapshots / "models").symlink_to(outside)
    xml = _robot(tmp_path / "robot", included=False)
    with pytest.raises(InputError, match=r"snapshots/models is a symbolic link .*remove it"):
        store(snapshots, Variant("walker", xml, model_sha256(xml)))
    assert list(outside.iterdir()) == []


@pytest.mark.skipif(not ROBOTS.is_dir(), reason=f"{ROBOTS} is not there")
def test_a_hundred_runs_of_a_menagerie_robot_store_its_meshes_once(tmp_path, tiny_spec):
    """100 runs of ANYmal C (mjsweep/Locomotion-v0) planned and their folders written as `sweep run` writes them:
    the disk estimate counts the robot's files once, the snapshot holds each of them once (its model tree links to
    them), and a second plan of the folder adds nothing."""
    from mjsweep.api.planning import check_disk
    from mjsweep.engine.sweep import prepare, write_run_dir

    tiny_spec.update(env="mjsweep/Locomotion-v0", seeds=100, variants=[{"name": "anymal", "xml": str(ANYMAL)}])
    tiny_spec.pop("max_episode_steps")
    plan = prepare(write_spec(tmp_path, tiny_spec), check_envs=False)
    assert len(plan.runs) == 100
    robot_files = model_files(ANYMAL)
    robot_bytes = sum(p.stat().st_size for p in robot_files)
    distinct = {model_sha256(p): p.stat().st_size for p in robot_files}
    store_dir = plan.sweep_dir.snapshots
    variants = [c.variant for c in plan.checks]
    assert missing_bytes(store_dir, variants) == sum(distinct.values())
    disk = check_disk(plan, plan.runs, 4).needed  # the dry run's estimate: the runs' peak and the snapshot
    assert disk.snapshot == sum(distinct.values()) and disk.bytes == disk.peak.total + disk.snapshot
    written = [write_run_dir(plan.sweep_dir.run(r.run_id), r, variants[0]) for r in plan.runs]
    assert len({r.xml for r in written}) == 1
    stored = list((store_dir / FILES).iterdir())
    assert len(stored) == len(distinct)
    assert sum(p.stat().st_size for p in stored) == sum(distinct.values()) <= robot_bytes
    # The model's tree links to those files: its bytes on disk are the files', counted once.
    inodes = {(p.stat().st_dev, p.stat().st_ino): p.stat().st_size for p in store_dir.rglob("*") if p.is_file()}
    assert sum(inodes.values()) == sum(distinct.values())
    assert missing_bytes(store_dir, variants) == 0  # what a dry run of the folder adds now
    assert check_disk(plan, plan.runs, 4).needed.snapshot == 0


def test_the_dry_run_counts_a_robots_files_once_however_many_runs_read_them(tmp_path, tiny_spec):
    """Without Menagerie: 40 seeds of the walker that reads a mesh and a 256 x 256 height field (by absolute
    paths). The dry run's disk line counts the snapshot as the robot's files once (what 40 copies would be is
    another size); once `sweep run` has written the runs' folders, the files are stored once and a dry run of the
    folder counts none."""
    from mjsweep.engine.sweep import prepare, write_run_dir
    from mjsweep.plan.disk import human_bytes

    parts = tmp_path / "parts"
    xml = _robot_reading_absolute_paths(tmp_path / "robot", parts)
    (parts / "ground.bin").write_bytes(struct.pack("<2i", 256, 256) + bytes(4 * 256 * 256))
    files = model_files(xml)
    rewritten = portable_xmls(xml)
    once = sum(len(rewritten[p]) if p in rewritten else p.stat().st_size for p in files)
    assert once > 256 * 1024 and human_bytes(once) != human_bytes(40 * once)
    tiny_spec.update(seeds=40, variants=[{"name": "walker", "xml": str(xml)}], runs_dir=str(tmp_path / "runs"))
    spec = write_spec(tmp_path, tiny_spec)
    dry = run_sweep("run", str(spec), "--dry-run", env={"COLUMNS": "400"})
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"{human_bytes(once)} snapshot of the robots' files" in " ".join(dry.stdout.split())

    plan = prepare(spec, check_envs=False)
    [variant] = [c.variant for c in plan.checks]
    for run in plan.runs:
        write_run_dir(plan.sweep_dir.run(run.run_id), run, variant)
    stored = list((plan.sweep_dir.snapshots / FILES).iterdir())
    assert len(stored) == len(files) and sum(p.stat().st_size for p in stored) == once
    again = run_sweep("run", str(spec), "--dry-run", env={"COLUMNS": "400"})
    assert again.returncode == 0, again.stdout + again.stderr
    said = " ".join(again.stdout.split())
    assert "at peak" in said and "snapshot of the robots' files" not in said


CHEETAH = '''from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv


class Cheetah(HalfCheetahEnv):
    """HalfCheetah-v5 under a name of the user's own."""
'''


@pytest.mark.slow
def test_runs_of_one_group_trained_with_different_env_code_are_said_in_the_report(tmp_path, tiny_spec):
    """A custom env's source file is hashed into result.json; its code edited between the seeds of one group (its
    run ids stay: the env is named, not hashed), the report says so in a warning line."""
    code = tmp_path / "envcode"
    code.mkdir()
    (code / "my_cheetah.py").write_text(CHEETAH)
    env = {"PYTHONPATH": str(code)}
    tiny_spec.update(env="my_cheetah:Cheetah")
    spec = write_spec(tmp_path, tiny_spec)
    assert run_sweep("run", str(spec), env=env).returncode == 0
    sweep_dir = tmp_path / "runs" / "tiny"
    report = run_sweep("report", str(sweep_dir), env=env)
    assert report.returncode == 0 and "versions of my_cheetah:Cheetah" not in report.stdout
    (code / "my_cheetah.py").write_text(CHEETAH + "    reward_scale = 1.0\n")
    tiny_spec.update(seeds=2)
    spec = write_spec(tmp_path, tiny_spec)
    assert run_sweep("run", str(spec), env=env).returncode == 0
    first, second = run_dirs(sweep_dir)
    hashes = [_result(d)["env_source_sha256"] for d in (first, second)]
    assert hashes == [hashlib.sha256(CHEETAH.encode()).hexdigest(), model_sha256(code / "my_cheetah.py")]
    report = run_sweep("report", str(sweep_dir), env={**env, "COLUMNS": "400"})
    assert report.returncode == 0, report.stderr
    [line] = [ln for ln in report.stdout.splitlines() if "my_cheetah:Cheetah" in ln]
    assert line == (f"warning: walker: its runs trained with 2 versions of my_cheetah:Cheetah's source file "
                    f"({first.name}; {second.name}); the report pools them as seeds of one experiment")


def test_the_report_warns_only_where_one_groups_env_code_differs(tmp_path):
    sweep = tmp_path / "sweep"
    for seed, code in enumerate(["a" * 64, "b" * 64, "a" * 64]):
        make_run(sweep, run_spec("mixed", seed, env="pkg.envs:Robot"), RunState.SUCCEEDED,
                 result(1.0, env_source_sha256=code))
        make_run(sweep, run_spec("same", seed, env="pkg.envs:Robot"), RunState.SUCCEEDED,
                 result(1.0, env_source_sha256="c" * 64))
    make_run(sweep, run_spec("older", 0), RunState.SUCCEEDED, result(1.0))  # no hash: a run from before the key
    done = run_sweep("report", str(sweep), env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    warned = [ln for ln in done.stdout.splitlines() if "source file" in ln]
    assert warned == ["warning: mixed: its runs trained with 2 versions of pkg.envs:Robot's source file "
                      "(mixed_s0, mixed_s2; mixed_s1); the report pools them as seeds of one experiment"]
    assert "- " + warned[0].removeprefix("warning: ") in (sweep / "report.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("absolute", [False, True], ids=["relative-paths", "absolute-paths"])
def test_verify_and_a_policys_env_read_the_snapshot_once_the_users_robot_changed(tmp_path, tiny_spec, absolute):
    """`sweep verify` trains a finished run again, and Policy.make_env() builds its env, from the model the run
    trained: the user's XML (or the leg it includes, by an absolute path beside a mesh and a height field) has
    gained a joint since, the folders its files lay in are gone, and the sweep folder has moved (spec.json names
    the snapshot where it was)."""
    import mjsweep

    if absolute:
        xml = _robot_reading_absolute_paths(tmp_path / "robot", tmp_path / "parts")
        leg = tmp_path / "parts" / "front_leg.xml"
    else:
        xml = _robot(tmp_path / "robot", included=True)
        leg = xml.parent / "front_leg.xml"
    tiny_spec.update(variants=[{"name": "walker", "xml": str(xml)}])
    assert run_sweep("run", str(write_spec(tmp_path, tiny_spec))).returncode == 0
    _add_knee_to(leg)
    sweep_dir = tmp_path / "runs" / "tiny"
    [run] = mjsweep.load(sweep_dir).runs
    assert run.policy().make_env().observation_space.shape == (9,)
    shutil.rmtree(xml.parent)
    shutil.rmtree(leg.parent, ignore_errors=True)
    sweep_dir = sweep_dir.rename(tmp_path / "moved")
    [run] = mjsweep.load(sweep_dir).runs
    assert not Path(run.spec.xml).exists()
    assert run.policy().make_env().observation_space.shape == (9,)
    done = run_sweep("verify", str(sweep_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 of 1 runs reproduced exactly" in done.stdout


SOFT = """<mujoco model="soft">
  <compiler meshdir="meshes/"/>
  <worldbody>
    <flexcomp name="sheet" type="mesh" file="{sheet}" dim="2" radius="0.005" pos="0 0 0.5">
      <edge equality="true"/>
    </flexcomp>
    <include file="parts/block.xml"/>
  </worldbody>
</mujoco>
"""
"""A model with a flexcomp read from an .obj below its meshdir and, in an include, one read from a .msh."""
BLOCK = """<mujoco>
  <flexcomp name="block" type="gmsh" file="{block}" dim="3" radius="0.005" pos="1 0 0.5">
    <edge equality="true"/>
  </flexcomp>
</mujoco>
"""


def _msh(size: float) -> str:
    """One tetrahedron in gmsh's ASCII format 2.2."""
    return (f"$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4\n1 0 0 0\n2 {size} 0 0\n3 0 {size} 0\n4 0 0 {size}\n"
            "$EndNodes\n$Elements\n1\n1 4 2 0 1 1 2 3 4\n$EndElements\n")


def _soft(folder: Path, absolute: bool) -> Path:
    """SOFT in `folder`: meshes/sheet.obj, parts/block.xml and parts/block.msh beside it, which the include finds next
    to itself; with `absolute`, both flexcomps name their files by absolute paths."""
    (folder / "meshes").mkdir(parents=True)
    (folder / "parts").mkdir()
    (folder / "meshes" / "sheet.obj").write_text(_tetrahedron(0.1))
    (folder / "parts" / "block.msh").write_text(_msh(0.1))
    sheet, block = (folder / "meshes" / "sheet.obj", folder / "parts" / "block.msh") if absolute else \
        ("sheet.obj", "block.msh")
    (folder / "parts" / "block.xml").write_text(BLOCK.format(block=block))
    (folder / "soft.xml").write_text(SOFT.format(sheet=sheet))
    return folder / "soft.xml"


def _same_flexes(before, after) -> None:
    assert (after.nflex, after.nflexvert, after.nflexelem) == (before.nflex, before.nflexvert, before.nflexelem) != \
        (0, 0, 0)
    for field in ("flex_dim", "flex_vertadr", "flex_elem", "flex_vert0", "body_pos", "body_mass"):
        assert getattr(after, field).tolist() == getattr(before, field).tolist(), field


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_a_flexcomps_mesh_and_gmsh_files_are_stored_and_the_snapshot_compiles_alone(tmp_path, absolute):
    """The files a <flexcomp type="mesh"> and, in an include, a <flexcomp type="gmsh"> read are in the model's files
    and its snapshot; named by absolute paths, they are stored with those paths made relative; with every file of
    the user's gone, the snapshot, and the files Ray ships of it, compile to the same flexes."""
    import mujoco

    from mjsweep.launchers.filesync import local_run_dir, pack_model

    xml = _soft(tmp_path / "robot", absolute)
    before = mujoco.MjModel.from_xml_path(str(xml))
    assert before.nflex == 2
    names = ["block.msh", "block.xml", "sheet.obj", "soft.xml"]
    assert sorted(p.name for p in model_files(xml)) == names
    assert (portable_xmls(xml) != {}) == absolute
    variant = Variant("soft", xml, model_sha256(xml))
    flex_files = [xml.parent / "meshes" / "sheet.obj", xml.parent / "parts" / "block.msh"]
    assert missing_bytes(tmp_path / "sweep" / "snapshots", [variant]) > sum(p.stat().st_size for p in flex_files)
    stored = store(tmp_path / "sweep" / "snapshots", variant)
    assert missing_bytes(tmp_path / "sweep" / "snapshots", [variant]) == 0
    tree = tmp_path / "sweep" / "snapshots" / "models" / variant.sha256
    files = model_files(stored)
    assert sorted(p.name for p in files) == names and all(p.is_relative_to(tree) for p in files)
    assert not any(str(tmp_path / "robot") in p.read_text() for p in files if p.suffix == ".xml")
    assert model_sha256(stored) == variant.sha256
    shipped = pack_model(stored)  # what Ray sends a node that cannot see the sweep folder
    shutil.rmtree(tmp_path / "robot")
    _same_flexes(before, mujoco.MjModel.from_xml_path(str(stored)))
    shutil.rmtree(tmp_path / "sweep")
    spec = {"run_id": "soft_s0", "xml": str(tmp_path / "elsewhere" / "soft.xml"), "xml_sha256": variant.sha256}
    on_node = Path(json.loads((local_run_dir(tmp_path / "node", spec, {}, shipped) / "spec.json").read_text())["xml"])
    _same_flexes(before, mujoco.MjModel.from_xml_path(str(on_node)))


def test_an_edit_to_a_flexcomps_file_changes_the_hash_and_leaves_the_stored_model(tmp_path):
    xml = _soft(tmp_path / "robot", absolute=False)
    variant = Variant("soft", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    hashes = {variant.sha256}
    for edited, text in ((tmp_path / "robot" / "meshes" / "sheet.obj", _tetrahedron(0.2)),
                         (tmp_path / "robot" / "parts" / "block.msh", _msh(0.2))):
        edited.write_text(text)
        hashes.add(model_sha256(xml))
        assert model_sha256(stored) == variant.sha256
    assert len(hashes) == 3


FLEXCOMP = '<flexcomp name="f" type="mesh" file="{}" dim="2" radius="0.005"><edge equality="true"/></flexcomp>'
"""A flexcomp reading the OBJ file it names."""


@pytest.mark.parametrize(("compiler", "where", "name", "present", "read", "decides"), [
    ('meshdir="meshes"', "main", "t.obj", ["meshes/t.obj", "t.obj"], "meshes/t.obj", None),
    ('assetdir="assets"', "main", "t.obj", ["assets/t.obj", "t.obj"], "assets/t.obj", None),
    ('meshdir="meshes"', "parts", "t.obj", ["parts/t.obj", "meshes/t.obj", "parts/meshes/t.obj"], "parts/t.obj", None),
    ('meshdir="meshes"', "parts", "t.obj", ["parts/t.obj", "t.obj", "meshes/t.obj"], "meshes/t.obj", "t.obj"),
    ('meshdir="meshes"', "main folder", "t.obj", ["t.obj", "meshes/t.obj"], "meshes/t.obj", "t.obj"),
    ("", "parts/inner", "t.obj", ["parts/inner/t.obj", "parts/t.obj"], "parts/inner/t.obj", None),
    ('meshdir="meshes"', "main", "{folder}/far/t.obj", ["meshes/t.obj", "t.obj", "far/t.obj"], "far/t.obj", None),
    ('meshdir="meshes" strippath="true"', "main", "d/t.obj", ["meshes/t.obj", "d/t.obj"], "meshes/t.obj", None),
], ids=["main-meshdir", "main-assetdir", "include-own-folder", "include-main-folder-names-it",
        "include-beside-main-xml", "nested-include", "absolute", "strippath"])
def test_a_flexcomps_file_is_found_as_mujoco_finds_it(tmp_path, compiler, where, name, present, read, decides):
    """MuJoCo's rule, checked against MuJoCo with a decoy of another size wherever it might look: in the main XML a
    relative name lies below the mesh folder (meshdir, else assetdir), never beside the XML; in an include, a name
    that names no file in the main XML's folder is the include's own neighbour (meshdir does not apply), one that
    does lies below the mesh folder, and that file in the main XML's folder is listed as it decides; an absolute
    name is itself; with strippath, only the name's last part counts. Only those files are listed."""
    import mujoco

    folder = tmp_path / "robot"
    for index, path in enumerate(present):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(_tetrahedron(0.1 * (index + 1)))
    body = FLEXCOMP.format(name.format(folder=folder))
    if where == "main folder":
        (folder / "inc.xml").write_text(f"<mujoco>{body}</mujoco>")
        body = '<include file="inc.xml"/>'
    elif where == "parts":
        (folder / "parts" / "inc.xml").write_text(f"<mujoco>{body}</mujoco>")
        body = '<include file="parts/inc.xml"/>'
    elif where == "parts/inner":
        (folder / "parts" / "inc.xml").write_text('<mujoco><include file="inner/inc.xml"/></mujoco>')
        (folder / "parts" / "inner" / "inc.xml").write_text(f"<mujoco>{body}</mujoco>")
        body = '<include file="parts/inc.xml"/>'
    xml = folder / "main.xml"
    xml.write_text(f"<mujoco><compiler {compiler}/><worldbody>{body}</worldbody></mujoco>")
    model = mujoco.MjModel.from_xml_path(str(xml))
    assert model.nflexvert == 4 and max(model.body_pos[1:, 0]) == pytest.approx(0.1 * (present.index(read) + 1))
    listed = [p for p in model_files(xml) if p.suffix == ".obj"]
    assert listed == [folder / read, *([folder / decides] if decides else [])]


@pytest.mark.parametrize(("include", "name", "present"), [
    ("parts/deep/block.xml", "{folder}/parts/deep/block.msh", ["parts/deep/block.msh", "meshes/block.msh"]),
    ("parts/block.xml", "{folder}/meshes/block.msh", ["meshes/block.msh", "block.msh", "parts/block.msh"]),
    ("block.xml", "block.msh", ["meshes/block.msh", "block.msh"]),
], ids=["absolute-from-own-folder", "absolute-from-meshdir", "beside-main-xml"])
def test_an_included_flexcomps_file_is_read_from_the_snapshot_as_from_the_users_files(tmp_path, include, name,
                                                                                     present):
    """However an included flexcomp's file is found (its own folder, or the mesh folder because the name names a file
    beside the main XML too), the snapshot, absolute names made relative, compiles to the same flexes with the
    user's files gone."""
    import mujoco

    folder = tmp_path / "robot"
    for index, path in enumerate(present):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(_msh(0.1 * (index + 1)))
    (folder / include).write_text(BLOCK.format(block=name.format(folder=folder)))
    xml = folder / "soft.xml"
    xml.write_text(f'<mujoco><compiler meshdir="meshes/"/><worldbody><include file="{include}"/></worldbody>'
                   "</mujoco>")
    before = mujoco.MjModel.from_xml_path(str(xml))
    variant = Variant("soft", xml, model_sha256(xml))
    stored = store(tmp_path / "snapshots", variant)
    assert model_sha256(stored) == variant.sha256
    shutil.rmtree(folder)
    _same_flexes(before, mujoco.MjModel.from_xml_path(str(stored)))


def test_a_run_planned_before_flexcomps_files_were_hashed_still_loads_as_planned(tmp_path):
    """An earlier release hashed a model without its flexcomps' files: a run it planned loads as planned while the
    files are unchanged, and the model hashes anew (new run ids) by today's recipe."""
    xml = _soft(tmp_path / "robot", absolute=False)
    planned_then = model_sha256(xml, portable=False)
    assert [p.name for p in model_files(xml, before_snapshots=True)] == ["soft.xml", "block.xml"]
    assert planned_then != model_sha256(xml)
    assert loaded_sha256(xml, planned_then) == planned_then
