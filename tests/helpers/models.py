"""The repository's XML models and a spec that trains on the tiny walker in seconds."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
XML_DIR = REPO / "xml_models"
TINY_XML = XML_DIR / "tiny_walker.xml"
TINY_LONG_XML = XML_DIR / "tiny_walker_long.xml"


def legs_variant() -> dict:
    """The planar walker with both thighs scaled by `${legs}`, over an edit grid a design search searches."""
    return {"name": "w", "base": str(XML_DIR / "planar_walker.xml"),
            "edits": [{"scale_body": {"body": ["left_thigh", "right_thigh"], "factor": "${legs}"}}],
            "edit_grid": {"legs": [0.8, 1.25]}}

# A spec that trains for real in a few seconds per run on the tiny planar walker.
TINY_SPEC = {
    "name": "tiny",
    "env": "HalfCheetah-v5",
    "max_episode_steps": 100,
    "variants": [{"name": "walker", "xml": str(TINY_XML)}],
    "seeds": 1,
    "total_timesteps": 512,
    "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
    "eval": {"episodes": 1},
    "runs_dir": "runs",
}

ANYMAL_XML = REPO.parent / "shared" / "robots" / "anybotics_anymal_c" / "scene.xml"
"""MuJoCo Menagerie's ANYmal C beside the repository (../shared/robots), a real robot whose compiled model
holds 252 MB of meshes; tests that need it skip where it is not."""
