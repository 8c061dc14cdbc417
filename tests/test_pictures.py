"""Pictures of the variants: the camera (pure geometry), the contact sheet, and real renders through
`sweep validate --pictures` (EGL or OSMesa; CI installs libosmesa6)."""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from helpers.commands import run_sweep
from helpers.models import XML_DIR
from helpers.rendering import needs_gl
from mjsweep.media.camera import AZIMUTH_DEG, ELEVATION_DEG, Box, framing
from mjsweep.media.gl import RenderUnavailable, run_render_process
from mjsweep.media.sheet import LABEL_HEIGHT, contact_sheet, label

ROBOTS = Path(__file__).resolve().parents[2] / "shared" / "robots"
# A model of its own: no skybox, no texture, a big floor (a big extent) and a light 3 m above it.
BARE_XML = """<mujoco model="bare">
  <worldbody>
    <light directional="true" pos="0 0 3" dir="0 0 -1"/>
    <geom name="floor" type="plane" size="40 40 0.5" rgba="0.5 0.5 0.5 1"/>
    <body name="block" pos="0 0 0.2">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.1" rgba="0.8 0.3 0.2 1"/>
    </body>
  </worldbody>
</mujoco>
"""


def projected(point, pose, fovy_deg: float, aspect: float) -> tuple[float, float]:
    """Where a point lands on the image, in units of the half-width and half-height (|x|, |y| <= 1: seen)."""
    az, el = math.radians(pose.azimuth), math.radians(pose.elevation)
    forward = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    right = np.array([math.sin(az), -math.cos(az), 0.0])
    up = np.cross(right, forward)
    eye = np.array(pose.lookat) - pose.distance * forward
    rel = np.array(point) - eye
    depth = rel @ forward
    tan_v = math.tan(math.radians(fovy_deg) / 2)
    return float(rel @ right / depth / (tan_v * aspect)), float(rel @ up / depth / tan_v)


@pytest.mark.parametrize("low, high", [((-1, -1, 0), (1, 1, 0.5)), ((-0.2, -3, 0), (0.2, 3, 2)),
                                       ((0, 0, 0), (2, 0.1, 0.1))])
def test_the_camera_sees_every_corner_of_the_box_and_fills_the_frame(low, high):
    box, fovy, aspect = Box(low, high), 45.0, 4 / 3
    pose = framing(box, fovy, aspect)
    assert (pose.azimuth, pose.elevation) == (AZIMUTH_DEG, ELEVATION_DEG)
    corners = [projected(c, pose, fovy, aspect) for c in itertools.product(*zip(low, high, strict=True))]
    assert all(abs(x) <= 1 and abs(y) <= 1 for x, y in corners)
    # Not much farther than needed: some corner reaches most of the way to an edge.
    assert max(max(abs(x), abs(y)) for x, y in corners) > 0.8


def test_a_bigger_robot_is_seen_from_farther_and_a_group_shares_one_camera():
    small = Box.around(np.array([[0, 0, 0.5]]), np.array([0.3]))
    large = Box.around(np.array([[0, 0, 0.5]]), np.array([0.6]))
    assert framing(large, 45, 4 / 3).distance > 1.9 * framing(small, 45, 4 / 3).distance
    both = small.union(large)
    assert both == large  # the small robot's box lies inside the large one's


def test_contact_sheet_puts_tiles_on_a_grid_with_captions():
    tiles = [np.full((30, 40, 3), value, dtype=np.uint8) for value in (50, 100, 150)]
    sheet = contact_sheet(tiles, ["a", "b", "c"])
    cell_h = 30 + LABEL_HEIGHT + 6
    assert sheet.shape == (2 * cell_h, 2 * 40, 3)  # 3 tiles: 2 columns, 2 rows
    assert (sheet[:30, :40] == 50).all() and (sheet[:30, 40:80] == 100).all()
    assert (sheet[cell_h:cell_h + 30, :40] == 150).all()
    caption = sheet[30:cell_h, :40]
    assert (caption < 128).any(), "the caption's text is drawn"


def test_label_writes_text_on_a_dark_band():
    frame = np.full((60, 120, 3), 255, dtype=np.uint8)
    out = label(frame, ["hello"])
    assert out.shape == frame.shape
    band = out[:LABEL_HEIGHT]
    assert (band == 0).mean() > 0.5 and (band > 128).any()


def leg_spec(tmp_path: Path) -> Path:
    spec = {
        "name": "legs", "env": "mjsweep/Locomotion-v0", "total_timesteps": 1000,
        "variants": [{"name": "ant", "base": str(XML_DIR / "ant.xml"),
                      "edits": [{"scale_body": {"body": ["front_left_thigh", "front_right_thigh", "back_left_thigh",
                                                         "back_right_thigh"], "factor": "${legs}"}}],
                      "edit_grid": {"legs": [0.7, 1.4]}}],
    }
    path = tmp_path / "legs.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def robot_pixels(path: Path) -> int:
    """Pixels of the Ant's tan body (rgba 0.8 0.6 0.4): red well above blue, unlike the grey floor."""
    pixels = np.asarray(Image.open(path).convert("RGB")).astype(int)
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    return int(np.sum((r - b > 60) & (r > g) & (g > b)))


@needs_gl
def test_validate_pictures_renders_every_variant_and_a_contact_sheet(tmp_path):
    out = tmp_path / "pictures"
    proc = run_sweep("validate", str(leg_spec(tmp_path)), "--pictures", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "drawn with" in proc.stderr
    short, long_ = out / "ant_legs=0.7.png", out / "ant_legs=1.4.png"
    for path in (short, long_):
        image = np.asarray(Image.open(path).convert("RGB"))
        assert image.shape == (360, 480, 3)
        assert image.std() > 10 and len(np.unique(image.reshape(-1, 3), axis=0)) > 100, "not blank"
    # One camera for both: the longer legs cover more of the picture.
    assert robot_pixels(long_) > 1.3 * robot_pixels(short) > 0
    sheet = Image.open(out / "contact_sheet.png")
    assert sheet.size == (2 * 480, 360 + LABEL_HEIGHT + 6)


def helpers_importable(monkeypatch) -> None:
    """The render process can import tests/helpers (it starts with PYTHONPATH from the environment)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                   os.environ.get("PYTHONPATH")])))


@needs_gl
def test_no_shadow_falls_on_the_floor_away_from_the_robot(tmp_path, monkeypatch):
    """The far floor once came out in dark triangles: a shadow map over metres of distant floor, whose
    depth missed MuJoCo's shadow offset. Every shadow pixel must now lie under the robot."""
    bare = tmp_path / "bare.xml"
    bare.write_text(BARE_XML)
    h1 = ROBOTS / "unitree_h1" / "scene.xml"  # a Menagerie robot too, where ../shared/robots is beside the repo
    models = [XML_DIR / "tiny_walker.xml", XML_DIR / "tiny_walker_long.xml", XML_DIR / "ant.xml", bare,
              *([h1] if h1.is_file() else [])]
    helpers_importable(monkeypatch)
    job, out = tmp_path / "job.json", tmp_path / "counts.json"
    job.write_text(json.dumps({"xml": [str(m) for m in models], "out": str(out)}))
    run_render_process("helpers.stray_shadows", [str(job)])
    counts = {Path(xml).parent.name if Path(xml).name == "scene.xml" else Path(xml).name: n
              for xml, n in json.loads(out.read_text()).items()}
    assert counts == dict.fromkeys(counts, 0)


def test_render_falls_back_from_egl_to_osmesa(monkeypatch):
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setenv("GL_ACCEPTS", "osmesa")
    helpers_importable(monkeypatch)
    assert run_render_process("helpers.gl_refuses", []) == "osmesa"


def test_render_uses_only_the_backend_the_user_set(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "egl")
    monkeypatch.setenv("GL_ACCEPTS", "osmesa")
    helpers_importable(monkeypatch)
    with pytest.raises(RenderUnavailable, match=r"egl: cannot open a egl display.*libosmesa6"):
        run_render_process("helpers.gl_refuses", [])


def test_pictures_without_a_gl_backend_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from mjsweep.media import variant_pictures as pictures
    from mjsweep.ui import cli

    monkeypatch.delenv("MUJOCO_GL", raising=False)
    helpers_importable(monkeypatch)
    monkeypatch.setattr(pictures, "run_render_process",
                        lambda _module, args: run_render_process("helpers.gl_refuses", args))
    result = CliRunner().invoke(cli.app, ["validate", str(leg_spec(tmp_path)), "--pictures", str(tmp_path / "p")])
    assert result.exit_code == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: --pictures ") and "egl: cannot open" in last and "osmesa: cannot open" in last
    assert "apt-get install libosmesa6" in last
    assert not list((tmp_path / "p").glob("*.png"))
